// Copyright 2026 The stoker Authors.
//
// Kernel launchers of the GPU stage (src/cuda/kernels.cu). All are
// asynchronous on `stream` and return the launch error, if any.
//
// TransformBatch: one thread per output pixel, one kernel per batch; each
// thread runs device::TransformPixel (src/device/pixel_math.h), the code the
// host tests check. GreySums: the per-sample sum of GreyLevel that the
// contrast jitter needs (integer atomics, so the result is exact and does not
// depend on scheduling); `sums` must be zeroed first. CopyLabels: `n` int64
// labels from device staging into the framework's tensor, on the convert
// stream (an H2D copy there would queue behind the next batch's image copy on
// the copy engine and serialise the two streams again).
#ifndef STOKER_CUDA_KERNELS_H_
#define STOKER_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device/pixel_math.h"

namespace stoker::cuda {

cudaError_t LaunchGreySums(const uint8_t* in, int n, int height, int width,
                           unsigned long long* sums, cudaStream_t stream);

// `grey_sums` may be null when no sample uses the contrast jitter.
cudaError_t LaunchTransformBatch(const uint8_t* in, int n, const device::BatchGeometry& geometry,
                                 const device::SampleParams* params,
                                 const unsigned long long* grey_sums, void* out,
                                 cudaStream_t stream);

cudaError_t LaunchCopyLabels(const int64_t* in, int n, int64_t* out, cudaStream_t stream);

// `bytes` bytes from device memory `in` to `out` (a record field's staging
// block into its output), as a kernel on `stream`, like the labels: no copy
// engine work on the convert stream (docs/gpu.md, "Streams"). 16-byte words
// when both pointers and the size allow, else bytes.
cudaError_t LaunchCopyBytes(const void* in, size_t bytes, void* out, cudaStream_t stream);

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_KERNELS_H_
