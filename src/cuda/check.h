// Copyright 2026 The stoker Authors.
//
// Checking CUDA runtime calls. Every call goes through one macro that names
// the call and CUDA's error, and returns it as a Status (CudaError: Internal,
// or ResourceExhausted / Unimplemented for out-of-memory / no device).
// STOKER_CUDA_DTOR_CALL is for destructors and deleters: it cannot return,
// so it reports to stderr, and stays quiet when the runtime is already
// unloading at process exit.
#ifndef STOKER_CUDA_CHECK_H_
#define STOKER_CUDA_CHECK_H_

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "stoker/status.h"

namespace stoker::cuda {

// `call` failed with `e`: ResourceExhausted when memory ran out, Unimplemented
// when there is no usable driver or device (as CheckCudaDevice reports it),
// else Internal. The message names the call and CUDA's error.
inline Status CudaError(const std::string& call, cudaError_t e) {
  const std::string what = call + " failed: " + cudaGetErrorName(e) + " (" +
                           cudaGetErrorString(e) + ")";
  switch (e) {
    case cudaErrorMemoryAllocation:
      return ResourceExhaustedError(what);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
      return UnimplementedError(what);
    default:
      return InternalError(what);
  }
}

inline void ReportInDestructor(const char* call, cudaError_t e) {
  if (e == cudaSuccess || e == cudaErrorCudartUnloading) return;
  std::fprintf(stderr, "stoker: %s failed in a destructor: %s\n", call, cudaGetErrorString(e));
}

}  // namespace stoker::cuda

#define STOKER_CUDA_RETURN_IF_ERROR(call)                                  \
  do {                                                                     \
    const cudaError_t stoker_cuda_e_ = (call);                             \
    if (stoker_cuda_e_ != cudaSuccess) {                                   \
      return ::stoker::cuda::CudaError(#call, stoker_cuda_e_);             \
    }                                                                      \
  } while (0)

#define STOKER_CUDA_DTOR_CALL(call) ::stoker::cuda::ReportInDestructor(#call, (call))

#endif  // STOKER_CUDA_CHECK_H_
