// Copyright 2026 The stoker Authors.
//
// Ranks (data-parallel sharding) and resume across world sizes: the rank
// split against DistributedSampler's rule, every rank's share through the
// engine, and checkpoints taken at N ranks resumed at M.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "stoker/loader.h"
#include "testing/loader_fixtures.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::Delivered;
using testing::MakeLoader;
using testing::MemorySample;
using testing::MemorySource;

// DistributedSampler (torch 1.13), written out: pad from the start of the
// order (or drop the tail), then rank r takes order[r::world].
std::vector<int64_t> TorchShare(const std::vector<int64_t>& order, int rank, int world,
                                bool drop_last) {
  std::vector<int64_t> idx = order;
  const int64_t n = static_cast<int64_t>(order.size());
  if (drop_last) {
    idx.resize(static_cast<size_t>(n / world * world));
  } else {
    const int64_t total = (n + world - 1) / world * world;
    while (static_cast<int64_t>(idx.size()) < total) {
      const int64_t pad = total - static_cast<int64_t>(idx.size());
      idx.insert(idx.end(), idx.begin(), idx.begin() + std::min<int64_t>(pad, n));
    }
  }
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(rank); i < idx.size(); i += static_cast<size_t>(world)) {
    out.push_back(idx[i]);
  }
  return out;
}

TEST(RankSplit, MatchesDistributedSampler) {
  for (int64_t n : {1, 2, 3, 5, 7, 12, 13, 100, 1001}) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = (i * 7919) % 100003;
    for (int w = 1; w <= 4; ++w) {
      for (bool drop : {false, true}) {
        int64_t padded = 0, rank_padded = 0;
        for (int r = 0; r < w; ++r) {
          EpochSpec spec;
          spec.rank = r;
          spec.world_size = w;
          spec.drop_last = drop;
          const std::vector<int64_t> slice = RankSlice(order, spec);
          EXPECT_EQ(slice, TorchShare(order, r, w, drop))
              << "n " << n << " w " << w << " r " << r << " drop " << drop;
          const RankShare share = RankShareOf(n, spec);
          EXPECT_EQ(share.samples, static_cast<int64_t>(TorchShare(order, r, w, drop).size()));
          padded = share.padded;
          // The rank's own repeats are its last positions: those wrapping past the end.
          int64_t wrapped = 0;
          for (int64_t p = 0; p < share.samples; ++p) wrapped += r + p * w >= n ? 1 : 0;
          EXPECT_EQ(share.rank_padded, wrapped) << "n " << n << " w " << w << " r " << r;
          for (int64_t p = 0; p < share.samples - share.rank_padded; ++p) {
            EXPECT_LT(r + p * w, n) << "a repeat before the rank's last positions";
          }
          rank_padded += share.rank_padded;
        }
        EXPECT_EQ(padded, drop ? 0 : (n + w - 1) / w * w - n) << n << " " << w;
        EXPECT_EQ(rank_padded, padded) << "the ranks' repeats sum to the epoch's";
      }
    }
  }
}

TEST(RankSplit, OffsetDealsTheRemainder) {
  // After a resume at global position 10 of 23, 3 ranks share [10, 23).
  std::vector<int64_t> order(23);
  std::iota(order.begin(), order.end(), 0);
  std::multiset<int64_t> seen;
  for (int r = 0; r < 3; ++r) {
    EpochSpec spec;
    spec.rank = r;
    spec.world_size = 3;
    spec.offset = 10;
    const std::vector<int64_t> part = RankSlice(order, spec);
    EXPECT_EQ(part.size(), 5u);  // ceil(13 / 3)
    seen.insert(part.begin(), part.end());
  }
  for (int64_t i = 10; i < 23; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
  EXPECT_EQ(seen.size(), 15u);
  // The padding repeats the epoch's start, as an uninterrupted epoch's does.
  EXPECT_EQ(seen.count(0) + seen.count(1), 2u);
}

TEST(RankSplit, AResumeAtTheSameWorldSizeIsTheUninterruptedTail) {
  // 25 samples at 2 ranks, checkpointed after 4 per rank: each rank's rest is
  // exactly what it would have read, its padding included.
  std::vector<int64_t> order(25);
  std::iota(order.begin(), order.end(), 100);
  for (int r = 0; r < 2; ++r) {
    EpochSpec whole;
    whole.rank = r;
    whole.world_size = 2;
    EpochSpec resumed = whole;
    resumed.offset = 8;
    const std::vector<int64_t> all = RankSlice(order, whole);
    const std::vector<int64_t> rest = RankSlice(order, resumed);
    ASSERT_EQ(all.size(), 13u);
    EXPECT_EQ(rest, std::vector<int64_t>(all.begin() + 4, all.end())) << "rank " << r;
  }
}

std::vector<MemorySample> Samples(int n) { return testing::JpegSamples(n, {.labels = 3}); }

LoaderOptions Options(int rank, int world, int threads, bool drop_last = false) {
  LoaderOptions o = testing::SmallAugmentedOptions(threads, 11, rank, world);
  o.drop_last = drop_last;
  return o;
}

// Takes up to `max_batches` batches of the epoch already started; they must
// come without error.
void Take(Loader* loader, Delivered* run, int max_batches = 1 << 30) {
  testing::TakeBatches(loader, run, max_batches);
  ASSERT_TRUE(run->status.ok()) << run->status.ToString();
}

TEST(Ranks, UnionIsTheEpochWithEqualBatchCounts) {
  auto src = std::make_shared<MemorySource>(Samples(23));
  for (bool drop : {false, true}) {
    for (int w = 1; w <= 4; ++w) {
      std::multiset<int64_t> all;
      std::vector<Delivered> runs(static_cast<size_t>(w));
      for (int r = 0; r < w; ++r) {
        auto loader = MakeLoader(src, Options(r, w, 2, drop));
        loader->SetEpoch(3);
        ASSERT_TRUE(loader->Start().ok());
        Take(loader.get(), &runs[r]);
        EXPECT_EQ(runs[r].batches(), loader->num_batches()) << w << " " << r;
        EXPECT_EQ(runs[r].batches(), runs[0].batches()) << "ranks disagree on the batch count";
        const LoaderStats st = loader->stats();
        // This rank's repeats: the ranks from 23 % w on read one past the end.
        const int64_t own = !drop && 23 % w != 0 && r >= 23 % w ? 1 : 0;
        EXPECT_EQ(st.epoch.padded_samples, own) << w << " " << r;
        EXPECT_EQ(st.total.padded_samples, own) << "one epoch: the total is the epoch's";
        EXPECT_EQ(st.rank, r);
        EXPECT_EQ(st.world_size, w);
        all.insert(runs[r].ids.begin(), runs[r].ids.end());
      }
      const std::set<int64_t> distinct(all.begin(), all.end());
      if (!drop) {
        EXPECT_EQ(distinct.size(), 23u) << "w " << w;
        EXPECT_EQ(all.size(), static_cast<size_t>((23 + w - 1) / w * w));
      } else {
        // Each rank: floor(23 / w) samples, then whole batches of 4.
        EXPECT_EQ(all.size(), static_cast<size_t>(w * (23 / w / 4 * 4)));
        EXPECT_EQ(distinct.size(), all.size()) << "drop_last: no sample twice";
      }
    }
  }
}

// padded_samples is this rank's own repeats, counted as they are delivered:
// per epoch under `epoch`, summed over the loader's epochs in `total`. 23
// samples over 4 ranks: 6 positions each, rank 3's last one wraps to the
// epoch's start (ranks 0-2 read 6 distinct samples, rank 3 five and a repeat).
TEST(Ranks, PaddedSamplesIsThisRanksDeliveredRepeatsPerEpochAndInTotal) {
  auto src = std::make_shared<MemorySource>(Samples(23));
  std::vector<std::multiset<int64_t>> all(2);  // per epoch, over the ranks
  for (int r = 0; r < 4; ++r) {
    auto loader = MakeLoader(src, Options(r, 4, 2));
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader->SetEpoch(epoch);
      ASSERT_TRUE(loader->Start().ok());
      Delivered run;
      Take(loader.get(), &run, 1);  // positions 0-3: no repeat yet
      EXPECT_EQ(loader->stats().epoch.padded_samples, 0) << r;
      EXPECT_EQ(loader->stats().total.padded_samples, r == 3 ? epoch : 0) << r;
      Take(loader.get(), &run);  // positions 4-5
      ASSERT_EQ(run.ids.size(), 6u);
      all[epoch].insert(run.ids.begin(), run.ids.end());
      const int64_t repeats = r == 3 ? 1 : 0;
      EXPECT_EQ(loader->stats().epoch.padded_samples, repeats) << r << " epoch " << epoch;
      EXPECT_EQ(loader->stats().total.padded_samples, repeats * (epoch + 1)) << r;
    }
  }
  for (const auto& seen : all) {
    const std::set<int64_t> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), 23u);
    EXPECT_EQ(seen.size() - distinct.size(), 1u) << "one repeat over the ranks: rank 3's";
  }
}

// rank_tail separates DistributedSampler's drop_last (the rank tail) from
// DataLoader's (the short last batch). kUneven with drop_last=false is the
// distributed-evaluation set-up: every sample exactly once over the ranks,
// no padding, each rank's last batch short.
TEST(Ranks, RankTailIsSeparateFromTheShortBatch) {
  using RankTail = LoaderOptions::RankTail;
  constexpr int kN = 23;
  auto src = std::make_shared<MemorySource>(Samples(kN));
  for (int w = 1; w <= 4; ++w) {
    for (RankTail tail : {RankTail::kUneven, RankTail::kPad, RankTail::kDrop}) {
      for (bool drop_short : {false, true}) {
        std::multiset<int64_t> all;
        for (int r = 0; r < w; ++r) {
          LoaderOptions o = Options(r, w, 2, drop_short);
          o.rank_tail = tail;
          auto loader = MakeLoader(src, o);
          ASSERT_NE(loader, nullptr);
          Delivered run;
          ASSERT_TRUE(loader->Start().ok());
          Take(loader.get(), &run);
          // The rank's share under the tail rule, then DataLoader's batching.
          int64_t share = (kN + w - 1) / w;
          if (tail == RankTail::kDrop) share = kN / w;
          if (tail == RankTail::kUneven) share = kN / w + (r < kN % w ? 1 : 0);
          const int64_t taken = drop_short ? share / 4 * 4 : share;
          EXPECT_EQ(static_cast<int64_t>(run.ids.size()), taken) << w << " " << r;
          EXPECT_EQ(run.batches(), loader->num_batches());
          for (int b = 0; b + 1 < run.batches(); ++b) EXPECT_EQ(run.sizes[b], 4);
          if (!drop_short && share % 4 != 0) EXPECT_EQ(run.sizes.back(), share % 4);
          // Its repeat (its last position) is delivered unless it falls in the short
          // batch that drop_last leaves out.
          EXPECT_EQ(loader->stats().epoch.padded_samples,
                    tail == RankTail::kPad && kN % w != 0 && r >= kN % w &&
                            (!drop_short || share % 4 == 0)
                        ? 1
                        : 0)
              << w << " " << r << " drop_short " << drop_short;
          all.insert(run.ids.begin(), run.ids.end());
        }
        const std::set<int64_t> distinct(all.begin(), all.end());
        if (tail == RankTail::kUneven && !drop_short) {
          EXPECT_EQ(all.size(), static_cast<size_t>(kN)) << "every sample exactly once, w " << w;
          EXPECT_EQ(distinct.size(), static_cast<size_t>(kN));
        }
        if (tail != RankTail::kPad) EXPECT_EQ(distinct.size(), all.size()) << "no repeats";
      }
    }
  }
}

TEST(Ranks, SameShareAndPixelsForAnyThreadCount) {
  auto src = std::make_shared<MemorySource>(Samples(23));
  for (int r = 0; r < 3; ++r) {
    Delivered one, many;
    auto a = MakeLoader(src, Options(r, 3, 1));
    auto b = MakeLoader(src, Options(r, 3, 4));
    ASSERT_TRUE(a->Start().ok());
    ASSERT_TRUE(b->Start().ok());
    Take(a.get(), &one);
    Take(b.get(), &many);
    EXPECT_EQ(one.ids, many.ids);
    EXPECT_EQ(one.ById(), many.ById());
  }
}

TEST(Ranks, GlobalOrderDependsOnSeedAndEpochOnly) {
  // Rank shares interleave the one-rank order: rank r's p-th sample is the
  // one-rank run's sample at position r + p * world.
  auto src = std::make_shared<MemorySource>(Samples(23));
  Delivered whole;
  auto single = MakeLoader(src, Options(0, 1, 2));
  single->SetEpoch(5);
  ASSERT_TRUE(single->Start().ok());
  Take(single.get(), &whole);
  const auto whole_pixels = whole.ById();
  for (int r = 0; r < 2; ++r) {
    Delivered part;
    auto l = MakeLoader(src, Options(r, 2, 3));
    l->SetEpoch(5);
    ASSERT_TRUE(l->Start().ok());
    Take(l.get(), &part);
    for (size_t p = 0; p < part.ids.size(); ++p) {
      const size_t g = (r + p * 2) % whole.ids.size();
      EXPECT_EQ(part.ids[p], whole.ids[g]) << r << " " << p;
      EXPECT_EQ(part.samples[p], whole_pixels.at(part.ids[p])) << "augmentation differs";
    }
  }
}

TEST(Ranks, InvalidRankIsRefused) {
  auto src = std::make_shared<MemorySource>(Samples(5));
  EXPECT_FALSE(Loader::Create(src, Options(2, 2, 1)).ok());
  EXPECT_FALSE(Loader::Create(src, Options(-1, 2, 1)).ok());
  EXPECT_FALSE(Loader::Create(src, Options(0, 0, 1)).ok());
}

// Checkpoint at N ranks after `k` batches each; resume at M ranks.
TEST(Resume, AcrossWorldSizesEverySampleOnce) {
  const int n = 23;
  auto src = std::make_shared<MemorySource>(Samples(n));
  Delivered reference;
  {
    auto l = MakeLoader(src, Options(0, 1, 2));
    l->SetEpoch(2);
    ASSERT_TRUE(l->Start().ok());
    Take(l.get(), &reference);
  }
  const auto reference_pixels = reference.ById();
  for (int N = 1; N <= 4; ++N) {
    for (int M = 1; M <= 4; ++M) {
      for (int k : {1, 2}) {
        std::vector<std::unique_ptr<Loader>> first;
        std::multiset<int64_t> seen;
        LoaderState saved;
        std::map<int64_t, std::vector<uint8_t>> pixels;
        for (int r = 0; r < N; ++r) {
          first.push_back(MakeLoader(src, Options(r, N, 2)));
          first[r]->SetEpoch(2);
          ASSERT_TRUE(first[r]->Start().ok());
          Delivered run;
          Take(first[r].get(), &run, k);
          seen.insert(run.ids.begin(), run.ids.end());
          pixels.merge(run.ById());
          const LoaderState st = first[r]->state();
          if (r == 0) saved = st;
          EXPECT_EQ(st.epoch, saved.epoch);
          EXPECT_EQ(st.consumed, saved.consumed) << "ranks disagree on the state";
        }
        const int64_t consumed = std::min<int64_t>(n, int64_t{k} * 4 * N);
        if (consumed >= n) {
          EXPECT_EQ(saved.epoch, 3);
          EXPECT_EQ(saved.consumed, 0);
          continue;
        }
        EXPECT_EQ(saved.epoch, 2);
        EXPECT_EQ(saved.consumed, consumed);
        first.clear();  // the job dies
        int batches = -1;
        int64_t second_padded = 0;
        std::multiset<int64_t> second;
        for (int r = 0; r < M; ++r) {
          auto l = MakeLoader(src, Options(r, M, 3));
          ASSERT_TRUE(l->Resume(saved).ok());
          l->SetEpoch(2);  // the training loop's own set_epoch keeps the resume
          ASSERT_TRUE(l->Start().ok());
          Delivered run;
          Take(l.get(), &run);
          if (batches < 0) batches = run.batches();
          EXPECT_EQ(run.batches(), batches) << "resumed ranks disagree on the batch count";
          second.insert(run.ids.begin(), run.ids.end());
          pixels.merge(run.ById());
          second_padded += l->stats().epoch.padded_samples;  // summed over the ranks
          // After the resumed epoch, the next one starts from 0.
          const LoaderState after = l->state();
          EXPECT_EQ(after.epoch, 3);
          EXPECT_EQ(after.consumed, 0);
        }
        EXPECT_EQ(static_cast<int64_t>(second.size()),
                  (n - consumed + M - 1) / M * M) << N << "->" << M;
        EXPECT_EQ(second_padded, (n - consumed + M - 1) / M * M - (n - consumed));
        seen.insert(second.begin(), second.end());
        std::set<int64_t> distinct(seen.begin(), seen.end());
        EXPECT_EQ(distinct.size(), static_cast<size_t>(n)) << N << "->" << M << " k " << k;
        // Exactly once, apart from the second segment's padding.
        EXPECT_EQ(static_cast<int64_t>(seen.size()) - n, second_padded) << N << "->" << M;
        for (const auto& [id, px] : pixels) {
          EXPECT_EQ(px, reference_pixels.at(id)) << "sample " << id << " differs after resume";
        }
      }
    }
  }
}

TEST(Resume, AnotherEpochCancelsIt) {
  auto src = std::make_shared<MemorySource>(Samples(10));
  auto l = MakeLoader(src, Options(0, 1, 1));
  LoaderState st = l->state();  // this loader's dataset and order, another position
  st.epoch = 4;
  st.consumed = 8;
  ASSERT_TRUE(l->Resume(st).ok());
  EXPECT_EQ(l->state().epoch, 4);
  EXPECT_EQ(l->state().consumed, 8);
  l->SetEpoch(6);
  ASSERT_TRUE(l->Start().ok());
  Delivered run;
  Take(l.get(), &run);
  EXPECT_EQ(run.ids.size(), 10u);
  EXPECT_EQ(l->epoch(), 6);
}

TEST(Resume, NegativeConsumedIsRefused) {
  auto src = std::make_shared<MemorySource>(Samples(3));
  auto l = MakeLoader(src, Options(0, 1, 1));
  LoaderState st;
  st.consumed = -1;
  EXPECT_FALSE(l->Resume(st).ok());
}

}  // namespace
}  // namespace stoker
