// Copyright 2026 The stoker Authors.
//
// include/stoker/device_host.h over device_plan (host maths). Its
// PinnedBatchAllocator belongs to the backend (device/backend.h): defined in
// cuda/pinned_allocator.cc, or device/no_cuda.cc without CUDA.
#include "stoker/device_host.h"

#include <vector>

#include "device/device_plan.h"

namespace stoker {

StatusOr<std::array<int, 2>> DeviceOutputSize(const DeviceOptions& options, int height,
                                              int width) {
  STOKER_ASSIGN_OR_RETURN(device::BatchGeometry g, MakeBatchGeometry(options, height, width));
  return std::array<int, 2>{g.out_height, g.out_width};
}

Status TransformOnHost(const DeviceOptions& options, const uint8_t* images, int n, int height,
                       int width, const int64_t* ids, int64_t epoch, void* out) {
  STOKER_ASSIGN_OR_RETURN(device::BatchGeometry g, MakeBatchGeometry(options, height, width));
  if (!options.image) return Status::OK();  // a record without an image: nothing to convert
  std::vector<device::SampleParams> params(n);
  const size_t sample_bytes = static_cast<size_t>(height) * width * 3;
  for (int i = 0; i < n; ++i) {
    params[i] = DrawSampleParams(options.augment, g, options.seed, epoch, ids[i]);
    params[i].grey_mean = GreyMeanOnHost(images + i * sample_bytes, height, width);
  }
  TransformBatchOnHost(images, n, g, params.data(), out);
  return Status::OK();
}

}  // namespace stoker
