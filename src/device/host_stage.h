// Copyright 2026 The stoker Authors.
//
// The DeviceLoader's internals shared by its implementation and its tests:
//  - the host stage: a DeviceStage whose "copy stream" is one host thread
//    running each batch's conversion (TransformOnHost, the kernel's maths)
//    in launch order. A hand-off waits for the batch; a batch buffer's reuse
//    fence waits for the conversion that reads it. In `deferred` mode (tests)
//    the thread runs a conversion only when something waits for it (or a
//    later one), so a batch nobody waited for is still unwritten: a GPU that
//    lags arbitrarily far behind, made deterministic.
//  - the factory hook that lets tests give a DeviceLoader such a stage.
//
// Thread-safety: the host stage follows DeviceStage (one consumer thread);
// its fences and its counters may be used from any thread.
#ifndef STOKER_DEVICE_HOST_STAGE_H_
#define STOKER_DEVICE_HOST_STAGE_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "stoker/device.h"
#include "stoker/device_loader.h"
#include "stoker/status.h"

namespace stoker::device {

struct HostStageOptions {
  bool deferred = false;
};

StatusOr<std::unique_ptr<DeviceStage>> CreateHostStage(const DeviceOptions& options, int height,
                                                       int width,
                                                       const HostStageOptions& host = {});

// Conversions launched on a host stage and not yet run (0 for other stages).
int64_t HostStageInFlight(const DeviceStage& stage);

// Makes the stage for a DeviceLoader once the host Loader's sample size is
// known.
using StageFactory = std::function<StatusOr<std::unique_ptr<DeviceStage>>(
    const DeviceOptions& options, int height, int width)>;

// DeviceLoader::Create with the stage from `factory` (tests: a deferred host
// stage); `device.device` still decides the host allocator and the default
// output allocator.
StatusOr<std::unique_ptr<DeviceLoader>> CreateDeviceLoader(std::shared_ptr<Source> source,
                                                           const LoaderOptions& options,
                                                           const DeviceLoaderOptions& device,
                                                           const StageFactory& factory);

}  // namespace stoker::device

#endif  // STOKER_DEVICE_HOST_STAGE_H_
