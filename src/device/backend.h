// Copyright 2026 The stoker Authors.
//
// The GPU backend's interface: what the host side of the GPU stage (src/
// device/: options, parameters, the DeviceLoader policy, the host stage)
// needs from CUDA, declared here and in the public headers, and defined by
// exactly one backend:
//  - src/cuda/ when STOKER_CUDA_ENABLED (device_stage.cc, pinned_allocator.cc,
//    device_memory.cc), or
//  - src/device/no_cuda.cc otherwise (every call reports that stoker was
//    built without CUDA).
//
// The layering (src/device/README.md, "GPU stage layering"): src/cuda/
// depends on src/device/ (the kernel's per-pixel code in pixel_math.h, the
// parameters in device_plan.h, this interface); src/device/ never includes a
// src/cuda/ header (scripts/check_layering.sh checks it), so the host side
// builds and is tested without the CUDA toolkit.
//
// Entry points of the backend:
//  - stoker/device.h: BuiltWithCuda, CheckCudaDevice, DeviceStage::Create;
//  - stoker/device_host.h: PinnedBatchAllocator;
//  - below: CudaAllocateAsync.
//
// Thread-safety: thread-safe functions.
#ifndef STOKER_DEVICE_BACKEND_H_
#define STOKER_DEVICE_BACKEND_H_

#include <cstddef>
#include <cstdint>

#include "stoker/device_loader.h"
#include "stoker/status.h"

namespace stoker::device {

// `bytes` of device memory from cudaMallocAsync on `stream` of CUDA device
// `device`; the owner frees it with cudaFreeAsync on the same stream.
// Errors: the CUDA call's Status (cuda/check.h); Unimplemented without CUDA.
StatusOr<DeviceAllocation> CudaAllocateAsync(int device, size_t bytes, uintptr_t stream);

}  // namespace stoker::device

#endif  // STOKER_DEVICE_BACKEND_H_
