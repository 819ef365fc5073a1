// Copyright 2026 The stoker Authors.
//
// CudaEvent: one CUDA event, owned alone (cuda/unique_handle.h; DALI's
// cuda_event.h is the model). The destructor destroys it through
// STOKER_CUDA_DTOR_CALL (quiet while the runtime unloads at exit). Events
// are reused through cuda/event_pool.h rather than created per batch.
//
// Thread-safety: one owner; the event itself may be recorded and waited on
// from any thread.
// Errors: Create returns CudaError's Status (cuda/check.h) naming the call:
// Unimplemented without a usable driver or device.
#ifndef STOKER_CUDA_EVENT_H_
#define STOKER_CUDA_EVENT_H_

#include <cuda_runtime_api.h>

#include "cuda/unique_handle.h"
#include "stoker/status.h"

namespace stoker::cuda {

struct EventTraits {
  using Handle = cudaEvent_t;
  static constexpr Handle kNull = nullptr;
  static void Destroy(Handle event) noexcept;
};

class CudaEvent : public UniqueHandle<EventTraits> {
 public:
  CudaEvent() = default;
  using UniqueHandle::UniqueHandle;  // explicit CudaEvent(handle): takes ownership
  // A new event on `device` (without timing unless `flags` say otherwise).
  static StatusOr<CudaEvent> Create(int device, unsigned flags = cudaEventDisableTiming);
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_EVENT_H_
