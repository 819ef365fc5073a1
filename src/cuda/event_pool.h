// Copyright 2026 The stoker Authors.
//
// A pool of CUDA events (created without timing, on one device), reused so
// the steady state creates none. Get() hands out an idle event or creates
// one; Put() returns it. An event may be Put back as soon as every
// cudaStreamWaitEvent / cudaEventSynchronize that needs its last record has
// been issued: later records do not affect waits already enqueued.
//
// Ownership: the pool owns idle events and destroys them with itself; an
// event handed out belongs to the caller until Put. Batch buffers' reuse
// fences hold the pool by shared_ptr. Thread-safety: thread-safe.
#ifndef STOKER_CUDA_EVENT_POOL_H_
#define STOKER_CUDA_EVENT_POOL_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker::cuda {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  StatusOr<cudaEvent_t> Get();
  void Put(cudaEvent_t event);

  int device() const { return device_; }
  int created() const;  // events created so far

 private:
  const int device_;
  mutable Mutex mu_;
  std::vector<cudaEvent_t> idle_ STOKER_GUARDED_BY(mu_);
  int created_ STOKER_GUARDED_BY(mu_) = 0;
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_EVENT_POOL_H_
