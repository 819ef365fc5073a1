// Copyright 2026 The stoker Authors.
//
// WorkerPool: the Loader's worker threads and their lifecycle. The threads
// are started on the first Start() and live until the Loader dies; between
// jobs they sleep on the loader lock's `work` condition variable. Two kinds
// of job are posted under the lock: an epoch (every worker joins it once per
// generation; busy() counts those inside) and the next epoch's prefetch
// (workers join it while it is open; prefetch_busy() counts them). A worker
// that leaves a job signals `idle`, which Start() and Stop() wait on.
//
// Fork safety: the threads belong to the process that started them. A forked
// child inherits the Loader's memory but none of its threads (and perhaps a
// mutex held by one of them): ForkedChild() tells the Loader, which then
// refuses to iterate (CheckNotForked) and, when destroyed there, abandons
// the threads and the lock instead of joining and destroying them.
//
// Thread-safety: ...Locked(mu) methods need the loader lock held
// (loader_lock.h). Start() and Join() are the consumer's (Start, the
// destructor); ForkedChild() and CheckNotForked() are safe anywhere.
#ifndef STOKER_PIPELINE_WORKER_POOL_H_
#define STOKER_PIPELINE_WORKER_POOL_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "pipeline/loader_lock.h"
#include "stoker/status.h"

namespace stoker {

class WorkerPool : private SharesLoaderLock {
 public:
  // What worker `index` runs for a job: `epoch(generation)` for an epoch
  // (it must call LeaveEpochLocked once done), `prefetch()` for the prefetch,
  // then `after()` (outside the lock) when it leaves either.
  struct Jobs {
    std::function<void(uint64_t generation)> epoch;
    std::function<void()> prefetch;
    std::function<void()> after;
  };

  WorkerPool(LoaderLock* lock, int threads) : SharesLoaderLock(lock), threads_(threads) {}
  // Destroy after Join() (or AbandonInForkedChild()).
  ~WorkerPool() = default;

  int threads() const { return threads_; }

  // Starts the threads (once); `thread_main(index)` makes the worker's own
  // state and calls Serve(index, jobs) with it.
  void Start(const std::function<void(int)>& thread_main);
  // The loop a worker thread runs until shutdown.
  void Serve(const Jobs& jobs) STOKER_LOCKS_EXCLUDED(mu_);
  // Shuts the workers down (they leave at their next wake-up) and joins them.
  void Join() STOKER_LOCKS_EXCLUDED(mu_);

  // An epoch is open: every worker joins it once.
  void OpenEpochLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The epoch is over (ended or stopped): no worker joins it any more.
  void CloseEpochLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  bool EpochOpenLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Whether the worker leaving epoch `generation` is its last, in the
  // generation still current, and the pool is not shutting down.
  bool LastToLeaveLocked(Mutex* mu, uint64_t generation) const
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  bool CurrentLocked(Mutex* mu, uint64_t generation) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The generation of the epoch opened last (each OpenEpochLocked adds one).
  uint64_t GenerationLocked(Mutex* mu) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void LeaveEpochLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Waits until no worker is inside an epoch.
  void AwaitEpochLeftLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The same, giving up after `timeout`: whether no worker is inside one.
  bool AwaitEpochLeftForLocked(Mutex* mu, std::chrono::milliseconds timeout)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // The prefetch is open: each worker joins it once.
  void OpenPrefetchLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void ClosePrefetchLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Waits until no worker is inside the prefetch.
  void AwaitPrefetchLeftLocked(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // Fork safety (see above).
  bool ForkedChild() const;
  Status CheckNotForked() const;
  // In a forked child's destructor: leaks the thread handles and gives the
  // lock fresh primitives to destroy (the inherited ones may be held, or
  // count waiters that will never wake).
  void AbandonInForkedChild();

 private:
  const int threads_;
  bool shutdown_ STOKER_GUARDED_BY(mu_) = false;
  bool epoch_open_ STOKER_GUARDED_BY(mu_) = false;
  uint64_t generation_ STOKER_GUARDED_BY(mu_) = 0;
  int busy_ STOKER_GUARDED_BY(mu_) = 0;  // workers in an epoch
  bool prefetch_open_ STOKER_GUARDED_BY(mu_) = false;
  uint64_t prefetch_generation_ STOKER_GUARDED_BY(mu_) = 0;
  int prefetch_busy_ STOKER_GUARDED_BY(mu_) = 0;  // workers in the prefetch
  pid_t owner_pid_ = 0;  // the process that started the threads (0: none yet)
  std::vector<std::thread> threads_running_;
};

// MutexLock, except in a forked child (`forked`): no other thread exists
// there, and the mutex may have been inherited locked by a thread of the
// parent, so it is not taken; the caller has the members to itself all the
// same. The analysis cannot follow a lock taken on a condition, so this
// scope tells it the mutex is held either way (the constructor and
// destructor are not analysed), and the functions that use it stay checked.
class STOKER_SCOPED_CAPABILITY MutexLockUnlessForked {
 public:
  MutexLockUnlessForked(Mutex* mu, bool forked) STOKER_EXCLUSIVE_LOCK_FUNCTION(mu)
      STOKER_NO_THREAD_SAFETY_ANALYSIS : mu_(forked ? nullptr : mu) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~MutexLockUnlessForked() STOKER_UNLOCK_FUNCTION() STOKER_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  MutexLockUnlessForked(const MutexLockUnlessForked&) = delete;
  MutexLockUnlessForked& operator=(const MutexLockUnlessForked&) = delete;

 private:
  Mutex* const mu_;  // null: not taken (forked child)
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_WORKER_POOL_H_
