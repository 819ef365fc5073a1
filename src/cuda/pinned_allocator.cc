// Copyright 2026 The stoker Authors.
#include "cuda/pinned_allocator.h"

#include "cuda/memory.h"
#include "stoker/device_host.h"

namespace stoker {
namespace cuda {
namespace {

// The BatchAllocator interface hands out raw pointers: each allocation is a
// PinnedMemory released to the pool, and owned again (then freed) when the
// pool gives it back.
class PinnedAllocator : public BatchAllocator {
 public:
  explicit PinnedAllocator(int device) : device_(device) {}

  StatusOr<void*> Allocate(size_t bytes) override {
    STOKER_ASSIGN_OR_RETURN(PinnedMemory memory,
                            AllocatePinned(device_, bytes, cudaHostAllocPortable));
    return memory.release();
  }

  void Deallocate(void* p, size_t) override { PinnedMemory(p).reset(); }

  const char* name() const override { return "cuda_pinned"; }

 private:
  const int device_;
};

}  // namespace

std::shared_ptr<BatchAllocator> PinnedHostAllocator(int device) {
  return std::make_shared<PinnedAllocator>(device);
}

}  // namespace cuda

// stoker/device_host.h, in a CUDA build (device/no_cuda.cc otherwise).
StatusOr<std::shared_ptr<BatchAllocator>> PinnedBatchAllocator(int device) {
  return cuda::PinnedHostAllocator(device);
}

}  // namespace stoker
