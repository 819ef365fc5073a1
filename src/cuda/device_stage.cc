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
#include "cuda/memory.h"
#include "cuda/pinned_allocator.h"
#include "cuda/stream.h"
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

  // Waits for the copy stream; the members then free the memory its work
  // used, and the stream last (they are declared in that order).
  ~CudaDeviceStage() override {
    if (stream_) {
      cudaSetDevice(options_.device);
      STOKER_CUDA_DTOR_CALL(cudaStreamSynchronize(stream_.get()));
    }
  }

  Status Init() {
    using cuda::DeviceArray;
    using cuda::PinnedArray;
    const int device = options_.device;
    const size_t b = static_cast<size_t>(options_.batch_size);
    STOKER_ASSIGN_OR_RETURN(stream_, cuda::CudaStream::Create(device));
    STOKER_ASSIGN_OR_RETURN(staging_,
                            DeviceArray<uint8_t>::Allocate(device, in_sample_bytes() * b));
    STOKER_ASSIGN_OR_RETURN(params_, DeviceArray<device::SampleParams>::Allocate(device, b));
    if (options_.augment.contrast > 0) {
      STOKER_ASSIGN_OR_RETURN(grey_sums_, DeviceArray<unsigned long long>::Allocate(device, b));
    }
    for (ParamSlot& s : slots_) {
      STOKER_ASSIGN_OR_RETURN(s.host, PinnedArray<device::SampleParams>::Allocate(device, b));
      STOKER_ASSIGN_OR_RETURN(s.labels, PinnedArray<int64_t>::Allocate(device, b));
      STOKER_ASSIGN_OR_RETURN(s.event, cuda::CudaEvent::Create(device));
    }
    return Status::OK();
  }

  std::shared_ptr<BatchAllocator> host_allocator() const override { return allocator_; }

  std::array<int64_t, 4> output_dims(int n) const override {
    if (geometry_.nchw) return {n, 3, geometry_.out_height, geometry_.out_width};
    return {n, geometry_.out_height, geometry_.out_width, 3};
  }

  const DeviceOptions& options() const override { return options_; }
  uintptr_t copy_stream() const override { return reinterpret_cast<uintptr_t>(stream_.get()); }

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
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slot.event.get()));
    for (int i = 0; i < n; ++i) {
      slot.host[i] = DrawSampleParams(options_.augment, geometry_, options_.seed, batch->epoch(),
                                      batch->ids()[i]);
      slot.labels[i] = batch->labels()[i];
    }
    const cudaStream_t stream = stream_.get();
    STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging_.get(), batch->images(),
                                                in_sample_bytes() * n, cudaMemcpyHostToDevice,
                                                stream));
    STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(params_.get(), slot.host.get(),
                                                sizeof(device::SampleParams) * n,
                                                cudaMemcpyHostToDevice, stream));
    STOKER_ASSIGN_OR_RETURN(cuda::CudaEvent copied, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(copied.get(), stream));
    // The pinned buffer goes back to the Loader's pool when the consumer
    // drops the batch, but is handed out again only after this copy. The
    // fence owns the event (a std::function must be copyable: shared); a
    // buffer freed without being reused destroys it.
    batch->buffer()->SetReuseFence(
        [events = events_, copied = std::make_shared<cuda::CudaEvent>(std::move(copied))] {
          cudaSetDevice(events->device());
          STOKER_CUDA_DTOR_CALL(cudaEventSynchronize(copied->get()));
          events->Put(std::move(*copied));
        });

    STOKER_ASSIGN_OR_RETURN(cuda::CudaEvent allocated, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(
        cudaEventRecord(allocated.get(), reinterpret_cast<cudaStream_t>(alloc_stream)));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, allocated.get(), 0));
    events_->Put(std::move(allocated));

    if (labels_out != nullptr) {
      STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(labels_out, slot.labels.get(),
                                                  sizeof(int64_t) * n, cudaMemcpyHostToDevice,
                                                  stream));
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.event.get(), stream));
    if (grey_sums_) {
      STOKER_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(grey_sums_.get(), 0, sizeof(unsigned long long) * n, stream));
      STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchGreySums(staging_.get(), n, geometry_.in_height,
                                                       geometry_.in_width, grey_sums_.get(),
                                                       stream));
    }
    STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchTransformBatch(
        staging_.get(), n, geometry_, params_.get(), grey_sums_.get(), out, stream));
    STOKER_ASSIGN_OR_RETURN(cuda::CudaEvent done, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(done.get(), stream));
    // The ticket carries the handle; Handoff or Release gives it back to the pool.
    return DeviceTicket{done.release()};
  }

  Status Handoff(DeviceTicket ticket, uintptr_t consumer_stream) override {
    auto done = static_cast<cudaEvent_t>(ticket.done);
    if (done == nullptr) return InvalidArgumentError("Handoff of an empty ticket");
    cuda::CudaEvent owned(done);  // the ticket is spent, whatever happens
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    STOKER_CUDA_RETURN_IF_ERROR(
        cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(consumer_stream), done, 0));
    events_->Put(std::move(owned));
    return Status::OK();
  }

  void Release(DeviceTicket ticket) override {
    events_->Put(cuda::CudaEvent(static_cast<cudaEvent_t>(ticket.done)));
  }

  Status Synchronize() override {
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
    return stream_.Synchronize();
  }

 private:
  struct ParamSlot {
    cuda::PinnedArray<device::SampleParams> host;
    cuda::PinnedArray<int64_t> labels;
    cuda::CudaEvent event;  // recorded after the copies that read the slot
  };

  size_t in_sample_bytes() const {
    return static_cast<size_t>(geometry_.in_height) * geometry_.in_width * 3;
  }

  const DeviceOptions options_;
  const device::BatchGeometry geometry_;
  const std::shared_ptr<BatchAllocator> allocator_;
  const std::shared_ptr<cuda::EventPool> events_;
  // Destroyed in reverse order: the slots and device arrays, then the stream.
  cuda::CudaStream stream_;
  cuda::DeviceArray<uint8_t> staging_;
  cuda::DeviceArray<device::SampleParams> params_;
  cuda::DeviceArray<unsigned long long> grey_sums_;  // only with the contrast jitter
  std::array<ParamSlot, kParamSlots> slots_;
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
