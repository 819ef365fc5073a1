// Copyright 2026 The stoker Authors.
//
// NextEpochPrefetch: the next epoch's first batches, made while the consumer
// takes the running epoch's last ones (random-access sources; see
// src/pipeline/README.md, "No stall at epoch boundaries"). Once the last worker
// leaves an epoch that ended (not stopped), the Loader makes the next
// epoch's reader and arms the prefetch with up to the in-flight depth of
// batch buffers (ArmLocked); the workers then make its positions (Run). The
// next Start() adopts the batches into the ring when it starts that epoch
// from its beginning (AdoptLocked), and discards them otherwise
// (DiscardLocked, counted). Its work is counted apart and folded into the
// workers' counters when its epoch starts or it is discarded, so stats()
// never depend on how far it got.
//
// Thread-safety: ...Locked(mu) methods need the loader lock held
// (loader_lock.h). Run() is the workers', without the lock: the staged
// buffers and the position limit are set under the lock before any worker
// joins (WorkerPool's prefetch generation) and read freely after.
#ifndef STOKER_PIPELINE_NEXT_EPOCH_PREFETCH_H_
#define STOKER_PIPELINE_NEXT_EPOCH_PREFETCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "pipeline/batch_ring.h"
#include "pipeline/loader_lock.h"
#include "pipeline/loader_stats.h"
#include "stoker/batch.h"
#include "stoker/source.h"

namespace stoker {

class NextEpochPrefetch : private SharesLoaderLock {
 public:
  // Up to `capacity` batches (the ring's size), for `workers` workers;
  // `pool` outlives it.
  NextEpochPrefetch(LoaderLock* lock, int capacity, int workers, BatchPool* pool,
                    int batch_size);

  int capacity() const { return static_cast<int>(staged_.size()); }

  // Whether a prefetch is armed (made or being made), and of which epoch.
  bool ArmedLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  int64_t EpochLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The padded() of the epoch that was running when it was armed (its
  // reader was replaced by the next epoch's).
  int64_t RunningPaddedLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  int64_t discarded_batches(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // What arming needs, made without the lock (a permutation, a pinned
  // allocation): the next epoch's reader and up to `want` batch buffers.
  // No buffers when the reader failed (its error shows when that epoch
  // starts), is empty or is not random-access.
  struct Made {
    std::unique_ptr<EpochReader> reader;
    std::vector<BatchBuffer*> buffers;
    int64_t samples = 0;  // the epoch's positions
  };
  Made Make(Source* source, const EpochSpec& spec, int64_t want, bool drop_last) const;
  // Gives back what Make took (the plan changed meanwhile).
  void Drop(Made* made) const;
  // Arms it for `epoch` with `made`'s buffers (batch i gets positions
  // [i*B, i*B+B)); returns `made`'s reader, which the workers then read.
  // `running_padded`: see RunningPaddedLocked.
  std::unique_ptr<EpochReader> ArmLocked(Mutex* mu, int64_t epoch, Made* made,
                                         int64_t running_padded)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Worker `index` makes positions until they are all claimed, the prefetch
  // is cancelled, or the worker is parked (index >= active): `produce(p, s,
  // buf, c)` writes position p into slot s of buf, counting in c.
  void Run(int index, const std::atomic<int>& active,
           const std::function<void(int64_t, int, BatchBuffer*, WorkerCounters*)>& produce);
  // Its workers stop claiming positions (each finishes the sample in hand);
  // Reopen() once none is left.
  void Cancel() { cancel_.store(true, std::memory_order_release); }
  void Reopen() { cancel_.store(false, std::memory_order_relaxed); }

  // Start(): its epoch starts from the beginning. No prefetch worker runs.
  // The batches with a claimed position go into ring slots 0.. (a partly
  // made one completes there), the others back to the pool; the ring's
  // workers continue at the first position not claimed (returned).
  // `epoch_samples`: the epoch's positions.
  int64_t AdoptLocked(Mutex* mu, BatchRing* ring, int64_t epoch_samples)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Drops the batches (another epoch starts, or a resume); counted in
  // discarded_batches. No prefetch worker runs.
  void DiscardLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Adds its counters to the workers' (`into`, one per worker). No prefetch
  // worker runs.
  void FoldCountersLocked(Mutex* mu, std::vector<WorkerCounters>* into)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The Loader's destructor: the buffers go back.
  void ReleaseLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

 private:
  struct Staged {
    BatchBuffer* buffer = nullptr;  // set under the lock before workers join
    std::atomic<int> remaining{0};  // samples not yet written
  };

  BatchPool* const pool_;
  const int64_t batch_size_;
  std::vector<Staged> staged_;
  std::vector<WorkerCounters> counters_;  // per worker, the prefetch's work
  int count_ STOKER_GUARDED_BY(mu_) = 0;  // buffers in staged_
  bool armed_ STOKER_GUARDED_BY(mu_) = false;
  int64_t epoch_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t running_padded_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t discarded_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t limit_ = 0;  // positions to make; set before workers join
  std::atomic<int64_t> next_{0};
  std::atomic<bool> cancel_{false};
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_NEXT_EPOCH_PREFETCH_H_
