// Copyright 2026 The stoker Authors.
#include "pipeline/next_epoch_prefetch.h"

#include <algorithm>
#include <utility>

namespace stoker {

NextEpochPrefetch::NextEpochPrefetch(LoaderLock* lock, int capacity, int workers,
                                     BatchPool* pool, int batch_size)
    : SharesLoaderLock(lock),
      pool_(pool),
      batch_size_(batch_size),
      staged_(static_cast<size_t>(capacity)),
      counters_(static_cast<size_t>(workers)) {}

bool NextEpochPrefetch::ArmedLocked(Mutex* mu) const {
  Held(mu);
  return armed_;
}

int64_t NextEpochPrefetch::EpochLocked(Mutex* mu) const {
  Held(mu);
  return epoch_;
}

int64_t NextEpochPrefetch::RunningPaddedLocked(Mutex* mu) const {
  Held(mu);
  return running_padded_;
}

int64_t NextEpochPrefetch::discarded_batches(Mutex* mu) const {
  Held(mu);
  return discarded_;
}

NextEpochPrefetch::Made NextEpochPrefetch::Make(Source* source, const EpochSpec& spec,
                                                int64_t want, bool drop_last) const {
  Made m;
  auto reader = source->StartEpoch(spec);
  if (!reader.ok()) return m;
  m.reader = std::move(reader).value();
  if (!m.reader->random_access() || m.reader->size() <= 0) return m;
  const int64_t n = m.reader->size();
  const int64_t batches = drop_last ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  m.samples = std::min(n, batches * batch_size_);
  for (int64_t i = 0; i < std::min(want, batches); ++i) {
    auto acquired = pool_->Acquire();
    if (!acquired.ok()) break;  // no memory for more: that many fewer prefetched
    m.buffers.push_back(acquired.value());
  }
  return m;
}

void NextEpochPrefetch::Drop(Made* made) const {
  for (BatchBuffer* buf : made->buffers) pool_->Release(buf);
  made->buffers.clear();
}

std::unique_ptr<EpochReader> NextEpochPrefetch::ArmLocked(Mutex* mu, int64_t epoch, Made* made,
                                                          int64_t running_padded) {
  Held(mu);
  const int count = static_cast<int>(made->buffers.size());
  for (int i = 0; i < count; ++i) {
    BatchBuffer* buf = made->buffers[static_cast<size_t>(i)];
    buf->size = static_cast<int>(std::min<int64_t>(batch_size_, made->samples - i * batch_size_));
    buf->epoch = epoch;
    buf->index = i;
    staged_[static_cast<size_t>(i)].buffer = buf;
    staged_[static_cast<size_t>(i)].remaining.store(buf->size, std::memory_order_relaxed);
  }
  made->buffers.clear();
  running_padded_ = running_padded;
  armed_ = true;
  count_ = count;
  epoch_ = epoch;
  limit_ = std::min<int64_t>(made->samples, count * batch_size_);
  next_.store(0, std::memory_order_relaxed);
  cancel_.store(false, std::memory_order_relaxed);
  return std::move(made->reader);
}

void NextEpochPrefetch::Run(
    int index, const std::atomic<int>& active,
    const std::function<void(int64_t, int, BatchBuffer*, WorkerCounters*)>& produce) {
  WorkerCounters* c = &counters_[static_cast<size_t>(index)];
  while (!cancel_.load(std::memory_order_acquire)) {
    // Parked by the tuner: leaves it to the active ones (worker 0 is always active).
    if (index >= active.load(std::memory_order_relaxed)) return;
    const int64_t p = next_.fetch_add(1, std::memory_order_relaxed);
    if (p >= limit_) return;
    Staged& st = staged_[static_cast<size_t>(p / batch_size_)];
    produce(p, static_cast<int>(p % batch_size_), st.buffer, c);
    st.remaining.fetch_sub(1, std::memory_order_acq_rel);
  }
}

int64_t NextEpochPrefetch::AdoptLocked(Mutex* mu, BatchRing* ring, int64_t epoch_samples) {
  Held(mu);
  const int64_t claimed =
      std::min({next_.load(std::memory_order_acquire), limit_, epoch_samples});
  const int moved = static_cast<int>((claimed + batch_size_ - 1) / batch_size_);
  for (int i = 0; i < count_; ++i) {
    Staged& st = staged_[static_cast<size_t>(i)];
    if (i < moved) {
      ring->InstallMadeLocked(mu, i, st.buffer, st.remaining.load(std::memory_order_acquire));
    } else {
      pool_->Release(st.buffer);
    }
    st.buffer = nullptr;
  }
  count_ = 0;
  armed_ = false;
  return claimed;
}

void NextEpochPrefetch::DiscardLocked(Mutex* mu) {
  Held(mu);
  for (int i = 0; i < count_; ++i) {
    pool_->Release(staged_[static_cast<size_t>(i)].buffer);
    staged_[static_cast<size_t>(i)].buffer = nullptr;
  }
  discarded_ += count_;
  count_ = 0;
  armed_ = false;
}

void NextEpochPrefetch::FoldCountersLocked(Mutex* mu, std::vector<WorkerCounters>* into) {
  Held(mu);
  for (size_t i = 0; i < into->size(); ++i) {
    WorkerCounters& to = (*into)[i];
    WorkerCounters& from = counters_[i];
    for (auto field : {&WorkerCounters::read_ns, &WorkerCounters::decode_ns,
                       &WorkerCounters::augment_ns, &WorkerCounters::wait_ns,
                       &WorkerCounters::callback_ns, &WorkerCounters::images,
                       &WorkerCounters::skipped, &WorkerCounters::bytes}) {
      WorkerCounters::Add(to.*field, (from.*field).exchange(0, std::memory_order_relaxed));
    }
    for (int k = 0; k < kVideoCounters; ++k) {
      WorkerCounters::Add(to.video[k], from.video[k].exchange(0, std::memory_order_relaxed));
    }
  }
}

void NextEpochPrefetch::ReleaseLocked(Mutex* mu) {
  Held(mu);
  for (int i = 0; i < count_; ++i) pool_->Release(staged_[static_cast<size_t>(i)].buffer);
  count_ = 0;
}

}  // namespace stoker
