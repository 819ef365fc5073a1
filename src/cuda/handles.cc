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

std::string On(int device) { return " on cuda:" + std::to_string(device); }

}  // namespace

void StreamTraits::Destroy(cudaStream_t stream) noexcept {
  STOKER_CUDA_DTOR_CALL(cudaStreamDestroy(stream));
}

StatusOr<CudaStream> CudaStream::Create(int device, unsigned flags) {
  cudaError_t e = cudaSetDevice(device);
  cudaStream_t s = nullptr;
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, flags);
  if (e != cudaSuccess) return CudaError("cudaStreamCreateWithFlags" + On(device), e);
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
  cudaError_t e = cudaSetDevice(device);
  cudaEvent_t ev = nullptr;
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, flags);
  if (e != cudaSuccess) return CudaError("cudaEventCreateWithFlags" + On(device), e);
  return CudaEvent(ev);
}

void DeviceMemoryTraits::Destroy(void* p) noexcept { STOKER_CUDA_DTOR_CALL(cudaFree(p)); }

void PinnedMemoryTraits::Destroy(void* p) noexcept { STOKER_CUDA_DTOR_CALL(cudaFreeHost(p)); }

StatusOr<DeviceMemory> AllocateDevice(int device, size_t bytes) {
  cudaError_t e = cudaSetDevice(device);
  void* p = nullptr;
  if (e == cudaSuccess) e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    return CudaError("cudaMalloc of " + std::to_string(bytes) + " bytes" + On(device), e);
  }
  return DeviceMemory(p);
}

StatusOr<PinnedMemory> AllocatePinned(int device, size_t bytes, unsigned flags) {
  cudaError_t e = cudaSetDevice(device);
  void* p = nullptr;
  if (e == cudaSuccess) e = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, flags);
  if (e != cudaSuccess) {
    return CudaError("cudaHostAlloc of " + std::to_string(bytes) + " bytes" + On(device), e);
  }
  return PinnedMemory(p);
}

}  // namespace stoker::cuda
