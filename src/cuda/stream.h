// Copyright 2026 The stoker Authors.
//
// CudaStream: one CUDA stream, owned alone (cuda/unique_handle.h). The
// destructor destroys it through STOKER_CUDA_DTOR_CALL, which stays quiet
// when the runtime is already unloading at process exit. Destroying a stream
// with work pending is allowed (CUDA frees it once the work is done); an
// owner whose memory that work uses synchronises first.
//
// Thread-safety: one owner; the stream itself may be used from any thread.
// Errors: Create returns CudaError's Status (cuda/check.h) naming the call:
// Unimplemented without a usable driver or device.
#ifndef STOKER_CUDA_STREAM_H_
#define STOKER_CUDA_STREAM_H_

#include <cuda_runtime_api.h>

#include "cuda/unique_handle.h"
#include "stoker/status.h"

namespace stoker::cuda {

struct StreamTraits {
  using Handle = cudaStream_t;
  static constexpr Handle kNull = nullptr;
  static void Destroy(Handle stream) noexcept;
};

class CudaStream : public UniqueHandle<StreamTraits> {
 public:
  CudaStream() = default;
  using UniqueHandle::UniqueHandle;  // explicit CudaStream(handle): takes ownership
  // A new stream on `device` (non-blocking with respect to the legacy default
  // stream unless `flags` say otherwise).
  static StatusOr<CudaStream> Create(int device, unsigned flags = cudaStreamNonBlocking);

  // Blocks until the stream's work is done.
  Status Synchronize() const;
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_STREAM_H_
