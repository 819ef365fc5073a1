// Copyright 2026 The stoker Authors.
#include "cuda/event_pool.h"

#include "cuda/check.h"

namespace stoker::cuda {

EventPool::~EventPool() {
  for (cudaEvent_t e : idle_) STOKER_CUDA_DTOR_CALL(cudaEventDestroy(e));
}

StatusOr<cudaEvent_t> EventPool::Get() {
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      cudaEvent_t e = idle_.back();
      idle_.pop_back();
      return e;
    }
  }
  STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  cudaEvent_t e = nullptr;
  STOKER_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  MutexLock lock(&mu_);
  ++created_;
  return e;
}

void EventPool::Put(cudaEvent_t event) {
  MutexLock lock(&mu_);
  idle_.push_back(event);
}

int EventPool::created() const {
  MutexLock lock(&mu_);
  return created_;
}

}  // namespace stoker::cuda
