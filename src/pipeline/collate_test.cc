// Copyright 2026 The stoker Authors.
//
// collate="list" (LoaderOptions::Collate::kList): each
// sample keeps the size its own geometry gives, in its own pooled region of
// the batch buffer. The references: torchvision's Resize arithmetic for the
// sizes, and the fixed-size path (collate="batch") for the pixels -- the same
// pipeline where it ends in a fixed size, or Resize((h, w)) over the samples
// whose own size is h x w (a Subset sampler keeps each sample's random
// stream, which depends on its id).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <set>
#include <vector>

#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/sampler.h"
#include "testing/loader_fixtures.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::MemorySample;
using testing::MemorySource;

constexpr std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};

int Width(int i) { return testing::JpegSampleWidth(i); }
int Height(int i) { return testing::JpegSampleHeight(i); }

std::vector<MemorySample> Samples(int n, const std::set<int>& bad = {}) {
  return testing::JpegSamples(n, {.labels = 5, .bad = bad});
}

// torchvision's Resize(size) on a w x h image: the shorter side becomes
// `size`, the longer int(size * long / short). {height, width}.
std::array<int, 2> ShorterSideTo(int size, int w, int h) {
  if (w <= h) return {static_cast<int>(static_cast<double>(size) * h / w), size};
  return {size, static_cast<int>(static_cast<double>(size) * w / h)};
}

struct Sample {
  int64_t id = -1;
  int64_t label = -1;
  std::array<int64_t, 3> dims{};
  std::vector<uint8_t> pixels;
};

struct EpochRun {
  std::vector<Sample> samples;  // in delivery order
  std::vector<int> sizes;       // batch sizes
  Status status;
  std::map<int64_t, const Sample*> by_id() const {
    std::map<int64_t, const Sample*> m;
    for (const Sample& s : samples) m[s.id] = &s;
    return m;
  }
};

// One epoch (already set), any collate.
EpochRun Epoch(Loader* l) {
  const testing::Delivered d = testing::RunEpoch(l);
  EpochRun r;
  r.status = d.status;
  r.sizes = d.sizes;
  for (size_t i = 0; i < d.ids.size(); ++i) {
    r.samples.push_back(Sample{d.ids[i], d.labels[i], d.dims[i], d.samples[i]});
  }
  return r;
}

LoaderOptions ListOptions(int batch, int threads) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.shuffle = true;
  o.seed = 5;
  o.collate = LoaderOptions::Collate::kList;
  o.dct_scaling = LoaderOptions::DctScaling::kOff;
  return o;
}

class CountingAllocator : public BatchAllocator {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    allocs.fetch_add(1);
    live.fetch_add(1);
    return HostAllocator()->Allocate(bytes);
  }
  void Deallocate(void* p, size_t bytes) override {
    live.fetch_sub(1);
    HostAllocator()->Deallocate(p, bytes);
  }
  const char* name() const override { return "counting"; }
  std::atomic<int> allocs{0};
  std::atomic<int> live{0};
};

TEST(CollateListPool, SlotRegionsGrowOnlyWhenTooSmallAndMoveBySwapping) {
  auto alloc = std::make_shared<CountingAllocator>();
  BatchShape shape;
  shape.batch_size = 3;
  shape.dtype = DType::kFloat32;
  shape.variable = true;
  {
    auto pool = BatchPool::Create(shape, alloc, 2);
    BatchBuffer* b = pool->Acquire().value();
    const int base = alloc->allocs.load();  // the (empty) image block
    uint8_t* p = b->ReserveSlot(0, 40, 30).value();
    EXPECT_EQ(b->slot(0), p);
    EXPECT_EQ(b->slot_height(0), 40);
    EXPECT_EQ(b->slot_width(0), 30);
    EXPECT_EQ(b->slot_bytes(0), 40u * 30 * 3 * 4);
    EXPECT_EQ(alloc->allocs.load(), base + 1);
    // Smaller, or the same bytes in another shape: the region is reused.
    EXPECT_EQ(b->ReserveSlot(0, 30, 40).value(), p);
    EXPECT_EQ(b->ReserveSlot(0, 7, 5).value(), p);
    EXPECT_EQ(b->slot_bytes(0), 7u * 5 * 3 * 4);
    EXPECT_EQ(alloc->allocs.load(), base + 1);
    EXPECT_EQ(pool->total_region_allocations(), 1);
    // Larger: grown (once).
    uint8_t* q = b->ReserveSlot(0, 100, 90).value();
    EXPECT_EQ(alloc->allocs.load(), base + 2);
    EXPECT_EQ(pool->total_region_allocations(), 2);
    EXPECT_GE(b->region_bytes(), 100u * 90 * 3 * 4);
    EXPECT_GE(pool->allocated_bytes(), b->region_bytes());
    // Swap: slot 0's memory and size move to slot 2 of another buffer.
    BatchBuffer* c = pool->Acquire().value();
    c->SwapSlots(2, b, 0);
    EXPECT_EQ(c->slot(2), q);
    EXPECT_EQ(c->slot_height(2), 100);
    EXPECT_EQ(c->slot_width(2), 90);
    EXPECT_EQ(b->slot(0), nullptr);
    // Back in the pool and out again: the same buffer, regions kept.
    pool->Release(c);
    BatchBuffer* d = pool->Acquire().value();
    EXPECT_EQ(d, c);
    EXPECT_EQ(d->ReserveSlot(2, 90, 100).value(), q);
    pool->Release(d);
    pool->Release(b);
    // A fixed-size pool refuses.
    auto fixed = BatchPool::Create(BatchShape{2, 4, 4}, HostAllocator(), 1);
    BatchBuffer* f = fixed->Acquire().value();
    EXPECT_FALSE(f->ReserveSlot(0, 4, 4).ok());
    fixed->Release(f);
  }
  EXPECT_EQ(alloc->live.load(), 0);  // the pool freed every region with its buffers
}

TEST(CollateList, ShapesFollowTorchvisionsResizeArithmetic) {
  const int n = 23;
  auto src = std::make_shared<MemorySource>(Samples(n));
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    LoaderOptions o = ListOptions(4, 2);
    o.layout = layout;
    o.transforms = {Transform::Resize(16), Transform::RandomHorizontalFlip()};
    auto made = Loader::Create(src, o);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    auto l = std::move(made).value();
    EXPECT_EQ(l->height(), 0);  // no fixed size
    const EpochRun r = Epoch(l.get());
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.samples.size(), static_cast<size_t>(n));
    std::set<std::array<int64_t, 3>> distinct;
    for (const Sample& s : r.samples) {
      const auto hw = ShorterSideTo(16, Width(s.id), Height(s.id));
      const std::array<int64_t, 3> want =
          layout == Layout::kNCHW ? std::array<int64_t, 3>{3, hw[0], hw[1]}
                                  : std::array<int64_t, 3>{hw[0], hw[1], 3};
      EXPECT_EQ(s.dims, want) << "sample " << s.id;
      EXPECT_EQ(s.pixels.size(), static_cast<size_t>(hw[0] * hw[1] * 3 * 4));
      EXPECT_EQ(s.label, s.id % 5);
      distinct.insert(s.dims);
    }
    EXPECT_GE(distinct.size(), 4u);  // the test data has several sizes
  }
  // No geometric transform: each sample is its decoded size.
  LoaderOptions o = ListOptions(5, 2);
  o.dtype = DType::kUint8;
  const EpochRun r = Epoch(Loader::Create(src, o).value().get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (const Sample& s : r.samples) {
    EXPECT_EQ(s.dims, (std::array<int64_t, 3>{3, Height(s.id), Width(s.id)})) << s.id;
  }
}

// The same fixed-size pipeline in both collates: the same bytes per sample.
TEST(CollateList, FixedSizePipelineGivesTheBatchPathsPixels) {
  auto src = std::make_shared<MemorySource>(Samples(21));
  LoaderOptions o = ListOptions(4, 3);
  o.transforms = {Transform::Resize(18), Transform::CenterCrop(14, 12),
                  Transform::RandomHorizontalFlip(),
                  Transform::ColorJitter({0.6, 1.4}, {0.7, 1.3}, {0.5, 1.5}, {-0.1, 0.1}),
                  Transform::Normalize(kMean, kStd), Transform::RandomErasing(0.7)};
  const EpochRun list = Epoch(Loader::Create(src, o).value().get());
  o.collate = LoaderOptions::Collate::kBatch;
  const EpochRun batch = Epoch(Loader::Create(src, o).value().get());
  ASSERT_TRUE(list.status.ok() && batch.status.ok());
  ASSERT_EQ(list.samples.size(), batch.samples.size());
  EXPECT_EQ(list.sizes, batch.sizes);
  for (size_t i = 0; i < list.samples.size(); ++i) {
    EXPECT_EQ(list.samples[i].id, batch.samples[i].id);
    EXPECT_EQ(list.samples[i].dims, (std::array<int64_t, 3>{3, 14, 12}));
    EXPECT_EQ(list.samples[i].pixels, batch.samples[i].pixels) << "sample " << i;
  }
}

// Variable sizes with photometric ops, RandomErasing (its area is the
// sample's own) and Normalize: each sample equals the fixed-size path run
// with Resize((h, w)) over the samples of its size.
TEST(CollateList, VariableSizesGiveTheFixedPathsPixelsForTheirSize) {
  const int n = 30;
  auto src = std::make_shared<MemorySource>(Samples(n));
  const std::vector<Transform> tail = {
      Transform::RandomHorizontalFlip(), Transform::RandomVerticalFlip(0.3),
      Transform::ColorJitter({0.6, 1.4}, {0.7, 1.3}, {0.5, 1.5}, {-0.1, 0.1}),
      Transform::Normalize(kMean, kStd), Transform::RandomErasing(0.8)};
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    LoaderOptions o = ListOptions(4, 2);
    o.dtype = dtype;
    o.transforms = {Transform::Resize(15)};
    o.transforms.insert(o.transforms.end(), tail.begin(), tail.end());
    const EpochRun list = Epoch(Loader::Create(src, o).value().get());
    ASSERT_TRUE(list.status.ok()) << list.status.ToString();
    std::map<std::array<int, 2>, std::vector<int64_t>> by_size;
    for (int i = 0; i < n; ++i) by_size[ShorterSideTo(15, Width(i), Height(i))].push_back(i);
    ASSERT_GE(by_size.size(), 4u);
    const auto got = list.by_id();
    int compared = 0;
    for (const auto& [hw, ids] : by_size) {
      LoaderOptions f = o;
      f.collate = LoaderOptions::Collate::kBatch;
      f.transforms = {Transform::Resize(hw[0], hw[1])};
      f.transforms.insert(f.transforms.end(), tail.begin(), tail.end());
      f.sampler = SamplerSpec::Subset(ids);
      const EpochRun ref = Epoch(Loader::Create(src, f).value().get());
      ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
      for (const Sample& s : ref.samples) {
        ASSERT_TRUE(got.count(s.id));
        EXPECT_EQ(got.at(s.id)->dims, (std::array<int64_t, 3>{3, hw[0], hw[1]}));
        EXPECT_EQ(got.at(s.id)->pixels, s.pixels) << "sample " << s.id;
        ++compared;
      }
    }
    EXPECT_EQ(compared, n);
  }
}

TEST(CollateList, IdenticalForAnyThreadCountAndAcrossEpochs) {
  auto src = std::make_shared<MemorySource>(Samples(37));
  LoaderOptions o = ListOptions(5, 1);
  o.transforms = {Transform::Resize(14), Transform::RandomHorizontalFlip(),
                  Transform::RandomErasing(0.5)};
  o.dtype = DType::kUint8;
  // Reference: a fresh single-thread loader per epoch (no cross-epoch prefetch).
  std::vector<EpochRun> ref;
  for (int64_t e = 0; e < 3; ++e) {
    auto l = Loader::Create(src, o).value();
    l->SetEpoch(e);
    ref.push_back(Epoch(l.get()));
  }
  EXPECT_NE(ref[0].samples.front().id, ref[1].samples.front().id);  // shuffled per epoch
  for (int threads : {1, 3}) {
    for (int prefetch : {1, 3}) {
      LoaderOptions t = o;
      t.threads = threads;
      t.prefetch = prefetch;
      auto l = Loader::Create(src, t).value();  // one loader: the next epoch is prefetched
      for (int e = 0; e < 3; ++e) {
        const EpochRun r = Epoch(l.get());
        ASSERT_EQ(r.samples.size(), ref[e].samples.size());
        EXPECT_EQ(r.sizes, ref[e].sizes);
        for (size_t i = 0; i < r.samples.size(); ++i) {
          EXPECT_EQ(r.samples[i].id, ref[e].samples[i].id);
          EXPECT_EQ(r.samples[i].dims, ref[e].samples[i].dims);
          EXPECT_EQ(r.samples[i].pixels, ref[e].samples[i].pixels)
              << threads << " threads, epoch " << e << ", position " << i;
        }
      }
    }
  }
}

// Steady state allocates nothing: batch memory is bounded by the buffers in
// flight (as for fixed-size batches), and each slot region of a buffer is
// allocated once (the samples' output sizes differ in shape but not in bytes,
// so a region fits from its first use), not per batch; a batch held by the
// consumer keeps its pixels while later ones are made.
TEST(CollateList, BuffersAndRegionsRecycleAcrossEpochs) {
  std::vector<MemorySample> samples;
  for (int i = 0; i < 26; ++i) {
    const int w = i % 2 ? 40 : 30, h = i % 2 ? 30 : 40;  // Resize(12): 12x16 or 16x12
    MemorySample s;
    s.bytes = testing::EncodeJpeg(testing::MakePixels(w, h, i), w, h, testing::JpegSpec());
    s.label = i;
    samples.push_back(std::move(s));
  }
  auto src = std::make_shared<MemorySource>(std::move(samples));
  auto alloc = std::make_shared<CountingAllocator>();
  LoaderOptions o = ListOptions(4, 2);
  o.prefetch = 2;
  o.transforms = {Transform::Resize(12), Transform::RandomHorizontalFlip()};
  o.allocator = alloc;
  auto l = Loader::Create(src, o).value();
  std::set<std::array<int64_t, 3>> shapes;
  for (int e = 0; e < 8; ++e) {
    const EpochRun r = Epoch(l.get());
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.samples.size(), 26u);
    for (const Sample& s : r.samples) shapes.insert(s.dims);
  }
  EXPECT_EQ(shapes.size(), 2u);
  EXPECT_EQ(l->stats().total.batches, 8 * 7);
  const int regions = static_cast<int>(l->stats().batch_region_allocations);
  const int buffers = alloc->allocs.load() - regions;  // each buffer's (empty) image block
  EXPECT_GT(regions, 0);
  EXPECT_LE(buffers, 2 * o.prefetch + 1);
  EXPECT_LE(regions, buffers * o.batch_size);  // once per slot of a buffer, not per batch
  // A held batch is not overwritten by later batches.
  ASSERT_TRUE(l->Start().ok());
  BatchPtr held;
  bool end = false;
  ASSERT_TRUE(l->Next(&held, &end).ok());
  const std::vector<uint8_t> copy(held->sample(1), held->sample(1) + held->sample_bytes(1));
  for (;;) {
    BatchPtr b;
    ASSERT_TRUE(l->Next(&b, &end).ok());
    if (end) break;
    for (int i = 0; i < b->size(); ++i) EXPECT_NE(b->sample(i), held->sample(1));
  }
  EXPECT_EQ(std::vector<uint8_t>(held->sample(1), held->sample(1) + held->sample_bytes(1)), copy);
}

// on_error=skip: the clean run minus the bad samples, in full batches, with
// each sample's own size and pixels (the batch assembly moves regions).
TEST(CollateList, SkipPacksTheGoodSamplesWithTheirOwnSizes) {
  const int n = 60;
  const std::set<int> bad = {0, 3, 7, 8, 9, 10, 11, 25, 41, 59};
  auto clean = std::make_shared<MemorySource>(Samples(n));
  auto broken = std::make_shared<MemorySource>(Samples(n, bad));
  LoaderOptions o = ListOptions(6, 2);
  o.transforms = {Transform::Resize(13), Transform::RandomHorizontalFlip()};
  o.dtype = DType::kUint8;
  o.on_error = OnError::kSkip;
  const EpochRun ref = Epoch(Loader::Create(clean, o).value().get());
  ASSERT_TRUE(ref.status.ok());
  std::vector<const Sample*> want;
  for (const Sample& s : ref.samples) {
    if (!bad.count(static_cast<int>(s.id))) want.push_back(&s);
  }
  for (int threads : {1, 3}) {
    LoaderOptions t = o;
    t.threads = threads;
    auto l = Loader::Create(broken, t).value();
    for (int e = 0; e < 2; ++e) {
      l->SetEpoch(0);
      const EpochRun r = Epoch(l.get());
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      ASSERT_EQ(r.samples.size(), want.size());
      const int good = n - static_cast<int>(bad.size());
      std::vector<int> full(good / 6, 6);
      if (good % 6) full.push_back(good % 6);
      EXPECT_EQ(r.sizes, full);
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(r.samples[i].id, want[i]->id);
        EXPECT_EQ(r.samples[i].dims, want[i]->dims);
        EXPECT_EQ(r.samples[i].pixels, want[i]->pixels) << threads << " threads, position " << i;
      }
      EXPECT_EQ(l->stats().epoch.skipped, static_cast<int64_t>(bad.size()));
    }
  }
  // Ranks under skip: the missing samples are copies of the rank's first ones.
  for (int r = 0; r < 2; ++r) {
    LoaderOptions t = o;
    t.rank = r;
    t.world_size = 2;
    const EpochRun clean_rank = Epoch(Loader::Create(clean, t).value().get());
    const EpochRun got = Epoch(Loader::Create(broken, t).value().get());
    ASSERT_TRUE(got.status.ok()) << got.status.ToString();
    EXPECT_EQ(got.sizes, clean_rank.sizes);
    const auto ref_by_id = clean_rank.by_id();
    for (const Sample& s : got.samples) {
      ASSERT_TRUE(ref_by_id.count(s.id));
      EXPECT_EQ(s.dims, ref_by_id.at(s.id)->dims);
      EXPECT_EQ(s.pixels, ref_by_id.at(s.id)->pixels) << "rank " << r << " sample " << s.id;
    }
  }
}

TEST(CollateList, OutputCacheKeepsEachSamplesSize) {
  auto src = std::make_shared<MemorySource>(Samples(17));
  LoaderOptions o = ListOptions(4, 2);
  o.shuffle = false;
  o.transforms = {Transform::Resize(11), Transform::Normalize(kMean, kStd)};
  const EpochRun plain = Epoch(Loader::Create(src, o).value().get());
  o.cache_bytes = 1 << 20;
  o.cache_kind = LoaderOptions::CacheKind::kOutput;
  o.prefetch_next_epoch = false;  // so the hits are exactly the second epoch's
  auto l = Loader::Create(src, o).value();
  for (int e = 0; e < 2; ++e) {
    const EpochRun r = Epoch(l.get());
    ASSERT_EQ(r.samples.size(), plain.samples.size());
    for (size_t i = 0; i < r.samples.size(); ++i) {
      EXPECT_EQ(r.samples[i].dims, plain.samples[i].dims) << "epoch " << e;
      EXPECT_EQ(r.samples[i].pixels, plain.samples[i].pixels) << "epoch " << e;
    }
  }
  EXPECT_EQ(l->stats().cache_hits, 17);  // the second epoch came from the cache
}

TEST(CollateList, ResumeContinuesWithTheSameSamples) {
  auto src = std::make_shared<MemorySource>(Samples(29));
  LoaderOptions o = ListOptions(4, 2);
  o.transforms = {Transform::Resize(12), Transform::RandomHorizontalFlip()};
  o.dtype = DType::kUint8;
  auto full_loader = Loader::Create(src, o).value();
  full_loader->SetEpoch(1);
  const EpochRun full = Epoch(full_loader.get());
  auto a = Loader::Create(src, o).value();
  a->SetEpoch(1);
  ASSERT_TRUE(a->Start().ok());
  std::vector<Sample> got;
  for (int k = 0; k < 3; ++k) {
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(a->Next(&b, &end).ok());
    for (int i = 0; i < b->size(); ++i) {
      got.push_back({b->ids()[i], 0, b->sample_dims(i),
                     std::vector<uint8_t>(b->sample(i), b->sample(i) + b->sample_bytes(i))});
    }
  }
  const LoaderState st = a->state();
  auto b = Loader::Create(src, o).value();
  ASSERT_TRUE(b->Resume(st).ok());
  const EpochRun rest = Epoch(b.get());
  ASSERT_TRUE(rest.status.ok());
  got.insert(got.end(), rest.samples.begin(), rest.samples.end());
  ASSERT_EQ(got.size(), full.samples.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, full.samples[i].id);
    EXPECT_EQ(got[i].dims, full.samples[i].dims);
    EXPECT_EQ(got[i].pixels, full.samples[i].pixels);
  }
}

TEST(CollateList, BatchCollateStillNeedsAFixedSizeAndNamesTheAlternative) {
  auto src = std::make_shared<MemorySource>(Samples(3));
  LoaderOptions o;
  o.transforms = {Transform::Resize(16)};
  auto made = Loader::Create(src, o);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(made.status().message().find("collate=\"list\""), std::string::npos)
      << made.status().ToString();
  o.collate = LoaderOptions::Collate::kList;
  EXPECT_TRUE(Loader::Create(src, o).ok());
  // A fixed size is still reported under kList.
  o.transforms = {Transform::CenterCrop(10, 8)};
  auto fixed = Loader::Create(src, o).value();
  EXPECT_EQ(fixed->height(), 10);
  EXPECT_EQ(fixed->width(), 8);
}

}  // namespace
}  // namespace stoker
