// Copyright 2026 The stoker Authors.
//
// LoaderImpl's consumer side: Next() takes the workers' position batches
// from the ring in order and turns them into delivered batches through the
// BatchAssembler (skips closed, rank padding at the end). See loader_impl.h.
#include "pipeline/loader_impl.h"

#include <algorithm>
#include <memory>
#include <string>

#include "base/clock.h"
#include "pipeline/record_pad.h"
#include "trace/nvtx.h"

namespace stoker {
namespace {

// The consumer's hand-off span: one Next() call, recorded when it returns
// (with the batch it handed out, if any) while tracing.
struct HandoffSpan {
  Tracer* tracer = nullptr;
  TraceLane* lane = nullptr;  // null: not tracing
  int64_t start_ns = 0;
  const BatchPtr* out = nullptr;
  ~HandoffSpan() {
    if (lane == nullptr) return;
    Span s;
    s.start_ns = start_ns;
    s.end_ns = NowNs();
    s.kind = SpanKind::kHandoff;
    if (*out != nullptr) {
      s.batch = (*out)->index();
      s.epoch = (*out)->epoch();
      s.value = (*out)->size();
    }
    tracer->Record(lane, s);
  }
};

}  // namespace

// See BatchAssembler for how position batches become delivered ones.
Status LoaderImpl::Next(BatchPtr* out, bool* end, const std::function<Status()>& poll,
                        int poll_ms, uint64_t run) {
  STOKER_RETURN_IF_ERROR(workers_.CheckNotForked());
  *end = false;
  uint64_t generation = 0;
  {
    MutexLock lock(mu());
    generation = workers_.GenerationLocked(mu());
    if (run != kCurrentRun && run != generation) {
      // A stale consumer: the carry and the batches are the newer run's.
      *end = true;
      return Status::OK();
    }
  }
  Status s = NextOfRun(out, end, poll, poll_ms, generation);
  if (*end) {
    MutexLock lock(mu());
    if (workers_.CurrentLocked(mu(), generation)) consumer_left_ = true;
  }
  return s;
}

Status LoaderImpl::NextOfRun(BatchPtr* out, bool* end, const std::function<Status()>& poll,
                             int poll_ms, uint64_t generation) {
  nvtx::Range range("stoker.hand-off");
  TraceLane* lane = tracer_->on() ? tracer_->ThisThreadLane("stoker consumer") : nullptr;
  HandoffSpan handoff{tracer_.get(), lane, lane != nullptr ? NowNs() : 0, out};
  BatchAssembler::Carry carry;  // between calls it lives in assembler_
  bool padding = false;
  {
    MutexLock lock(mu());
    if (!workers_.CurrentLocked(mu(), generation)) {  // restarted since Next() began
      *end = true;
      return Status::OK();
    }
    carry = assembler_.TakeCarry();
    padding = assembler_.padding();
  }
  if (padding) return DeliverPadded(&carry, out);
  for (;;) {
    BatchBuffer* buf = nullptr;
    int64_t b = 0;
    Take took = Take::kStopped;
    Status st = TakeBatch(&buf, &b, &took, poll, poll_ms, handoff.lane, generation);
    if (!st.ok() || took == Take::kStopped) {
      if (carry.buffer != nullptr) {
        bool kept = false;
        {
          MutexLock lock(mu());  // a poll's error: the epoch goes on
          kept = workers_.EpochOpenLocked(mu()) && workers_.CurrentLocked(mu(), generation) &&
                 assembler_.PutBack(&carry);
        }
        if (!kept) pool_->Release(carry.buffer);
      }
      if (!st.ok()) return st;
      *end = true;
      return Status::OK();
    }
    if (took == Take::kEnd) return EndOfEpoch(&carry, out, end);
    // Not reader_: once this epoch is made, a worker swaps in the next
    // epoch's reader (cross-epoch prefetch) while the consumer still runs.
    const int64_t valid_end = epoch_random_access_ ? BatchRing::kUnbounded : ring_.stream_end();
    const int64_t t0 = handoff.lane != nullptr ? NowNs() : 0;
    nvtx::Range collate("stoker.collate");
    BatchBuffer* ready = BatchAssembler::Assemble(b, options_.batch_size, valid_end, buf, &carry,
                                                  pool_.get());
    collate.End();
    if (handoff.lane != nullptr) {
      Span s;
      s.start_ns = t0;
      s.end_ns = NowNs();
      s.kind = SpanKind::kCollate;
      s.batch = b;
      s.value = ready != nullptr ? ready->size : 0;
      tracer_->Record(handoff.lane, s);
    }
    if (ready == nullptr) continue;
    {
      MutexLock lock(mu());
      assembler_.KeepForPadding(ready);
      assembler_.Delivered(ready, &carry, b, /*end_of_epoch=*/false);
      stats_.AddBatch();
    }
    return Deliver(ready, out);
  }
}

// Next() at the epoch's end: what is carried is its last batch. With ranks
// under skip, the rank's missing samples are made up by repeating its first
// ones (DeliverPadded), so every rank delivers the batches it would without
// bad samples. An epoch in which nothing could be read is an error.
Status LoaderImpl::EndOfEpoch(BatchAssembler::Carry* carry, BatchPtr* out, bool* end) {
  Status all_bad;
  int64_t skipped_n = 0;
  int64_t epoch = 0;
  bool pad = false;
  {
    MutexLock lock(mu());
    if (carry->buffer != nullptr) assembler_.KeepForPadding(carry->buffer);
    epoch = cursor_.running_epoch();
    pad = assembler_.StartPadding(std::min(ring_.epoch_samples(), ring_.stream_end()),
                                  carry->buffer != nullptr ? carry->buffer->size : 0);
    if (!pad && carry->buffer == nullptr && assembler_.delivered_samples() == 0 &&
        cursor_.offset() == 0) {
      all_bad = skips_.FirstFailure();  // OK unless a sample was skipped
      skipped_n = stats_.EpochSkipped(counters_);
    }
  }
  if (pad) return DeliverPadded(carry, out);
  if (!all_bad.ok()) {
    return all_bad.WithContext("on_error=skip: no sample of epoch " + std::to_string(epoch) +
                               " could be read (" + std::to_string(skipped_n) +
                               " skipped); first failure");
  }
  BatchBuffer* last = carry->buffer;
  *carry = BatchAssembler::Carry();
  if (last == nullptr || (options_.drop_last && last->size < options_.batch_size)) {
    if (last != nullptr) pool_->Release(last);
    *end = true;
    return Status::OK();
  }
  {
    MutexLock lock(mu());
    assembler_.Delivered(last, carry, 0, /*end_of_epoch=*/true);
    stats_.AddBatch();
  }
  return Deliver(last, out);
}

// Ranks under skip: a batch of the samples still owed at the epoch's end,
// after the carried ones (counted in padded_samples).
Status LoaderImpl::DeliverPadded(BatchAssembler::Carry* carry, BatchPtr* out) {
  BatchBuffer* batch = carry->buffer;
  *carry = BatchAssembler::Carry();
  if (batch == nullptr) {
    auto acquired = pool_->Acquire();
    if (!acquired.ok()) {
      MutexLock lock(mu());
      assembler_.StopPadding();
      return acquired.status();
    }
    batch = acquired.value();
    batch->size = 0;
  }
  MutexLock lock(mu());
  batch->epoch = cursor_.running_epoch();
  Status filled = assembler_.FillPadded(batch);
  if (!filled.ok()) {
    pool_->Release(batch);
    return filled;
  }
  stats_.AddBatch();
  return Deliver(batch, out);
}

// Hands out a complete batch; collate="pad" pads its fields first (an error
// there drops the batch: its buffer goes back to the pool).
Status LoaderImpl::Deliver(BatchBuffer* buffer, BatchPtr* out) {
  *out = std::make_shared<Batch>(pool_, buffer);
  if (!HasPaddedFields(pool_->shape())) return Status::OK();
  Status padded = PadFields(buffer, options_.pad_value, options_.max_padded_bytes);
  if (!padded.ok()) out->reset();
  return padded;
}

// Takes the next position batch once its samples are written (the consumer's
// wait). kEnd: the epoch's positions are exhausted or the stream ended;
// kStopped: Stop() or Cancel() ran (another thread, or the epoch was already
// over), or the epoch is not `generation` any more. An
// error (a fatal one, a poll's, or under kRaise a bad sample's) stops the
// epoch.
Status LoaderImpl::TakeBatch(BatchBuffer** out, int64_t* index, Take* result,
                             const std::function<Status()>& poll, int poll_ms, TraceLane* lane,
                             uint64_t generation) {
  *out = nullptr;
  *result = Take::kStopped;
  MutexLock lock(mu());
  if (!workers_.EpochOpenLocked(mu()) || !workers_.CurrentLocked(mu(), generation)) {
    return Status::OK();
  }
  if (ring_.AllTakenLocked(mu())) {
    FinishEpochLocked();
    cursor_.Finish();
    *result = Take::kEnd;
    return Status::OK();
  }
  int64_t waited_ns = 0;
  nvtx::Range wait_range("stoker.wait");
  Status polled = ring_.WaitNextLocked(mu(), poll, poll_ms, &waited_ns);
  wait_range.End();
  stats_.AddConsumerWait(waited_ns);
  const int64_t waited_until = lane != nullptr ? NowNs() : 0;
  if (!polled.ok()) return polled;
  // Stop() closed the epoch, or another thread stopped it and started the
  // next while this one waited (Stop() and Start() from another thread): the
  // consumer stops here.
  if (!workers_.EpochOpenLocked(mu()) || !workers_.CurrentLocked(mu(), generation)) {
    return Status::OK();
  }
  Status failure = ring_.FailureLocked(mu());
  if (!failure.ok()) {
    lock.Unlock();
    Stop();
    return failure;
  }
  // Cancel() cancelled the ring, whose slots may be unfinished: stop here too.
  if (ring_.cancelled()) return Status::OK();
  if (ring_.NextPastStreamEndLocked(mu())) {  // the stream ended at the previous batch's end
    cursor_.Finish();
    lock.Unlock();
    Stop();
    *result = Take::kEnd;
    return Status::OK();
  }
  int64_t b = 0;
  BatchBuffer* buf = ring_.TakeLocked(mu(), &b);
  if (tuner_ != nullptr) TuneLocked(buf->size, waited_ns);
  if (lane != nullptr) {
    Span s;
    s.start_ns = waited_until - waited_ns;
    s.end_ns = waited_until;
    s.kind = SpanKind::kConsumerWait;
    s.batch = b;
    s.epoch = buf->epoch;
    const Stage short_stage = ShortStageLocked();
    s.value = static_cast<int32_t>(waited_ns > 0 ? short_stage : Stage::kNone);
    tracer_->Record(lane, s);
  }
  lock.Unlock();
  lock_.work.SignalAll();
  // Under kRaise a bad sample stops the epoch (skipped ones carry no error).
  for (int i = 0; i < buf->size; ++i) {
    if (!buf->errors()[i].ok()) {
      Status err = buf->errors()[i];
      pool_->Release(buf);
      Stop();
      return err;
    }
  }
  *out = buf;
  *index = b;
  *result = Take::kBatch;
  return Status::OK();
}

Stage LoaderImpl::ShortStageLocked() {
  const Totals now = stats_.Sum(counters_);
  const int64_t read = now.read_ns - busy_at_last_batch_.read_ns;
  const int64_t decode = now.decode_ns - busy_at_last_batch_.decode_ns;
  const int64_t augment = now.augment_ns - busy_at_last_batch_.augment_ns;
  busy_at_last_batch_ = now;
  if (read <= 0 && decode <= 0 && augment <= 0) return Stage::kNone;
  if (read >= decode && read >= augment) return Stage::kRead;
  return decode >= augment ? Stage::kDecode : Stage::kAugment;
}

// Feeds the batch just taken to the tuning window and applies the tuner's
// settings when a window closes. `measured_wait_ns`: how long the consumer
// waited (tuning_clock_ may replace it, and the time, in tests).
void LoaderImpl::TuneLocked(int images, int64_t measured_wait_ns) {
  const bool restart = epoch_restart_;
  epoch_restart_ = false;
  const int64_t waited_ns = tuning_clock_.waited_ns ? tuning_clock_.waited_ns(measured_wait_ns)
                                                    : measured_wait_ns;
  tuning_wait_ns_ += waited_ns;
  const int64_t now_ns = tuning_clock_.now_ns ? tuning_clock_.now_ns() : NowNs();
  const std::optional<TunerWindow> w =
      tuning_window_->OnBatch(now_ns, images, waited_ns, tuning_wait_ns_, restart);
  if (!w) return;
  const TunerSettings next = tuner_->Observe(*w);
  active_threads_.store(next.threads, std::memory_order_relaxed);
  ring_.SetInFlightLocked(mu(), next.prefetch);
  lock_.work.SignalAll();  // the caller notifies too; parked workers must see it
}

}  // namespace stoker
