// Copyright 2026 The stoker Authors.
//
// DeviceLoader (include/stoker/device_loader.h): the feeding policy over a
// host Loader and a DeviceStage, the same with the CUDA stage and the host
// stage (device/host_stage.h).
//
// Per Next(stream): the batch due is the one launched ahead by the previous
// call (or, at the start, one launched now); the following batch is taken
// from the Loader, given output memory from the allocator on `stream` and
// launched; then the due batch is handed off to `stream`. A batch launched
// ahead is always synchronised before its memory (output, and through the
// buffer's fence, the pinned input) can be released.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/backend.h"
#include "device/host_stage.h"
#include "stoker/device.h"
#include "stoker/device_host.h"
#include "stoker/device_loader.h"
#include "stoker/trace.h"
#include "stoker/transform_schema.h"
#include "trace/nvtx.h"

namespace stoker {
namespace {

// A launched batch: its ticket, its output, and the Loader's state before it
// was taken (the consumer's position while the batch is only launched).
struct Launched {
  DeviceTicket ticket;
  DeviceBatch batch;
  LoaderState before;
};

class DeviceLoaderImpl : public DeviceLoader {
 public:
  DeviceLoaderImpl(std::unique_ptr<DeviceStage> stage, std::unique_ptr<Loader> loader,
                   DeviceAllocator allocate, int device)
      : stage_(std::move(stage)),
        loader_(std::move(loader)),
        allocate_(std::move(allocate)),
        device_(device) {}

  ~DeviceLoaderImpl() override {
    loader_->Stop();
    DropPending().IgnoreError();
  }

  Status Start() override {
    Status dropped = DropPending();
    sticky_ = Status::OK();
    end_ = false;
    STOKER_RETURN_IF_ERROR(dropped);
    return loader_->Start();
  }

  Status Next(DeviceBatch* batch, bool* end, uintptr_t stream,
              const std::function<Status()>& poll, int poll_ms) override {
    *end = false;
    if (!sticky_.ok()) return sticky_;
    // A poll's error is returned at once, and the epoch goes on.
    bool polled = false;
    std::function<Status()> wrapped;
    if (poll) {
      wrapped = [&poll, &polled] {
        Status s = poll();
        if (!s.ok()) polled = true;
        return s;
      };
    }
    std::optional<Launched> current = std::move(pending_);
    pending_.reset();
    if (!current.has_value()) {
      if (end_) {
        *end = true;
        return Status::OK();
      }
      Launched first;
      bool at_end = false;
      Status s = LaunchNext(stream, wrapped, poll_ms, &first, &at_end);
      if (!s.ok()) return polled ? s : Fail(std::move(s));
      if (at_end) {
        end_ = true;
        *end = true;
        return Status::OK();
      }
      current = std::move(first);
    }
    // Launch ahead: the copy of the next batch overlaps the consumer's step
    // on this one.
    Launched ahead;
    bool at_end = false;
    Status s = LaunchNext(stream, wrapped, poll_ms, &ahead, &at_end);
    if (!s.ok()) {
      if (polled) {
        pending_ = std::move(current);  // due again on the next call
        return s;
      }
      // The following batch failed: this one is still delivered; the error
      // comes with the next call (the order a host Loader reports it in).
      loader_->Stop();
      sticky_ = std::move(s);
    } else if (at_end) {
      end_ = true;
    } else {
      pending_ = std::move(ahead);
    }
    const int64_t handoff_start = Tracing() ? TraceClockNs() : 0;
    nvtx::Range handoff_range("stoker.device hand-off");
    Status handed = stage_->Handoff(current->ticket, stream);
    handoff_range.End();
    if (handoff_start != 0) {
      RecordSpan(SpanKind::kDeviceHandoff, handoff_start, current->batch.index,
                 current->batch.epoch, current->batch.size);
    }
    if (!handed.ok()) {
      stage_->Synchronize().IgnoreError();  // `current` is released after its copy
      return Fail(std::move(handed));
    }
    *batch = std::move(current->batch);
    return Status::OK();
  }

  Status Stop() override {
    loader_->Stop();
    end_ = false;
    return DropPending();
  }

  void SetEpoch(int64_t epoch) override { loader_->SetEpoch(epoch); }
  int64_t epoch() const override { return loader_->epoch(); }
  Status Resume(const LoaderState& state) override { return loader_->Resume(state); }
  LoaderState state() const override {
    return pending_.has_value() ? pending_->before : loader_->state();
  }
  LoaderStats stats() const override { return loader_->stats(); }
  int64_t num_batches() const override { return loader_->num_batches(); }
  int64_t num_batches_left() const override {
    const int64_t left = loader_->num_batches_left();
    return left >= 0 && pending_.has_value() ? left + 1 : left;
  }

  const DeviceOptions& device_options() const override { return stage_->options(); }
  std::array<int64_t, 4> output_dims(int n) const override { return stage_->output_dims(n); }
  Loader& loader() override { return *loader_; }
  DeviceStage& stage() override { return *stage_; }

 private:
  // Takes the Loader's next batch and launches it into fresh output memory.
  Status LaunchNext(uintptr_t stream, const std::function<Status()>& poll, int poll_ms,
                    Launched* out, bool* end) {
    out->before = loader_->state();
    BatchPtr b;
    if (poll) {
      STOKER_RETURN_IF_ERROR(loader_->Next(&b, end, poll, poll_ms));
    } else {
      STOKER_RETURN_IF_ERROR(loader_->Next(&b, end));
    }
    if (*end) return Status::OK();
    const int n = b->size();
    const size_t image_bytes = stage_->output_bytes(n);
    const size_t label_bytes = sizeof(int64_t) * static_cast<size_t>(n);
    DeviceAllocation images;  // none for a record without an image
    if (stage_->options().image) {
      STOKER_ASSIGN_OR_RETURN(images, Allocate(image_bytes, stream));
    }
    STOKER_ASSIGN_OR_RETURN(DeviceAllocation labels, Allocate(label_bytes, stream));
    DeviceBatch& d = out->batch;
    d = DeviceBatch();
    copies_.clear();
    STOKER_RETURN_IF_ERROR(PlanFields(b, stream, &d));
    const int64_t launch_start = Tracing() ? TraceClockNs() : 0;
    nvtx::Range launch_range("stoker.device launch");
    StatusOr<DeviceTicket> ticket =
        stage_->Launch(b, images.ptr, static_cast<int64_t*>(labels.ptr), stream, copies_);
    launch_range.End();
    if (launch_start != 0) RecordSpan(SpanKind::kDeviceLaunch, launch_start, b->index(), b->epoch(), n);
    if (!ticket.ok()) {
      // Part of the work may be enqueued: wait before the memory goes.
      stage_->Synchronize().IgnoreError();
      return ticket.status();
    }
    out->ticket = ticket.value();
    d.images = images.ptr;
    d.dims = stage_->output_dims(n);
    d.dtype = stage_->options().dtype;
    d.layout = stage_->options().layout;
    d.labels = static_cast<int64_t*>(labels.ptr);
    d.ids.assign(b->ids(), b->ids() + n);
    d.size = n;
    d.epoch = b->epoch();
    d.index = b->index();
    d.device = device_;
    d.images_owner = std::move(images.owner);
    d.labels_owner = std::move(labels.owner);
    // `b` goes back to the pool here; its buffer is reused only after the
    // copy that reads it (the stage's reuse fence).
    return Status::OK();
  }

  // Records: output memory and a DeviceFieldCopy for each fixed-shape field
  // of `b` (its stacked block, or its padded block), in field order; keeps
  // the host batch in `d` when a field stays there (variable fields, the
  // padded fields' lengths).
  Status PlanFields(const BatchPtr& b, uintptr_t stream, DeviceBatch* d) {
    d->records = b->shape().records;
    if (!d->records) return Status::OK();
    d->image_name = b->shape().image_name;
    d->label_name = b->shape().label_name;
    const int n = b->size();
    bool host_fields = false;
    for (int f = 0; f < b->num_fields(); ++f) {
      const FieldLayout& l = b->field(f);
      DeviceField field;
      field.name = l.spec.name;
      field.dims = {n};
      const void* host = nullptr;
      size_t bytes = 0;
      if (l.fixed) {
        field.elem = l.elem;
        field.dims.insert(field.dims.end(), l.dims.begin(), l.dims.end());
        host = b->field_block(f);
        bytes = l.sample_bytes() * static_cast<size_t>(n);
      } else if (l.pad) {
        const PaddedField& p = b->padded_field(f);
        field.elem = p.elem;
        field.dims.insert(field.dims.end(), p.dims.begin(), p.dims.begin() + p.ndim);
        field.padded = true;
        host = p.data;
        bytes = p.bytes;
        host_fields = true;  // the lengths
      } else {
        host_fields = true;
        continue;
      }
      if (bytes > 0) {
        STOKER_ASSIGN_OR_RETURN(DeviceAllocation a, Allocate(bytes, stream));
        field.data = a.ptr;
        field.owner = std::move(a.owner);
      }
      copies_.push_back(DeviceFieldCopy{host, bytes, field.data});
      d->fields.push_back(std::move(field));
    }
    if (host_fields) d->host = b;
    return Status::OK();
  }

  StatusOr<DeviceAllocation> Allocate(size_t bytes, uintptr_t stream) {
    STOKER_ASSIGN_OR_RETURN(DeviceAllocation a, allocate_(bytes, stream));
    if (a.ptr == nullptr) {
      return InvalidArgumentError("the device allocator returned a null pointer for " +
                                  std::to_string(bytes) + " bytes");
    }
    return a;
  }

  // Spans of the device path (stoker/trace.h), on the consumer's thread: the
  // launch (H2D copy and kernel enqueued; the host stage runs it here) and
  // the hand-off to the consumer's stream.
  bool Tracing() const { return loader_->tracer()->on(); }
  void RecordSpan(SpanKind kind, int64_t start_ns, int64_t batch, int64_t epoch, int images) {
    Tracer* tracer = loader_->tracer().get();
    Span span;
    span.start_ns = start_ns;
    span.end_ns = TraceClockNs();
    span.kind = kind;
    span.batch = batch;
    span.epoch = epoch;
    span.value = images;
    tracer->Record(tracer->ThisThreadLane("stoker consumer"), span);
  }

  // An error that ends the epoch: returned now and until Start().
  Status Fail(Status s) {
    loader_->Stop();
    DropPending().IgnoreError();
    sticky_ = s;
    return s;
  }

  // Waits for the batch launched ahead, then releases it.
  Status DropPending() {
    if (!pending_.has_value()) return Status::OK();
    Status s = stage_->Synchronize();
    stage_->Release(pending_->ticket);
    pending_.reset();
    return s;
  }

  // Destroyed last to first: the Loader (its workers) before the stage.
  const std::unique_ptr<DeviceStage> stage_;
  const std::unique_ptr<Loader> loader_;
  const DeviceAllocator allocate_;
  const int device_;
  std::vector<DeviceFieldCopy> copies_;  // the launch's record fields (reused)
  std::optional<Launched> pending_;  // launched ahead, not yet handed off
  bool end_ = false;                 // the launch ahead met the end of the epoch
  Status sticky_;                    // an error that ended the epoch
};

// The host Loader's options and the stage's, from the user's.
Status SplitOptions(const LoaderOptions& options, const DeviceLoaderOptions& device,
                    LoaderOptions* host, DeviceOptions* stage) {
  if (options.dtype == DType::kUint8) {
    return InvalidArgumentError(
        "with a device, dtype must be float32, float16 or bfloat16 (uint8 output is made on "
        "the host: use a Loader without a device)");
  }
  if (options.allocator != nullptr) {
    return InvalidArgumentError(
        "LoaderOptions::allocator must be null for a DeviceLoader (it supplies the "
        "page-locked batch memory)");
  }
  if (options.collate == LoaderOptions::Collate::kList) {
    return InvalidArgumentError(
        "collate=list is not supported with a device: the device stage works on fixed-size "
        "batches (use a Loader without a device and move each image to the GPU)");
  }
  if (device.device < kHostDevice) {
    return InvalidArgumentError("DeviceLoaderOptions::device must be a CUDA device index or "
                                "kHostDevice, got " + std::to_string(device.device));
  }
  *host = options;
  host->transforms.clear();
  *stage = DeviceOptions();
  stage->device = device.device < 0 ? 0 : device.device;
  stage->dtype = options.dtype;
  stage->layout = options.layout;
  stage->augment = device.augment;
  stage->seed = options.seed;
  stage->batch_size = options.batch_size;
  // Normalize runs on the device; everything else on the host.
  for (const Transform& t : options.transforms) {
    if (t.schema == nullptr || t.schema->stage != TransformStage::kConvert) {
      host->transforms.push_back(t);
      continue;
    }
    if (stage->normalize) {
      return InvalidArgumentError("two Normalize transforms: the device applies one");
    }
    stage->normalize = true;
    stage->mean = t.mean;
    stage->std = t.std;
  }
  // RandomErasing zeroes a rectangle of the output tensor, after Normalize; the host
  // would zero uint8 pixels, which the device then normalises.
  if (stage->normalize) {
    for (const Transform& t : host->transforms) {
      if (t.schema != nullptr && t.schema->stage == TransformStage::kTensor) {
        return InvalidArgumentError(
            std::string(t.name()) + " with Normalize is not supported with a device (it works "
            "on the normalised output; the device normalises after the host's uint8)");
      }
    }
  }
  host->dtype = DType::kUint8;
  host->layout = Layout::kNHWC;
  return Status::OK();
}

}  // namespace

DeviceAllocator DefaultDeviceAllocator(int device) {
  if (device >= 0) {
    return [device](size_t bytes, uintptr_t stream) {
      return device::CudaAllocateAsync(device, bytes, stream);
    };
  }
  return [](size_t bytes, uintptr_t) -> StatusOr<DeviceAllocation> {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (p == nullptr) {
      return ResourceExhaustedError("out of host memory for " + std::to_string(bytes) +
                                    " bytes of device-loader output");
    }
    return DeviceAllocation{p, std::shared_ptr<void>(p, [](void* q) { std::free(q); })};
  };
}

namespace device {

StatusOr<std::unique_ptr<DeviceLoader>> CreateDeviceLoader(std::shared_ptr<Source> source,
                                                           const LoaderOptions& options,
                                                           const DeviceLoaderOptions& device,
                                                           const StageFactory& factory) {
  LoaderOptions host;
  DeviceOptions stage_options;
  STOKER_RETURN_IF_ERROR(SplitOptions(options, device, &host, &stage_options));
  if (device.device >= 0) {
    // A clear error before any Loader work; then page-locked batch memory.
    STOKER_RETURN_IF_ERROR(CheckCudaDevice(device.device));
    STOKER_ASSIGN_OR_RETURN(host.allocator, PinnedBatchAllocator(device.device));
  }
  // A record without a primary image: the stage copies its labels and fields only.
  stage_options.image = source == nullptr || source->schema().image() >= 0;
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader,
                          Loader::Create(std::move(source), host));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<DeviceStage> stage,
                          factory(stage_options, loader->height(), loader->width()));
  DeviceAllocator allocate =
      device.allocate ? device.allocate : DefaultDeviceAllocator(device.device);
  return std::unique_ptr<DeviceLoader>(std::make_unique<DeviceLoaderImpl>(
      std::move(stage), std::move(loader), std::move(allocate), device.device));
}

}  // namespace device

StatusOr<std::unique_ptr<DeviceLoader>> DeviceLoader::Create(std::shared_ptr<Source> source,
                                                             const LoaderOptions& options,
                                                             const DeviceLoaderOptions& device) {
  const bool host = device.device == kHostDevice;
  return device::CreateDeviceLoader(
      std::move(source), options, device,
      [host](const DeviceOptions& o, int height, int width) {
        return host ? device::CreateHostStage(o, height, width)
                    : DeviceStage::Create(o, height, width);
      });
}

}  // namespace stoker
