// Copyright 2026 The stoker Authors.
//
// DeviceLoader's policy through its host fallback (no GPU needed): order and
// pixels equal to the CPU Loader's Normalize output, one-batch launch-ahead,
// a hand-off that waits for the batch, and a batch launched ahead that is
// synchronised before its memory is released (Stop, a new epoch,
// destruction, errors). Most tests run the "deferred" host stage, whose
// conversions run only when something waits for them: a batch the policy
// forgot to wait for stays unwritten, so such a bug shows deterministically.
#include "stoker/device_loader.h"
#include "stoker/trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device/host_stage.h"
#include "stoker/loader.h"
#include "testing/device_records.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

constexpr uint32_t kSentinel = 0xFFFFFFFFu;  // a NaN pattern no conversion writes

std::shared_ptr<Source> Samples(int n, int bad_index = -1) {
  std::vector<MemorySample> samples(n);
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[i];
    s.name = "s" + std::to_string(i);
    s.label = i % 3;
    if (i == bad_index) {
      s.bytes = {1, 2, 3, 4};  // not an image
      continue;
    }
    s.raw_width = 12 + i % 3;
    s.raw_height = 10 + i % 2;
    s.bytes = testing::MakePixels(s.raw_width, s.raw_height, 100 + i);
  }
  return std::make_shared<testing::MemorySource>(std::move(samples));
}

LoaderOptions Options(DType dtype = DType::kFloat32, Layout layout = Layout::kNCHW) {
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 2;
  o.prefetch = 2;
  o.dtype = dtype;
  o.layout = layout;
  o.transforms = {Transform::CenterCrop(8, 8),
                  Transform::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})};
  return o;
}

// Host memory with a sentinel in every word; counts owners released while
// still unwritten (a batch dropped before its conversion ran).
struct Recorder {
  std::atomic<int> calls{0};
  int fail_at = -1;          // this call returns an error
  bool null_at_fail = false;  // ... or an OK null allocation
  std::atomic<int> released_unwritten{0};
  std::atomic<int> live{0};
};

DeviceAllocator RecordingAllocator(std::shared_ptr<Recorder> r) {
  return [r](size_t bytes, uintptr_t) -> StatusOr<DeviceAllocation> {
    const int call = r->calls++;
    if (call == r->fail_at) {
      if (r->null_at_fail) return DeviceAllocation{};
      return ResourceExhaustedError("test allocator: out of memory");
    }
    const size_t words = bytes / 4 + 1;
    auto* mem = new uint32_t[words];
    for (size_t i = 0; i < words; ++i) mem[i] = kSentinel;
    ++r->live;
    std::shared_ptr<void> owner(mem, [r, bytes](void* p) {
      auto* w = static_cast<uint32_t*>(p);
      if (bytes >= 4 && w[0] == kSentinel) ++r->released_unwritten;
      --r->live;
      delete[] w;
    });
    return DeviceAllocation{mem, std::move(owner)};
  };
}

std::unique_ptr<DeviceLoader> MakeLoader(std::shared_ptr<Source> source,
                                         const LoaderOptions& o,
                                         std::shared_ptr<Recorder> recorder, bool deferred) {
  DeviceLoaderOptions d;
  d.device = kHostDevice;
  d.allocate = RecordingAllocator(std::move(recorder));
  auto loader = device::CreateDeviceLoader(
      std::move(source), o, d, [deferred](const DeviceOptions& so, int h, int w) {
        return device::CreateHostStage(so, h, w, device::HostStageOptions{deferred});
      });
  EXPECT_TRUE(loader.ok()) << loader.status().message();
  return std::move(loader).value();
}

// The batches `next(&batch, &end)` gives until the end, held together (each
// its own memory); a failed call is a test failure and ends the epoch.
template <typename B, typename Next>
std::vector<B> DrainEpoch(Next next) {
  std::vector<B> out;
  for (;;) {
    B b;
    bool end = false;
    const Status s = next(&b, &end);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok() || end) break;
    out.push_back(std::move(b));
  }
  return out;
}

// The CPU Loader's batches (Normalize on the host) for one epoch.
std::vector<BatchPtr> CpuEpoch(std::shared_ptr<Source> source, const LoaderOptions& o,
                               int64_t epoch) {
  auto cpu = Loader::Create(std::move(source), o).value();
  cpu->SetEpoch(epoch);
  EXPECT_TRUE(cpu->Start().ok());
  return DrainEpoch<BatchPtr>([&](BatchPtr* b, bool* end) { return cpu->Next(b, end); });
}

void ExpectSameBatch(const DeviceBatch& d, const Batch& cpu) {
  ASSERT_EQ(d.size, cpu.size());
  EXPECT_EQ(d.epoch, cpu.epoch());
  EXPECT_EQ(d.index, cpu.index());
  EXPECT_EQ(d.dims, cpu.image_dims());
  EXPECT_EQ(d.dtype, cpu.shape().dtype);
  EXPECT_EQ(d.device, kHostDevice);
  EXPECT_EQ(std::memcmp(d.images, cpu.images(), cpu.image_bytes()), 0)
      << "batch " << cpu.index() << ": pixels differ from the CPU path";
  EXPECT_EQ(std::memcmp(d.labels, cpu.labels(), sizeof(int64_t) * d.size), 0);
  EXPECT_EQ(d.ids, std::vector<int64_t>(cpu.ids(), cpu.ids() + cpu.size()));
}

// Runs one epoch and checks it against the CPU path, batch by batch.
void ExpectEpochMatchesCpu(DeviceLoader* loader, std::shared_ptr<Source> source,
                           const LoaderOptions& o, int64_t epoch) {
  const std::vector<BatchPtr> cpu = CpuEpoch(source, o, epoch);
  loader->SetEpoch(epoch);
  ASSERT_TRUE(loader->Start().ok());
  size_t k = 0;
  for (;; ++k) {
    DeviceBatch b;
    bool end = false;
    const Status s = loader->Next(&b, &end, 0);
    ASSERT_TRUE(s.ok()) << s.message();
    if (end) break;
    ASSERT_LT(k, cpu.size());
    ExpectSameBatch(b, *cpu[k]);
  }
  EXPECT_EQ(k, cpu.size());
}

struct Case {
  DType dtype;
  Layout layout;
  bool deferred;
  bool shuffle;
};

class DeviceLoaderMatchTest : public ::testing::TestWithParam<Case> {};

// uint8 to the stage + its conversion == the CPU path's Normalize, dtype and
// layout, bit for bit, in the CPU Loader's order, over two shuffled epochs.
// With prefetch 1, host buffers are recycled while conversions are queued:
// a buffer reused before its conversion read it would change the pixels.
TEST_P(DeviceLoaderMatchTest, EqualsCpuNormalizeInOrder) {
  const Case c = GetParam();
  auto source = Samples(11);
  LoaderOptions o = Options(c.dtype, c.layout);
  o.shuffle = c.shuffle;
  o.seed = 7;
  o.prefetch = 1;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, c.deferred);
  ExpectEpochMatchesCpu(loader.get(), source, o, 0);
  ExpectEpochMatchesCpu(loader.get(), source, o, 1);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Types, DeviceLoaderMatchTest,
    ::testing::Values(Case{DType::kFloat32, Layout::kNCHW, true, false},
                      Case{DType::kFloat32, Layout::kNCHW, false, true},
                      Case{DType::kFloat16, Layout::kNCHW, true, true},
                      Case{DType::kBFloat16, Layout::kNHWC, true, true}));

// Batch k+1 is launched (memory allocated, conversion queued, not waited
// for) before batch k is returned; the consumer's position does not count
// it.
TEST(DeviceLoaderTest, LaunchesOneBatchAhead) {
  auto source = Samples(10);  // batches of 4, 4, 2
  const LoaderOptions o = Options();
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  auto cpu = Loader::Create(source, o).value();
  ASSERT_TRUE(loader->Start().ok());
  ASSERT_TRUE(cpu->Start().ok());
  const int calls_after[] = {4, 6, 6};  // two allocations per launched batch
  for (int k = 0; k < 3; ++k) {
    DeviceBatch b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
    ASSERT_FALSE(end);
    EXPECT_EQ(b.index, k);
    EXPECT_EQ(recorder->calls.load(), calls_after[k]) << "after batch " << k;
    BatchPtr c;
    ASSERT_TRUE(cpu->Next(&c, &end).ok());
    const LoaderState want = cpu->state(), got = loader->state();
    EXPECT_EQ(got.epoch, want.epoch);
    EXPECT_EQ(got.consumed, want.consumed) << "after batch " << k;
  }
  DeviceBatch b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_TRUE(end);
  EXPECT_EQ(loader->state().epoch, 1);  // after the end: the next epoch at 0
  EXPECT_EQ(loader->state().consumed, 0);
}

// With tracing on, each batch has a launch and a hand-off span on the
// consumer's thread, labelled with its batch and epoch; off, none.
TEST(DeviceLoaderTest, TracesLaunchAndHandoff) {
  auto source = Samples(10);  // batches of 4, 4, 2
  auto loader = MakeLoader(source, Options(), std::make_shared<Recorder>(), /*deferred=*/false);
  auto tracer = loader->loader().tracer();
  for (bool on : {false, true}) {
    if (on) ASSERT_TRUE(tracer->Start(TraceOptions{}).ok());
    ASSERT_TRUE(loader->Start().ok());
    for (bool end = false; !end;) {
      DeviceBatch b;
      ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
    }
    tracer->Stop();
    std::vector<int64_t> launched, handed;
    for (const CollectedSpan& c : tracer->Collect()) {
      if (c.span.kind == SpanKind::kDeviceLaunch) launched.push_back(c.span.batch);
      if (c.span.kind == SpanKind::kDeviceHandoff) {
        handed.push_back(c.span.batch);
        EXPECT_EQ(c.span.epoch, 1);
        EXPECT_EQ(c.span.value, c.span.batch == 2 ? 2 : 4);
        EXPECT_EQ(tracer->Lanes()[static_cast<size_t>(c.lane)].name, "stoker consumer");
      }
    }
    if (!on) {
      EXPECT_TRUE(launched.empty() && handed.empty());
      continue;
    }
    EXPECT_EQ(launched, (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(handed, (std::vector<int64_t>{0, 1, 2}));
  }
}

// The batch launched ahead is only queued: Next() does not wait for it.
// (Two batches and no next-epoch prefetch: no worker needs a buffer after
// batch 1 is taken, so no reuse fence runs its conversion either.)
TEST(DeviceLoaderTest, DoesNotWaitForTheBatchAhead) {
  auto source = Samples(8);
  LoaderOptions o = Options();
  o.prefetch_next_epoch = false;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_EQ(device::HostStageInFlight(loader->stage()), 1);
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(device::HostStageInFlight(loader->stage()), 0);
}

// Stopping mid-epoch waits for the batch launched ahead before releasing
// its memory; the next epoch is whole and correct.
TEST(DeviceLoaderTest, StopMidEpochSynchronisesTheBatchAhead) {
  // Two batches, no next-epoch prefetch: the batch ahead stays unconverted
  // until something waits for it (see DoesNotWaitForTheBatchAhead).
  auto source = Samples(8);
  LoaderOptions o = Options();
  o.prefetch_next_epoch = false;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  {
    DeviceBatch b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
    ASSERT_EQ(device::HostStageInFlight(loader->stage()), 1);
  }
  ASSERT_TRUE(loader->Stop().ok());
  EXPECT_EQ(device::HostStageInFlight(loader->stage()), 0);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
  EXPECT_EQ(recorder->live.load(), 0);  // nothing kept after Stop
  DeviceBatch b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_TRUE(end) << "a stopped epoch has no more batches";
  ExpectEpochMatchesCpu(loader.get(), source, o, 1);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
}

// A new epoch started mid-epoch (Start without Stop) does the same.
TEST(DeviceLoaderTest, EpochChangeSynchronisesTheBatchAhead) {
  // Two batches, no next-epoch prefetch: the batch ahead stays unconverted
  // until something waits for it (see DoesNotWaitForTheBatchAhead).
  auto source = Samples(8);
  LoaderOptions o = Options();
  o.prefetch_next_epoch = false;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch first;
  bool end = false;
  ASSERT_TRUE(loader->Next(&first, &end, 0).ok());
  ASSERT_EQ(device::HostStageInFlight(loader->stage()), 1);
  ExpectEpochMatchesCpu(loader.get(), source, o, 3);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
}

// Destroying the loader with a batch launched ahead waits for it; batches
// handed out stay valid after the loader is gone.
TEST(DeviceLoaderTest, DestructionSynchronisesAndBatchesOutliveTheLoader) {
  // Two batches, no next-epoch prefetch: the batch ahead stays unconverted
  // until something waits for it (see DoesNotWaitForTheBatchAhead).
  auto source = Samples(8);
  LoaderOptions o = Options();
  o.prefetch_next_epoch = false;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  loader->SetEpoch(2);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch kept;
  bool end = false;
  ASSERT_TRUE(loader->Next(&kept, &end, 0).ok());
  ASSERT_EQ(device::HostStageInFlight(loader->stage()), 1);
  loader.reset();
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
  EXPECT_EQ(recorder->live.load(), 2);  // `kept`'s images and labels
  ExpectSameBatch(kept, *CpuEpoch(source, o, 2)[0]);
}

// An allocator error for batch 1 comes after batch 0, ends the epoch (the
// same error until Start), and leaves nothing unsynchronised.
TEST(DeviceLoaderTest, AllocatorErrorComesInOrderAndEndsTheEpoch) {
  auto source = Samples(10);
  const LoaderOptions o = Options();
  auto recorder = std::make_shared<Recorder>();
  recorder->fail_at = 2;  // batch 1's images
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch b0;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b0, &end, 0).ok());
  ExpectSameBatch(b0, *CpuEpoch(source, o, 0)[0]);
  for (int i = 0; i < 2; ++i) {
    DeviceBatch b;
    const Status s = loader->Next(&b, &end, 0);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(s.message(), "test allocator: out of memory");
    EXPECT_EQ(b.images, nullptr);
  }
  EXPECT_EQ(device::HostStageInFlight(loader->stage()), 0);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
  recorder->fail_at = -1;
  ExpectEpochMatchesCpu(loader.get(), source, o, 1);  // Start clears it
}

TEST(DeviceLoaderTest, FirstAllocationErrorAndNullAllocation) {
  auto source = Samples(10);
  const LoaderOptions o = Options();
  auto recorder = std::make_shared<Recorder>();
  recorder->fail_at = 0;
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/false);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch b;
  bool end = false;
  EXPECT_EQ(loader->Next(&b, &end, 0).code(), StatusCode::kResourceExhausted);

  auto null_recorder = std::make_shared<Recorder>();
  null_recorder->fail_at = 3;  // batch 1's labels
  null_recorder->null_at_fail = true;
  auto null_loader = MakeLoader(source, o, null_recorder, /*deferred=*/true);
  ASSERT_TRUE(null_loader->Start().ok());
  ASSERT_TRUE(null_loader->Next(&b, &end, 0).ok());
  const Status s = null_loader->Next(&b, &end, 0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "the device allocator returned a null pointer for 32 bytes");
  EXPECT_EQ(device::HostStageInFlight(null_loader->stage()), 0);
  // Batch 1's images were allocated but never launched (its labels failed).
  EXPECT_EQ(null_recorder->released_unwritten.load(), 1);
}

// A bad file under on_error=raise: the batches before it, then the CPU
// Loader's error.
TEST(DeviceLoaderTest, BadSampleErrorAfterTheBatchesBeforeIt) {
  auto source = Samples(10, /*bad_index=*/5);  // in batch 1
  const LoaderOptions o = Options();
  std::string cpu_error;
  {
    auto cpu = Loader::Create(source, o).value();
    ASSERT_TRUE(cpu->Start().ok());
    BatchPtr c;
    bool end = false;
    ASSERT_TRUE(cpu->Next(&c, &end).ok());
    const Status s = cpu->Next(&c, &end);
    ASSERT_FALSE(s.ok());
    cpu_error = s.message();
  }
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_EQ(b.index, 0);
  const Status s = loader->Next(&b, &end, 0);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), cpu_error);
  EXPECT_NE(s.message().find("s5"), std::string::npos) << s.message();
}

// A poll error while waiting for the batch ahead returns at once; the batch
// that was due comes with the next call and the epoch goes on.
TEST(DeviceLoaderTest, PollErrorKeepsTheBatchDue) {
  std::vector<MemorySample> samples(8);
  for (int i = 0; i < 8; ++i) {
    samples[i].raw_width = samples[i].raw_height = 8;
    samples[i].bytes = testing::MakePixels(8, 8, i);
    samples[i].label = i;
  }
  // One batch in flight, and the batch ahead's reads held until the polls
  // have failed: it is not ready when asked for, so the Loader waits, and
  // polls.
  auto source = std::make_shared<testing::MemorySource>(samples);
  source->HoldReads(/*after=*/4);
  LoaderOptions o = Options();
  o.threads = 1;
  o.prefetch = 1;
  o.prefetch_next_epoch = false;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  bool fail = false;
  auto poll = [&fail] { return fail ? CancelledError("interrupted") : Status::OK(); };
  DeviceBatch b;
  bool end = false;
  // Fail the polls once batch 0 is launched (its second allocation).
  const int calls_before = recorder->calls.load();
  auto poll_after_launch = [&]() {
    if (recorder->calls.load() >= calls_before + 2) fail = true;
    return poll();
  };
  const Status s = loader->Next(&b, &end, 0, poll_after_launch, 1);
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(b.images, nullptr);
  fail = false;
  source->OpenReads();
  const std::vector<BatchPtr> cpu = CpuEpoch(source, o, 0);
  for (size_t k = 0; k < cpu.size(); ++k) {
    DeviceBatch d;
    const Status st = loader->Next(&d, &end, 0, [] { return Status::OK(); }, 1);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_FALSE(end);
    ExpectSameBatch(d, *cpu[k]);
  }
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  EXPECT_TRUE(end);
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
}

TEST(DeviceLoaderTest, RefusesUnusableOptions) {
  auto source = Samples(4);
  DeviceLoaderOptions d;
  d.device = kHostDevice;
  LoaderOptions o = Options(DType::kUint8, Layout::kNHWC);
  auto r = DeviceLoader::Create(source, o, d);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("dtype must be float32, float16 or bfloat16"),
            std::string::npos)
      << r.status().message();

  o = Options();
  o.transforms.push_back(Transform::Normalize({0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}));
  r = DeviceLoader::Create(source, o, d);
  EXPECT_EQ(r.status().message(), "two Normalize transforms: the device applies one");

  o = Options();
  o.transforms.push_back(Transform::RandomErasing());
  r = DeviceLoader::Create(source, o, d);
  EXPECT_NE(r.status().message().find("RandomErasing with Normalize is not supported"),
            std::string::npos)
      << r.status().message();
  o.transforms.erase(o.transforms.begin() + 1);  // without Normalize: the same zeros
  EXPECT_TRUE(DeviceLoader::Create(source, o, d).ok());

  o = Options();
  o.allocator = HostAllocator();
  EXPECT_EQ(DeviceLoader::Create(source, o, d).status().code(), StatusCode::kInvalidArgument);

  o = Options();
  o.transforms = {};  // samples of different sizes: no fixed size for the stage
  r = DeviceLoader::Create(source, o, d);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("fixed image size"), std::string::npos)
      << r.status().message();

  o = Options();
  o.collate = LoaderOptions::Collate::kList;
  r = DeviceLoader::Create(source, o, d);
  EXPECT_NE(r.status().message().find("collate=list is not supported with a device"),
            std::string::npos)
      << r.status().message();

  d.device = -2;
  EXPECT_EQ(DeviceLoader::Create(source, Options(), d).status().code(),
            StatusCode::kInvalidArgument);
}

// The public factory's host fallback with the default (host) allocator, and
// the device options moved out of the transforms.
TEST(DeviceLoaderTest, PublicHostFallbackWithDefaultAllocator) {
  auto source = Samples(6);
  const LoaderOptions o = Options(DType::kBFloat16, Layout::kNHWC);
  DeviceLoaderOptions d;
  d.device = kHostDevice;
  auto loader = DeviceLoader::Create(source, o, d).value();
  EXPECT_TRUE(loader->device_options().normalize);
  EXPECT_EQ(loader->device_options().mean[1], 0.456f);
  EXPECT_EQ(loader->loader().options().dtype, DType::kUint8);
  EXPECT_EQ(loader->loader().options().transforms.size(), 1u);
  EXPECT_EQ(loader->output_dims(3), (std::array<int64_t, 4>{3, 8, 8, 3}));
  ExpectEpochMatchesCpu(loader.get(), source, o, 0);
}

// The host fallback's device memory is host memory: a copy of its bytes.
std::vector<uint8_t> HostBytes(const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  return b == nullptr ? std::vector<uint8_t>() : std::vector<uint8_t>(b, b + bytes);
}

// One epoch of `loader`, its batches held across the epoch.
std::vector<DeviceBatch> DeviceEpoch(DeviceLoader* loader, int64_t epoch) {
  loader->SetEpoch(epoch);
  EXPECT_TRUE(loader->Start().ok());
  return DrainEpoch<DeviceBatch>(
      [&](DeviceBatch* b, bool* end) { return loader->Next(b, end, 0); });
}

// Records through the host fallback: the fixed fields (aux, feat) arrive in
// DeviceBatch::fields with the CPU Loader's bytes, the variable ones
// (tokens, caption) stay in the host batch, and under collate="pad" the padded
// tokens arrive as a block too (their lengths on the host). Deferred stage
// and prefetch 1: a field copy the policy did not wait for, or a host buffer
// reused before its copy, leaves the allocator's sentinel or another batch's
// bytes. The device loader runs 1 and 3 threads against a 1-thread CPU
// Loader, over two shuffled epochs.
struct RecordCase {
  int threads;
  LoaderOptions::Collate collate;
};

class DeviceLoaderRecordTest : public ::testing::TestWithParam<RecordCase> {};

TEST_P(DeviceLoaderRecordTest, FieldsEqualTheCpuBatchBitForBit) {
  const RecordCase c = GetParam();
  auto source = testing::DeviceRecordSamples(13);
  LoaderOptions o = Options();
  o.shuffle = true;
  o.seed = 5;
  o.prefetch = 1;
  o.collate = c.collate;
  o.threads = 1;
  LoaderOptions device_options = o;
  device_options.threads = c.threads;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, device_options, recorder, /*deferred=*/true);
  const testing::FetchBytes fetch = HostBytes;
  for (int64_t epoch : {0, 1}) {
    const std::vector<BatchPtr> cpu = CpuEpoch(source, o, epoch);
    const std::vector<DeviceBatch> kept = DeviceEpoch(loader.get(), epoch);
    ASSERT_EQ(kept.size(), cpu.size());
    for (size_t k = 0; k < cpu.size(); ++k) {
      const DeviceBatch& b = kept[k];
      ASSERT_EQ(b.fields.size(), c.collate == LoaderOptions::Collate::kPad ? 3u : 2u);
      EXPECT_EQ(b.fields[0].name, "aux");
      EXPECT_EQ(b.fields[0].dims, (std::vector<int64_t>{b.size, 2}));
      EXPECT_NE(b.host, nullptr);  // tokens and caption stay on the host
      EXPECT_EQ(testing::DiffDeviceRecordBatch(b, *cpu[k], cpu[k]->image_bytes(), fetch), "")
          << "epoch " << epoch << ", " << c.threads << " threads";
    }
  }
  EXPECT_EQ(recorder->released_unwritten.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Collates, DeviceLoaderRecordTest,
    ::testing::Values(RecordCase{1, LoaderOptions::Collate::kBatch},
                      RecordCase{3, LoaderOptions::Collate::kBatch},
                      RecordCase{1, LoaderOptions::Collate::kPad},
                      RecordCase{3, LoaderOptions::Collate::kPad}),
    [](const ::testing::TestParamInfo<RecordCase>& info) {
      return std::string(info.param.collate == LoaderOptions::Collate::kPad ? "Pad" : "Batch") +
             std::to_string(info.param.threads) + "Threads";
    });

// Targets through the host fallback: the mask, stacked [B, 8, 8] uint8 under
// a fixed output size, arrives in DeviceBatch::fields with the CPU Loader's
// bytes (moved by the same random crop and flip); the boxes, a variable
// field, stay in the host batch, equal too. 1 and 3 threads, two epochs.
TEST(DeviceLoaderTest, TargetMaskEqualsTheCpuBatchBitForBit) {
  auto source = testing::DeviceTargetSamples(13);
  LoaderOptions o = Options();
  o.transforms = {Transform::RandomResizedCrop(8, 8, 0.3, 1.0), Transform::RandomHorizontalFlip(),
                  Transform::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})};
  o.shuffle = true;
  o.seed = 9;
  o.prefetch = 1;
  o.threads = 1;
  const testing::FetchBytes fetch = HostBytes;
  for (int threads : {1, 3}) {
    LoaderOptions device_options = o;
    device_options.threads = threads;
    auto loader = MakeLoader(source, device_options, std::make_shared<Recorder>(),
                             /*deferred=*/true);
    for (int64_t epoch : {0, 1}) {
      const std::vector<BatchPtr> cpu = CpuEpoch(source, o, epoch);
      const std::vector<DeviceBatch> kept = DeviceEpoch(loader.get(), epoch);
      ASSERT_EQ(kept.size(), cpu.size());
      for (size_t k = 0; k < cpu.size(); ++k) {
        const DeviceBatch& b = kept[k];
        ASSERT_EQ(b.fields.size(), 1u);
        EXPECT_EQ(b.fields[0].name, "mask");
        EXPECT_EQ(b.fields[0].elem, ElemType::kUint8);
        EXPECT_EQ(b.fields[0].dims, (std::vector<int64_t>{b.size, 8, 8}));
        EXPECT_NE(b.host, nullptr);  // the boxes
        EXPECT_EQ(testing::DiffDeviceRecordBatch(b, *cpu[k], cpu[k]->image_bytes(), fetch), "")
            << "epoch " << epoch << ", " << threads << " threads";
      }
    }
  }
}

// A record batch whose fields are all fixed keeps no host batch: its buffer
// goes back to the pool after the launch, as an image + label batch's does.
TEST(DeviceLoaderTest, RecordWithOnlyFixedFieldsKeepsNoHostBatch) {
  auto source = testing::DeviceRecordSamples(6);
  LoaderOptions o = Options();
  // Only the image, label and the fixed aux/feat: drop tokens and caption.
  Schema schema;
  const Schema full = source->schema();
  std::vector<MemorySample> samples;
  for (int i = 0; i < 6; ++i) {
    MemorySample s;
    s.name = "r" + std::to_string(i);
    s.label = i;
    s.raw_width = s.raw_height = 8;
    s.bytes = testing::MakePixels(8, 8, 40 + i);
    s.field_bytes.reserve(3);
    testing::AppendField(&s);
    testing::AppendField(&s);
    testing::AppendField(&s, testing::BytesOf<int32_t>({i, 2 * i}), ElemType::kInt32, {2});
    samples.push_back(std::move(s));
  }
  schema.fields = {full.fields[0], full.fields[1], full.fields[2]};
  auto fixed = std::make_shared<stoker::MemorySource>(std::move(samples), schema);
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(fixed, o, recorder, /*deferred=*/true);
  ASSERT_TRUE(loader->Start().ok());
  DeviceBatch b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
  ASSERT_FALSE(end);
  EXPECT_TRUE(b.records);
  EXPECT_EQ(b.host, nullptr);
  ASSERT_EQ(b.fields.size(), 1u);
  const auto* aux = static_cast<const int32_t*>(b.fields[0].data);
  for (int i = 0; i < b.size; ++i) {
    EXPECT_EQ(aux[2 * i], b.ids[i]);
    EXPECT_EQ(aux[2 * i + 1], 2 * b.ids[i]);
  }
}

// A record without a primary image (arrays only): no images output, the
// label and the fields arrive as the CPU Loader's batch holds them; device
// augmentations are refused (nothing to augment).
TEST(DeviceLoaderTest, RecordWithoutImageFeedsItsFields) {
  auto source = testing::DeviceArrayRecordSamples(9);
  LoaderOptions o = Options();
  o.transforms.clear();
  o.shuffle = true;
  o.prefetch = 1;
  o.threads = 3;
  auto recorder = std::make_shared<Recorder>();
  auto loader = MakeLoader(source, o, recorder, /*deferred=*/true);
  EXPECT_FALSE(loader->device_options().image);
  o.threads = 1;
  const std::vector<BatchPtr> cpu = CpuEpoch(source, o, 0);
  const testing::FetchBytes fetch = HostBytes;
  ASSERT_TRUE(loader->Start().ok());
  std::vector<DeviceBatch> kept;
  for (;;) {
    DeviceBatch b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end, 0).ok());
    if (end) break;
    kept.push_back(std::move(b));
  }
  ASSERT_EQ(kept.size(), cpu.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    EXPECT_EQ(kept[k].images, nullptr);
    EXPECT_EQ(kept[k].dims, (std::array<int64_t, 4>{kept[k].size, 0, 0, 0}));
    EXPECT_EQ(kept[k].image_name, "");
    EXPECT_EQ(kept[k].host, nullptr);  // every field is fixed
    ASSERT_EQ(kept[k].fields.size(), 2u);
    EXPECT_EQ(testing::DiffDeviceRecordBatch(kept[k], *cpu[k], 0, fetch), "");
  }
  EXPECT_EQ(recorder->released_unwritten.load(), 0);

  DeviceLoaderOptions d;
  d.device = kHostDevice;
  d.augment.flip_p = 0.5;
  const auto r = DeviceLoader::Create(source, o, d);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("the record has no primary image"), std::string::npos)
      << r.status().message();
}

// Without a usable CUDA device, asking for one is a clear error.
TEST(DeviceLoaderTest, CudaWithoutDeviceIsAClearError) {
  const Status why = CheckCudaDevice(0);
  if (why.ok()) GTEST_SKIP() << "a CUDA device is present";
  DeviceLoaderOptions d;
  d.device = 0;
  const auto r = DeviceLoader::Create(Samples(4), Options(), d);
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), why.message());
  EXPECT_NE(r.status().message().find("device='cuda:0' requested but"), std::string::npos);
}

}  // namespace
}  // namespace stoker
