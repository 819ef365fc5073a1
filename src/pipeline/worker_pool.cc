// Copyright 2026 The stoker Authors.
#include "pipeline/worker_pool.h"

#include <unistd.h>

#include <new>
#include <string>

namespace stoker {

void WorkerPool::Start(const std::function<void(int)>& thread_main) {
  if (!threads_running_.empty()) return;
  owner_pid_ = ::getpid();
  threads_running_.reserve(static_cast<size_t>(threads_));
  for (int i = 0; i < threads_; ++i) threads_running_.emplace_back([thread_main, i] {
    thread_main(i);
  });
}

void WorkerPool::Serve(const Jobs& jobs) {
  uint64_t seen = 0;
  uint64_t seen_prefetch = 0;
  for (;;) {
    bool epoch_work = false;
    {
      MutexLock lock(mu_);
      while (!shutdown_ && !(epoch_open_ && generation_ != seen) &&
             !(prefetch_open_ && prefetch_generation_ != seen_prefetch)) {
        lock_->work.Wait(mu_);
      }
      if (shutdown_) return;
      epoch_work = epoch_open_ && generation_ != seen;
      if (epoch_work) {
        seen = generation_;
        ++busy_;
      } else {
        seen_prefetch = prefetch_generation_;
        ++prefetch_busy_;
      }
    }
    if (epoch_work) {
      jobs.epoch(seen);  // leaves the epoch (LeaveEpochLocked)
    } else {
      jobs.prefetch();
      MutexLock lock(mu_);
      --prefetch_busy_;
    }
    jobs.after();
    lock_->idle.SignalAll();
  }
}

void WorkerPool::Join() {
  {
    MutexLock lock(mu_);
    shutdown_ = true;
  }
  lock_->work.SignalAll();
  for (std::thread& t : threads_running_) t.join();
  threads_running_.clear();
}

void WorkerPool::OpenEpochLocked(Mutex* mu) {
  Held(mu);
  epoch_open_ = true;
  ++generation_;
}

void WorkerPool::CloseEpochLocked(Mutex* mu) {
  Held(mu);
  epoch_open_ = false;
}

bool WorkerPool::EpochOpenLocked(Mutex* mu) const {
  Held(mu);
  return epoch_open_;
}

bool WorkerPool::LastToLeaveLocked(Mutex* mu, uint64_t generation) const {
  Held(mu);
  return busy_ == 1 && generation == generation_ && !shutdown_;
}

bool WorkerPool::CurrentLocked(Mutex* mu, uint64_t generation) const {
  Held(mu);
  return generation == generation_ && !shutdown_;
}

uint64_t WorkerPool::GenerationLocked(Mutex* mu) const {
  Held(mu);
  return generation_;
}

void WorkerPool::LeaveEpochLocked(Mutex* mu) {
  Held(mu);
  --busy_;
}

void WorkerPool::AwaitEpochLeftLocked(Mutex* mu) {
  Held(mu);
  while (busy_ != 0) lock_->idle.Wait(mu_);
}

bool WorkerPool::AwaitEpochLeftForLocked(Mutex* mu, std::chrono::milliseconds timeout) {
  Held(mu);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (busy_ != 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    lock_->idle.WaitFor(mu_, deadline - now);
  }
  return true;
}

void WorkerPool::OpenPrefetchLocked(Mutex* mu) {
  Held(mu);
  prefetch_open_ = true;
  ++prefetch_generation_;
}

void WorkerPool::ClosePrefetchLocked(Mutex* mu) {
  Held(mu);
  prefetch_open_ = false;
}

void WorkerPool::AwaitPrefetchLeftLocked(Mutex* mu) {
  Held(mu);
  while (prefetch_busy_ != 0) lock_->idle.Wait(mu_);
}

bool WorkerPool::ForkedChild() const { return owner_pid_ != 0 && ::getpid() != owner_pid_; }

Status WorkerPool::CheckNotForked() const {
  if (!ForkedChild()) return Status::OK();
  return UnimplementedError(
      "this Loader's worker threads run in process " + std::to_string(owner_pid_) +
      ", and this is a forked child (pid " + std::to_string(::getpid()) +
      ") that cannot use them: create the Loader in the child (e.g. in the worker's "
      "initialiser or after the fork), or use the 'spawn' or 'forkserver' start method");
}

void WorkerPool::AbandonInForkedChild() {
  (void)new std::vector<std::thread>(std::move(threads_running_));
  threads_running_.clear();
  new (&lock_->mu) Mutex();
  new (&lock_->work) CondVar();
  new (&lock_->ready) CondVar();
  new (&lock_->idle) CondVar();
}

}  // namespace stoker
