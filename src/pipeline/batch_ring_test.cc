// Copyright 2026 The stoker Authors.
#include "pipeline/batch_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "testing/loader_fixtures.h"

namespace stoker {
namespace {

constexpr int kBatch = 4;

std::shared_ptr<BatchPool> Pool() { return testing::BareBatchPool(kBatch); }

// A ring of `slots` over a pool, with the lock it shares and one active worker.
struct Ring {
  explicit Ring(int slots, int in_flight)
      : pool(Pool()), ring(&lock, slots, in_flight, pool.get(), kBatch) {}
  void Begin(int64_t epoch, int64_t size, bool drop_last, int run = 1) {
    MutexLock l(&lock.mu);
    ring.BeginLocked(&lock.mu, epoch, size, drop_last, run);
  }
  bool Claim(BatchRing::Claimed* out, int index = 0) {
    return ring.Claim(index, active, &counters, out);
  }
  // Takes the next batch (waiting for it) and frees its slot; -1 when the
  // ring says it is not ready (cancelled, failed, past a stream's end).
  int64_t Take() {
    MutexLock l(&lock.mu);
    int64_t waited = 0;
    EXPECT_TRUE(ring.WaitNextLocked(&lock.mu, nullptr, 0, &waited).ok());
    if (ring.cancelled() || ring.NextPastStreamEndLocked(&lock.mu)) return -1;
    int64_t b = -1;
    BatchBuffer* buf = ring.TakeLocked(&lock.mu, &b);
    EXPECT_EQ(buf->index, b);
    pool->Release(buf);
    lock.work.SignalAll();
    return b;
  }
  ~Ring() {
    MutexLock l(&lock.mu);
    ring.ClearLocked(&lock.mu);
  }

  LoaderLock lock;
  std::shared_ptr<BatchPool> pool;
  BatchRing ring;
  std::atomic<int> active{1};
  WorkerCounters counters;
};

TEST(BatchRingTest, ClaimsPositionsInOrderAndTheConsumerTakesBatchesInOrder) {
  Ring r(/*slots=*/4, /*in_flight=*/3);
  r.Begin(/*epoch=*/7, /*size=*/10, /*drop_last=*/false);
  std::vector<BatchRing::Claimed> claims;
  BatchRing::Claimed c;
  while (r.Claim(&c)) claims.push_back(c);
  ASSERT_EQ(claims.size(), 10u);
  for (int p = 0; p < 10; ++p) {
    const BatchRing::Claimed& k = claims[static_cast<size_t>(p)];
    EXPECT_EQ(k.position, p);
    EXPECT_EQ(k.batch, p / kBatch);
    EXPECT_EQ(k.slot, p % kBatch);
    EXPECT_EQ(k.count, 1);
    EXPECT_EQ(k.buffer->epoch, 7);
    EXPECT_EQ(k.buffer->index, p / kBatch);
    EXPECT_EQ(k.buffer->size, p < 8 ? kBatch : 2);  // the last batch is short
  }
  EXPECT_TRUE(r.ring.exhausted());
  // Completed last batch first: none is ready until batch 0 is, then all.
  auto depth = [&r] {
    int installed = 0, ready = 0;
    MutexLock l(&r.lock.mu);
    r.ring.DepthLocked(&r.lock.mu, &installed, &ready);
    return std::make_pair(installed, ready);
  };
  for (int p = 9; p >= 0; --p) {
    EXPECT_EQ(depth(), std::make_pair(3, 0)) << p;
    r.ring.Complete(claims[static_cast<size_t>(p)]);
  }
  EXPECT_EQ(depth(), std::make_pair(3, 3));
  EXPECT_EQ(r.Take(), 0);
  EXPECT_EQ(r.Take(), 1);
  EXPECT_EQ(r.Take(), 2);
  MutexLock l(&r.lock.mu);
  EXPECT_TRUE(r.ring.AllTakenLocked(&r.lock.mu));
}

TEST(BatchRingTest, DropLastLeavesTheShortBatchOut) {
  Ring r(4, 4);
  r.Begin(0, 10, /*drop_last=*/true);
  EXPECT_EQ(r.ring.epoch_samples(), 8);
  int n = 0;
  BatchRing::Claimed c;
  while (r.Claim(&c)) {
    ++n;
    r.ring.Complete(c);
  }
  EXPECT_EQ(n, 8);
}

TEST(BatchRingTest, ARunNeverCrossesItsBatchOrTheEpoch) {
  Ring r(4, 4);
  r.Begin(0, 10, false, /*run=*/3);
  std::vector<std::pair<int64_t, int>> runs;
  BatchRing::Claimed c;
  while (r.Claim(&c)) {
    runs.emplace_back(c.position, c.count);
    EXPECT_EQ(c.slot, c.position % kBatch);
    r.ring.Complete(c);
  }
  EXPECT_EQ(runs, (std::vector<std::pair<int64_t, int>>{{0, 3}, {3, 1}, {4, 3}, {7, 1}, {8, 2}}));
}

TEST(BatchRingTest, AWorkerPastTheInFlightDepthWaitsForTheConsumer) {
  Ring r(2, /*in_flight=*/1);
  r.Begin(0, 8, false);
  BatchRing::Claimed c;
  for (int p = 0; p < kBatch; ++p) {
    ASSERT_TRUE(r.Claim(&c));
    r.ring.Complete(c);
  }
  std::atomic<bool> taken{false};
  std::atomic<bool> taken_when_claimed{false};
  std::atomic<bool> about_to_claim{false};
  std::thread worker([&] {
    BatchRing::Claimed mine;
    about_to_claim.store(true);
    EXPECT_TRUE(r.Claim(&mine));  // batch 1 may not be in flight before batch 0 is taken
    taken_when_claimed.store(taken.load());
    EXPECT_EQ(mine.batch, 1);
  });
  while (!about_to_claim.load()) std::this_thread::yield();
  {
    MutexLock l(&r.lock.mu);
    taken.store(true);
  }
  EXPECT_EQ(r.Take(), 0);
  worker.join();
  EXPECT_TRUE(taken_when_claimed.load());
}

TEST(BatchRingTest, CancelReleasesAWorkerWaitingForRoom) {
  Ring r(2, 1);
  r.Begin(0, 8, false);
  BatchRing::Claimed c;
  for (int p = 0; p < kBatch; ++p) ASSERT_TRUE(r.Claim(&c));
  std::atomic<int> result{-1};
  std::thread worker([&] {
    BatchRing::Claimed mine;
    result.store(r.Claim(&mine) ? 1 : 0);  // waits for room that never comes
  });
  {
    MutexLock l(&r.lock.mu);
    r.ring.CancelLocked(&r.lock.mu);
  }
  worker.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_TRUE(r.ring.cancelled());
}

TEST(BatchRingTest, AParkedWorkerClaimsNothingAndLeavesOnceAllAreClaimed) {
  Ring r(4, 4);
  r.Begin(0, 8, false);
  std::atomic<int> result{-1};
  std::thread parked([&] {
    BatchRing::Claimed mine;
    result.store(r.Claim(&mine, /*index=*/1) ? 1 : 0);  // index 1 >= active (1)
  });
  int n = 0;
  BatchRing::Claimed c;
  while (r.Claim(&c)) {
    ++n;
    r.ring.Complete(c);
  }
  parked.join();
  EXPECT_EQ(n, 8);  // worker 0 made every position
  EXPECT_EQ(result.load(), 0);
}

TEST(BatchRingTest, AStreamEndsAtTheLowestMarkedPosition) {
  Ring r(4, 4);
  r.Begin(0, /*size=*/-1, false);
  r.ring.MarkStreamEnd(9);
  r.ring.MarkStreamEnd(6);
  r.ring.MarkStreamEnd(7);
  EXPECT_EQ(r.ring.stream_end(), 6);
  std::vector<int64_t> positions;
  BatchRing::Claimed c;
  while (r.Claim(&c)) {
    positions.push_back(c.position);
    r.ring.Complete(c);
  }
  // Batches 0 and 1 start before the end (their samples past it are the
  // reader's to mark); batch 2 would start past it.
  EXPECT_EQ(positions, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r.Take(), 0);
  EXPECT_EQ(r.Take(), 1);
  EXPECT_EQ(r.Take(), -1);  // the next batch is past the stream's end
}

}  // namespace
}  // namespace stoker
