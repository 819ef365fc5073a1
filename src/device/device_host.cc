// Copyright 2026 The stoker Authors.
//
// include/stoker/device_host.h over device_plan (host maths) and, in CUDA
// builds, the pinned allocator.
#include "stoker/device_host.h"

#include <vector>

#include "device/device_plan.h"
#ifdef STOKER_WITH_CUDA
#include "cuda/pinned_allocator.h"
#endif

namespace stoker {

StatusOr<std::shared_ptr<BatchAllocator>> PinnedBatchAllocator(int device) {
#ifdef STOKER_WITH_CUDA
  return cuda::PinnedHostAllocator(device);
#else
  STOKER_RETURN_IF_ERROR(CheckCudaDevice(device));
  return UnimplementedError("stoker was built without CUDA");
#endif
}

StatusOr<std::array<int, 2>> DeviceOutputSize(const DeviceOptions& options, int height,
                                              int width) {
  STOKER_ASSIGN_OR_RETURN(device::BatchGeometry g, MakeBatchGeometry(options, height, width));
  return std::array<int, 2>{g.out_height, g.out_width};
}

Status TransformOnHost(const DeviceOptions& options, const uint8_t* images, int n, int height,
                       int width, const int64_t* ids, int64_t epoch, void* out) {
  STOKER_ASSIGN_OR_RETURN(device::BatchGeometry g, MakeBatchGeometry(options, height, width));
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
