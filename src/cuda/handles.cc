// Copyright 2026 The stoker Authors.
//
// The CUDA calls behind cuda/stream.h, cuda/event.h and cuda/memory.h.
#include <string>

#include "cuda/check.h"
#include "cuda/event.h"
#include "cuda/memory.h"
#include "cuda/stream.h"

namespace stoker::cuda {
namespace {

// Makes `device` current, then runs `create(&handle)`; a failure of either is
// CudaError's Status for `what` on that device.
template <typename Handle, typename Create>
StatusOr<Handle> CreateOn(int device, const std::string& what, Create create) {
  cudaError_t e = cudaSetDevice(device);
  Handle h{};
  if (e == cudaSuccess) e = create(&h);
  if (e != cudaSuccess) return CudaError(what + " on cuda:" + std::to_string(device), e);
  return h;
}

}  // namespace

void StreamTraits::Destroy(cudaStream_t stream) noexcept {
  STOKER_CUDA_DTOR_CALL(cudaStreamDestroy(stream));
}

StatusOr<CudaStream> CudaStream::Create(int device, unsigned flags) {
  STOKER_ASSIGN_OR_RETURN(
      cudaStream_t s, CreateOn<cudaStream_t>(device, "cudaStreamCreateWithFlags", [&](auto* h) {
        return cudaStreamCreateWithFlags(h, flags);
      }));
  return CudaStream(s);
}

Status CudaStream::Synchronize() const {
  STOKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(get()));
  return Status::OK();
}

void EventTraits::Destroy(cudaEvent_t event) noexcept {
  STOKER_CUDA_DTOR_CALL(cudaEventDestroy(event));
}

StatusOr<CudaEvent> CudaEvent::Create(int device, unsigned flags) {
  STOKER_ASSIGN_OR_RETURN(
      cudaEvent_t e, CreateOn<cudaEvent_t>(device, "cudaEventCreateWithFlags", [&](auto* h) {
        return cudaEventCreateWithFlags(h, flags);
      }));
  return CudaEvent(e);
}

void DeviceMemoryTraits::Destroy(void* p) noexcept { STOKER_CUDA_DTOR_CALL(cudaFree(p)); }

void PinnedMemoryTraits::Destroy(void* p) noexcept { STOKER_CUDA_DTOR_CALL(cudaFreeHost(p)); }

StatusOr<DeviceMemory> AllocateDevice(int device, size_t bytes) {
  STOKER_ASSIGN_OR_RETURN(
      void* p, CreateOn<void*>(device, "cudaMalloc of " + std::to_string(bytes) + " bytes",
                               [&](void** h) { return cudaMalloc(h, bytes == 0 ? 1 : bytes); }));
  return DeviceMemory(p);
}

StatusOr<PinnedMemory> AllocatePinned(int device, size_t bytes, unsigned flags) {
  STOKER_ASSIGN_OR_RETURN(
      void* p, CreateOn<void*>(device, "cudaHostAlloc of " + std::to_string(bytes) + " bytes",
                               [&](void** h) {
                                 return cudaHostAlloc(h, bytes == 0 ? 1 : bytes, flags);
                               }));
  return PinnedMemory(p);
}

}  // namespace stoker::cuda
