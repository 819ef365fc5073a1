// Copyright 2026 The stoker Authors.
//
// Host side of the GPU stage, compiled with or without CUDA: checks the
// options and turns them into a BatchGeometry, draws each sample's
// augmentation parameters from its own random stream, and runs the device
// kernel's per-pixel code on the host (the reference the tests and the GPU
// tests compare against).
//
// Thread-safety: pure functions.
#ifndef STOKER_DEVICE_DEVICE_PLAN_H_
#define STOKER_DEVICE_DEVICE_PLAN_H_

#include <cstdint>

#include "device/pixel_math.h"
#include "stoker/device.h"
#include "stoker/status.h"

namespace stoker {

// InvalidArgument for unusable options (uint8 output, a crop larger than the
// padded input, zero std, ...). `height` x `width`: the uint8 input samples.
StatusOr<device::BatchGeometry> MakeBatchGeometry(const DeviceOptions& options, int height,
                                                  int width);

// Sample `id`'s parameters in `epoch`, from
// Rng(HashSeed(seed, epoch, id, kDeviceAugmentStream)). grey_mean is left 0:
// it depends on the pixels (GreyMeanOnHost, or the device's reduction).
device::SampleParams DrawSampleParams(const DeviceAugment& augment,
                                      const device::BatchGeometry& geometry, uint64_t seed,
                                      int64_t epoch, int64_t id);

// The mean grey level of one uint8 HWC image, exactly as the device computes it.
float GreyMeanOnHost(const uint8_t* image, int height, int width);

// The device kernel's work on the host: `n` uint8 NHWC samples in `in`,
// params[i] for sample i, into `out` (the output layout and type of
// `geometry`).
void TransformBatchOnHost(const uint8_t* in, int n, const device::BatchGeometry& geometry,
                          const device::SampleParams* params, void* out);

}  // namespace stoker

#endif  // STOKER_DEVICE_DEVICE_PLAN_H_
