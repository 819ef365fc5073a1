// Copyright 2026 The stoker Authors.
//
// BatchRing: the hand-off between the workers and the consumer for one
// epoch. Workers claim positions in order (one atomic fetch_add); the first
// sample of batch b installs a buffer from the pool in slot b % slots once b
// is within `in_flight` batches of the consumer; each written sample counts
// the batch's remaining samples down, and the last one wakes the consumer,
// who takes the batches in order. The ring also holds the epoch's size, a
// stream's end (found by reading), the cancel flag and the epoch's failure
// (no memory for a batch).
//
// Thread-safety: the per-sample path (Claim past the first sample of a
// batch, Complete) takes no lock: a fetch_add, an acquire load of the slot
// and a fetch_sub; installing a batch and completing one take the loader
// lock. Methods named ...Locked(mu) need the loader lock held (see
// loader_lock.h); Claim/Complete/MarkStreamEnd are the workers' and take it
// when they must; the rest are the consumer's, under the lock. The epoch's
// sizes are set by BeginLocked before any worker runs and read freely.
#ifndef STOKER_PIPELINE_BATCH_RING_H_
#define STOKER_PIPELINE_BATCH_RING_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "pipeline/loader_lock.h"
#include "pipeline/loader_stats.h"
#include "stoker/batch.h"
#include "stoker/status.h"

namespace stoker {

class BatchRing : private SharesLoaderLock {
 public:
  // A stream's length before its end is found.
  static constexpr int64_t kUnbounded = int64_t{1} << 62;

  // `slots`: the ring's size (the in-flight ceiling); `pool` outlives it.
  BatchRing(LoaderLock* lock, int slots, int in_flight, BatchPool* pool, int batch_size);

  // --- Epoch set-up (no worker in the epoch) ---

  // Epoch `epoch` of `reader_size` positions (-1: a stream, whose end is
  // found by reading), its last batch dropped under `drop_last`: empty
  // slots, no position claimed, nothing taken, not cancelled, no failure.
  // `run` (>= 1): the most positions one Claim hands out (see Claim).
  void BeginLocked(Mutex* mu, int64_t epoch, int64_t reader_size, bool drop_last, int run = 1)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Batch b (< slots), made in part elsewhere (the next epoch's prefetch),
  // goes into its slot with `remaining` samples still to write.
  void InstallMadeLocked(Mutex* mu, int64_t b, BatchBuffer* buffer, int remaining)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Positions before `p` are claimed already (by the prefetch).
  void SkipPositionsLocked(Mutex* mu, int64_t p) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Wakes every worker and the consumer; workers stop claiming positions
  // and finish at most the sample in hand.
  void CancelLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Once no worker is in the epoch: the buffers in the slots go back.
  void ClearLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // --- Workers ---

  // A run of `count` consecutive positions from `position`, all in batch
  // `batch`, in slots slot .. slot + count - 1.
  struct Claimed {
    int64_t position = 0;
    int64_t batch = 0;
    int slot = 0;  // the first sample's index in its batch
    int count = 1;
    BatchBuffer* buffer = nullptr;
  };
  // Claims worker `index`'s next run of positions: up to the epoch's `run`
  // consecutive positions, never past its batch's end or the epoch's (one
  // compare-exchange for the run; with run 1, one position as before). Runs
  // make the per-sample shared atomics per-run when samples are cheap (the
  // Loader picks run > 1 for records without images, src/pipeline/README.md);
  // which slot a position fills is the same for any run and thread count, so
  // the output is too. Installs the run's batch (slot 0) or waits until it
  // is installed. A worker at or above `active` (the
  // tuner's count) parks first, holding no position, until it is active
  // again or every position is claimed. False: no position left (the epoch
  // is exhausted, cancelled, failed or past a stream's end). Time spent
  // waiting is counted in c->wait_ns.
  bool Claim(int index, const std::atomic<int>& active, WorkerCounters* c, Claimed* out)
      STOKER_LOCKS_EXCLUDED(mu_);
  // The claimed run's samples are written (or marked; all `count` of them,
  // or the epoch is cancelled); the batch's last wakes the consumer.
  void Complete(const Claimed& claimed) STOKER_LOCKS_EXCLUDED(mu_);
  // `position` is past the stream's end (the lowest such one wins).
  void MarkStreamEnd(int64_t position) STOKER_LOCKS_EXCLUDED(mu_);

  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Every position of the epoch is claimed.
  bool exhausted() const {
    return next_position_.load(std::memory_order_acquire) >= epoch_samples_;
  }
  int64_t stream_end() const { return stream_end_.load(std::memory_order_acquire); }
  int64_t epoch_samples() const { return epoch_samples_; }

  // --- The consumer, under the lock ---

  // Every batch of the epoch is taken.
  bool AllTakenLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Waits until the next batch is complete, or the epoch is cancelled,
  // failed, or the stream ended before it. With `poll`, calls it (without
  // the lock) every `poll_ms` while waiting and returns its error at once.
  // `*waited_ns`: the time waited (0 when the batch was ready).
  Status WaitNextLocked(Mutex* mu, const std::function<Status()>& poll, int poll_ms,
                        int64_t* waited_ns) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // No memory for a batch (OK when none).
  Status FailureLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The next batch starts at or after the stream's end.
  bool NextPastStreamEndLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Takes the next batch (complete) out of its slot; `*b`: its index. The
  // caller wakes the workers (a slot is free).
  BatchBuffer* TakeLocked(Mutex* mu, int64_t* b) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  int in_flight(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The queue's depth now: batches installed and not yet taken (`*installed`)
  // and, of those, the complete ones waiting in order for the consumer
  // (`*ready`). For stats(); a snapshot, the workers go on.
  void DepthLocked(Mutex* mu, int* installed, int* ready) const
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The tuner's depth (<= slots).
  void SetInFlightLocked(Mutex* mu, int in_flight) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  int slots() const { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    std::atomic<int64_t> batch{-1};  // batch index occupying the slot, -1 if free
    BatchBuffer* buffer = nullptr;   // written before `batch` is released
    std::atomic<int> remaining{0};   // samples of the batch not yet written
  };

  bool PastStreamEnd(int64_t b) const { return b * batch_size_ >= stream_end(); }
  bool NextReadyLocked() const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Install(int64_t b, WorkerCounters* c) STOKER_LOCKS_EXCLUDED(mu_);

  BatchPool* const pool_;
  const int64_t batch_size_;
  std::vector<Slot> slots_;
  // Set by BeginLocked before workers run.
  int64_t epoch_batches_ = 0;
  int64_t epoch_samples_ = 0;
  int64_t run_ = 1;
  int64_t epoch_ STOKER_GUARDED_BY(mu_) = 0;  // stamped on the buffers installed
  int64_t next_to_consume_ STOKER_GUARDED_BY(mu_) = 0;
  int in_flight_ STOKER_GUARDED_BY(mu_) = 1;
  Status failure_ STOKER_GUARDED_BY(mu_);
  std::atomic<int64_t> next_position_{0};
  std::atomic<int64_t> stream_end_{kUnbounded};
  std::atomic<bool> cancelled_{false};
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_BATCH_RING_H_
