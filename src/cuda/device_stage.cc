// Copyright 2026 The stoker Authors.
//
// The CUDA DeviceStage (include/stoker/device.h; docs/gpu.md has the
// lifecycle). Per batch, on one non-blocking copy stream:
//
//   H2D images (pinned -> staging), H2D params ─ record `copied` ─▶ batch
//   buffer's reuse fence waits on it; wait for `alloc_stream`'s record (the
//   outputs may be memory the framework just recycled); H2D labels; [grey
//   sums]; the transform kernel into `out`; record `done` ─▶ Handoff: the
//   consumer's stream waits on `done`.
//
// One staging buffer suffices: everything that reads or writes it is
// ordered on the copy stream.
#include <cuda_runtime_api.h>

#include <array>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/event_pool.h"
#include "cuda/kernels.h"
#include "cuda/pinned_allocator.h"
#include "device/device_plan.h"
#include "stoker/device.h"

namespace stoker {
namespace {

// Pinned per-batch parameter slots: a slot is rewritten only after the copy
// that read it (its event) has completed, which blocks the host only when
// the GPU is kParamSlots batches behind.
constexpr int kParamSlots = 4;

class CudaDeviceStage : public DeviceStage {
 public:
  CudaDeviceStage(const DeviceOptions& options, const device::BatchGeometry& geometry)
      : options_(options),
        geometry_(geometry),
        allocator_(cuda::PinnedHostAllocator(options.device)),
        events_(std::make_shared<cuda::EventPool>(options.device)) {}

  ~CudaDeviceStage() override {
    if (stream_ != nullptr) {
      cudaSetDevice(options_.device);
      STOKER_CUDA_DTOR_CALL(cudaStreamSynchronize(stream_));
    }
    for (ParamSlot& s : slots_) {
      if (s.event != nullptr) STOKER_CUDA_DTOR_CALL(cudaEventDestroy(s.event));
      if (s.host != nullptr) STOKER_CUDA_DTOR_CALL(cudaFreeHost(s.host));
      if (s.labels != nullptr) STOKER_CUDA_DTOR_CALL(cudaFreeHost(s.labels));
    }
    if (staging_ != nullptr) STOKER_CUDA_DTOR_CALL(cudaFree(staging_));
    if (params_ != nullptr) STOKER_CUDA_DTOR_CALL(cudaFree(params_));
    if (grey_sums_ != nullptr) STOKER_CUDA_DTOR_CALL(cudaFree(grey_sums_));
    if (stream_ != nullptr) STOKER_CUDA_DTOR_CALL(cudaStreamDestroy(stream_));
  }

  Status Init() {
    const int b = options_.batch_size;
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    STOKER_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&staging_), in_sample_bytes() * b));
    STOKER_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&params_), sizeof(device::SampleParams) * b));
    if (options_.augment.contrast > 0) {
      STOKER_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&grey_sums_), sizeof(unsigned long long) * b));
    }
    for (ParamSlot& s : slots_) {
      STOKER_CUDA_RETURN_IF_ERROR(
          cudaHostAlloc(reinterpret_cast<void**>(&s.host), sizeof(device::SampleParams) * b,
                        cudaHostAllocDefault));
      STOKER_CUDA_RETURN_IF_ERROR(cudaHostAlloc(reinterpret_cast<void**>(&s.labels),
                                                sizeof(int64_t) * b, cudaHostAllocDefault));
      STOKER_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&s.event, cudaEventDisableTiming));
    }
    return Status::OK();
  }

  std::shared_ptr<BatchAllocator> host_allocator() const override { return allocator_; }

  std::array<int64_t, 4> output_dims(int n) const override {
    if (geometry_.nchw) return {n, 3, geometry_.out_height, geometry_.out_width};
    return {n, geometry_.out_height, geometry_.out_width, 3};
  }

  const DeviceOptions& options() const override { return options_; }
  uintptr_t copy_stream() const override { return reinterpret_cast<uintptr_t>(stream_); }

  StatusOr<DeviceTicket> Launch(const BatchPtr& batch, void* out, int64_t* labels_out,
                                uintptr_t alloc_stream) override {
    const BatchShape& shape = batch->shape();
    if (shape.dtype != DType::kUint8 || shape.layout != Layout::kNHWC ||
        shape.height != geometry_.in_height || shape.width != geometry_.in_width) {
      return InvalidArgumentError("the device stage expects uint8 NHWC batches of " +
                                  std::to_string(geometry_.in_height) + "x" +
                                  std::to_string(geometry_.in_width));
    }
    const int n = batch->size();
    if (n > options_.batch_size) return InvalidArgumentError("batch larger than the stage's batch_size");
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));

    ParamSlot& slot = slots_[next_slot_++ % kParamSlots];
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slot.event));
    for (int i = 0; i < n; ++i) {
      slot.host[i] = DrawSampleParams(options_.augment, geometry_, options_.seed, batch->epoch(),
                                      batch->ids()[i]);
      slot.labels[i] = batch->labels()[i];
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging_, batch->images(), in_sample_bytes() * n,
                                                cudaMemcpyHostToDevice, stream_));
    STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(params_, slot.host,
                                                sizeof(device::SampleParams) * n,
                                                cudaMemcpyHostToDevice, stream_));
    STOKER_ASSIGN_OR_RETURN(cudaEvent_t copied, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(copied, stream_));
    // The pinned buffer goes back to the Loader's pool when the consumer
    // drops the batch, but is handed out again only after this copy.
    batch->buffer()->SetReuseFence([events = events_, copied] {
      cudaSetDevice(events->device());
      STOKER_CUDA_DTOR_CALL(cudaEventSynchronize(copied));
      events->Put(copied);
    });

    STOKER_ASSIGN_OR_RETURN(cudaEvent_t allocated, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(allocated, reinterpret_cast<cudaStream_t>(alloc_stream)));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, allocated, 0));
    events_->Put(allocated);

    if (labels_out != nullptr) {
      STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(labels_out, slot.labels, sizeof(int64_t) * n,
                                                  cudaMemcpyHostToDevice, stream_));
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.event, stream_));
    if (grey_sums_ != nullptr) {
      STOKER_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(grey_sums_, 0, sizeof(unsigned long long) * n, stream_));
      STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchGreySums(staging_, n, geometry_.in_height,
                                                       geometry_.in_width, grey_sums_, stream_));
    }
    STOKER_CUDA_RETURN_IF_ERROR(
        cuda::LaunchTransformBatch(staging_, n, geometry_, params_, grey_sums_, out, stream_));
    STOKER_ASSIGN_OR_RETURN(cudaEvent_t done, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(done, stream_));
    return DeviceTicket{done};
  }

  Status Handoff(DeviceTicket ticket, uintptr_t consumer_stream) override {
    auto done = static_cast<cudaEvent_t>(ticket.done);
    if (done == nullptr) return InvalidArgumentError("Handoff of an empty ticket");
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    STOKER_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(consumer_stream), done, 0));
    events_->Put(done);
    return Status::OK();
  }

  void Release(DeviceTicket ticket) override {
    if (ticket.done != nullptr) events_->Put(static_cast<cudaEvent_t>(ticket.done));
  }

  Status Synchronize() override {
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::OK();
  }

 private:
  struct ParamSlot {
    device::SampleParams* host = nullptr;  // pinned
    int64_t* labels = nullptr;             // pinned
    cudaEvent_t event = nullptr;           // recorded after the copies that read the slot
  };

  size_t in_sample_bytes() const {
    return static_cast<size_t>(geometry_.in_height) * geometry_.in_width * 3;
  }

  const DeviceOptions options_;
  const device::BatchGeometry geometry_;
  const std::shared_ptr<BatchAllocator> allocator_;
  const std::shared_ptr<cuda::EventPool> events_;
  cudaStream_t stream_ = nullptr;
  uint8_t* staging_ = nullptr;
  device::SampleParams* params_ = nullptr;
  unsigned long long* grey_sums_ = nullptr;
  std::array<ParamSlot, kParamSlots> slots_{};
  uint64_t next_slot_ = 0;
};

}  // namespace

bool BuiltWithCuda() { return true; }

Status CheckCudaDevice(int index) {
  const std::string asked = "device='cuda:" + std::to_string(index) + "' requested but ";
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return UnimplementedError(asked + "no CUDA device is available (cudaGetDeviceCount: " +
                              cudaGetErrorString(e) + ")");
  }
  if (count == 0) return UnimplementedError(asked + "no CUDA device is available (0 devices)");
  if (index < 0 || index >= count) {
    return InvalidArgumentError(asked + "only " + std::to_string(count) +
                                " CUDA device(s) exist");
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<DeviceStage>> DeviceStage::Create(const DeviceOptions& options,
                                                           int height, int width) {
  if (options.batch_size < 1) return InvalidArgumentError("batch_size must be >= 1");
  STOKER_ASSIGN_OR_RETURN(device::BatchGeometry geometry, MakeBatchGeometry(options, height, width));
  STOKER_RETURN_IF_ERROR(CheckCudaDevice(options.device));
  auto stage = std::make_unique<CudaDeviceStage>(options, geometry);
  STOKER_RETURN_IF_ERROR(stage->Init());
  return std::unique_ptr<DeviceStage>(std::move(stage));
}

}  // namespace stoker
