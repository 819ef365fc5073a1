// Copyright 2026 The stoker Authors.
#include "stoker/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>

#include <sys/wait.h>
#include <unistd.h>

#include "pipeline/tuning_clock.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::MemorySample;
using testing::MemorySource;

const std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
const std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};

// n JPEG samples of varied sizes; label = index % 5.
std::vector<MemorySample> JpegSamples(int n) {
  std::vector<MemorySample> out;
  for (int i = 0; i < n; ++i) {
    const int w = 60 + (i * 13) % 50, h = 48 + (i * 7) % 40;
    testing::JpegSpec spec;
    spec.subsampling = i % 3 == 0 ? 420 : 444;
    MemorySample s;
    s.bytes = testing::EncodeJpeg(testing::MakePixels(w, h, i), w, h, spec);
    s.label = i % 5;
    s.name = "mem/" + std::to_string(i) + ".jpg";
    out.push_back(std::move(s));
  }
  return out;
}

LoaderOptions TrainOptions(int batch, int threads) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.shuffle = true;
  o.seed = 5;
  o.transforms = {Transform::RandomResizedCrop(32, 32), Transform::RandomHorizontalFlip(),
                  Transform::Normalize(kMean, kStd)};
  return o;
}

struct Epoch {
  std::vector<int64_t> ids;
  std::vector<int64_t> labels;
  std::vector<int> sizes;
  std::vector<uint8_t> pixels;
};

// Runs one epoch and collects everything. Fails the test on error.
Epoch RunEpoch(Loader* loader) {
  Epoch e;
  EXPECT_TRUE(loader->Start().ok());
  for (;;) {
    BatchPtr b;
    bool end = false;
    Status s = loader->Next(&b, &end);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok() || end) break;
    e.sizes.push_back(b->size());
    e.ids.insert(e.ids.end(), b->ids(), b->ids() + b->size());
    e.labels.insert(e.labels.end(), b->labels(), b->labels() + b->size());
    e.pixels.insert(e.pixels.end(), b->images(), b->images() + b->image_bytes());
  }
  return e;
}

// Starts an epoch and takes batches until an error (returned) or the end (OK).
Status FirstError(Loader* loader) {
  STOKER_RETURN_IF_ERROR(loader->Start());
  for (;;) {
    BatchPtr b;
    bool end = false;
    Status err = loader->Next(&b, &end);
    if (!err.ok() || end) return err;
  }
}

std::unique_ptr<Loader> Make(std::shared_ptr<Source> src, const LoaderOptions& o) {
  auto l = Loader::Create(std::move(src), o);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return std::move(l).value();
}

TEST(LoaderTest, EverySampleExactlyOncePerEpoch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(37));
  auto loader = Make(src, TrainOptions(8, 3));
  EXPECT_EQ(loader->num_batches(), 5);
  for (int epoch = 0; epoch < 3; ++epoch) {
    Epoch e = RunEpoch(loader.get());
    EXPECT_EQ(e.sizes, (std::vector<int>{8, 8, 8, 8, 5}));
    std::set<int64_t> unique(e.ids.begin(), e.ids.end());
    EXPECT_EQ(unique.size(), 37u);
    EXPECT_EQ(*unique.begin(), 0);
    EXPECT_EQ(*unique.rbegin(), 36);
    for (size_t i = 0; i < e.ids.size(); ++i) EXPECT_EQ(e.labels[i], e.ids[i] % 5);
  }
}

TEST(LoaderTest, DropLastKeepsFullBatchesOnly) {
  auto src = std::make_shared<MemorySource>(JpegSamples(37));
  LoaderOptions o = TrainOptions(8, 2);
  o.drop_last = true;
  auto loader = Make(src, o);
  EXPECT_EQ(loader->num_batches(), 4);
  Epoch e = RunEpoch(loader.get());
  EXPECT_EQ(e.sizes, (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(std::set<int64_t>(e.ids.begin(), e.ids.end()).size(), 32u);
}

TEST(LoaderTest, OrderComesFromSeedAndEpoch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(20));
  LoaderOptions o = TrainOptions(6, 2);
  o.shuffle = false;
  Epoch seq = RunEpoch(Make(src, o).get());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(seq.ids[i], i);

  o.shuffle = true;
  auto loader = Make(src, o);
  loader->SetEpoch(4);
  Epoch e4 = RunEpoch(loader.get());
  auto perm = EpochPermutation(20, o.seed, 4);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(e4.ids[i], perm[i]);
  Epoch e5 = RunEpoch(loader.get());  // advances to epoch 5 by itself
  EXPECT_EQ(loader->epoch(), 5);
  EXPECT_NE(e4.ids, e5.ids);
  loader->SetEpoch(4);
  EXPECT_EQ(RunEpoch(loader.get()).pixels, e4.pixels);
}

TEST(LoaderTest, OutputIsIdenticalForAnyThreadCountAndPrefetch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(30));
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kUint8}) {
    LoaderOptions o = TrainOptions(7, 1);
    o.dtype = dtype;
    if (dtype == DType::kUint8) o.transforms.pop_back();  // no Normalize
    Epoch ref = RunEpoch(Make(src, o).get());
    ASSERT_FALSE(ref.pixels.empty());
    for (int threads : {2, 5}) {
      for (int prefetch : {1, 4}) {
        o.threads = threads;
        o.prefetch = prefetch;
        Epoch e = RunEpoch(Make(src, o).get());
        EXPECT_EQ(e.ids, ref.ids);
        EXPECT_TRUE(e.pixels == ref.pixels)
            << DTypeName(dtype) << " threads=" << threads << " prefetch=" << prefetch;
      }
    }
  }
}

TEST(LoaderTest, RawPixelsAndLosslessPngGiveTheSameOutput) {
  std::vector<MemorySample> raw, png;
  for (int i = 0; i < 6; ++i) {
    const int w = 50 + i * 3, h = 40 + i;
    auto px = testing::MakePixels(w, h, 100 + i);
    MemorySample r;
    r.bytes = px;
    r.raw_width = w;
    r.raw_height = h;
    r.name = "raw" + std::to_string(i);
    raw.push_back(r);
    MemorySample p;
    std::vector<uint8_t> expected;
    p.bytes = testing::EncodePng(px, w, h, testing::PngSpec{}, &expected);
    ASSERT_EQ(expected, px);
    p.name = "png" + std::to_string(i);
    png.push_back(p);
  }
  LoaderOptions o = TrainOptions(3, 2);
  Epoch a = RunEpoch(Make(std::make_shared<MemorySource>(raw), o).get());
  Epoch b = RunEpoch(Make(std::make_shared<MemorySource>(png), o).get());
  EXPECT_TRUE(a.pixels == b.pixels);
}

std::vector<MemorySample> WithBadSample(int n, int bad_index) {
  auto samples = JpegSamples(n);
  samples[bad_index].bytes.resize(samples[bad_index].bytes.size() / 2);  // truncated
  samples[bad_index].name = "mem/bad.jpg";
  return samples;
}

TEST(LoaderTest, RaisePolicyNamesTheSampleAndStopsTheEpoch) {
  auto src = std::make_shared<MemorySource>(WithBadSample(20, 13));
  LoaderOptions o = TrainOptions(4, 2);
  o.shuffle = false;
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->Start().ok());
  Status err;
  int good_batches = 0;
  for (;;) {
    BatchPtr b;
    bool end = false;
    err = loader->Next(&b, &end);
    if (!err.ok() || end) break;
    ++good_batches;
  }
  EXPECT_EQ(good_batches, 3);  // batches 0..2; batch 3 holds sample 13
  EXPECT_EQ(err.code(), StatusCode::kDataLoss);
  EXPECT_NE(err.message().find("mem/bad.jpg"), std::string::npos) << err.message();
  EXPECT_NE(err.message().find("JPEG"), std::string::npos) << err.message();
  BatchPtr b;
  bool end = false;
  EXPECT_TRUE(loader->Next(&b, &end).ok());
  EXPECT_TRUE(end);
  // The next epoch starts cleanly.
  ASSERT_TRUE(loader->Start().ok());
  EXPECT_TRUE(loader->Next(&b, &end).ok());
  EXPECT_FALSE(end);
}

TEST(LoaderTest, SkipPolicyLeavesTheBadSampleOutDeterministicallyAndCounts) {
  auto src = std::make_shared<MemorySource>(WithBadSample(20, 13));
  LoaderOptions o = TrainOptions(4, 1);
  o.on_error = OnError::kSkip;
  auto loader = Make(src, o);
  Epoch ref = RunEpoch(loader.get());
  // Packed: only the last batch is short; every good sample once.
  EXPECT_EQ(ref.sizes, (std::vector<int>{4, 4, 4, 4, 3}));
  EXPECT_EQ(std::count(ref.ids.begin(), ref.ids.end(), 13), 0);
  EXPECT_EQ(std::set<int64_t>(ref.ids.begin(), ref.ids.end()).size(), 19u);
  EXPECT_EQ(loader->stats().total.skipped, 1);
  EXPECT_EQ(loader->stats().total.skipped_files, 1);
  EXPECT_EQ(loader->stats().total.images, 19);
  o.threads = 4;
  Epoch again = RunEpoch(Make(src, o).get());
  EXPECT_EQ(again.ids, ref.ids);
  EXPECT_TRUE(again.pixels == ref.pixels);
}

TEST(LoaderTest, SkipPolicyFailsAnEpochWhereNothingIsReadable) {
  std::vector<MemorySample> bad(5);
  for (int i = 0; i < 5; ++i) {
    bad[i].bytes = {'n', 'o', 'p', 'e'};
    bad[i].name = "bad" + std::to_string(i);
  }
  LoaderOptions o = TrainOptions(2, 2);
  o.on_error = OnError::kSkip;
  auto loader = Make(std::make_shared<MemorySource>(bad), o);
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  Status s = loader->Next(&b, &end);
  // Nothing to deliver is an error, never a slot of stale pixels nor a
  // silently empty epoch.
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(b, nullptr);
  EXPECT_NE(s.message().find("no sample of epoch 0 could be read (5 skipped)"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad"), std::string::npos) << s.message();
  EXPECT_EQ(loader->stats().total.skipped, 5);
  EXPECT_EQ(loader->stats().total.skipped_files, 5);
}

// Batch memory that cannot be had is reported, not waited for.
TEST(LoaderTest, AllocationFailureIsAnErrorNotAHang) {
  class FailingAllocator : public BatchAllocator {
   public:
    StatusOr<void*> Allocate(size_t) override { return ResourceExhaustedError("no memory"); }
    void Deallocate(void*, size_t) override {}
    const char* name() const override { return "failing"; }
  };
  LoaderOptions o = TrainOptions(2, 2);
  o.allocator = std::make_shared<FailingAllocator>();
  auto loader = Make(std::make_shared<MemorySource>(JpegSamples(4)), o);
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  Status s = loader->Next(&b, &end);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  // The next epoch tries again (and fails the same way, without hanging).
  ASSERT_TRUE(loader->Start().ok());
  EXPECT_EQ(loader->Next(&b, &end).code(), StatusCode::kResourceExhausted);
}

TEST(LoaderTest, StopMidEpochThenRestart) {
  auto src = std::make_shared<MemorySource>(JpegSamples(40), /*read_delay_us=*/200);
  auto loader = Make(src, TrainOptions(4, 3));
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(loader->Start().ok());
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    loader->Stop();
    EXPECT_EQ(src->in_progress(), 0);  // Stop() returns once no worker is in the epoch
  }
  Epoch e = RunEpoch(loader.get());
  EXPECT_EQ(std::set<int64_t>(e.ids.begin(), e.ids.end()).size(), 40u);
  // Stopped means no more work: stop mid-epoch, then join the workers (the
  // destructor); every read they would still make has been counted by then.
  // (The epoch above ended normally, so its end prefetched the next one's
  // start, which this Start() uses.)
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  loader->Stop();
  const int64_t reads = src->reads();
  loader.reset();
  EXPECT_EQ(src->reads(), reads);
}

// A consumer of an earlier run (a stale iterator in another thread, whose
// Next() began after the loader was restarted) gets the end, and leaves the
// newer run its carry and every batch.
TEST(LoaderTest, NextOfAStaleRunEndsAndTakesNothingFromTheNewerRun) {
  auto src = std::make_shared<MemorySource>(JpegSamples(37));
  auto loader = Make(src, TrainOptions(8, 3));
  EXPECT_EQ(loader->run(), 0u);
  ASSERT_TRUE(loader->Start().ok());
  const uint64_t first = loader->run();
  EXPECT_NE(first, Loader::kCurrentRun);
  BatchPtr b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, nullptr, 0, first).ok());
  EXPECT_FALSE(end);
  ASSERT_TRUE(loader->Start().ok());
  const uint64_t second = loader->run();
  EXPECT_NE(second, first);
  std::set<int64_t> ids;
  for (bool stale_turn = true;; stale_turn = !stale_turn) {
    if (stale_turn) {  // every other call: the stale run's, which must end at once
      BatchPtr stale;
      bool stale_end = false;
      ASSERT_TRUE(loader->Next(&stale, &stale_end, nullptr, 0, first).ok());
      EXPECT_TRUE(stale_end);
      EXPECT_EQ(stale, nullptr);
      continue;
    }
    b.reset();
    ASSERT_TRUE(loader->Next(&b, &end, nullptr, 0, second).ok());
    if (end) break;
    ids.insert(b->ids(), b->ids() + b->size());
  }
  EXPECT_EQ(ids.size(), 37u);
}

// The engine owns the checkpoint's checks: a C++ caller's Resume() refuses
// what Python's load_state_dict() refuses, naming what differs.
TEST(LoaderTest, ResumeRefusesAStateOfAnotherDatasetOrderFormatOrPastTheEnd) {
  auto src = std::make_shared<MemorySource>(JpegSamples(37));
  auto loader = Make(src, TrainOptions(8, 2));
  const LoaderState good = loader->state();
  EXPECT_EQ(good.version, kLoaderStateVersion);
  EXPECT_EQ(good.num_samples, 37);
  EXPECT_EQ(good.seed, TrainOptions(8, 2).seed);
  EXPECT_EQ(good.fingerprint, static_cast<int64_t>(src->Fingerprint() >> 1));
  const auto refused = [&](LoaderState st, const std::string& says) {
    const Status s = loader->Resume(st);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << says;
    EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
  };
  LoaderState st = good;
  st.version = kLoaderStateVersion + 1;
  refused(st, "newer than this stoker reads");
  st = good;
  st.version = 0;
  refused(st, "version must be >= 1");
  st = good;
  st.num_samples = 36;
  refused(st, "a dataset of 36 samples; this loader's has 37");
  st = good;
  st.fingerprint ^= 1;
  refused(st, "another dataset");
  st = good;
  st.seed += 1;
  refused(st, "saved with seed=");
  st = good;
  st.shuffle = !st.shuffle;
  refused(st, "saved with shuffle=");
  st = good;
  st.consumed = 38;
  refused(st, "consumed=38 is past the end of the epoch's 37 samples");
  st = good;
  st.consumed = 37;  // the end: the next epoch
  EXPECT_TRUE(loader->Resume(st).ok());
  const LoaderState a_state_of_nothing;  // built field by field: of no dataset
  EXPECT_FALSE(loader->Resume(a_state_of_nothing).ok());
}

// Batches left: the whole epoch before it starts, counting down as batches
// are delivered, the rest of a resumed epoch before its Start(), and the
// whole next epoch after a stop or an end.
TEST(LoaderTest, BatchesLeftCountsWhatTheEpochStillDelivers) {
  auto src = std::make_shared<MemorySource>(JpegSamples(37));
  auto loader = Make(src, TrainOptions(8, 2));
  EXPECT_EQ(loader->num_batches(), 5);
  EXPECT_EQ(loader->num_batches_left(), 5);
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  for (int taken = 1; taken <= 2; ++taken) {
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    EXPECT_EQ(loader->num_batches_left(), 5 - taken);
  }
  const LoaderState mid = loader->state();  // 16 of 37 consumed
  loader->Stop();
  EXPECT_EQ(loader->num_batches_left(), 5);  // a break: the next Start() runs a new epoch
  ASSERT_TRUE(loader->Resume(mid).ok());
  EXPECT_EQ(loader->num_batches_left(), 3);  // 21 samples left
  EXPECT_EQ(loader->num_batches(), 5);       // the epoch's length is still the whole
  ASSERT_TRUE(loader->Start().ok());
  int delivered = 0;
  for (;;) {
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    if (end) break;
    ++delivered;
    EXPECT_EQ(loader->num_batches_left(), 3 - delivered);
  }
  EXPECT_EQ(delivered, 3);
  EXPECT_EQ(loader->num_batches_left(), 5);
}

TEST(LoaderTest, BatchOutlivesTheLoader) {
  auto src = std::make_shared<MemorySource>(JpegSamples(8));
  auto loader = Make(src, TrainOptions(4, 2));
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  std::vector<uint8_t> copy(b->images(), b->images() + b->image_bytes());
  loader.reset();
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), b->images()));
}

TEST(LoaderTest, PollInterruptsAWaitWithoutLosingTheBatch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(16));
  auto loader = Make(src, TrainOptions(8, 1));
  src->HoldReads();  // the worker blocks in its first read: no batch can complete
  ASSERT_TRUE(loader->Start().ok());
  int polls = 0;
  BatchPtr b;
  bool end = false;
  Status s = loader->Next(&b, &end, [&]() -> Status {
    return ++polls >= 2 ? CancelledError("stop waiting") : Status::OK();
  }, 10);
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(polls, 2);
  EXPECT_EQ(src->reads(), 1);  // returned while the first sample was in hand
  EXPECT_EQ(b, nullptr);
  src->OpenReads();
  // The epoch went on: the same batch arrives next, then the second one.
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->index(), 0);
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  EXPECT_EQ(b->index(), 1);
}

class CountingAllocator : public BatchAllocator {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    allocs.fetch_add(1);
    return HostAllocator()->Allocate(bytes);
  }
  void Deallocate(void* p, size_t bytes) override { HostAllocator()->Deallocate(p, bytes); }
  const char* name() const override { return "counting"; }
  std::atomic<int> allocs{0};
};

// Batch memory is bounded by the in-flight batches plus the ones the user
// holds (here one at a time), however many batches go through.
TEST(LoaderTest, SteadyStateAllocatesNoBatchMemory) {
  auto src = std::make_shared<MemorySource>(JpegSamples(24));
  auto alloc = std::make_shared<CountingAllocator>();
  LoaderOptions o = TrainOptions(4, 2);
  o.prefetch = 3;
  o.allocator = alloc;
  auto loader = Make(src, o);
  for (int i = 0; i < 8; ++i) RunEpoch(loader.get());
  EXPECT_EQ(loader->stats().total.batches, 48);
  // The ring's, the next epoch's prefetched batches (made while the ring
  // still holds the last ones) and the one the consumer holds: not per epoch.
  EXPECT_LE(alloc->allocs.load(), 2 * o.prefetch + 1);
}

TEST(LoaderTest, PrefetchBoundsWorkAheadOfTheConsumer) {
  auto src = std::make_shared<MemorySource>(JpegSamples(60));
  LoaderOptions o = TrainOptions(4, 3);
  o.prefetch = 2;
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->Start().ok());
  int taken = 0;
  for (taken = 1; taken <= 4; ++taken) {
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    // The workers make every batch in flight (a slow consumer waits for
    // that)...
    ASSERT_TRUE(src->AwaitReads((taken + o.prefetch) * o.batch_size));
    // ... and claim at most one sample per thread beyond: the batch after
    // waits for the consumer.
    EXPECT_LE(src->reads(), (taken + o.prefetch) * o.batch_size + o.threads);
  }
  // The bound holds for good: once the workers are joined (the consumer
  // took nothing more), every read they made is counted.
  loader.reset();
  EXPECT_LE(src->reads(), (taken - 1 + o.prefetch) * o.batch_size + o.threads);
}

TEST(LoaderTest, StatsCountImagesBatchesAndStageTimes) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  auto loader = Make(src, TrainOptions(5, 2));
  RunEpoch(loader.get());
  RunEpoch(loader.get());
  LoaderStats s = loader->stats();
  EXPECT_EQ(s.total.images, 24);
  EXPECT_EQ(s.total.batches, 6);
  EXPECT_EQ(s.epoch.images, 12);
  EXPECT_EQ(s.epoch.batches, 3);
  EXPECT_GT(s.total.decode_s, 0);
  EXPECT_GT(s.total.augment_s, 0);
  EXPECT_GT(s.total.seconds, 0);
  EXPECT_GT(s.total.bytes_read, 0);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.current_epoch, 1);
}

// Takes `batches` batches (over as many epochs as needed), sleeping
// `step_ms` after each like a training step.
// The loader's tuning clock (pipeline/tuning_clock.h), driven by the test:
// the time, and the consumer's wait for each batch, are what the test makes
// them, however loaded the machine is.
struct TestClock {
  int64_t now_ns = 1'000'000'000;  // never 0: TuningWindow's "no window open"
  int64_t wait_ns = 0;             // the consumer's wait for the next batch
};

// Takes `batches` batches, starting the next epoch at each end. Before each
// Next(), `batch_ns(threads)` (threads: the loader's active workers, as
// applied) says how long the batch takes on `clock`; `waiting` says whether
// the consumer spends that time waiting for it (a starved consumer) or
// working on the previous one (a fed consumer, no wait). The tuning clock is
// installed first; everything runs on the calling thread's time line.
void ConsumeOnClock(Loader* loader, int batches, TestClock* clock,
                    const std::function<int64_t(int threads)>& batch_ns, bool waiting) {
  TuningClock tc;
  tc.now_ns = [clock] { return clock->now_ns; };
  tc.waited_ns = [clock](int64_t /*measured*/) { return clock->wait_ns; };
  ASSERT_TRUE(SetTuningClockForTesting(loader, std::move(tc)));
  ASSERT_TRUE(loader->Start().ok());
  for (int done = 0; done < batches;) {
    const int64_t step = batch_ns(loader->stats().threads);
    clock->now_ns += step;
    clock->wait_ns = waiting ? step : 0;
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    if (end) {
      ASSERT_TRUE(loader->Start().ok());
      continue;
    }
    ++done;
  }
  loader->Stop();
}

TEST(LoaderTest, AutoThreadsGrowWhileASlowSourceStarvesTheConsumer) {
  // A source whose reads wait on storage: on the test's clock a batch takes
  // 400 ms / threads up to 6 threads (no gain beyond), and the consumer
  // waits for every one of them.
  auto src = std::make_shared<MemorySource>(JpegSamples(40));
  LoaderOptions o = TrainOptions(4, 1);
  o.auto_threads = true;
  o.max_threads = 8;
  o.tune_window = 4;
  auto loader = Make(src, o);
  EXPECT_EQ(loader->stats().threads, 1);
  TestClock clock;
  ConsumeOnClock(
      loader.get(), 160, &clock,
      [](int threads) { return int64_t{400'000'000} / std::min(std::max(threads, 1), 6); },
      /*waiting=*/true);
  const LoaderStats s = loader->stats();
  EXPECT_GE(s.threads, 4) << s.tuning;
  EXPECT_LE(s.threads, 8) << s.tuning;
  EXPECT_GT(s.tuning_changes, 0);
  EXPECT_FALSE(s.tuning.empty());
}

TEST(LoaderTest, AutoThreadsShrinkWhenTheConsumerNeverWaits) {
  // The consumer's 40 ms step bounds the throughput whatever the threads,
  // and it never waits: the tuner gives threads back.
  auto src = std::make_shared<MemorySource>(JpegSamples(40));
  LoaderOptions o = TrainOptions(4, 4);
  o.auto_threads = true;
  o.max_threads = 4;
  o.tune_window = 4;
  auto loader = Make(src, o);
  EXPECT_EQ(loader->stats().threads, 4);
  TestClock clock;
  ConsumeOnClock(
      loader.get(), 70, &clock, [](int /*threads*/) { return int64_t{40'000'000}; },
      /*waiting=*/false);
  const LoaderStats s = loader->stats();
  EXPECT_LE(s.threads, 2) << s.tuning;
  EXPECT_GE(s.threads, 1);
  EXPECT_GT(s.tuning_changes, 0);
}

TEST(LoaderTest, TunedLoaderKeepsOrderAndPixels) {
  // Threads parked and woken between epochs and mid-epoch must not change
  // the output, nor hang Start() or the destructor.
  auto src = std::make_shared<MemorySource>(JpegSamples(24), 500);
  LoaderOptions o = TrainOptions(3, 2);
  Epoch ref = RunEpoch(Make(src, o).get());
  o.auto_threads = true;
  o.auto_prefetch = true;
  o.max_threads = 6;
  o.tune_window = 1;
  auto loader = Make(src, o);
  for (int e = 0; e < 6; ++e) {
    loader->SetEpoch(0);
    Epoch got = RunEpoch(loader.get());
    EXPECT_EQ(got.ids, ref.ids);
    EXPECT_TRUE(got.pixels == ref.pixels) << "epoch run " << e;
  }
  const LoaderStats s = loader->stats();
  EXPECT_GE(s.prefetch, 1);
  EXPECT_LE(s.prefetch, 8);
}

TEST(LoaderTest, StageTimingCanBeTurnedOff) {
  auto src = std::make_shared<MemorySource>(JpegSamples(6));
  LoaderOptions o = TrainOptions(3, 1);
  o.stage_timing = false;
  auto loader = Make(src, o);
  RunEpoch(loader.get());
  const LoaderStats s = loader->stats();
  EXPECT_EQ(s.total.images, 6);
  EXPECT_EQ(s.total.read_s, 0);
  EXPECT_EQ(s.total.decode_s, 0);
  EXPECT_EQ(s.total.augment_s, 0);
  EXPECT_GT(s.total.seconds, 0);
}

TEST(LoaderTest, DecodedCacheGivesTheUncachedPixelsAndSkipsDecodingLaterEpochs) {
  auto src = std::make_shared<MemorySource>(JpegSamples(23));
  LoaderOptions o = TrainOptions(5, 3);
  o.dct_scaling = LoaderOptions::DctScaling::kOff;  // cached images are decoded whole
  o.prefetch_next_epoch = false;  // exact lookup counts (else epoch 3's prefetch looks up too)
  auto plain = Make(src, o);
  o.cache_bytes = 64 << 20;
  auto cached = Make(src, o);
  for (int epoch = 0; epoch < 3; ++epoch) {
    plain->SetEpoch(epoch);
    cached->SetEpoch(epoch);
    Epoch want = RunEpoch(plain.get());
    Epoch got = RunEpoch(cached.get());
    EXPECT_EQ(got.ids, want.ids) << "epoch " << epoch;
    EXPECT_EQ(got.labels, want.labels) << "epoch " << epoch;
    EXPECT_TRUE(got.pixels == want.pixels) << "epoch " << epoch;
  }
  const LoaderStats s = cached->stats();
  EXPECT_EQ(s.cache_misses, 23);      // each image decoded once
  EXPECT_EQ(s.cache_hits, 2 * 23);    // and served from memory twice
  EXPECT_EQ(s.cache_entries, 23);
  EXPECT_EQ(s.cache_evicted, 0);
  EXPECT_GT(s.cache_bytes, 0u);
  EXPECT_EQ(s.cache_capacity, size_t{64} << 20);
  EXPECT_EQ(s.cache_advice, "");
  EXPECT_EQ(plain->stats().cache_capacity, 0u);
}

TEST(LoaderTest, TooSmallACacheEvictsAndSaysHowLargeItShouldBe) {
  auto src = std::make_shared<MemorySource>(JpegSamples(40));
  LoaderOptions o = TrainOptions(8, 2);
  o.dct_scaling = LoaderOptions::DctScaling::kOff;
  auto plain = Make(src, o);
  o.cache_bytes = 60 * 1024;  // a few images of ~10-20 KiB decoded
  auto cached = Make(src, o);
  for (int epoch = 0; epoch < 2; ++epoch) {
    plain->SetEpoch(epoch);
    cached->SetEpoch(epoch);
    Epoch want = RunEpoch(plain.get());
    Epoch got = RunEpoch(cached.get());
    EXPECT_TRUE(got.pixels == want.pixels) << "epoch " << epoch;
  }
  const LoaderStats s = cached->stats();
  EXPECT_GT(s.cache_evicted, 0);
  EXPECT_LE(s.cache_bytes, s.cache_capacity);
  EXPECT_NE(s.cache_advice.find("cache too small to help"), std::string::npos) << s.cache_advice;
}

TEST(LoaderTest, OutputCacheServesValidationSamplesWithoutRedoingThem) {
  auto src = std::make_shared<MemorySource>(JpegSamples(19));
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 3;
  o.transforms = {Transform::Resize(40), Transform::CenterCrop(32, 32),
                  Transform::Normalize(kMean, kStd)};
  o.prefetch_next_epoch = false;  // exact lookup counts (else epoch 3's prefetch looks up too)
  auto plain = Make(src, o);
  o.cache_bytes = 16 << 20;
  o.cache_kind = LoaderOptions::CacheKind::kOutput;
  auto cached = Make(src, o);
  for (int epoch = 0; epoch < 3; ++epoch) {
    Epoch want = RunEpoch(plain.get());
    Epoch got = RunEpoch(cached.get());
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_EQ(got.labels, want.labels);
    EXPECT_TRUE(got.pixels == want.pixels) << "epoch " << epoch;
  }
  const LoaderStats s = cached->stats();
  EXPECT_EQ(s.cache_misses, 19);
  EXPECT_EQ(s.cache_hits, 2 * 19);
  EXPECT_EQ(s.total.images, 3 * 19);
  // Finished samples of a random pipeline would repeat last epoch's crop.
  o.transforms = TrainOptions(4, 1).transforms;
  auto refused = Loader::Create(src, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cache='decoded'"), std::string::npos);
}

TEST(LoaderTest, SamplerChoosesTheEpochsSamplesIdenticallyForAnyThreadCount) {
  auto src = std::make_shared<MemorySource>(JpegSamples(20));
  LoaderOptions o = TrainOptions(6, 1);
  o.sampler = SamplerSpec::Subset({3, 17, 5, 5, 11});
  auto subset = Make(src, o);
  EXPECT_EQ(subset->num_samples(), 5);
  EXPECT_EQ(subset->num_batches(), 1);
  o.shuffle = false;
  Epoch e = RunEpoch(Make(src, o).get());
  EXPECT_EQ(e.ids, (std::vector<int64_t>{3, 17, 5, 5, 11}));  // in order without shuffle
  EXPECT_EQ(e.labels, (std::vector<int64_t>{3, 2, 0, 0, 1}));

  // Weighted, with replacement: only samples of positive weight, 50 draws.
  std::vector<double> w(20, 0.0);
  w[2] = 1;
  w[7] = 3;
  w[19] = 1;
  o = TrainOptions(8, 1);
  o.sampler = SamplerSpec::Weighted(w, 50);
  Epoch ref = RunEpoch(Make(src, o).get());
  ASSERT_EQ(ref.ids.size(), 50u);
  for (int64_t id : ref.ids) EXPECT_TRUE(id == 2 || id == 7 || id == 19) << id;
  for (int threads : {2, 4}) {
    o.threads = threads;
    Epoch again = RunEpoch(Make(src, o).get());
    EXPECT_EQ(again.ids, ref.ids);
    EXPECT_TRUE(again.pixels == ref.pixels) << threads;
  }
  // Another epoch draws again.
  auto loader = Make(src, o);
  loader->SetEpoch(1);
  EXPECT_NE(RunEpoch(loader.get()).ids, ref.ids);

  // Weights that do not fit the source are refused at Create.
  o.sampler = SamplerSpec::Weighted(std::vector<double>(19, 1.0));
  auto bad = Loader::Create(src, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(LoaderTest, ClassBalancedSamplerDrawsEachClassAboutEqually) {
  // Labels: index % 5 over 40 samples, then 20 more of class 0: class 0 is 3x the others.
  std::vector<MemorySample> samples = JpegSamples(60);
  for (int i = 40; i < 60; ++i) samples[i].label = 0;
  auto src = std::make_shared<MemorySource>(std::move(samples));
  LoaderOptions o = TrainOptions(50, 2);
  o.transforms = {Transform::Resize(8), Transform::CenterCrop(8, 8)};
  o.dtype = DType::kUint8;
  o.sampler = SamplerSpec::ClassBalanced(5000);
  Epoch e = RunEpoch(Make(src, o).get());
  ASSERT_EQ(e.labels.size(), 5000u);
  std::vector<int> count(5, 0);
  for (int64_t l : e.labels) count[l]++;
  // Each class expects 1000; 4 sigma of a binomial(5000, 0.2) is ~113.
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(count[k], 1000, 113) << "class " << k;
}

TEST(LoaderTest, DecodedCacheComposesWithASampler) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  LoaderOptions o = TrainOptions(8, 2);
  o.dct_scaling = LoaderOptions::DctScaling::kOff;
  o.sampler = SamplerSpec::Weighted(std::vector<double>(12, 1.0), 40);
  o.prefetch_next_epoch = false;  // exact lookup counts (else epoch 1's prefetch looks up too)
  auto plain = Make(src, o);
  o.cache_bytes = 32 << 20;
  auto cached = Make(src, o);
  Epoch want = RunEpoch(plain.get());
  Epoch got = RunEpoch(cached.get());
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_TRUE(got.pixels == want.pixels);
  const LoaderStats s = cached->stats();
  EXPECT_EQ(s.cache_hits + s.cache_misses, 40);
  // One thread: exactly one miss per distinct image (with more, two threads
  // may miss the same image at once).
  o.threads = 1;
  auto serial = Make(src, o);
  Epoch one = RunEpoch(serial.get());
  EXPECT_TRUE(one.pixels == want.pixels);
  EXPECT_EQ(serial->stats().cache_misses,
            static_cast<int64_t>(std::set<int64_t>(want.ids.begin(), want.ids.end()).size()));
}

// A Callback runs on the output-size uint8 image, in list order with the
// photometric ops and before the dtype conversion; its errors fail the
// sample like a bad file; its time is counted; output is thread-independent.
TEST(LoaderTest, CallbackRunsPerSampleInListOrder) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 1;
  o.dtype = DType::kUint8;
  o.layout = Layout::kNHWC;
  o.transforms = {Transform::Resize(24, 20)};
  o.prefetch_next_epoch = false;  // exact call count (else the next epoch's prefetch calls too)
  const Epoch base = RunEpoch(Make(src, o).get());
  std::atomic<int> calls{0};
  auto invert = [&calls](uint8_t* rgb, int w, int h, uint64_t) {
    calls.fetch_add(1);
    for (size_t i = 0; i < static_cast<size_t>(w) * h * 3; ++i) rgb[i] = 255 - rgb[i];
    return Status::OK();
  };
  // Invert, then posterize to 2 bits: (255 - x) & 0xC0 for every value.
  o.transforms = {Transform::Resize(24, 20), Transform::Callback(invert, "invert"),
                  Transform::RandomPosterize(2, 1.0)};
  auto loader = Make(src, o);
  const Epoch got = RunEpoch(loader.get());
  EXPECT_EQ(calls.load(), 12);
  ASSERT_EQ(got.pixels.size(), base.pixels.size());
  for (size_t i = 0; i < base.pixels.size(); ++i) {
    ASSERT_EQ(got.pixels[i], (255 - base.pixels[i]) & 0xC0) << i;
  }
  EXPECT_GT(loader->stats().total.callback_s, 0);
  EXPECT_LE(loader->stats().total.callback_s, loader->stats().total.augment_s);
  EXPECT_EQ(o.transforms[1].ToString(), "Lambda(invert)");
  // The seed is a function of the sample: identical output for 1 and 3 threads.
  auto noise = [](uint8_t* rgb, int w, int h, uint64_t seed) {
    for (size_t i = 0; i < static_cast<size_t>(w) * h * 3; ++i) {
      rgb[i] = static_cast<uint8_t>(rgb[i] ^ (seed >> (i % 56)));
    }
    return Status::OK();
  };
  LoaderOptions t = TrainOptions(4, 1);
  t.transforms.insert(t.transforms.begin() + 2, Transform::Callback(noise, "noise"));
  const Epoch one = RunEpoch(Make(src, t).get());
  t.threads = 3;
  const Epoch three = RunEpoch(Make(src, t).get());
  EXPECT_EQ(one.ids, three.ids);
  EXPECT_TRUE(one.pixels == three.pixels);
}

TEST(LoaderTest, CallbackErrorNamesTheSampleAndRespectsOnError) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  // Fails on bright images only (a function of the pixels, so of the sample).
  auto picky = [](uint8_t* rgb, int w, int h, uint64_t) {
    int64_t sum = 0;
    for (size_t i = 0; i < static_cast<size_t>(w) * h * 3; ++i) sum += rgb[i];
    if (sum % 3 == 0) return InvalidArgumentError("too bright");
    return Status::OK();
  };
  LoaderOptions o = TrainOptions(4, 2);
  o.transforms.insert(o.transforms.begin() + 1, Transform::Callback(picky, "picky"));
  auto loader = Make(src, o);
  const Status err = FirstError(loader.get());
  ASSERT_FALSE(err.ok()) << "no sample failed: choose another predicate";
  EXPECT_NE(err.message().find("mem/"), std::string::npos) << err.message();
  EXPECT_NE(err.message().find("Lambda(picky): too bright"), std::string::npos) << err.message();
  o.on_error = OnError::kSkip;
  auto skipping = Make(src, o);
  const Epoch e = RunEpoch(skipping.get());
  EXPECT_GE(skipping->stats().total.skipped, 1);
  EXPECT_EQ(static_cast<int64_t>(e.ids.size()), 12 - skipping->stats().total.skipped);
  EXPECT_EQ(std::set<int64_t>(e.ids.begin(), e.ids.end()).size(), e.ids.size());
  // A Callback without a function is refused.
  o.transforms.push_back(Transform::Callback(nullptr, "none"));
  EXPECT_EQ(Loader::Create(src, o).status().code(), StatusCode::kInvalidArgument);
}

// A callback that fails with Cancelled (Python: a Lambda's KeyboardInterrupt,
// SystemExit or MemoryError) is an interrupt, not a bad sample: under skip
// too it stops the epoch with that status.
TEST(LoaderTest, ACancelledCallbackIsNeverSkipped) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  std::atomic<int> calls{0};
  auto third = [&calls](uint8_t*, int, int, uint64_t) {
    return calls.fetch_add(1) == 2 ? CancelledError("interrupted") : Status::OK();
  };
  LoaderOptions o = TrainOptions(4, 2);
  o.on_error = OnError::kSkip;
  o.transforms.insert(o.transforms.begin() + 1, Transform::Callback(third, "third"));
  auto loader = Make(src, o);
  const Status err = FirstError(loader.get());
  EXPECT_EQ(err.code(), StatusCode::kCancelled) << err.ToString();
  EXPECT_EQ(loader->stats().total.skipped, 0);
}

// Cancel() returns while a callback is still blocked in its sample (Ctrl-C
// must not wait for it); Next() then ends the epoch, and Stop() waits for the
// sample once the callback returns.
TEST(LoaderTest, CancelDoesNotWaitForABlockedCallback) {
  auto src = std::make_shared<MemorySource>(JpegSamples(12));
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  auto blocked = [&](uint8_t*, int, int, uint64_t) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return Status::OK();
  };
  LoaderOptions o = TrainOptions(4, 2);
  o.transforms.insert(o.transforms.begin() + 1, Transform::Callback(blocked, "blocked"));
  auto loader = Make(src, o);
  ASSERT_TRUE(loader->Start().ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  loader->Cancel();  // would never return if it waited for the callback
  BatchPtr b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  EXPECT_TRUE(end);
  EXPECT_EQ(b, nullptr);
  // The worker is still in the callback, which cannot return: the wait gives up.
  EXPECT_FALSE(loader->AwaitWorkersLeft(5));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(loader->AwaitWorkersLeft(60'000));  // they leave once it returns
  loader->Stop();
  // The loader gives whole epochs after it.
  {
    std::lock_guard<std::mutex> lock(mu);
    entered = false;
  }
  const Epoch e = RunEpoch(loader.get());
  EXPECT_EQ(e.ids.size(), 12u);
}

TEST(LoaderTest, CreateRejectsBadOptions) {  // the checks themselves: loader_options_test
  auto src = std::make_shared<MemorySource>(JpegSamples(3));
  LoaderOptions o = TrainOptions(4, 1);
  o.batch_size = 0;
  EXPECT_EQ(Loader::Create(src, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Loader::Create(nullptr, TrainOptions(4, 1)).status().code(),
            StatusCode::kInvalidArgument);
}

// Issue 17 item 2: a forked child inherits the Loader but not its threads.
// It must get an error (not wait forever), and destroying the Loader there
// must not hang on the inherited mutex, condition variables or threads. The
// child runs under alarm(): a hang kills it with SIGALRM and fails the test.
TEST(LoaderTest, ForkedChildGetsAnErrorInsteadOfHanging) {
  auto src = std::make_shared<MemorySource>(JpegSamples(40));
  auto loader = Make(src, TrainOptions(4, 3));
  RunEpoch(loader.get());
  // Workers are mid-epoch (and may hold the mutex) when the fork happens.
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr first;
  bool end = false;
  ASSERT_TRUE(loader->Next(&first, &end).ok());
  first.reset();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(20);
    int code = 0;
    BatchPtr b;
    bool e = false;
    const Status next = loader->Next(&b, &e);
    if (next.code() != StatusCode::kUnimplemented ||
        next.message().find("forked child") == std::string::npos) {
      code = 1;
    }
    const Status start = loader->Start();
    if (start.code() != StatusCode::kUnimplemented) code |= 2;
    (void)loader->stats();
    loader->SetEpoch(7);
    loader->Stop();
    loader.reset();
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status)
                                 << " (14 = SIGALRM: it hung)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's loader is unaffected.
  loader->Stop();
  Epoch e = RunEpoch(loader.get());
  EXPECT_EQ(e.ids.size(), 40u);
}

// Issue 17 item 6: an exception in a worker (std::bad_alloc for an image too
// large for the memory left) is the sample's error, never std::terminate.
class ThrowingSource : public MemorySource {
 public:
  using MemorySource::MemorySource;
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    if (index % 5 == 2) throw std::bad_alloc();
    return MemorySource::ReadIndex(index, scratch, out);
  }
};

TEST(LoaderTest, BadAllocInAWorkerIsAnErrorOrACountedSkip) {
  auto src = std::make_shared<ThrowingSource>(JpegSamples(20));
  LoaderOptions o = TrainOptions(4, 2);
  o.shuffle = false;
  auto raising = Make(src, o);
  ASSERT_TRUE(raising->Start().ok());
  BatchPtr b;
  bool end = false;
  const Status st = raising->Next(&b, &end);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("mem/2.jpg"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("out of memory"), std::string::npos) << st.message();

  o.on_error = OnError::kSkip;
  auto skipping = Make(src, o);
  Epoch e = RunEpoch(skipping.get());
  EXPECT_EQ(e.ids.size(), 16u);  // 2, 7, 12 and 17 left out
  for (int64_t id : e.ids) EXPECT_NE(id % 5, 2);
  EXPECT_EQ(skipping->stats().total.skipped, 4);
  EXPECT_EQ(skipping->stats().total.skipped_files, 4);
}

// Waits until the workers made the next epoch's prefetch: its reads show in
// the source's count (a condition variable, no polling).
void AwaitReads(const MemorySource& src, int64_t reads) {
  ASSERT_TRUE(src.AwaitReads(reads)) << "waited for " << reads << " reads, got " << src.reads();
}

// Cross-epoch prefetch: the next epoch's first batches are made while the
// consumer takes this epoch's last ones. Output equals a fresh loader per
// epoch (no prefetch at all), epoch by epoch, for several thread counts.
TEST(LoaderTest, CrossEpochPrefetchGivesTheSameEpochsAsAFreshLoader) {
  auto src = std::make_shared<MemorySource>(JpegSamples(29));
  for (int threads : {1, 2, 4}) {
    LoaderOptions o = TrainOptions(4, threads);
    o.prefetch = 3;
    auto counted = std::make_shared<MemorySource>(JpegSamples(29));  // read by `loader` only
    auto loader = Make(counted, o);
    for (int epoch = 0; epoch < 4; ++epoch) {
      Epoch got = RunEpoch(loader.get());
      // Every other epoch, a slow last step: the next one's start is made
      // entirely before it starts (else it may be cut short by Start()).
      if (epoch % 2 == 0) AwaitReads(*counted, (epoch + 1) * 29 + o.prefetch * 4);
      LoaderOptions fresh_options = o;
      fresh_options.prefetch_next_epoch = false;
      auto fresh = Make(src, fresh_options);
      fresh->SetEpoch(epoch);
      Epoch want = RunEpoch(fresh.get());
      EXPECT_EQ(got.ids, want.ids) << "threads " << threads << " epoch " << epoch;
      EXPECT_EQ(got.labels, want.labels) << "threads " << threads << " epoch " << epoch;
      EXPECT_EQ(got.sizes, want.sizes) << "threads " << threads << " epoch " << epoch;
      EXPECT_TRUE(got.pixels == want.pixels) << "threads " << threads << " epoch " << epoch;
    }
    EXPECT_EQ(loader->stats().prefetch_discarded_batches, 0);  // every prefetch was used
    EXPECT_EQ(loader->stats().total.images, 4 * 29);  // the 5th epoch's prefetch not counted
  }
}

TEST(LoaderTest, SetEpochElsewhereDiscardsThePrefetchAndGivesThatEpoch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(21));
  LoaderOptions o = TrainOptions(4, 2);
  o.prefetch = 2;
  auto loader = Make(src, o);
  RunEpoch(loader.get());  // epoch 0
  AwaitReads(*src, 21 + 2 * 4);  // epoch 1's first two batches made
  ASSERT_GE(src->reads(), 21 + 2 * 4);
  loader->SetEpoch(5);
  Epoch got = RunEpoch(loader.get());
  EXPECT_EQ(loader->stats().prefetch_discarded_batches, 2);
  LoaderOptions fresh_options = o;
  fresh_options.prefetch_next_epoch = false;
  auto fresh = Make(src, fresh_options);
  fresh->SetEpoch(5);
  Epoch want = RunEpoch(fresh.get());
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_TRUE(got.pixels == want.pixels);
  EXPECT_EQ(loader->epoch(), 5);
  // set_epoch naming the epoch that comes next anyway uses the prefetch.
  AwaitReads(*src, 2 * 21 + 4 * 4 + 21);
  loader->SetEpoch(6);
  Epoch six = RunEpoch(loader.get());
  EXPECT_EQ(loader->stats().prefetch_discarded_batches, 2);
  fresh->SetEpoch(6);
  EXPECT_TRUE(six.pixels == RunEpoch(fresh.get()).pixels);
}

TEST(LoaderTest, ResumeDiscardsThePrefetchAndStateIgnoresIt) {
  auto src = std::make_shared<MemorySource>(JpegSamples(30));
  LoaderOptions o = TrainOptions(4, 3);
  auto loader = Make(src, o);
  RunEpoch(loader.get());
  AwaitReads(*src, 30 + 2 * 4);
  // The prefetched batches are not consumed: the state is epoch 1's start.
  LoaderState st = loader->state();
  EXPECT_EQ(st.epoch, 1);
  EXPECT_EQ(st.consumed, 0);
  // Resume mid-epoch 1: the prefetch (from epoch 1's start) is not that.
  LoaderState mid = loader->state();
  mid.epoch = 1;
  mid.consumed = 12;
  ASSERT_TRUE(loader->Resume(mid).ok());
  Epoch got = RunEpoch(loader.get());
  EXPECT_EQ(loader->stats().prefetch_discarded_batches, 2);
  LoaderOptions fresh_options = o;
  fresh_options.prefetch_next_epoch = false;
  auto fresh = Make(src, fresh_options);
  fresh->SetEpoch(1);
  Epoch whole = RunEpoch(fresh.get());
  ASSERT_EQ(got.ids.size(), 18u);
  EXPECT_TRUE(std::equal(got.ids.begin(), got.ids.end(), whole.ids.begin() + 12));
  const size_t per_sample = whole.pixels.size() / whole.ids.size();
  EXPECT_TRUE(std::equal(got.pixels.begin(), got.pixels.end(),
                         whole.pixels.begin() + 12 * per_sample));
  // A state taken at an epoch's end resumes the next epoch: the prefetch is used.
  AwaitReads(*src, 30 + 8 + 18 + 30 + 8);  // epoch 0, its prefetch, 1 resumed, fresh 1, prefetch
  ASSERT_TRUE(loader->Resume(loader->state()).ok());
  Epoch two = RunEpoch(loader.get());
  EXPECT_EQ(loader->stats().prefetch_discarded_batches, 2);
  fresh->SetEpoch(2);
  EXPECT_TRUE(two.pixels == RunEpoch(fresh.get()).pixels);
}

TEST(LoaderTest, StopAndDestroyWithAPrefetchInFlight) {
  auto src = std::make_shared<MemorySource>(JpegSamples(24), 2000);  // 2 ms reads
  LoaderOptions o = TrainOptions(4, 2);
  o.prefetch = 3;
  {
    auto loader = Make(src, o);
    RunEpoch(loader.get());  // the prefetch starts as the epoch ends
  }  // destroyed while it may still run: no hang, no leak (ASan)
  auto loader = Make(src, o);
  RunEpoch(loader.get());
  loader->Stop();  // stops nothing of the prefetch; the next epoch still uses it
  Epoch one = RunEpoch(loader.get());
  LoaderOptions fresh_options = o;
  fresh_options.prefetch_next_epoch = false;
  auto fresh = Make(src, fresh_options);
  fresh->SetEpoch(1);
  EXPECT_TRUE(one.pixels == RunEpoch(fresh.get()).pixels);
  EXPECT_EQ(loader->stats().prefetch_discarded_batches, 0);
}

TEST(LoaderTest, RanksStayDisjointWithCrossEpochPrefetch) {
  auto src = std::make_shared<MemorySource>(JpegSamples(23));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> all;
    for (int rank = 0; rank < 3; ++rank) {
      LoaderOptions o = TrainOptions(2, 2);
      o.rank = rank;
      o.world_size = 3;
      o.drop_last = true;  // 23 / 3 -> 7 each, 3 batches of 2: 6 per rank, no padding
      auto loader = Make(src, o);
      for (int e = 0; e <= epoch; ++e) {
        Epoch got = RunEpoch(loader.get());
        if (e == epoch) all.insert(got.ids.begin(), got.ids.end());
      }
    }
    EXPECT_EQ(all.size(), 18u);
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 18u) << "epoch " << epoch;
  }
}

}  // namespace
}  // namespace stoker
