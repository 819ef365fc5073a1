// Copyright 2026 The stoker Authors.
//
// An annotated mutex, its scoped lock and a condition variable, for clang's
// thread-safety analysis (stoker/thread_annotations.h). libstdc++'s std::mutex
// carries no annotations, so members cannot be GUARDED_BY one; these thin
// wrappers over std::mutex and std::condition_variable can (LevelDB's
// port::Mutex / port::CondVar, Abseil's absl::Mutex play the same part). They
// add no state and no cost beyond the std types.
//
//   Mutex mu_;
//   CondVar cv_;
//   int n_ STOKER_GUARDED_BY(mu_) = 0;
//   ...
//   MutexLock lock(&mu_);
//   while (n_ == 0) cv_.Wait(&mu_);  // a loop, not a predicate lambda: the
//                                    // analysis sees the lock held here, not
//                                    // inside a lambda
//
// Thread-safety: Mutex and CondVar are for use from many threads; a MutexLock
// belongs to the thread that made it.
#ifndef STOKER_MUTEX_H_
#define STOKER_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "stoker/thread_annotations.h"

namespace stoker {

class STOKER_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() STOKER_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() STOKER_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis the caller holds the lock (no run-time check: std::mutex
  // cannot tell); for code it cannot follow, e.g. a callback run under the lock.
  void AssertHeld() STOKER_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock()/Lock() let go of it
// and take it again inside the scope.
class STOKER_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) STOKER_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() STOKER_UNLOCK_FUNCTION() {
    if (locked_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() STOKER_UNLOCK_FUNCTION() {
    mu_->Unlock();
    locked_ = false;
  }
  void Lock() STOKER_EXCLUSIVE_LOCK_FUNCTION() {
    mu_->Lock();
    locked_ = true;
  }

 private:
  Mutex* const mu_;
  bool locked_ = true;
};

// A condition variable. The waiter passes the Mutex it holds, so the analysis
// checks that it holds it.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu`, waits for a Signal (or a spurious wake-up) and takes `mu`
  // again: call in a loop that re-checks the condition.
  void Wait(Mutex* mu) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock releases it
  }
  // As Wait(), giving up after `timeout`; returns false when it timed out.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace stoker

#endif  // STOKER_MUTEX_H_
