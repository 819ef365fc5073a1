// Copyright 2026 The stoker Authors.
//
// The CUDA stage. Tests that need a GPU skip, with the reason, when none is
// present (ctest label "gpu"); the no-device error paths run everywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/rng.h"
#include "cuda/event_pool.h"
#include "cuda/pinned_allocator.h"
#include "device/device_plan.h"
#include "source/memory_source.h"
#include "stoker/device.h"
#include "stoker/device_loader.h"
#include "stoker/loader.h"
#include "testing/device_records.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

// Empty when a device is usable, else why not.
std::string NoDeviceReason() {
  const Status s = CheckCudaDevice(0);
  return s.ok() ? "" : s.message();
}

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    const std::string why = NoDeviceReason();                           \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;        \
  } while (0)

TEST(PinnedAllocatorTest, NoDeviceIsAClearStatus) {
  if (NoDeviceReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  auto allocator = cuda::PinnedHostAllocator(0);
  const auto p = allocator->Allocate(1 << 20);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(p.status().message().find("cudaHostAlloc of 1048576 bytes"), std::string::npos)
      << p.status().message();
}

// A Loader given the pinned allocator on a machine without a device reports
// the allocation failure from Next(), not a crash or a hang.
TEST(PinnedAllocatorTest, LoaderWithoutDeviceFailsInNext) {
  if (NoDeviceReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  std::vector<MemorySample> samples(4);
  for (auto& s : samples) {
    s.bytes.assign(8 * 8 * 3, 100);
    s.raw_width = s.raw_height = 8;
  }
  LoaderOptions o;
  o.batch_size = 2;
  o.threads = 1;
  o.dtype = DType::kUint8;
  o.layout = Layout::kNHWC;
  o.transforms = {Transform::CenterCrop(8, 8)};
  o.allocator = cuda::PinnedHostAllocator(0);
  auto created = Loader::Create(std::make_shared<MemorySource>(samples), o);
  ASSERT_TRUE(created.ok()) << created.status().message();
  auto loader = std::move(created).value();
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr batch;
  bool end = false;
  const Status s = loader->Next(&batch, &end);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cudaHostAlloc"), std::string::npos) << s.message();
}

TEST(EventPoolTest, ReusesEvents) {
  SKIP_WITHOUT_GPU();
  cuda::EventPool pool(0);
  auto a = pool.Get();
  ASSERT_TRUE(a.ok()) << a.status().message();
  const cudaEvent_t first = a.value().get();
  pool.Put(std::move(a).value());
  auto b = pool.Get();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value().get(), first);
  EXPECT_EQ(pool.created(), 1);
  pool.Put(std::move(b).value());
}

// Batches made by hand in pinned memory, through the stage, against the
// host-compiled kernel code: bit for bit, every dtype, every augmentation.
TEST(DeviceStageGpuTest, MatchesHostMathsBitForBit) {
  SKIP_WITHOUT_GPU();
  const int h = 20, w = 24, bsz = 5;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    DeviceOptions o;
    o.dtype = dtype;
    o.batch_size = bsz;
    o.seed = 9;
    o.normalize = true;
    o.mean = {0.485f, 0.456f, 0.406f};
    o.std = {0.229f, 0.224f, 0.225f};
    o.augment.flip_p = 0.5;
    o.augment.crop_height = 16;
    o.augment.crop_width = 18;
    o.augment.pad = 2;
    o.augment.brightness = o.augment.contrast = o.augment.saturation = 0.4f;
    o.augment.degrees = 15.f;
    o.augment.translate = 0.1f;
    o.augment.scale_min = 0.9f;
    o.augment.scale_max = 1.1f;
    auto stage = DeviceStage::Create(o, h, w);
    ASSERT_TRUE(stage.ok()) << stage.status().message();
    BatchShape shape{bsz, h, w, DType::kUint8, Layout::kNHWC};
    auto pool = BatchPool::Create(shape, stage.value()->host_allocator(), 4);
    auto buf = pool->Acquire();
    ASSERT_TRUE(buf.ok()) << buf.status().message();
    BatchBuffer* b = buf.value();
    b->size = bsz;
    b->epoch = 2;
    Rng rng(1);
    for (size_t i = 0; i < b->image_bytes(); ++i) b->images()[i] = static_cast<uint8_t>(rng.Next());
    for (int i = 0; i < bsz; ++i) {
      b->ids()[i] = 100 + i;
      b->labels()[i] = i * 7;
    }
    std::vector<uint8_t> input(b->images(), b->images() + b->image_bytes());
    auto batch = std::make_shared<Batch>(pool, b);
    const size_t bytes = stage.value()->output_bytes(bsz);
    void* out = nullptr;
    int64_t* labels = nullptr;
    ASSERT_EQ(cudaMalloc(&out, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&labels), bsz * sizeof(int64_t)), cudaSuccess);
    auto ticket = stage.value()->Launch(batch, out, labels, 0);
    ASSERT_TRUE(ticket.ok()) << ticket.status().message();
    batch.reset();  // the buffer waits for its copy before reuse
    ASSERT_TRUE(stage.value()->Handoff(ticket.value(), 0).ok());
    std::vector<uint8_t> got(bytes);
    std::vector<int64_t> got_labels(bsz);
    ASSERT_EQ(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got_labels.data(), labels, bsz * 8, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(out);
    cudaFree(labels);

    const device::BatchGeometry g = MakeBatchGeometry(o, h, w).value();
    std::vector<device::SampleParams> params(bsz);
    for (int i = 0; i < bsz; ++i) {
      params[i] = DrawSampleParams(o.augment, g, o.seed, 2, 100 + i);
      params[i].grey_mean = GreyMeanOnHost(input.data() + static_cast<size_t>(i) * h * w * 3, h, w);
    }
    std::vector<uint8_t> want(bytes);
    TransformBatchOnHost(input.data(), bsz, g, params.data(), want.data());
    EXPECT_EQ(got, want) << DTypeName(dtype);
    for (int i = 0; i < bsz; ++i) EXPECT_EQ(got_labels[i], i * 7);
    // The pinned buffer is recycled, not reallocated.
    auto again = pool->Acquire();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value(), b);
    EXPECT_EQ(pool->total_allocations(), 1);
    pool->Release(again.value());
  }
}

// One sample source for the DeviceLoader tests: raw pixels, CenterCrop to 16x16.
std::shared_ptr<Source> RawSamples(int n) {
  std::vector<MemorySample> samples(n);
  for (int i = 0; i < n; ++i) {
    samples[i].raw_width = 20 + i % 3;
    samples[i].raw_height = 18 + i % 2;
    samples[i].bytes = testing::MakePixels(samples[i].raw_width, samples[i].raw_height, 50 + i);
    samples[i].label = i % 4;
    samples[i].name = "s" + std::to_string(i);
  }
  return std::make_shared<MemorySource>(samples);
}

// The DeviceLoader on the GPU (pinned batches, the copy stream, cudaMallocAsync
// outputs handed to a stream of ours) against its host fallback, batch by
// batch and bit for bit, over a shuffled epoch with device augmentations; then
// an epoch stopped after one batch (the batch ahead synchronised) and a whole
// one after it.
TEST(DeviceLoaderGpuTest, MatchesHostFallbackBitForBit) {
  SKIP_WITHOUT_GPU();
  auto source = RawSamples(23);
  LoaderOptions o;
  o.batch_size = 5;
  o.shuffle = true;
  o.seed = 11;
  o.threads = 2;
  o.prefetch = 3;
  o.dtype = DType::kBFloat16;
  o.transforms = {Transform::CenterCrop(16, 16),
                  Transform::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})};
  DeviceLoaderOptions gpu_options;
  gpu_options.device = 0;
  gpu_options.augment.flip_p = 0.5;
  gpu_options.augment.brightness = gpu_options.augment.contrast = 0.3f;
  gpu_options.augment.degrees = 10.f;
  DeviceLoaderOptions host_options = gpu_options;
  host_options.device = kHostDevice;
  auto gpu = DeviceLoader::Create(source, o, gpu_options);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  auto host = DeviceLoader::Create(source, o, host_options).value();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const auto s = reinterpret_cast<uintptr_t>(stream);
  for (int64_t epoch : {0, 1, 2}) {
    gpu.value()->SetEpoch(epoch);
    host->SetEpoch(epoch);
    ASSERT_TRUE(gpu.value()->Start().ok());
    ASSERT_TRUE(host->Start().ok());
    int batches = 0;
    for (;;) {
      DeviceBatch g, h;
      bool g_end = false, h_end = false;
      const Status gs = gpu.value()->Next(&g, &g_end, s);
      ASSERT_TRUE(gs.ok()) << gs.message();
      ASSERT_TRUE(host->Next(&h, &h_end, 0).ok());
      ASSERT_EQ(g_end, h_end);
      if (g_end) break;
      ++batches;
      const size_t bytes = gpu.value()->stage().output_bytes(g.size);
      std::vector<uint8_t> got(bytes);
      std::vector<int64_t> labels(g.size);
      ASSERT_EQ(cudaMemcpyAsync(got.data(), g.images, bytes, cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpyAsync(labels.data(), g.labels, 8 * g.size, cudaMemcpyDeviceToHost,
                                stream),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      EXPECT_EQ(std::memcmp(got.data(), h.images, bytes), 0) << "epoch " << epoch;
      EXPECT_EQ(std::memcmp(labels.data(), h.labels, 8 * g.size), 0);
      EXPECT_EQ(g.ids, h.ids);
      EXPECT_EQ(g.dims, h.dims);
      if (epoch == 1) break;  // stopped mid-epoch below
    }
    EXPECT_EQ(batches, epoch == 1 ? 1 : 5);
    ASSERT_TRUE(gpu.value()->Stop().ok());
    ASSERT_TRUE(host->Stop().ok());
  }
  gpu.value().reset();  // frees on `stream` (cudaFreeAsync) before it is destroyed
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Device memory copied back to the host on `stream` (after its work so far).
testing::FetchBytes DeviceBytes(cudaStream_t stream) {
  return [stream](const void* p, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    if (bytes > 0) {
      EXPECT_EQ(cudaMemcpyAsync(out.data(), p, bytes, cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    }
    return out;
  };
}

// Records on the GPU: the CUDA DeviceLoader's record batches against the CPU
// Loader's (same options, Normalize on the host; without augmentations the
// device conversion equals it bit for bit): images, labels, ids, each fixed
// field (aux, feat) copied back from the device, the variable ones (tokens,
// caption) in the host batch; under collate="pad" the padded tokens on the
// device too (their staging grows with the batch's longest sample). 1 and 3
// host threads, two shuffled epochs, every batch held until the epoch ends
// (prefetch 1: host buffers are recycled while copies are queued).
TEST(DeviceLoaderGpuTest, RecordFieldsMatchTheHostBatchBitForBit) {
  SKIP_WITHOUT_GPU();
  auto source = testing::DeviceRecordSamples(23);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const auto s = reinterpret_cast<uintptr_t>(stream);
  const testing::FetchBytes fetch = DeviceBytes(stream);
  for (LoaderOptions::Collate collate :
       {LoaderOptions::Collate::kBatch, LoaderOptions::Collate::kPad}) {
    for (int threads : {1, 3}) {
      LoaderOptions o;
      o.batch_size = 5;
      o.shuffle = true;
      o.seed = 13;
      o.threads = 1;
      o.prefetch = 1;
      o.collate = collate;
      o.transforms = {Transform::CenterCrop(8, 8),
                      Transform::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})};
      LoaderOptions gpu_loader_options = o;
      gpu_loader_options.threads = threads;
      DeviceLoaderOptions d;
      d.device = 0;
      auto gpu = DeviceLoader::Create(source, gpu_loader_options, d);
      ASSERT_TRUE(gpu.ok()) << gpu.status().message();
      auto cpu = Loader::Create(source, o).value();
      for (int64_t epoch : {0, 1}) {
        gpu.value()->SetEpoch(epoch);
        cpu->SetEpoch(epoch);
        ASSERT_TRUE(gpu.value()->Start().ok());
        ASSERT_TRUE(cpu->Start().ok());
        std::vector<DeviceBatch> got;
        std::vector<BatchPtr> want;
        for (;;) {
          DeviceBatch g;
          BatchPtr c;
          bool g_end = false, c_end = false;
          const Status gs = gpu.value()->Next(&g, &g_end, s);
          ASSERT_TRUE(gs.ok()) << gs.message();
          ASSERT_TRUE(cpu->Next(&c, &c_end).ok());
          ASSERT_EQ(g_end, c_end);
          if (g_end) break;
          got.push_back(std::move(g));
          want.push_back(std::move(c));
        }
        ASSERT_EQ(got.size(), 5u);
        for (size_t k = 0; k < got.size(); ++k) {
          EXPECT_EQ(got[k].device, 0);
          // The host batch (kept: tokens and caption) has its fixed blocks in the
          // pool's page-locked memory, so their H2D copies are asynchronous.
          ASSERT_NE(got[k].host, nullptr);
          cudaPointerAttributes attr{};
          ASSERT_EQ(cudaPointerGetAttributes(&attr, got[k].host->field_block(0)), cudaSuccess);
          EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "field 'aux' is not in pinned memory";
          EXPECT_EQ(testing::DiffDeviceRecordBatch(got[k], *want[k], want[k]->image_bytes(),
                                                   fetch),
                    "")
              << "epoch " << epoch << ", " << threads << " threads, collate "
              << (collate == LoaderOptions::Collate::kPad ? "pad" : "batch");
        }
      }
      ASSERT_TRUE(gpu.value()->Stop().ok());
      gpu.value().reset();  // frees on `stream` (cudaFreeAsync) before it is destroyed
    }
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// A record without an image on the GPU: no images output, the label and
// the fields copied to the device equal the CPU Loader's batch.
TEST(DeviceLoaderGpuTest, RecordWithoutImageMatchesTheHostBatchBitForBit) {
  SKIP_WITHOUT_GPU();
  auto source = testing::DeviceArrayRecordSamples(17);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const testing::FetchBytes fetch = DeviceBytes(stream);
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.threads = 3;
  o.prefetch = 1;
  DeviceLoaderOptions d;
  d.device = 0;
  auto gpu = DeviceLoader::Create(source, o, d);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  o.threads = 1;
  auto cpu = Loader::Create(source, o).value();
  ASSERT_TRUE(gpu.value()->Start().ok());
  ASSERT_TRUE(cpu->Start().ok());
  int batches = 0;
  for (;; ++batches) {
    DeviceBatch g;
    BatchPtr c;
    bool g_end = false, c_end = false;
    ASSERT_TRUE(gpu.value()->Next(&g, &g_end, reinterpret_cast<uintptr_t>(stream)).ok());
    ASSERT_TRUE(cpu->Next(&c, &c_end).ok());
    ASSERT_EQ(g_end, c_end);
    if (g_end) break;
    EXPECT_EQ(g.images, nullptr);
    EXPECT_EQ(testing::DiffDeviceRecordBatch(g, *c, 0, fetch), "");
  }
  EXPECT_EQ(batches, 5);
  gpu.value().reset();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

}  // namespace
}  // namespace stoker
