// Copyright 2026 The stoker Authors.
//
// A pool of CUDA events (created without timing, on one device), reused so
// the steady state creates none. Get() hands out an idle event or creates
// one; Put() returns it. An event may be Put back as soon as every
// cudaStreamWaitEvent / cudaEventSynchronize that needs its last record has
// been issued: later records do not affect waits already enqueued.
//
// Ownership: events are CudaEvents (cuda/event.h): the pool owns the idle
// ones and destroys them with itself; one handed out belongs to the caller,
// who gives it back with Put or lets it be destroyed. Batch buffers' reuse
// fences hold the pool by shared_ptr. Thread-safety: thread-safe.
// Errors: Get returns CudaEvent::Create's Status (Unimplemented without a
// usable driver or device).
#ifndef STOKER_CUDA_EVENT_POOL_H_
#define STOKER_CUDA_EVENT_POOL_H_

#include <memory>
#include <vector>

#include "cuda/event.h"
#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker::cuda {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  StatusOr<CudaEvent> Get();
  void Put(CudaEvent event);

  int device() const { return device_; }
  int created() const;  // events created so far

 private:
  const int device_;
  mutable Mutex mu_;
  std::vector<CudaEvent> idle_ STOKER_GUARDED_BY(mu_);
  int created_ STOKER_GUARDED_BY(mu_) = 0;
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_EVENT_POOL_H_
