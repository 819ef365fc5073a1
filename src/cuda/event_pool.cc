// Copyright 2026 The stoker Authors.
#include "cuda/event_pool.h"

namespace stoker::cuda {

StatusOr<CudaEvent> EventPool::Get() {
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      CudaEvent e = std::move(idle_.back());
      idle_.pop_back();
      return e;
    }
  }
  STOKER_ASSIGN_OR_RETURN(CudaEvent e, CudaEvent::Create(device_));
  MutexLock lock(&mu_);
  ++created_;
  return e;
}

void EventPool::Put(CudaEvent event) {
  if (!event) return;
  MutexLock lock(&mu_);
  idle_.push_back(std::move(event));
}

int EventPool::created() const {
  MutexLock lock(&mu_);
  return created_;
}

}  // namespace stoker::cuda
