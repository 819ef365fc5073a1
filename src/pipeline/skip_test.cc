// Copyright 2026 The stoker Authors.
//
// on_error=skip: a bad sample is left out, not replaced.
// The reference for every case is a clean run (the same samples, none bad):
// the skip run must deliver exactly the clean run's samples minus the bad
// ones, in the same order and with the same pixels, packed into full batches
// (only the epoch's last batch short), for any thread count and prefetch;
// bad files are counted once each.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "stoker/loader.h"
#include "stoker/sampler.h"
#include "testing/loader_fixtures.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::Delivered;
using testing::MemorySample;
using testing::MemorySource;
using testing::TakeBatches;

// The shared JPEG samples (label i % 5); those in `bad` hold no image and
// are named "mem/bad<i>.jpg".
std::vector<MemorySample> Samples(int n, const std::set<int>& bad = {}) {
  return testing::JpegSamples(n, {.labels = 5, .bad = bad, .rename_bad = true});
}

LoaderOptions Options(int batch, int threads, int prefetch = 2) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.prefetch = prefetch;
  o.shuffle = true;
  o.seed = 11;
  o.dtype = DType::kUint8;
  o.transforms = {Transform::RandomResizedCrop(12, 12), Transform::RandomHorizontalFlip()};
  o.on_error = OnError::kSkip;
  return o;
}

// One epoch, which must succeed.
Delivered Epoch(Loader* l) {
  Delivered r = testing::RunEpoch(l);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  return r;
}

std::vector<int64_t> Without(const std::vector<int64_t>& ids, const std::set<int>& bad) {
  std::vector<int64_t> out;
  for (int64_t i : ids) {
    if (!bad.count(static_cast<int>(i))) out.push_back(i);
  }
  return out;
}

std::vector<int> FullBatches(int64_t n, int b, bool drop_last) {
  std::vector<int> sizes(n / b, b);
  if (n % b != 0 && !drop_last) sizes.push_back(static_cast<int>(n % b));
  return sizes;
}

const std::set<int> kBad = {0, 3, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 77, 100, 149};

TEST(Skip, DeliversTheCleanRunMinusTheBadSamplesInFullBatches) {
  const int n = 150;
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto bad = std::make_shared<MemorySource>(Samples(n, kBad));
  const int64_t good = n - static_cast<int64_t>(kBad.size());
  auto ref_loader = Loader::Create(clean, Options(8, 2)).value();
  std::vector<Delivered> ref = {Epoch(ref_loader.get()), Epoch(ref_loader.get())};
  std::vector<uint8_t> first_pixels;
  for (int threads : {1, 2, 4}) {
    for (int prefetch : {1, 3}) {
      auto l = Loader::Create(bad, Options(8, threads, prefetch)).value();
      for (int e = 0; e < 2; ++e) {
        const Delivered r = Epoch(l.get());
        EXPECT_EQ(r.ids, Without(ref[e].ids, kBad)) << threads << " threads, epoch " << e;
        EXPECT_EQ(r.sizes, FullBatches(good, 8, false)) << threads << " threads";
        const auto want = ref[e].ById();
        for (const auto& [id, px] : r.ById()) EXPECT_EQ(px, want.at(id)) << "sample " << id;
        if (e == 0 && first_pixels.empty()) first_pixels = r.pixels;
        if (e == 0) {
          EXPECT_EQ(r.pixels, first_pixels) << threads << " threads";
        }
        const LoaderStats s = l->stats();
        EXPECT_EQ(s.epoch.skipped, static_cast<int64_t>(kBad.size()));
        EXPECT_EQ(s.epoch.skipped_files, static_cast<int64_t>(kBad.size()));
        EXPECT_EQ(s.epoch.images, good);
        EXPECT_EQ(s.epoch.batches, static_cast<int64_t>(r.sizes.size()));
        // Over both epochs each bad file is counted once as a file, twice as a sample.
        if (e == 1) {
          EXPECT_EQ(s.total.skipped, 2 * static_cast<int64_t>(kBad.size()));
          EXPECT_EQ(s.total.skipped_files, static_cast<int64_t>(kBad.size()));
        }
      }
    }
  }
}

TEST(Skip, DropLastGivesOnlyFullBatches) {
  const int n = 150;
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto bad = std::make_shared<MemorySource>(Samples(n, kBad));
  LoaderOptions o = Options(8, 3);
  o.drop_last = true;
  const Delivered ref = Epoch(Loader::Create(clean, o).value().get());
  const Delivered r = Epoch(Loader::Create(bad, o).value().get());
  const std::vector<int64_t> want = Without(ref.ids, kBad);
  // The clean run's positions (150 / 8 = 18 batches: 144 positions), bad ones
  // left out, cut to whole batches.
  EXPECT_EQ(r.sizes, FullBatches(static_cast<int64_t>(want.size()), 8, true));
  EXPECT_EQ(r.ids, std::vector<int64_t>(want.begin(), want.begin() + r.ids.size()));
}

TEST(Skip, UnshuffledKeepsTheOrder) {
  const int n = 40;
  const std::set<int> bad = {1, 2, 8, 39};
  LoaderOptions o = Options(5, 4);
  o.shuffle = false;
  const Delivered r = Epoch(Loader::Create(std::make_shared<MemorySource>(Samples(n, bad)), o)
                          .value().get());
  std::vector<int64_t> want;
  for (int i = 0; i < n; ++i) {
    if (!bad.count(i)) want.push_back(i);
  }
  EXPECT_EQ(r.ids, want);
  EXPECT_EQ(r.sizes, FullBatches(n - 4, 5, false));
}

// A checkpoint taken after any batch resumes without losing or repeating a
// sample, even when samples are carried from one batch into the next.
TEST(Skip, ResumeAfterAnyBatchIsExactlyOnce) {
  const int n = 150;
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto bad = std::make_shared<MemorySource>(Samples(n, kBad));
  LoaderOptions o = Options(8, 3);
  auto ref_loader = Loader::Create(clean, o).value();
  ref_loader->SetEpoch(4);
  const Delivered ref = Epoch(ref_loader.get());
  const std::vector<int64_t> want = Without(ref.ids, kBad);
  const int batches = static_cast<int>(FullBatches(static_cast<int64_t>(want.size()), 8,
                                                   false).size());
  for (int k = 1; k < batches; ++k) {
    auto first = Loader::Create(bad, o).value();
    first->SetEpoch(4);
    ASSERT_TRUE(first->Start().ok());
    Delivered head;
    TakeBatches(first.get(), &head, k);
    ASSERT_TRUE(head.status.ok());
    const LoaderState st = first->state();
    EXPECT_EQ(st.epoch, 4);
    first.reset();
    auto second = Loader::Create(bad, Options(8, 2)).value();
    ASSERT_TRUE(second->Resume(st).ok());
    second->SetEpoch(4);
    const Delivered tail = Epoch(second.get());
    std::vector<int64_t> all = head.ids;
    all.insert(all.end(), tail.ids.begin(), tail.ids.end());
    EXPECT_EQ(all, want) << "checkpoint after batch " << k << " (consumed " << st.consumed << ")";
    const auto want_pixels = ref.ById();
    for (const auto& [id, px] : tail.ById()) EXPECT_EQ(px, want_pixels.at(id)) << id;
  }
}

TEST(Skip, ComposesWithTheDecodedAndOutputCaches) {
  const int n = 60;
  const std::set<int> bad = {4, 5, 30, 59};
  auto src = std::make_shared<MemorySource>(Samples(n, bad));
  for (auto kind : {LoaderOptions::CacheKind::kDecoded, LoaderOptions::CacheKind::kOutput}) {
    LoaderOptions o = Options(7, 3);
    o.dct_scaling = LoaderOptions::DctScaling::kOff;  // the cache decodes whole images
    o.cache_bytes = size_t{64} << 20;
    o.cache_kind = kind;
    if (kind == LoaderOptions::CacheKind::kOutput) o.transforms = {Transform::Resize(12, 12)};
    auto cached = Loader::Create(src, o).value();
    LoaderOptions po = Options(7, 1);
    po.transforms = o.transforms;
    po.dct_scaling = LoaderOptions::DctScaling::kOff;
    auto uncached = Loader::Create(src, po).value();
    for (int e = 0; e < 3; ++e) {
      const Delivered want = Epoch(uncached.get());
      const Delivered got = Epoch(cached.get());
      EXPECT_EQ(got.ids, want.ids) << "epoch " << e;
      EXPECT_EQ(got.pixels, want.pixels) << "epoch " << e;
      EXPECT_EQ(got.sizes, FullBatches(n - 4, 7, false));
      EXPECT_EQ(cached->stats().epoch.skipped_files, 4);
    }
  }
}

// A sampler may draw a bad file more than once: each draw is a skipped
// sample, the file is one skipped file.
TEST(Skip, ASamplerDrawingABadFileTwiceCountsItOnceAsAFile) {
  auto src = std::make_shared<MemorySource>(Samples(20, {5}));
  LoaderOptions o = Options(2, 2);
  o.shuffle = false;
  o.sampler = SamplerSpec::Subset({3, 17, 5, 5, 11, 2, 5});
  auto l = Loader::Create(src, o).value();
  const Delivered r = Epoch(l.get());
  EXPECT_EQ(r.ids, (std::vector<int64_t>{3, 17, 11, 2}));
  EXPECT_EQ(r.sizes, (std::vector<int>{2, 2}));
  EXPECT_EQ(l->stats().epoch.skipped, 3);
  EXPECT_EQ(l->stats().epoch.skipped_files, 1);
}

// Ranks: a rank cannot know the others' bad samples, so under skip each
// rank delivers the batches (count and sizes) it would without bad samples,
// making up its missing samples at the epoch's end by repeating its first
// ones (the first batch's, cyclically) (counted in padded_samples, as DistributedSampler's padding is): DDP
// never waits on a rank that ran out. Every good sample is delivered, and
// only the repeats twice.
TEST(Skip, RanksKeepTheirBatchCountsAndDeliverEveryGoodSample) {
  const int n = 150;
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto bad = std::make_shared<MemorySource>(Samples(n, kBad));
  for (int w : {2, 3, 4}) {
    for (bool drop_last : {false, true}) {
      std::multiset<int64_t> seen;
      int64_t padded = 0;
      for (int r = 0; r < w; ++r) {
        LoaderOptions o = Options(8, 2);
        o.rank = r;
        o.world_size = w;
        o.drop_last = drop_last;
        auto ref_loader = Loader::Create(clean, o).value();
        const Delivered ref = Epoch(ref_loader.get());
        auto l = Loader::Create(bad, o).value();
        const Delivered got = Epoch(l.get());
        EXPECT_EQ(got.sizes, ref.sizes) << w << " ranks, rank " << r;
        EXPECT_EQ(static_cast<int64_t>(got.sizes.size()), l->num_batches());
        // Its good samples in the clean order, then repeats of its first ones.
        const std::vector<int64_t> own = Without(ref.ids, kBad);
        ASSERT_GE(got.ids.size(), own.size());
        EXPECT_EQ(std::vector<int64_t>(got.ids.begin(), got.ids.begin() + own.size()), own);
        const size_t cycle = std::min<size_t>(8, own.size());  // at most one batch is kept
        for (size_t i = own.size(); i < got.ids.size(); ++i) {
          EXPECT_EQ(got.ids[i], own[(i - own.size()) % cycle]) << w << " ranks, rank " << r;
        }
        const int64_t rank_pad = static_cast<int64_t>(got.ids.size() - own.size());
        EXPECT_EQ(l->stats().epoch.padded_samples - ref_loader->stats().epoch.padded_samples,
                  rank_pad);
        padded += rank_pad;
        const auto want_pixels = ref.ById();
        for (const auto& [id, px] : got.ById()) EXPECT_EQ(px, want_pixels.at(id)) << id;
        seen.insert(own.begin(), own.end());
      }
      // Over the ranks: every good sample of the clean run's positions, once
      // (apart from the rank split's own padding, when W does not divide n).
      const std::set<int64_t> distinct(seen.begin(), seen.end());
      for (int b : kBad) EXPECT_EQ(seen.count(b), 0u);
      if (!drop_last) {
        EXPECT_EQ(distinct.size(), static_cast<size_t>(n) - kBad.size()) << w << " ranks";
        EXPECT_EQ(padded, static_cast<int64_t>(kBad.size())) << w << " ranks";
        if (n % w == 0) {
          EXPECT_EQ(seen.size(), distinct.size()) << w << " ranks";
        }
      }
    }
  }
}

TEST(Skip, AnEpochWithNothingReadableIsAnError) {
  auto src = std::make_shared<MemorySource>(Samples(9, {0, 1, 2, 3, 4, 5, 6, 7, 8}));
  auto l = Loader::Create(src, Options(4, 3)).value();
  ASSERT_TRUE(l->Start().ok());
  Delivered r;
  TakeBatches(l.get(), &r);
  ASSERT_FALSE(r.status.ok());
  EXPECT_TRUE(r.ids.empty());
  EXPECT_NE(r.status.message().find("no sample of epoch 0 could be read (9 skipped)"),
            std::string::npos) << r.status.message();
  // The first failure by position (the same for any thread count).
  EXPECT_NE(r.status.message().find("mem/bad"), std::string::npos) << r.status.message();
  EXPECT_EQ(l->stats().epoch.skipped_files, 9);
  // The loader stays usable.
  ASSERT_TRUE(l->Start().ok());
  TakeBatches(l.get(), &r);
  EXPECT_FALSE(r.status.ok());
}

// Stop mid-epoch while samples are carried, then restart: nothing leaks and
// the new epoch is whole.
TEST(Skip, StopWhileCarryingThenRestart) {
  const int n = 150;
  auto src = std::make_shared<MemorySource>(Samples(n, kBad));
  LoaderOptions o = Options(8, 3);
  // The buffer bound below counts the ring, the carry and the consumer's; the
  // next epoch's prefetch (up to `prefetch` more, timing-dependent) is off.
  o.prefetch_next_epoch = false;
  auto l = Loader::Create(src, o).value();
  ASSERT_TRUE(l->Start().ok());
  Delivered head;
  TakeBatches(l.get(), &head, 2);
  l->Stop();
  const Delivered r = Epoch(l.get());
  EXPECT_EQ(r.ids.size(), static_cast<size_t>(n) - kBad.size());
  EXPECT_LE(l->stats().batch_buffers, l->options().prefetch + 3);
}

// A poll that interrupts the wait (Ctrl-C in Python) while samples are
// carried does not lose them: the epoch goes on with the same batches.
TEST(Skip, AnInterruptedWaitKeepsTheCarriedSamples) {
  // 1 thread; position batch 1 cannot complete: its first read is held.
  auto src = std::make_shared<MemorySource>(Samples(12, {1}));
  LoaderOptions o = Options(4, 1);
  o.shuffle = false;
  auto l = Loader::Create(src, o).value();
  src->HoldReads(/*after=*/4);
  ASSERT_TRUE(l->Start().ok());
  BatchPtr b;
  bool end = false;
  // Interrupts once position batch 0 (3 good samples: carried) is complete
  // and batch 1 is being read.
  Status s = l->Next(&b, &end, [&]() -> Status {
    return src->reads() >= 5 ? CancelledError("stop waiting") : Status::OK();
  }, 5);
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(b, nullptr);
  src->OpenReads();
  Delivered r;
  TakeBatches(l.get(), &r);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.ids, (std::vector<int64_t>{0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(r.sizes, (std::vector<int>{4, 4, 3}));
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// The next epoch's first batches, prefetched while the last one ends, may hold
// bad samples: they are left out of that epoch and counted in its stats, not
// in the epoch that was running when they were read.
TEST(Skip, ThePrefetchedStartOfTheNextEpochCountsItsBadFilesThere) {
  const int n = 150;
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto bad = std::make_shared<MemorySource>(Samples(n, kBad));
  LoaderOptions o = Options(8, 2, 3);
  LoaderOptions no_prefetch = o;
  no_prefetch.prefetch_next_epoch = false;
  auto ref_loader = Loader::Create(clean, no_prefetch).value();
  std::vector<Delivered> ref = {Epoch(ref_loader.get()), Epoch(ref_loader.get())};
  auto l = Loader::Create(bad, o).value();
  Epoch(l.get());
  // Epoch 1's first 3 batches (24 positions) are read once epoch 0 is made.
  ASSERT_TRUE(bad->AwaitReads(n + 24));
  const Delivered r = Epoch(l.get());
  EXPECT_EQ(r.ids, Without(ref[1].ids, kBad));
  const auto want = ref[1].ById();
  for (const auto& [id, px] : r.ById()) EXPECT_EQ(px, want.at(id)) << "sample " << id;
  const LoaderStats s = l->stats();
  EXPECT_EQ(s.prefetch_discarded_batches, 0);
  EXPECT_EQ(s.epoch.skipped, static_cast<int64_t>(kBad.size()));
  EXPECT_EQ(s.epoch.skipped_files, static_cast<int64_t>(kBad.size()));
  EXPECT_EQ(s.epoch.images, n - static_cast<int64_t>(kBad.size()));
  EXPECT_EQ(s.total.skipped_files, static_cast<int64_t>(kBad.size()));
}

}  // namespace
}  // namespace stoker
