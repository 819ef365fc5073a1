// Copyright 2026 The stoker Authors.
//
// The GPU stage's host side, usable on any machine:
//  - PinnedBatchAllocator: page-locked batch memory for
//    LoaderOptions::allocator (what DeviceStage::host_allocator() hands out),
//    for feeding a GPU without a DeviceStage;
//  - DeviceOutputSize / TransformOnHost: the device kernel's exact work run on
//    the host, the reference a GPU run is checked against.
//
// Ownership: the caller owns `images` and `out`. Thread-safety: all three are
// thread-safe (the allocator is, and the rest are pure functions).
// Errors: PinnedBatchAllocator returns Unimplemented without CUDA (build,
// driver or device; the message says which); the others return
// InvalidArgument for options the device stage refuses (uint8 output, a crop
// larger than the padded input, zero std, ...).
#ifndef STOKER_DEVICE_HOST_H_
#define STOKER_DEVICE_HOST_H_

#include <array>
#include <cstdint>
#include <memory>

#include "stoker/batch.h"
#include "stoker/device.h"
#include "stoker/status.h"

namespace stoker {

// Page-locked (cudaHostAlloc) batch memory on CUDA device `device`.
StatusOr<std::shared_ptr<BatchAllocator>> PinnedBatchAllocator(int device);

// The stage's output (height, width) for uint8 `height` x `width` input.
StatusOr<std::array<int, 2>> DeviceOutputSize(const DeviceOptions& options, int height,
                                              int width);

// The device kernel's work on the host: `n` uint8 NHWC samples of `height` x
// `width` in `images`, with dataset ids `ids[i]`, in `epoch` (the per-sample
// parameters come from options.seed as on the device) into `out`: n samples
// of DeviceOutputSize in options.layout and options.dtype.
Status TransformOnHost(const DeviceOptions& options, const uint8_t* images, int n, int height,
                       int width, const int64_t* ids, int64_t epoch, void* out);

}  // namespace stoker

#endif  // STOKER_DEVICE_HOST_H_
