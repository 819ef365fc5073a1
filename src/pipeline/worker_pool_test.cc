// Copyright 2026 The stoker Authors.
#include "pipeline/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace stoker {
namespace {

constexpr int kThreads = 3;

// A pool of kThreads workers whose epoch job records (generation, worker)
// and, with `meet`, waits inside until every worker is in (a latch), so that
// exactly one of them leaves last.
struct Pool {
  explicit Pool(bool meet = false) : pool(&lock, kThreads), meet(meet) {
    pool.Start([this](int index) {
      WorkerPool::Jobs jobs;
      jobs.epoch = [this, index](uint64_t generation) {
        MutexLock l(&lock.mu);
        joined[generation].push_back(index);
        if (this->meet) {
          ++inside;
          lock.work.SignalAll();
          while (inside < kThreads) lock.work.Wait(&lock.mu);
        }
        if (pool.LastToLeaveLocked(&lock.mu, generation)) ++last_leavers[generation];
        pool.LeaveEpochLocked(&lock.mu);
      };
      jobs.prefetch = [this, index] {
        MutexLock l(&lock.mu);
        prefetched.push_back(index);
      };
      jobs.after = [this] {
        MutexLock l(&lock.mu);
        ++afters;
      };
      pool.Serve(jobs);
    });
  }
  ~Pool() { pool.Join(); }

  // Opens an epoch, waits until every worker has been in and left it, and
  // closes it; returns its generation.
  uint64_t RunEpoch() {
    MutexLock l(&lock.mu);
    inside = 0;
    pool.OpenEpochLocked(&lock.mu);
    const uint64_t g = pool.GenerationLocked(&lock.mu);
    lock.work.SignalAll();
    while (joined[g].size() < kThreads) lock.idle.Wait(&lock.mu);
    pool.AwaitEpochLeftLocked(&lock.mu);
    pool.CloseEpochLocked(&lock.mu);
    return g;
  }

  LoaderLock lock;
  WorkerPool pool;
  const bool meet;
  int inside STOKER_GUARDED_BY(lock.mu) = 0;
  std::map<uint64_t, std::vector<int>> joined STOKER_GUARDED_BY(lock.mu);
  std::map<uint64_t, int> last_leavers STOKER_GUARDED_BY(lock.mu);
  std::vector<int> prefetched STOKER_GUARDED_BY(lock.mu);
  int afters STOKER_GUARDED_BY(lock.mu) = 0;
};

TEST(WorkerPoolTest, EveryWorkerJoinsEachEpochOnce) {
  Pool p;
  const uint64_t first = p.RunEpoch();
  const uint64_t second = p.RunEpoch();
  EXPECT_EQ(second, first + 1);
  MutexLock l(&p.lock.mu);
  for (uint64_t g : {first, second}) {
    std::vector<int> who = p.joined[g];
    std::sort(who.begin(), who.end());
    EXPECT_EQ(who, (std::vector<int>{0, 1, 2})) << "generation " << g;
  }
  EXPECT_EQ(p.joined.size(), 2u);
  // `after` runs once per job left; the last may still be on its way out.
  p.pool.AwaitEpochLeftLocked(&p.lock.mu);
  while (p.afters < 2 * kThreads) p.lock.idle.Wait(&p.lock.mu);
  EXPECT_EQ(p.afters, 2 * kThreads);
}

TEST(WorkerPoolTest, ExactlyOneWorkerLeavesEachEpochLast) {
  Pool p(/*meet=*/true);
  const uint64_t g = p.RunEpoch();
  const uint64_t h = p.RunEpoch();
  MutexLock l(&p.lock.mu);
  EXPECT_EQ(p.last_leavers[g], 1);
  EXPECT_EQ(p.last_leavers[h], 1);
}

TEST(WorkerPoolTest, APrefetchIsJoinedOncePerWorker) {
  Pool p;
  MutexLock l(&p.lock.mu);
  p.pool.OpenPrefetchLocked(&p.lock.mu);
  p.lock.work.SignalAll();
  while (p.prefetched.size() < kThreads) p.lock.idle.Wait(&p.lock.mu);
  p.pool.AwaitPrefetchLeftLocked(&p.lock.mu);
  p.pool.ClosePrefetchLocked(&p.lock.mu);
  std::vector<int> who = p.prefetched;
  std::sort(who.begin(), who.end());
  EXPECT_EQ(who, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(p.joined.empty());  // no epoch was opened
}

TEST(WorkerPoolTest, AGenerationIsCurrentUntilTheNextEpochOpens) {
  LoaderLock lock;
  WorkerPool pool(&lock, 1);  // never started: the generation logic alone
  MutexLock l(&lock.mu);
  EXPECT_FALSE(pool.EpochOpenLocked(&lock.mu));
  pool.OpenEpochLocked(&lock.mu);
  const uint64_t g = pool.GenerationLocked(&lock.mu);
  EXPECT_TRUE(pool.EpochOpenLocked(&lock.mu));
  EXPECT_TRUE(pool.CurrentLocked(&lock.mu, g));
  pool.CloseEpochLocked(&lock.mu);
  pool.OpenEpochLocked(&lock.mu);
  EXPECT_FALSE(pool.CurrentLocked(&lock.mu, g));
  EXPECT_TRUE(pool.CurrentLocked(&lock.mu, g + 1));
  EXPECT_FALSE(pool.ForkedChild());
  EXPECT_TRUE(pool.CheckNotForked().ok());
}

}  // namespace
}  // namespace stoker
