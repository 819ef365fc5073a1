// Copyright 2026 The stoker Authors.
//
// The host stage (device/host_stage.h): DeviceStage's contract on one host
// thread. Launch queues the batch's conversion (TransformOnHost: the same
// per-pixel code as the kernel, and a record's fixed field blocks copied to
// their outputs) and fences the batch buffer on it; Handoff and Synchronize
// wait for it.
#include "device/host_stage.h"

#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "device/device_plan.h"
#include "stoker/device_host.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker::device {
namespace {

// Jobs run in push order on one thread. Job k is "done" when it and every
// job before it ran. Not deferred: jobs run as soon as they are queued.
// Deferred: only up to the highest job someone waited for.
class HostQueue {
 public:
  explicit HostQueue(bool deferred) : deferred_(deferred), worker_([this] { Run(); }) {}

  ~HostQueue() {
    {
      MutexLock lock(&mu_);
      quit_ = true;
      demand_ = pushed_;
    }
    cv_.SignalAll();
    worker_.join();
  }

  uint64_t Push(std::function<Status()> job) {
    MutexLock lock(&mu_);
    jobs_.push_back(std::move(job));
    const uint64_t seq = ++pushed_;
    if (!deferred_) demand_ = seq;
    cv_.SignalAll();
    return seq;
  }

  // Blocks until job `seq` (and those before it) ran; the first error of
  // any job so far.
  Status Wait(uint64_t seq) {
    MutexLock lock(&mu_);
    if (seq > pushed_) return InvalidArgumentError("Handoff of an unknown ticket");
    if (demand_ < seq) {
      demand_ = seq;
      cv_.SignalAll();
    }
    while (done_ < seq) cv_.Wait(&mu_);
    return error_;
  }

  Status WaitAll() {
    uint64_t seq;
    {
      MutexLock lock(&mu_);
      seq = pushed_;
    }
    return Wait(seq);
  }

  int64_t in_flight() const {
    MutexLock lock(&mu_);
    return static_cast<int64_t>(pushed_ - done_);
  }

 private:
  void Run() {
    MutexLock lock(&mu_);
    for (;;) {
      while (!(done_ < demand_) && !(quit_ && jobs_.empty())) cv_.Wait(&mu_);
      if (jobs_.empty()) return;  // quitting, everything ran
      std::function<Status()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.Unlock();
      Status s = job();
      job = nullptr;
      lock.Lock();
      if (!s.ok() && error_.ok()) error_ = std::move(s);
      ++done_;
      cv_.SignalAll();
    }
  }

  const bool deferred_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<Status()>> jobs_ STOKER_GUARDED_BY(mu_);
  uint64_t pushed_ STOKER_GUARDED_BY(mu_) = 0;
  uint64_t done_ STOKER_GUARDED_BY(mu_) = 0;
  uint64_t demand_ STOKER_GUARDED_BY(mu_) = 0;
  bool quit_ STOKER_GUARDED_BY(mu_) = false;
  Status error_ STOKER_GUARDED_BY(mu_);
  std::thread worker_;  // last: starts once the rest is constructed
};

class HostStage : public DeviceStage {
 public:
  HostStage(const DeviceOptions& options, const BatchGeometry& geometry, bool deferred)
      : options_(options),
        geometry_(geometry),
        allocator_(HostAllocator()),
        queue_(std::make_shared<HostQueue>(deferred)) {}

  // Batch buffers' fences keep the queue; its work is finished here.
  ~HostStage() override { queue_->WaitAll().IgnoreError(); }

  std::shared_ptr<BatchAllocator> host_allocator() const override { return allocator_; }

  std::array<int64_t, 4> output_dims(int n) const override {
    if (!options_.image) return {n, 0, 0, 0};
    if (geometry_.nchw) return {n, 3, geometry_.out_height, geometry_.out_width};
    return {n, geometry_.out_height, geometry_.out_width, 3};
  }

  const DeviceOptions& options() const override { return options_; }
  uintptr_t copy_stream() const override { return 0; }

  using DeviceStage::Launch;
  StatusOr<DeviceTicket> Launch(const BatchPtr& batch, void* out, int64_t* labels_out, uintptr_t,
                                const std::vector<DeviceFieldCopy>& fields) override {
    const BatchShape& shape = batch->shape();
    if (!options_.image) {
      if (shape.image) {
        return InvalidArgumentError("the device stage was made for batches without an image");
      }
    } else if (!shape.image || shape.dtype != DType::kUint8 || shape.layout != Layout::kNHWC ||
               shape.height != geometry_.in_height || shape.width != geometry_.in_width) {
      return InvalidArgumentError("the device stage expects uint8 NHWC batches of " +
                                  std::to_string(geometry_.in_height) + "x" +
                                  std::to_string(geometry_.in_width));
    }
    const int n = batch->size();
    if (n > options_.batch_size) {
      return InvalidArgumentError("batch larger than the stage's batch_size");
    }
    if (out == nullptr && options_.image) return InvalidArgumentError("Launch into a null output");
    for (const DeviceFieldCopy& f : fields) {
      if (f.bytes > 0 && (f.host == nullptr || f.out == nullptr)) {
        return InvalidArgumentError("Launch of a record field with a null host block or output");
      }
    }
    // Labels and ids are copied now (as the CUDA stage stages them); the
    // pixels are read by the job, and the buffer's fence waits for it.
    std::vector<int64_t> ids(batch->ids(), batch->ids() + n);
    std::vector<int64_t> labels(batch->labels(), batch->labels() + n);
    const uint8_t* images = batch->images();
    const int height = geometry_.in_height, width = geometry_.in_width;
    const uint64_t seq = queue_->Push(
        [options = options_, images, n, height, width, ids = std::move(ids),
         labels = std::move(labels), epoch = batch->epoch(), out, labels_out,
         fields]() -> Status {
          if (labels_out != nullptr && n > 0) {
            std::memcpy(labels_out, labels.data(), sizeof(int64_t) * n);
          }
          // Records: the fixed blocks, read from the batch buffer like the
          // pixels (its fence waits for this job).
          for (const DeviceFieldCopy& f : fields) {
            if (f.bytes > 0) std::memcpy(f.out, f.host, f.bytes);
          }
          return TransformOnHost(options, images, n, height, width, ids.data(), epoch, out);
        });
    batch->buffer()->SetReuseFence([queue = queue_, seq] { queue->Wait(seq).IgnoreError(); });
    return DeviceTicket{reinterpret_cast<void*>(static_cast<uintptr_t>(seq))};
  }

  Status Handoff(DeviceTicket ticket, uintptr_t) override {
    if (ticket.done == nullptr) return InvalidArgumentError("Handoff of an empty ticket");
    return queue_->Wait(reinterpret_cast<uintptr_t>(ticket.done));
  }

  void Release(DeviceTicket) override {}

  Status Synchronize() override { return queue_->WaitAll(); }

  int64_t in_flight() const { return queue_->in_flight(); }

 private:
  const DeviceOptions options_;
  const BatchGeometry geometry_;
  const std::shared_ptr<BatchAllocator> allocator_;
  const std::shared_ptr<HostQueue> queue_;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceStage>> CreateHostStage(const DeviceOptions& options, int height,
                                                       int width, const HostStageOptions& host) {
  if (options.batch_size < 1) return InvalidArgumentError("batch_size must be >= 1");
  STOKER_ASSIGN_OR_RETURN(BatchGeometry geometry, MakeBatchGeometry(options, height, width));
  return std::unique_ptr<DeviceStage>(
      std::make_unique<HostStage>(options, geometry, host.deferred));
}

int64_t HostStageInFlight(const DeviceStage& stage) {
  const auto* host = dynamic_cast<const HostStage*>(&stage);
  return host != nullptr ? host->in_flight() : 0;
}

}  // namespace stoker::device
