// Copyright 2026 The stoker Authors.
//
// The CUDA DeviceStage (include/stoker/device.h; docs/gpu.md has the
// lifecycle). Two non-blocking streams and two staging buffers, so that the
// H2D copy of batch k+1 runs while batch k's conversion kernel runs (on an
// H200, one 256-image batch: copy ~0.70 ms, kernel ~0.14 ms; on one stream
// the kernel's time was added to every copy). Per batch, with staging s = k % 2:
//
//   copy stream:    wait `free[s]` (the kernel that last read staging s is
//                   done); H2D images (pinned -> staging s), H2D params and
//                   labels, H2D each record field's fixed block (pinned
//                   pool block -> staging s) ─ record `copied` ─▶ the batch buffer's reuse
//                   fence; record `ready[s]`.
//   convert stream: wait `ready[s]`; wait for `alloc_stream`'s record (the
//                   outputs may be memory the framework just recycled); the
//                   labels kernel into `labels_out`; the record fields'
//                   staging -> output copies; [grey sums]; the
//                   transform kernel into `out`; record `free[s]` and `done`
//                   ─▶ Handoff: the consumer's stream waits on `done`.
//
// Every H2D copy is on the copy stream: copies from two streams share the copy
// engine in issue order, so an H2D on the convert stream would wait for the
// next batch's image copy (seen on the first H200 run). Everything that reads
// or writes staging s is ordered by `ready[s]` and `free[s]`; the grey sums are
// used on the convert stream only.
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

  // Waits for both streams; the members then free the memory their work
  // used, and the streams last (they are declared in that order).
  ~CudaDeviceStage() override {
    for (const cuda::CudaStream* s : {&stream_, &convert_stream_}) {
      if (!*s) continue;
      cudaSetDevice(options_.device);
      STOKER_CUDA_DTOR_CALL(cudaStreamSynchronize(s->get()));
    }
  }

  Status Init() {
    using cuda::DeviceArray;
    using cuda::PinnedArray;
    const int device = options_.device;
    const size_t b = static_cast<size_t>(options_.batch_size);
    STOKER_ASSIGN_OR_RETURN(stream_, cuda::CudaStream::Create(device));
    STOKER_ASSIGN_OR_RETURN(convert_stream_, cuda::CudaStream::Create(device));
    for (Staging& st : staging_) {
      if (options_.image) {
        STOKER_ASSIGN_OR_RETURN(st.images,
                                DeviceArray<uint8_t>::Allocate(device, in_sample_bytes() * b));
      }
      STOKER_ASSIGN_OR_RETURN(st.params, DeviceArray<device::SampleParams>::Allocate(device, b));
      STOKER_ASSIGN_OR_RETURN(st.labels, DeviceArray<int64_t>::Allocate(device, b));
      STOKER_ASSIGN_OR_RETURN(st.ready, cuda::CudaEvent::Create(device));
      STOKER_ASSIGN_OR_RETURN(st.free, cuda::CudaEvent::Create(device));
    }
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
    if (!options_.image) return {n, 0, 0, 0};
    if (geometry_.nchw) return {n, 3, geometry_.out_height, geometry_.out_width};
    return {n, geometry_.out_height, geometry_.out_width, 3};
  }

  const DeviceOptions& options() const override { return options_; }
  uintptr_t copy_stream() const override { return reinterpret_cast<uintptr_t>(stream_.get()); }

  using DeviceStage::Launch;
  StatusOr<DeviceTicket> Launch(const BatchPtr& batch, void* out, int64_t* labels_out,
                                uintptr_t alloc_stream,
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
    if (n > options_.batch_size) return InvalidArgumentError("batch larger than the stage's batch_size");
    for (const DeviceFieldCopy& f : fields) {
      if (f.bytes > 0 && (f.host == nullptr || f.out == nullptr)) {
        return InvalidArgumentError("Launch of a record field with a null host block or output");
      }
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));

    ParamSlot& slot = slots_[next_slot_++ % kParamSlots];
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slot.event.get()));
    for (int i = 0; i < n; ++i) {
      if (options_.image) {
        slot.host[i] = DrawSampleParams(options_.augment, geometry_, options_.seed,
                                        batch->epoch(), batch->ids()[i]);
      }
      slot.labels[i] = batch->labels()[i];
    }
    Staging& st = staging_[next_staging_++ % staging_.size()];
    const cudaStream_t stream = stream_.get();
    const cudaStream_t convert = convert_stream_.get();
    STOKER_RETURN_IF_ERROR(ReserveFieldStaging(&st, fields));
    // An event never recorded counts as complete: the first two batches do not wait.
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, st.free.get(), 0));
    if (options_.image) {  // (a record without an image: labels and fields only)
      STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.images.get(), batch->images(),
                                                  in_sample_bytes() * n, cudaMemcpyHostToDevice,
                                                  stream));
      STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.params.get(), slot.host.get(),
                                                  sizeof(device::SampleParams) * n,
                                                  cudaMemcpyHostToDevice, stream));
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.labels.get(), slot.labels.get(),
                                                sizeof(int64_t) * n, cudaMemcpyHostToDevice,
                                                stream));
    // Records: every fixed block, before `copied` (the buffer's reuse fence).
    for (size_t j = 0; j < fields.size(); ++j) {
      if (fields[j].bytes == 0) continue;
      STOKER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(st.fields[j].get(), fields[j].host,
                                                  fields[j].bytes, cudaMemcpyHostToDevice,
                                                  stream));
    }
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
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(st.ready.get(), stream));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(convert, st.ready.get(), 0));

    STOKER_ASSIGN_OR_RETURN(cuda::CudaEvent allocated, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(
        cudaEventRecord(allocated.get(), reinterpret_cast<cudaStream_t>(alloc_stream)));
    STOKER_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(convert, allocated.get(), 0));
    events_->Put(std::move(allocated));

    // After `ready`: the params and labels copies, the slot's only readers.
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.event.get(), stream));
    if (labels_out != nullptr) {
      STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchCopyLabels(st.labels.get(), n, labels_out, convert));
    }
    for (size_t j = 0; j < fields.size(); ++j) {
      STOKER_CUDA_RETURN_IF_ERROR(
          cuda::LaunchCopyBytes(st.fields[j].get(), fields[j].bytes, fields[j].out, convert));
    }
    if (grey_sums_) {
      STOKER_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(grey_sums_.get(), 0, sizeof(unsigned long long) * n, convert));
      STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchGreySums(st.images.get(), n, geometry_.in_height,
                                                       geometry_.in_width, grey_sums_.get(),
                                                       convert));
    }
    if (options_.image) {
      STOKER_CUDA_RETURN_IF_ERROR(cuda::LaunchTransformBatch(
          st.images.get(), n, geometry_, st.params.get(), grey_sums_.get(), out, convert));
    }
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(st.free.get(), convert));
    STOKER_ASSIGN_OR_RETURN(cuda::CudaEvent done, events_->Get());
    STOKER_CUDA_RETURN_IF_ERROR(cudaEventRecord(done.get(), convert));
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
    STOKER_RETURN_IF_ERROR(stream_.Synchronize());
    return convert_stream_.Synchronize();
  }

 private:
  struct ParamSlot {
    cuda::PinnedArray<device::SampleParams> host;
    cuda::PinnedArray<int64_t> labels;
    cuda::CudaEvent event;  // recorded after the copies that read the slot (copy stream)
  };

  size_t in_sample_bytes() const {
    return static_cast<size_t>(geometry_.in_height) * geometry_.in_width * 3;
  }

  const DeviceOptions options_;
  const device::BatchGeometry geometry_;
  const std::shared_ptr<BatchAllocator> allocator_;
  const std::shared_ptr<cuda::EventPool> events_;
  // The staging buffer of one batch in flight, and its events.
  struct Staging {
    cuda::DeviceArray<uint8_t> images;
    cuda::DeviceArray<device::SampleParams> params;
    cuda::DeviceArray<int64_t> labels;
    // Records: one block per DeviceFieldCopy of Launch, grown on demand.
    std::vector<cuda::DeviceArray<uint8_t>> fields;
    cuda::CudaEvent ready;  // copy stream: the H2D copies into this buffer are done
    cuda::CudaEvent free;   // convert stream: the kernel that read this buffer is done
  };

  // Makes staging `st` hold a block of at least fields[j].bytes for each j.
  // A block that grows is replaced only after the kernel that last read it
  // (`free`) is done; the copy stream's writes to it came before that kernel.
  Status ReserveFieldStaging(Staging* st, const std::vector<DeviceFieldCopy>& fields) {
    if (st->fields.size() < fields.size()) st->fields.resize(fields.size());
    bool waited = false;
    for (size_t j = 0; j < fields.size(); ++j) {
      if (st->fields[j].size() >= fields[j].bytes) continue;
      if (!waited) {
        STOKER_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(st->free.get()));
        waited = true;
      }
      st->fields[j] = cuda::DeviceArray<uint8_t>();  // the old block goes first
      STOKER_ASSIGN_OR_RETURN(st->fields[j],
                              cuda::DeviceArray<uint8_t>::Allocate(options_.device,
                                                                   fields[j].bytes));
    }
    return Status::OK();
  }

  // Destroyed in reverse order: the slots and device arrays, then the streams.
  cuda::CudaStream stream_;          // the H2D copies
  cuda::CudaStream convert_stream_;  // the labels, the grey sums, the conversion kernel
  std::array<Staging, 2> staging_;
  cuda::DeviceArray<unsigned long long> grey_sums_;  // only with the contrast jitter
  std::array<ParamSlot, kParamSlots> slots_;
  uint64_t next_slot_ = 0;
  uint64_t next_staging_ = 0;
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
