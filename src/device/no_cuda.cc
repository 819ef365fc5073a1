// Copyright 2026 The stoker Authors.
//
// The backend's entry points (device/backend.h) in a build without CUDA
// (STOKER_WITH_CUDA off or no nvcc): every request for a CUDA device fails
// with a clear error; the CPU path is unaffected.
#include <string>

#include "device/backend.h"
#include "stoker/device.h"
#include "stoker/device_host.h"

namespace stoker {
namespace {

Status NoCuda(int index) {
  return UnimplementedError("device='cuda:" + std::to_string(index) +
                            "' requested but stoker was built without CUDA (nvcc was not found "
                            "or STOKER_WITH_CUDA=OFF); rebuild with the CUDA toolkit");
}

}  // namespace

bool BuiltWithCuda() { return false; }

Status CheckCudaDevice(int index) { return NoCuda(index); }

StatusOr<std::unique_ptr<DeviceStage>> DeviceStage::Create(const DeviceOptions& options, int,
                                                           int) {
  return NoCuda(options.device);
}

StatusOr<std::shared_ptr<BatchAllocator>> PinnedBatchAllocator(int device) {
  return NoCuda(device);
}

namespace device {

StatusOr<DeviceAllocation> CudaAllocateAsync(int device, size_t, uintptr_t) {
  return NoCuda(device);
}

}  // namespace device

}  // namespace stoker
