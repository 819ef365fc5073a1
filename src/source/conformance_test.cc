// Copyright 2026 The stoker Authors.
//
// The source conformance suite: every source in ConformanceSources()
// (testing/conformance.h) passes the same tests through the public Loader
// API. ctest names read "Conformance/SourceConformanceTest.<Test>/<Source>".
//
// What each test holds a source to (the dataset: 48 samples, label = sample
// number, 12 shards of 4 where there are shards):
//  - ExactlyOncePerEpoch: every sample once per epoch, in full batches but
//    the last, as many batches as num_batches() says; unshuffled epochs in
//    dataset order, shuffled epochs in an order that changes with the epoch.
//  - SameOutputForAnyThreadCount: 1, 2 and 5 threads deliver the same
//    samples with the same pixels in the same order, two epochs running.
//  - RanksSplitTheEpochExactly: at world sizes 1-4 the ranks' samples are
//    disjoint and together the epoch, and every rank gets num_batches()
//    batches. A stream of unknown length refuses more than one rank.
//  - ResumeAfterEveryBatch: a checkpoint after any batch, at 2 ranks,
//    resumed at 2 and at 3 ranks, delivers the rest of the epoch exactly once
//    (plus the padding, the epoch's first samples) with the pixels of an
//    uninterrupted run. Streams refuse a mid-epoch
//    resume at another world size (InvalidArgument).
//  - ResumesWithTheDataAtAnotherPath: a checkpoint taken over the dataset
//    at one path resumes over the same data at another (a copy, another
//    mount point, another node's staging directory): the fingerprint names
//    the data, not where it lies.
//  - SkipsACorruptSample: on_error=skip leaves out exactly the corrupt
//    samples (the clean run minus them, full batches, counted); on_error=
//    raise stops the epoch with an error.
//  - CloseMidEpoch: Stop() and destruction mid-epoch return, batches held
//    stay valid, and the next epoch is the one a fresh loader gives.
//  - NextEpochPrefetchEqualsAFreshEpoch: the epoch after a full one (made
//    ahead by the cross-epoch prefetch) equals that epoch read fresh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "stoker/loader.h"
#include "testing/conformance.h"
#include "testing/loader_fixtures.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::ConformanceData;
using testing::Delivered;
using testing::MadeSource;
using testing::SourceFactory;

constexpr int kN = ConformanceData::kSamples;
constexpr int kBatch = 4;

class SourceConformanceTest : public ::testing::TestWithParam<SourceFactory> {
 protected:
  // The dataset in a fresh directory, with `corrupt` samples unreadable.
  MadeSource Make(const std::set<int>& corrupt = {}) {
    const std::string dir = dir_.path() + "/" + std::to_string(made_++);
    testing::MakeDirs(dir);
    ConformanceData data;
    data.corrupt = corrupt;
    auto made = GetParam().make(dir, data);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (!made.ok()) return {};
    if (corrupt.empty()) {
      EXPECT_TRUE(made.value().corrupt.empty());
    }
    // A source without an image (VideoClips: the clip is the array "video")
    // runs the same transforms itself; the Loader's would be refused.
    if (made.value().source) loader_transforms_ = made.value().source->schema().image() >= 0;
    return std::move(made).value();
  }

  LoaderOptions Options(int threads, int rank = 0, int world = 1) const {
    LoaderOptions o;
    o.batch_size = kBatch;
    o.threads = threads;
    o.prefetch = 2;
    o.shuffle = true;
    o.seed = 7;
    o.dtype = DType::kUint8;
    if (loader_transforms_) {
      o.transforms = {Transform::RandomResizedCrop(16, 16), Transform::RandomHorizontalFlip()};
    }
    o.rank = rank;
    o.world_size = world;
    return o;
  }

  static bool IsStream(const Source& s) { return !s.random_access(); }
  static bool Unsized(const Source& s) { return s.size() < 0; }

  testing::TempDir dir_;
  int made_ = 0;
  bool loader_transforms_ = true;
};

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Batch sizes of `n` samples in batches of kBatch, the last short.
std::vector<int> FullBatches(int64_t n) {
  std::vector<int> sizes(static_cast<size_t>(n / kBatch), kBatch);
  if (n % kBatch != 0) sizes.push_back(static_cast<int>(n % kBatch));
  return sizes;
}

TEST_P(SourceConformanceTest, ExactlyOncePerEpoch) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  auto loader = testing::MakeLoader(m.source, Options(2));
  ASSERT_TRUE(loader);
  if (!Unsized(*m.source)) {
    EXPECT_EQ(loader->num_batches(), kN / kBatch);
  }
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const Delivered d = testing::RunEpoch(loader.get());
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(Sorted(d.labels), Iota(kN)) << "epoch " << epoch;
    EXPECT_EQ(d.sizes, FullBatches(kN)) << "epoch " << epoch;
    EXPECT_EQ(loader->stats().epoch.images, kN);
    orders.push_back(d.labels);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_NE(orders[0], Iota(kN));

  LoaderOptions in_order = Options(2);
  in_order.shuffle = false;
  auto unshuffled = testing::MakeLoader(m.source, in_order);
  ASSERT_TRUE(unshuffled);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const Delivered d = testing::RunEpoch(unshuffled.get());
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.labels, Iota(kN)) << "epoch " << epoch;
  }
}

TEST_P(SourceConformanceTest, SameOutputForAnyThreadCount) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  std::vector<Delivered> reference;
  for (int threads : {1, 2, 5}) {
    auto loader = testing::MakeLoader(m.source, Options(threads));
    ASSERT_TRUE(loader);
    for (int epoch = 0; epoch < 2; ++epoch) {
      Delivered d = testing::RunEpoch(loader.get());
      ASSERT_TRUE(d.status.ok()) << d.status.ToString();
      ASSERT_EQ(d.labels.size(), static_cast<size_t>(kN));
      if (threads == 1) {
        reference.push_back(std::move(d));
        continue;
      }
      EXPECT_EQ(d.labels, reference[epoch].labels) << threads << " threads, epoch " << epoch;
      EXPECT_EQ(d.ids, reference[epoch].ids) << threads << " threads, epoch " << epoch;
      EXPECT_TRUE(d.pixels == reference[epoch].pixels) << threads << " threads, epoch " << epoch;
    }
  }
  // The augmentation is real: the two epochs differ in pixels, sample by sample.
  EXPECT_NE(reference[0].ByLabel()[0], reference[1].ByLabel()[0]);
}

TEST_P(SourceConformanceTest, RanksSplitTheEpochExactly) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  for (int world = 1; world <= 4; ++world) {
    if (world > 1 && Unsized(*m.source)) {  // the documented refusal
      auto refused = Loader::Create(m.source, Options(2, 0, world));
      ASSERT_FALSE(refused.ok());
      EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(refused.status().message().find("length"), std::string::npos)
          << refused.status().message();
      continue;
    }
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> all;
      for (int rank = 0; rank < world; ++rank) {
        auto loader = testing::MakeLoader(m.source, Options(2, rank, world));
        ASSERT_TRUE(loader);
        loader->SetEpoch(epoch);
        const Delivered d = testing::RunEpoch(loader.get());
        ASSERT_TRUE(d.status.ok()) << d.status.ToString();
        if (world == 1 && Unsized(*m.source)) {
          EXPECT_EQ(d.batches(), kN / kBatch);
        } else {
          EXPECT_EQ(d.batches(), loader->num_batches()) << "rank " << rank << " of " << world;
          EXPECT_EQ(loader->num_batches(), (kN / world + kBatch - 1) / kBatch);
        }
        EXPECT_EQ(static_cast<int64_t>(d.labels.size()), kN / world);
        all.insert(all.end(), d.labels.begin(), d.labels.end());
      }
      EXPECT_EQ(Sorted(all), Iota(kN)) << "world size " << world << ", epoch " << epoch;
    }
  }
}

TEST_P(SourceConformanceTest, ResumeAfterEveryBatch) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  const int64_t epoch = 3;
  // The uninterrupted run: every sample's pixels in this epoch.
  auto whole = testing::MakeLoader(m.source, Options(2));
  ASSERT_TRUE(whole);
  whole->SetEpoch(epoch);
  const Delivered ref = testing::RunEpoch(whole.get());
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  const auto ref_pixels = ref.ByLabel();
  ASSERT_EQ(ref_pixels.size(), static_cast<size_t>(kN));

  // A stream of unknown length has one rank, and its state cannot tell that
  // the epoch is over until its end was read.
  const bool unsized = Unsized(*m.source);
  const int saved_world = unsized ? 1 : 2;
  const int per_rank = kN / saved_world / kBatch;  // batches per rank
  for (int resumed_world : {saved_world, saved_world + 1}) {
    for (int k = 0; k <= per_rank; ++k) {
      SCOPED_TRACE("saved at " + std::to_string(saved_world) + " ranks after " +
                   std::to_string(k) + " batches, resumed at " + std::to_string(resumed_world));
      // First segment: every rank takes k batches, then checkpoints.
      std::vector<int64_t> first_segment;
      LoaderState state;
      for (int rank = 0; rank < saved_world; ++rank) {
        auto first = testing::MakeLoader(m.source, Options(2, rank, saved_world));
        ASSERT_TRUE(first);
        first->SetEpoch(epoch);
        ASSERT_TRUE(first->Start().ok());
        Delivered head;
        testing::TakeBatches(first.get(), &head, k);
        ASSERT_TRUE(head.status.ok()) << head.status.ToString();
        ASSERT_EQ(head.batches(), k);
        for (size_t i = 0; i < head.labels.size(); ++i) {
          first_segment.push_back(head.labels[i]);
          EXPECT_EQ(head.samples[i], ref_pixels.at(head.labels[i])) << "label " << head.labels[i];
        }
        const LoaderState st = first->state();
        if (rank > 0) {
          EXPECT_EQ(st.consumed, state.consumed) << "ranks disagree";
        }
        state = st;
      }
      // After the last batch the state names the next epoch from its start.
      const bool done = k == per_rank && !unsized;
      EXPECT_EQ(state.epoch, done ? epoch + 1 : epoch);
      EXPECT_EQ(state.consumed, done ? 0 : int64_t{k} * kBatch * saved_world);
      EXPECT_EQ(state.world_size, saved_world);
      const std::set<int64_t> first_set(first_segment.begin(), first_segment.end());
      EXPECT_EQ(first_set.size(), first_segment.size()) << "a sample came twice";

      // Second segment at `resumed_world` ranks.
      if (resumed_world > 1 && unsized) continue;  // no ranks without a length (above)
      const bool refused = IsStream(*m.source) && resumed_world != saved_world &&
                           state.consumed > 0;
      std::vector<int64_t> second_segment;
      std::vector<int> batches;
      for (int rank = 0; rank < resumed_world; ++rank) {
        auto second = testing::MakeLoader(m.source, Options(2, rank, resumed_world));
        ASSERT_TRUE(second);
        const Status resumed = second->Resume(state);
        if (refused) {  // the documented refusal
          EXPECT_EQ(resumed.code(), StatusCode::kInvalidArgument) << resumed.ToString();
          EXPECT_NE(resumed.message().find("world size"), std::string::npos) << resumed.message();
          continue;
        }
        ASSERT_TRUE(resumed.ok()) << resumed.ToString();
        const Delivered rest = testing::RunEpoch(second.get());
        ASSERT_TRUE(rest.status.ok()) << rest.status.ToString();
        batches.push_back(rest.batches());
        if (done) {  // the next epoch, in full
          EXPECT_EQ(second->epoch(), epoch + 1);
          EXPECT_EQ(static_cast<int64_t>(rest.labels.size()), kN / resumed_world);
          continue;
        }
        for (size_t i = 0; i < rest.labels.size(); ++i) {
          second_segment.push_back(rest.labels[i]);
          EXPECT_EQ(rest.samples[i], ref_pixels.at(rest.labels[i])) << "label " << rest.labels[i];
        }
      }
      if (refused || done) continue;
      for (int b : batches) EXPECT_EQ(b, batches[0]) << "unequal batch counts";
      // Together the two segments are the epoch; the second repeats a sample
      // only to pad the ranks' shares to equal size.
      std::set<int64_t> all(first_set);
      all.insert(second_segment.begin(), second_segment.end());
      EXPECT_EQ(std::vector<int64_t>(all.begin(), all.end()), Iota(kN));
      const int64_t remainder = kN - static_cast<int64_t>(first_segment.size());
      const int64_t padded = (remainder + resumed_world - 1) / resumed_world * resumed_world;
      EXPECT_EQ(static_cast<int64_t>(second_segment.size()), padded);
      // Only the padding (the epoch's first samples, as an uninterrupted epoch
      // pads) may repeat a sample of the first segment.
      int64_t again = 0;
      for (int64_t l : second_segment) again += static_cast<int64_t>(first_set.count(l));
      EXPECT_LE(again, padded - remainder);
    }
  }
}

TEST_P(SourceConformanceTest, ResumesWithTheDataAtAnotherPath) {
  MadeSource here = Make();
  MadeSource there = Make();  // the same data in another directory
  ASSERT_TRUE(here.source && there.source);
  EXPECT_EQ(here.source->Fingerprint(), there.source->Fingerprint());
  auto first = testing::MakeLoader(here.source, Options(2));
  ASSERT_TRUE(first);
  first->SetEpoch(1);
  ASSERT_TRUE(first->Start().ok());
  Delivered head;
  testing::TakeBatches(first.get(), &head, 2);
  ASSERT_TRUE(head.status.ok()) << head.status.ToString();
  const LoaderState state = first->state();
  first.reset();
  auto second = testing::MakeLoader(there.source, Options(2));
  ASSERT_TRUE(second);
  const Status resumed = second->Resume(state);
  ASSERT_TRUE(resumed.ok()) << resumed.ToString();
  const Delivered rest = testing::RunEpoch(second.get());
  ASSERT_TRUE(rest.status.ok()) << rest.status.ToString();
  std::vector<int64_t> labels = head.labels;
  labels.insert(labels.end(), rest.labels.begin(), rest.labels.end());
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, Iota(kN));  // every sample of the epoch once over both segments
}

TEST_P(SourceConformanceTest, SkipsACorruptSample) {
  MadeSource clean = Make();
  MadeSource bad = Make({5, 30});
  ASSERT_TRUE(clean.source && bad.source);
  ASSERT_FALSE(bad.corrupt.empty());
  LoaderOptions o = Options(2);
  auto ref_loader = testing::MakeLoader(clean.source, o);
  o.on_error = OnError::kSkip;
  auto loader = testing::MakeLoader(bad.source, o);
  ASSERT_TRUE(ref_loader && loader);
  const int64_t good = kN - static_cast<int64_t>(bad.corrupt.size());
  for (int epoch = 0; epoch < 2; ++epoch) {
    const Delivered ref = testing::RunEpoch(ref_loader.get());
    const Delivered d = testing::RunEpoch(loader.get());
    ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    std::vector<int64_t> want;
    for (int64_t label : ref.labels) {
      if (!bad.corrupt.count(label)) want.push_back(label);
    }
    EXPECT_EQ(d.labels, want) << "epoch " << epoch;
    EXPECT_EQ(d.sizes, FullBatches(good)) << "epoch " << epoch;
    const auto ref_pixels = ref.ByLabel();
    for (size_t i = 0; i < d.labels.size(); ++i) {
      EXPECT_EQ(d.samples[i], ref_pixels.at(d.labels[i])) << "label " << d.labels[i];
    }
    const LoaderStats s = loader->stats();
    EXPECT_EQ(s.epoch.skipped, static_cast<int64_t>(bad.corrupt.size())) << "epoch " << epoch;
    EXPECT_EQ(s.epoch.images, good);
  }

  // on_error=raise: the epoch ends with the error.
  o.on_error = OnError::kRaise;
  auto raising = testing::MakeLoader(bad.source, o);
  ASSERT_TRUE(raising);
  const Delivered r = testing::RunEpoch(raising.get());
  EXPECT_FALSE(r.status.ok());
  EXPECT_LT(r.labels.size(), static_cast<size_t>(kN));
}

// Record sources (a field "aux" besides the image and label: sample i's is
// int32 {i, -i}): every delivered sample's aux is its own, under skip
// compaction, ranks and several threads.
TEST_P(SourceConformanceTest, RecordFieldsFollowTheirSample) {
  MadeSource bad = Make({5, 30});
  ASSERT_TRUE(bad.source);
  if (bad.source->schema().Find("aux") < 0) GTEST_SKIP() << "not a record source";
  int64_t delivered = 0;
  for (int rank = 0; rank < 2; ++rank) {
    LoaderOptions o = Options(3, rank, 2);
    o.on_error = OnError::kSkip;
    auto loader = testing::MakeLoader(bad.source, o);
    ASSERT_TRUE(loader);
    ASSERT_TRUE(loader->Start().ok());
    for (;;) {
      BatchPtr b;
      bool end = false;
      ASSERT_TRUE(loader->Next(&b, &end).ok());
      if (end) break;
      const int aux = b->FindField("aux");
      ASSERT_GE(aux, 0);
      for (int i = 0; i < b->size(); ++i) {
        const int64_t label = b->labels()[i];
        if (b->ids()[i] < 0) continue;  // rank padding repeats a delivered sample
        // Stacked in a block (Npy) or in the sample's region (a shard's .npy
        // member, whose shape each sample declares): field_sample reads both.
        const FieldSlot& slot = b->field_sample(aux, i);
        ASSERT_EQ(slot.elem, ElemType::kInt32);
        ASSERT_EQ(slot.bytes, 2 * sizeof(int32_t));
        int32_t v[2];
        std::memcpy(v, slot.data, sizeof v);
        EXPECT_EQ(v[0], label);
        EXPECT_EQ(v[1], -label);
        ++delivered;
      }
    }
  }
  EXPECT_GT(delivered, 0);
}

TEST_P(SourceConformanceTest, CloseMidEpoch) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  auto fresh = testing::MakeLoader(m.source, Options(2));
  ASSERT_TRUE(fresh);
  fresh->SetEpoch(1);
  const Delivered epoch1 = testing::RunEpoch(fresh.get());
  ASSERT_TRUE(epoch1.status.ok()) << epoch1.status.ToString();

  // Stop() after one batch; the batch stays valid; the next Start() runs the
  // next epoch in full, as a fresh loader does.
  auto loader = testing::MakeLoader(m.source, Options(3));
  ASSERT_TRUE(loader);
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr held;
  bool end = false;
  ASSERT_TRUE(loader->Next(&held, &end).ok());
  ASSERT_FALSE(end);
  const std::vector<uint8_t> held_bytes(held->images(), held->images() + held->image_bytes());
  loader->Stop();
  loader->Stop();  // idempotent
  const Delivered next = testing::RunEpoch(loader.get());
  ASSERT_TRUE(next.status.ok()) << next.status.ToString();
  EXPECT_EQ(next.labels, epoch1.labels);
  EXPECT_TRUE(next.pixels == epoch1.pixels);

  // Destroyed mid-epoch, with and without a batch taken; a batch held past
  // the loader keeps its bytes.
  for (int taken : {0, 1, 2}) {
    auto doomed = testing::MakeLoader(m.source, Options(2));
    ASSERT_TRUE(doomed);
    ASSERT_TRUE(doomed->Start().ok());
    Delivered d;
    testing::TakeBatches(doomed.get(), &d, taken);
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    doomed.reset();
  }
  EXPECT_EQ(std::vector<uint8_t>(held->images(), held->images() + held->image_bytes()),
            held_bytes);
}

TEST_P(SourceConformanceTest, NextEpochPrefetchEqualsAFreshEpoch) {
  MadeSource m = Make();
  ASSERT_TRUE(m.source);
  for (bool prefetch_next : {true, false}) {
    LoaderOptions o = Options(2);
    o.prefetch_next_epoch = prefetch_next;
    auto running = testing::MakeLoader(m.source, o);
    ASSERT_TRUE(running);
    std::vector<Delivered> epochs;
    for (int e = 0; e < 3; ++e) epochs.push_back(testing::RunEpoch(running.get()));
    for (int e = 0; e < 3; ++e) {
      auto fresh = testing::MakeLoader(m.source, o);
      ASSERT_TRUE(fresh);
      fresh->SetEpoch(e);
      const Delivered want = testing::RunEpoch(fresh.get());
      ASSERT_TRUE(epochs[e].status.ok()) << epochs[e].status.ToString();
      ASSERT_TRUE(want.status.ok()) << want.status.ToString();
      EXPECT_EQ(epochs[e].labels, want.labels) << "epoch " << e << " prefetch " << prefetch_next;
      EXPECT_TRUE(epochs[e].pixels == want.pixels) << "epoch " << e;
    }
    // The made-ahead batches were the ones wanted: none thrown away.
    EXPECT_EQ(running->stats().prefetch_discarded_batches, 0);
  }
}

std::string SourceName(const ::testing::TestParamInfo<SourceFactory>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Conformance, SourceConformanceTest,
                         ::testing::ValuesIn(testing::ConformanceSources()), SourceName);

}  // namespace
}  // namespace stoker
