// Copyright 2026 The stoker Authors.
#include "pipeline/next_epoch_prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "source/memory_source.h"
#include "testing/loader_fixtures.h"

namespace stoker {
namespace {

constexpr int kBatch = 4;

std::shared_ptr<BatchPool> Pool() { return testing::BareBatchPool(kBatch); }

std::shared_ptr<Source> Samples(int n) {
  return std::make_shared<MemorySource>(std::vector<MemorySample>(static_cast<size_t>(n)));
}

// A prefetch of up to 3 batches beside the ring it hands them to.
struct Fixture {
  Fixture()
      : pool(Pool()),
        ring(&lock, /*slots=*/3, /*in_flight=*/3, pool.get(), kBatch),
        prefetch(&lock, /*capacity=*/3, /*workers=*/2, pool.get(), kBatch) {}
  ~Fixture() {
    MutexLock l(&lock.mu);
    prefetch.ReleaseLocked(&lock.mu);
    ring.ClearLocked(&lock.mu);
  }
  // Arms the prefetch for epoch 1 of `source` with `want` batches.
  void Arm(Source* source, int64_t want) {
    NextEpochPrefetch::Made made = prefetch.Make(source, EpochSpec(), want, false);
    MutexLock l(&lock.mu);
    reader = prefetch.ArmLocked(&lock.mu, /*epoch=*/1, &made, /*running_padded=*/0);
  }
  // Each position's sample id is its position.
  void Run(int index, const std::atomic<int>& active, int64_t cancel_after = -1) {
    prefetch.Run(index, active, [&](int64_t p, int s, BatchBuffer* buf, WorkerCounters* c) {
      buf->ids()[s] = p;
      c->Add(c->images, 1);
      if (p == cancel_after) prefetch.Cancel();
    });
  }
  // Starts epoch 1 in the ring with the prefetch's batches; returns the
  // first position the ring's workers make.
  int64_t Adopt(int64_t samples) {
    MutexLock l(&lock.mu);
    ring.BeginLocked(&lock.mu, 1, samples, false);
    const int64_t next = prefetch.AdoptLocked(&lock.mu, &ring, samples);
    ring.SkipPositionsLocked(&lock.mu, next);
    return next;
  }
  // The ids of the next batch the ring hands out (it must be complete).
  std::vector<int64_t> Take() {
    MutexLock l(&lock.mu);
    int64_t waited = 0, b = -1;
    EXPECT_TRUE(ring.WaitNextLocked(&lock.mu, nullptr, 0, &waited).ok());
    BatchBuffer* buf = ring.TakeLocked(&lock.mu, &b);
    std::vector<int64_t> ids(buf->ids(), buf->ids() + buf->size);
    EXPECT_EQ(buf->epoch, 1);
    EXPECT_EQ(buf->index, b);
    pool->Release(buf);
    return ids;
  }

  LoaderLock lock;
  std::shared_ptr<BatchPool> pool;
  BatchRing ring;
  NextEpochPrefetch prefetch;
  std::unique_ptr<EpochReader> reader;
};

TEST(NextEpochPrefetchTest, MadeBatchesAreAdoptedInOrderAndTheRingGoesOnAfterThem) {
  Fixture f;
  auto source = Samples(10);
  f.Arm(source.get(), /*want=*/2);
  ASSERT_NE(f.reader, nullptr);
  {
    MutexLock l(&f.lock.mu);
    EXPECT_TRUE(f.prefetch.ArmedLocked(&f.lock.mu));
    EXPECT_EQ(f.prefetch.EpochLocked(&f.lock.mu), 1);
  }
  std::atomic<int> active{2};
  std::thread other([&] { f.Run(1, active); });
  f.Run(0, active);
  other.join();
  EXPECT_EQ(f.Adopt(10), 2 * kBatch);  // 2 batches made; the ring continues at position 8
  EXPECT_EQ(f.Take(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(f.Take(), (std::vector<int64_t>{4, 5, 6, 7}));
  // The ring's workers make the rest.
  std::atomic<int> one{1};
  WorkerCounters c;
  BatchRing::Claimed claimed;
  std::vector<int64_t> rest;
  while (f.ring.Claim(0, one, &c, &claimed)) {
    claimed.buffer->ids()[claimed.slot] = claimed.position;
    rest.push_back(claimed.position);
    f.ring.Complete(claimed);
  }
  EXPECT_EQ(rest, (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(f.Take(), (std::vector<int64_t>{8, 9}));
  // Its work is counted apart until folded in.
  std::vector<WorkerCounters> into(2);
  MutexLock l(&f.lock.mu);
  f.prefetch.FoldCountersLocked(&f.lock.mu, &into);
  EXPECT_EQ(into[0].images.load() + into[1].images.load(), 2 * kBatch);
  EXPECT_FALSE(f.prefetch.ArmedLocked(&f.lock.mu));
}

TEST(NextEpochPrefetchTest, APartlyMadeBatchCompletesInTheRing) {
  Fixture f;
  auto source = Samples(10);
  f.Arm(source.get(), 3);
  std::atomic<int> active{1};
  f.Run(0, active, /*cancel_after=*/5);  // positions 0..5 made, then cancelled
  EXPECT_EQ(f.Adopt(10), 6);
  EXPECT_EQ(f.Take(), (std::vector<int64_t>{0, 1, 2, 3}));
  // Batch 1 is in the ring, waiting for its last two samples, which the
  // ring's worker makes.
  int installed = 0, ready = 0;
  {
    MutexLock l(&f.lock.mu);
    f.ring.DepthLocked(&f.lock.mu, &installed, &ready);
  }
  ASSERT_EQ(installed, 1);
  EXPECT_EQ(ready, 0);
  std::atomic<int> one{1};
  WorkerCounters c;
  BatchRing::Claimed claimed;
  ASSERT_TRUE(f.ring.Claim(0, one, &c, &claimed));
  EXPECT_EQ(claimed.position, 6);
  EXPECT_EQ(claimed.batch, 1);
  EXPECT_EQ(claimed.slot, 2);
  claimed.buffer->ids()[claimed.slot] = claimed.position;
  f.ring.Complete(claimed);
  ASSERT_TRUE(f.ring.Claim(0, one, &c, &claimed));
  claimed.buffer->ids()[claimed.slot] = claimed.position;
  f.ring.Complete(claimed);
  EXPECT_EQ(f.Take(), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(NextEpochPrefetchTest, AParkedWorkerMakesNothingAndADiscardIsCounted) {
  Fixture f;
  auto source = Samples(10);
  f.Arm(source.get(), 2);
  std::atomic<int> active{1};
  f.Run(1, active);  // index 1 >= active: parked, leaves at once
  MutexLock l(&f.lock.mu);
  f.prefetch.DiscardLocked(&f.lock.mu);
  EXPECT_EQ(f.prefetch.discarded_batches(&f.lock.mu), 2);
  EXPECT_FALSE(f.prefetch.ArmedLocked(&f.lock.mu));
  std::vector<WorkerCounters> into(2);
  f.prefetch.FoldCountersLocked(&f.lock.mu, &into);
  EXPECT_EQ(into[0].images.load() + into[1].images.load(), 0);
}

}  // namespace
}  // namespace stoker
