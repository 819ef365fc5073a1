// Copyright 2026 The stoker Authors.
#include "pipeline/batch_assembler.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "stoker/status.h"

namespace stoker {

int BatchAssembler::Compact(int64_t b, int batch_size, int64_t valid_end, BatchBuffer* buf,
                            std::vector<int64_t>* positions) {
  const int64_t bsz = batch_size;
  positions->clear();
  if (valid_end < (b + 1) * bsz) buf->size = static_cast<int>(valid_end - b * bsz);
  int kept = 0;
  for (int i = 0; i < buf->size; ++i) {
    if (buf->ids()[i] == kSkippedId) continue;
    if (kept != i) MoveSample(buf, i, buf, kept);
    positions->push_back(b * bsz + i);
    ++kept;
  }
  buf->size = kept;
  return kept;
}

BatchBuffer* BatchAssembler::Assemble(int64_t b, int batch_size, int64_t valid_end,
                                      BatchBuffer* buf, Carry* carry, BatchPool* pool) {
  std::vector<int64_t> kept_pos;
  const int kept = Compact(b, batch_size, valid_end, buf, &kept_pos);
  if (carry->buffer == nullptr) {
    if (kept == batch_size) return buf;  // the common case: delivered as the workers wrote it
    if (kept == 0) {
      pool->Release(buf);
    } else {
      carry->buffer = buf;
      carry->positions = std::move(kept_pos);
    }
    return nullptr;
  }
  BatchBuffer* c = carry->buffer;
  const int take = std::min(batch_size - c->size, kept);
  for (int i = 0; i < take; ++i) MoveSample(buf, i, c, c->size + i);
  c->size += take;
  carry->positions.insert(carry->positions.end(), kept_pos.begin(), kept_pos.begin() + take);
  BatchBuffer* ready = nullptr;
  if (c->size == batch_size) {
    ready = c;
    carry->buffer = nullptr;
    carry->positions.clear();
    if (kept > take) {  // the rest of this batch starts the next one
      for (int i = take; i < kept; ++i) MoveSample(buf, i, buf, i - take);
      buf->size = kept - take;
      carry->buffer = buf;
      carry->positions.assign(kept_pos.begin() + take, kept_pos.end());
      buf = nullptr;
    }
  }
  if (buf != nullptr) pool->Release(buf);
  return ready;
}

Status BatchAssembler::CopySample(BatchBuffer* src, int from, BatchBuffer* dst, int to) {
  return dst->CopySample(to, *src, from);
}

void BatchAssembler::MoveSample(BatchBuffer* src, int from, BatchBuffer* dst, int to) {
  dst->MoveSample(to, src, from);
}

void BatchAssembler::BeginEpoch() {
  delivered_positions_ = 0;
  delivered_batches_ = 0;
  good_delivered_ = 0;
  if (pad_source_ != nullptr) pad_source_->size = 0;
  pad_left_ = 0;
  padded_ = 0;
}

void BatchAssembler::DropCarry() {
  if (carry_.buffer != nullptr) pool_->Release(carry_.buffer);  // a batch being assembled
  carry_.buffer = nullptr;
  carry_.positions.clear();
  pad_left_ = 0;
}

void BatchAssembler::Release() {
  DropCarry();
  if (pad_source_ != nullptr) pool_->Release(pad_source_);
  pad_source_ = nullptr;
}

BatchAssembler::Carry BatchAssembler::TakeCarry() {
  Carry c = std::move(carry_);
  carry_ = Carry();
  return c;
}

bool BatchAssembler::PutBack(Carry* carry) {
  if (carry_.buffer != nullptr) return false;
  carry_ = std::move(*carry);
  *carry = Carry();
  return true;
}

void BatchAssembler::Delivered(BatchBuffer* ready, Carry* carry, int64_t b, bool end_of_epoch) {
  // Positions before the first one still carried are delivered or skipped.
  if (end_of_epoch) {
    delivered_positions_ = kAllPositions;
  } else {
    delivered_positions_ = carry->buffer != nullptr ? carry->positions.front()
                                                    : (b + 1) * int64_t{batch_size_};
  }
  good_delivered_ += ready->size;
  ready->index = delivered_batches_++;
  carry_ = std::move(*carry);
  *carry = Carry();
}

void BatchAssembler::KeepForPadding(BatchBuffer* buf) {
  if (!pads_ranks_) return;
  if (pad_source_ != nullptr && pad_source_->size >= batch_size_) return;
  if (pad_source_ == nullptr) {
    auto acquired = pool_->Acquire();
    if (!acquired.ok()) return;  // no padding then: the rank's epoch is shorter
    pad_source_ = acquired.value();
    pad_source_->size = 0;
  }
  for (int i = 0; i < buf->size && pad_source_->size < batch_size_; ++i) {
    // Out of memory (variable size): no more kept; the rank's epoch is shorter.
    if (!CopySample(buf, i, pad_source_, pad_source_->size).ok()) return;
    ++pad_source_->size;
  }
}

bool BatchAssembler::StartPadding(int64_t total, int carried) {
  if (!pads_ranks_ || pad_source_ == nullptr || pad_source_->size == 0) return false;
  if (drop_last_) total = total / batch_size_ * batch_size_;
  const int64_t missing = total - good_delivered_ - carried;
  if (missing <= 0) return false;
  pad_left_ = missing;
  pad_next_ = 0;
  return true;
}

Status BatchAssembler::FillPadded(BatchBuffer* batch) {
  good_delivered_ += batch->size;
  while (batch->size < batch_size_ && pad_left_ > 0) {
    Status copied = CopySample(pad_source_, static_cast<int>(pad_next_ % pad_source_->size),
                               batch, batch->size);
    if (!copied.ok()) {  // no memory for a variable-size sample
      pad_left_ = 0;
      return copied;
    }
    ++batch->size;
    ++pad_next_;
    --pad_left_;
    ++padded_;
  }
  delivered_positions_ = kAllPositions;
  batch->index = delivered_batches_++;
  return Status::OK();
}

}  // namespace stoker
