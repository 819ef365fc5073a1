// Copyright 2026 The stoker Authors.
//
// The Loader's one lock: a mutex and the condition variables waited on
// under it, shared by the engine's units (BatchRing, NextEpochPrefetch,
// WorkerPool) and the Loader itself (pipeline/loader.cc).
//
// clang's thread-safety analysis names a lock by the expression that reaches
// it, so it cannot see that two units hold pointers to the same mutex. The
// units therefore follow one rule, which keeps both sides checked:
//   * a unit's state under the lock is STOKER_GUARDED_BY(mu_), its own
//     pointer to the loader mutex;
//   * a method called with the lock held is `FooLocked(Mutex* mu)`,
//     STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu): the caller must hold the mutex it
//     passes (checked at the call), and the method's first statement,
//     Held(mu), checks that it is this unit's (at run time: a pointer
//     comparison) and tells the analysis so for the rest of the method;
//   * a method that takes the lock itself locks mu_ and is
//     STOKER_LOCKS_EXCLUDED(mu_).
// This is LevelDB's VersionSet::LogAndApply(edit, mu) rule, made checkable.
#ifndef STOKER_PIPELINE_LOADER_LOCK_H_
#define STOKER_PIPELINE_LOADER_LOCK_H_

#include <cstdlib>

#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {

struct LoaderLock {
  Mutex mu;
  CondVar work;   // workers: a new epoch or prefetch, a batch installed, room in flight
  CondVar ready;  // the consumer: a batch completed, the stream ended, a failure
  CondVar idle;   // Start/Stop: a worker left the epoch or the prefetch
};

// Base of the units under the LoaderLock (see above).
class SharesLoaderLock {
 protected:
  explicit SharesLoaderLock(LoaderLock* lock) : lock_(lock), mu_(&lock->mu) {}

  // `mu`, held by the caller, is this unit's lock.
  void Held(const Mutex* mu) const STOKER_ASSERT_EXCLUSIVE_LOCK(mu_) {
    if (mu != mu_) std::abort();  // a unit was handed another loader's mutex
  }

  LoaderLock* const lock_;
  Mutex* const mu_;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_LOADER_LOCK_H_
