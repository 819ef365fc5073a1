// Copyright 2026 The stoker Authors.
#include "pipeline/batch_ring.h"

#include <algorithm>

#include "base/clock.h"

namespace stoker {

BatchRing::BatchRing(LoaderLock* lock, int slots, int in_flight, BatchPool* pool, int batch_size)
    : SharesLoaderLock(lock),
      pool_(pool),
      batch_size_(batch_size),
      slots_(static_cast<size_t>(slots)) {
  MutexLock l(mu_);
  in_flight_ = in_flight;
}

void BatchRing::BeginLocked(Mutex* mu, int64_t epoch, int64_t reader_size, bool drop_last,
                            int run) {
  Held(mu);
  run_ = std::max(1, run);
  const int64_t n = reader_size;
  const int64_t b = batch_size_;
  if (n < 0) {  // a stream: the end is found by reading (stream_end_)
    epoch_batches_ = kUnbounded / b;
    epoch_samples_ = epoch_batches_ * b;
  } else {
    epoch_batches_ = drop_last ? n / b : (n + b - 1) / b;
    epoch_samples_ = std::min(n, epoch_batches_ * b);
  }
  epoch_ = epoch;
  stream_end_.store(kUnbounded, std::memory_order_relaxed);
  next_position_.store(0, std::memory_order_relaxed);
  cancelled_.store(false, std::memory_order_relaxed);
  next_to_consume_ = 0;
  failure_ = Status::OK();
  for (Slot& s : slots_) {
    s.batch.store(-1, std::memory_order_relaxed);
    s.buffer = nullptr;
  }
}

void BatchRing::InstallMadeLocked(Mutex* mu, int64_t b, BatchBuffer* buffer, int remaining) {
  Held(mu);
  Slot& slot = slots_[static_cast<size_t>(b)];
  slot.buffer = buffer;
  slot.remaining.store(remaining, std::memory_order_relaxed);
  slot.batch.store(b, std::memory_order_relaxed);
}

void BatchRing::SkipPositionsLocked(Mutex* mu, int64_t p) {
  Held(mu);
  next_position_.store(p, std::memory_order_relaxed);
}

void BatchRing::CancelLocked(Mutex* mu) {
  Held(mu);
  cancelled_.store(true, std::memory_order_release);
  lock_->work.SignalAll();
  lock_->ready.SignalAll();
}

void BatchRing::ClearLocked(Mutex* mu) {
  Held(mu);
  for (Slot& s : slots_) {
    if (s.buffer != nullptr) pool_->Release(s.buffer);
    s.buffer = nullptr;
    s.batch.store(-1, std::memory_order_relaxed);
  }
}

bool BatchRing::Claim(int index, const std::atomic<int>& active, WorkerCounters* c,
                      Claimed* out) {
  const size_t k = slots_.size();
  while (!cancelled_.load(std::memory_order_acquire)) {
    if (index >= active.load(std::memory_order_relaxed)) {
      // Parked by the tuner: holds no position, so nothing waits on it.
      // Leaves when every position is claimed (the epoch's end may then
      // start the next epoch's prefetch, which waits for all workers).
      MutexLock lock(mu_);
      while (!cancelled_.load(std::memory_order_relaxed) &&
             index >= active.load(std::memory_order_relaxed) &&
             next_position_.load(std::memory_order_relaxed) < epoch_samples_) {
        lock_->work.Wait(mu_);
      }
      if (next_position_.load(std::memory_order_relaxed) >= epoch_samples_) return false;
      continue;
    }
    // The run [p, end): up to run_ positions, not past p's batch or the epoch.
    int64_t p = next_position_.load(std::memory_order_relaxed);
    int64_t end = 0;
    do {
      if (p >= epoch_samples_) return false;
      end = std::min({p + run_, (p / batch_size_ + 1) * batch_size_, epoch_samples_});
    } while (!next_position_.compare_exchange_weak(p, end, std::memory_order_relaxed));
    if (end == epoch_samples_) {  // the last claim wakes parked workers: none is left
      { MutexLock lock(mu_); }
      lock_->work.SignalAll();
    }
    const int64_t b = p / batch_size_;
    const int s = static_cast<int>(p % batch_size_);
    if (PastStreamEnd(b)) return false;
    Slot& slot = slots_[b % k];
    if (s == 0) {
      if (!Install(b, c)) return false;
    } else if (slot.batch.load(std::memory_order_acquire) != b) {
      const int64_t t0 = NowNs();
      MutexLock lock(mu_);
      while (!cancelled_.load(std::memory_order_relaxed) && !PastStreamEnd(b) &&
             slot.batch.load(std::memory_order_acquire) != b) {
        lock_->work.Wait(mu_);
      }
      c->Add(c->wait_ns, NowNs() - t0);
      if (cancelled_.load(std::memory_order_relaxed) ||
          slot.batch.load(std::memory_order_acquire) != b) {
        return false;
      }
    }
    out->position = p;
    out->batch = b;
    out->slot = s;
    out->count = static_cast<int>(end - p);
    out->buffer = slot.buffer;
    return true;
  }
  return false;
}

// Waits until batch b may be in flight (b - in_flight has been taken by the
// consumer), then gives it a buffer. False when cancelled.
bool BatchRing::Install(int64_t b, WorkerCounters* c) {
  const int64_t t0 = NowNs();
  {
    MutexLock lock(mu_);
    while (!cancelled_.load(std::memory_order_relaxed) && !PastStreamEnd(b) &&
           b >= next_to_consume_ + in_flight_) {
      lock_->work.Wait(mu_);
    }
    if (cancelled_.load(std::memory_order_relaxed) || PastStreamEnd(b)) return false;
  }
  c->Add(c->wait_ns, NowNs() - t0);
  auto acquired = pool_->Acquire();
  MutexLock lock(mu_);
  if (!acquired.ok()) {
    // Out of memory for batches: surface it through the consumer.
    failure_ = acquired.status();
    cancelled_.store(true, std::memory_order_release);
    lock_->ready.SignalAll();
    lock_->work.SignalAll();
    return false;
  }
  BatchBuffer* buf = acquired.value();
  if (cancelled_.load(std::memory_order_relaxed)) {
    pool_->Release(buf);
    return false;
  }
  const int size = static_cast<int>(std::min(batch_size_, epoch_samples_ - b * batch_size_));
  buf->size = size;
  buf->epoch = epoch_;
  buf->index = b;
  Slot& slot = slots_[b % static_cast<int64_t>(slots_.size())];
  slot.buffer = buf;
  slot.remaining.store(size, std::memory_order_relaxed);
  slot.batch.store(b, std::memory_order_release);
  lock.Unlock();
  lock_->work.SignalAll();
  return true;
}

void BatchRing::Complete(const Claimed& claimed) {
  Slot& slot = slots_[claimed.batch % static_cast<int64_t>(slots_.size())];
  if (slot.remaining.fetch_sub(claimed.count, std::memory_order_acq_rel) == claimed.count) {
    MutexLock lock(mu_);
    lock_->ready.SignalAll();
  }
}

void BatchRing::MarkStreamEnd(int64_t position) {
  int64_t cur = stream_end_.load(std::memory_order_relaxed);
  while (position < cur &&
         !stream_end_.compare_exchange_weak(cur, position, std::memory_order_acq_rel)) {
  }
  if (position < cur) {
    MutexLock lock(mu_);
    lock_->work.SignalAll();
    lock_->ready.SignalAll();
  }
}

bool BatchRing::AllTakenLocked(Mutex* mu) const {
  Held(mu);
  return next_to_consume_ >= epoch_batches_;
}

// Whether the consumer may go on with the next batch: it is complete, or the
// epoch was cancelled (Stop() on another thread while this one waited),
// failed, or the stream ended before it.
bool BatchRing::NextReadyLocked() const {
  const int64_t b = next_to_consume_;
  const Slot& slot = slots_[b % static_cast<int64_t>(slots_.size())];
  return cancelled_.load(std::memory_order_acquire) || !failure_.ok() || PastStreamEnd(b) ||
         (slot.batch.load(std::memory_order_acquire) == b &&
          slot.remaining.load(std::memory_order_acquire) == 0);
}

Status BatchRing::WaitNextLocked(Mutex* mu, const std::function<Status()>& poll, int poll_ms,
                                 int64_t* waited_ns) {
  Held(mu);
  *waited_ns = 0;
  if (NextReadyLocked()) return Status::OK();
  const int64_t t0 = NowNs();
  if (!poll) {
    while (!NextReadyLocked()) lock_->ready.Wait(mu_);
  } else {
    // ready.wait_for(timeout, NextReadyLocked) as a loop the analysis
    // follows; spurious wake-ups do not extend a period.
    for (;;) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(poll_ms);
      bool ready = NextReadyLocked();
      while (!ready) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= left.zero() || !lock_->ready.WaitFor(mu_, left)) {
          ready = NextReadyLocked();  // timed out
          break;
        }
        ready = NextReadyLocked();
      }
      if (ready) break;
      mu->Unlock();
      Status polled = poll();
      mu->Lock();
      if (!polled.ok()) {
        *waited_ns = NowNs() - t0;
        return polled;
      }
    }
  }
  *waited_ns = NowNs() - t0;
  return Status::OK();
}

Status BatchRing::FailureLocked(Mutex* mu) const {
  Held(mu);
  return failure_;
}

bool BatchRing::NextPastStreamEndLocked(Mutex* mu) const {
  Held(mu);
  return PastStreamEnd(next_to_consume_);
}

BatchBuffer* BatchRing::TakeLocked(Mutex* mu, int64_t* b) {
  Held(mu);
  *b = next_to_consume_;
  Slot& slot = slots_[*b % static_cast<int64_t>(slots_.size())];
  BatchBuffer* buf = slot.buffer;
  slot.buffer = nullptr;
  slot.batch.store(-1, std::memory_order_release);
  ++next_to_consume_;
  return buf;
}

void BatchRing::DepthLocked(Mutex* mu, int* installed, int* ready) const {
  Held(mu);
  *installed = 0;
  *ready = 0;
  bool in_order = true;
  const int64_t n = static_cast<int64_t>(slots_.size());
  for (int64_t b = next_to_consume_; b < next_to_consume_ + n; ++b) {
    const Slot& slot = slots_[b % n];
    if (slot.batch.load(std::memory_order_acquire) != b) {
      in_order = false;
      continue;
    }
    ++*installed;
    in_order = in_order && slot.remaining.load(std::memory_order_acquire) == 0;
    if (in_order) ++*ready;
  }
}

int BatchRing::in_flight(Mutex* mu) const {
  Held(mu);
  return in_flight_;
}

void BatchRing::SetInFlightLocked(Mutex* mu, int in_flight) {
  Held(mu);
  in_flight_ = in_flight;
}

}  // namespace stoker
