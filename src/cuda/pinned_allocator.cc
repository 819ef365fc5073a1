// Copyright 2026 The stoker Authors.
#include "cuda/pinned_allocator.h"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/check.h"

namespace stoker::cuda {
namespace {

class PinnedAllocator : public BatchAllocator {
 public:
  explicit PinnedAllocator(int device) : device_(device) {}

  StatusOr<void*> Allocate(size_t bytes) override {
    cudaError_t e = cudaSetDevice(device_);
    void* p = nullptr;
    if (e == cudaSuccess) e = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable);
    if (e == cudaSuccess) return p;
    const std::string what = "cudaHostAlloc of " + std::to_string(bytes) +
                             " bytes of batch memory on cuda:" + std::to_string(device_) + ": " +
                             cudaGetErrorString(e);
    if (e == cudaErrorMemoryAllocation) return ResourceExhaustedError(what);
    return UnimplementedError(what);
  }

  void Deallocate(void* p, size_t) override { STOKER_CUDA_DTOR_CALL(cudaFreeHost(p)); }

  const char* name() const override { return "cuda_pinned"; }

 private:
  const int device_;
};

}  // namespace

std::shared_ptr<BatchAllocator> PinnedHostAllocator(int device) {
  return std::make_shared<PinnedAllocator>(device);
}

}  // namespace stoker::cuda
