// Copyright 2026 The stoker Authors.
//
// A BatchAllocator over page-locked host memory (cudaHostAlloc, portable to
// every context), so the copy stream can DMA batches without a staging copy.
// The Loader's BatchPool allocates a buffer once and recycles it; a buffer
// read by an in-flight copy carries a reuse fence (the copy's event), so
// allocation happens only up to the prefetch bound.
//
// Errors: Allocate returns Unimplemented when there is no usable device or
// driver, ResourceExhausted when page-locked memory runs out (CudaError,
// cuda/check.h: the message names the call, the bytes and the device).
// Ownership: each buffer is a PinnedMemory (cuda/memory.h) while the pool
// holds it. Thread-safety: thread-safe.
#ifndef STOKER_CUDA_PINNED_ALLOCATOR_H_
#define STOKER_CUDA_PINNED_ALLOCATOR_H_

#include <memory>

#include "stoker/batch.h"

namespace stoker::cuda {

std::shared_ptr<BatchAllocator> PinnedHostAllocator(int device);

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_PINNED_ALLOCATOR_H_
