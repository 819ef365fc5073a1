// Copyright 2026 The stoker Authors.
//
// The CUDA handles (cuda/unique_handle.h, stream.h, event.h, memory.h) and
// the error checks behind them (cuda/check.h). Ownership is tested with a
// counting handle type on any machine; the no-device error paths run where
// no device is usable; the tests that need a device skip without one.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/event.h"
#include "cuda/event_pool.h"
#include "cuda/memory.h"
#include "cuda/stream.h"
#include "cuda/unique_handle.h"
#include "stoker/device.h"
#include "stoker/device_host.h"

namespace stoker::cuda {
namespace {

// Handles are ints; Destroy counts each destruction per handle.
std::map<int, int>& Destroyed() {
  static std::map<int, int> destroyed;
  return destroyed;
}

struct CountingTraits {
  using Handle = int;
  static constexpr Handle kNull = 0;
  static void Destroy(Handle h) noexcept { ++Destroyed()[h]; }
};
using Counted = UniqueHandle<CountingTraits>;

class UniqueHandleTest : public ::testing::Test {
 protected:
  void SetUp() override { Destroyed().clear(); }
};

static_assert(!std::is_copy_constructible_v<Counted> && !std::is_copy_assignable_v<Counted>);
static_assert(std::is_nothrow_move_constructible_v<Counted> &&
              std::is_nothrow_move_assignable_v<Counted>);
static_assert(!std::is_copy_constructible_v<CudaStream> && !std::is_copy_constructible_v<CudaEvent>);
static_assert(!std::is_copy_constructible_v<DeviceArray<float>> &&
              std::is_nothrow_move_constructible_v<DeviceArray<float>>);

TEST_F(UniqueHandleTest, DestroysItsHandleOnceAndNullNever) {
  {
    Counted empty;
    EXPECT_FALSE(empty);
    Counted owner(7);
    EXPECT_TRUE(owner);
    EXPECT_EQ(owner.get(), 7);
  }
  EXPECT_EQ(Destroyed(), (std::map<int, int>{{7, 1}}));
}

TEST_F(UniqueHandleTest, MovesTransferOwnership) {
  {
    Counted a(1);
    Counted b(std::move(a));
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is null by contract
    EXPECT_EQ(b.get(), 1);
    Counted c(2);
    c = std::move(b);  // 2 is destroyed now, 1 moves
    EXPECT_EQ(Destroyed(), (std::map<int, int>{{2, 1}}));
    EXPECT_EQ(c.get(), 1);
    Counted& self = c;
    c = std::move(self);  // self-move keeps the handle
    EXPECT_EQ(c.get(), 1);
    std::vector<Counted> v;
    for (int h = 10; h < 20; ++h) v.emplace_back(h);  // reallocations move, never destroy
    EXPECT_EQ(Destroyed().size(), 1u);
  }
  std::map<int, int> want = {{1, 1}, {2, 1}};
  for (int h = 10; h < 20; ++h) want[h] = 1;
  EXPECT_EQ(Destroyed(), want);
}

TEST_F(UniqueHandleTest, ReleaseGivesUpAndResetReplaces) {
  Counted a(3);
  const int raw = a.release();
  EXPECT_EQ(raw, 3);
  EXPECT_FALSE(a);
  a.reset(4);
  a.reset(5);  // destroys 4
  a.reset();   // destroys 5
  EXPECT_FALSE(a);
  { Counted again(raw); }  // owned again after release: destroyed once
  EXPECT_EQ(Destroyed(), (std::map<int, int>{{3, 1}, {4, 1}, {5, 1}}));
}

// The destructor variant: silent while the runtime unloads at exit, loud
// (naming the call) for any other failure.
TEST(CudaCheckTest, DestructorCallsTolerateUnloadingOnly) {
  ::testing::internal::CaptureStderr();
  STOKER_CUDA_DTOR_CALL(cudaErrorCudartUnloading);
  STOKER_CUDA_DTOR_CALL(cudaSuccess);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::testing::internal::CaptureStderr();
  ReportInDestructor("cudaFree(p)", cudaErrorIllegalAddress);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cudaFree(p) failed in a destructor"), std::string::npos) << err;
  EXPECT_NE(err.find(cudaGetErrorString(cudaErrorIllegalAddress)), std::string::npos) << err;
}

TEST(CudaCheckTest, ErrorsMapToStatusCodesAndNameTheCall) {
  const Status oom = CudaError("cudaMalloc of 64 bytes", cudaErrorMemoryAllocation);
  EXPECT_EQ(oom.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(oom.message().find("cudaMalloc of 64 bytes failed: cudaErrorMemoryAllocation"),
            std::string::npos)
      << oom.message();
  for (cudaError_t e : {cudaErrorNoDevice, cudaErrorInsufficientDriver}) {
    EXPECT_EQ(CudaError("cudaSetDevice", e).code(), StatusCode::kUnimplemented)
        << cudaGetErrorName(e);
  }
  EXPECT_EQ(CudaError("cudaMemcpyAsync", cudaErrorInvalidValue).code(), StatusCode::kInternal);
  auto wrapped = []() -> Status {
    STOKER_CUDA_RETURN_IF_ERROR(cudaErrorLaunchFailure);
    return Status::OK();
  };
  const Status s = wrapped();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("cudaErrorLaunchFailure"), std::string::npos) << s.message();
}

// Empty when a device is usable, else why not.
std::string NoDeviceReason() {
  const Status s = CheckCudaDevice(0);
  return s.ok() ? "" : s.message();
}

// Without a usable device every handle's factory returns a Status that names
// the call and the device, and hands out nothing.
TEST(CudaHandlesNoDeviceTest, FactoriesReportTheCallAndOwnNothing) {
  if (NoDeviceReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  auto stream = CudaStream::Create(0);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().code(), StatusCode::kUnimplemented) << stream.status().message();
  EXPECT_NE(stream.status().message().find("cudaStreamCreateWithFlags on cuda:0"),
            std::string::npos)
      << stream.status().message();

  auto event = CudaEvent::Create(0);
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(event.status().message().find("cudaEventCreateWithFlags on cuda:0"),
            std::string::npos)
      << event.status().message();

  auto device = DeviceArray<float>::Allocate(0, 16);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(device.status().message().find("cudaMalloc of 64 bytes on cuda:0"),
            std::string::npos)
      << device.status().message();

  auto pinned = PinnedArray<int64_t>::Allocate(0, 4);
  ASSERT_FALSE(pinned.ok());
  EXPECT_NE(pinned.status().message().find("cudaHostAlloc of 32 bytes on cuda:0"),
            std::string::npos)
      << pinned.status().message();

  EventPool pool(0);
  EXPECT_FALSE(pool.Get().ok());
  EXPECT_EQ(pool.created(), 0);
  pool.Put(CudaEvent());  // an empty event is not kept

  auto allocator = PinnedBatchAllocator(0);
  ASSERT_TRUE(allocator.ok());  // made lazily: the first Allocate reports
  const auto p = allocator.value()->Allocate(100);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);

  DeviceOptions o;
  o.batch_size = 2;
  auto stage = DeviceStage::Create(o, 8, 8);
  ASSERT_FALSE(stage.ok());
  EXPECT_EQ(stage.status().code(), StatusCode::kUnimplemented);
}

TEST(CudaHandlesGpuTest, StreamsEventsAndMemoryWork) {
  const std::string why = NoDeviceReason();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  auto stream = CudaStream::Create(0);
  ASSERT_TRUE(stream.ok()) << stream.status().message();
  CudaStream s = std::move(stream).value();
  auto device = DeviceArray<int>::Allocate(0, 256);
  auto host = PinnedArray<int>::Allocate(0, 256);
  ASSERT_TRUE(device.ok() && host.ok());
  DeviceArray<int> d = std::move(device).value();
  PinnedArray<int> h = std::move(host).value();
  EXPECT_EQ(d.bytes(), 256 * sizeof(int));
  for (int i = 0; i < 256; ++i) h[i] = i * 3;
  ASSERT_EQ(cudaMemcpyAsync(d.get(), h.get(), d.bytes(), cudaMemcpyHostToDevice, s.get()),
            cudaSuccess);
  EventPool pool(0);
  auto done = pool.Get();
  ASSERT_TRUE(done.ok()) << done.status().message();
  ASSERT_EQ(cudaEventRecord(done.value().get(), s.get()), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(done.value().get()), cudaSuccess);
  std::fill(h.get(), h.get() + h.size(), 0);
  ASSERT_EQ(cudaMemcpyAsync(h.get(), d.get(), d.bytes(), cudaMemcpyDeviceToHost, s.get()),
            cudaSuccess);
  ASSERT_TRUE(s.Synchronize().ok());
  for (int i = 0; i < 256; ++i) ASSERT_EQ(h[i], i * 3) << i;
  const cudaEvent_t first = done.value().get();
  pool.Put(std::move(done).value());
  auto again = pool.Get();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value().get(), first);  // reused, not created
  EXPECT_EQ(pool.created(), 1);
}

}  // namespace
}  // namespace stoker::cuda
