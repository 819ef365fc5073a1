// Copyright 2026 The stoker Authors.
//
// DefaultDeviceAllocator's CUDA side (device/backend.h): stream-ordered
// device memory, freed on the stream it was allocated on.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "cuda/check.h"
#include "device/backend.h"

namespace stoker::device {

StatusOr<DeviceAllocation> CudaAllocateAsync(int device, size_t bytes, uintptr_t stream) {
  STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  void* p = nullptr;
  STOKER_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, s));
  std::shared_ptr<void> owner(p, [device, s](void* q) {
    cudaSetDevice(device);
    STOKER_CUDA_DTOR_CALL(cudaFreeAsync(q, s));
  });
  return DeviceAllocation{p, std::move(owner)};
}

}  // namespace stoker::device
