// Copyright 2026 The stoker Authors.
//
// The GPU stage: uint8 batches from the Loader, in page-locked host memory,
// go to the device on a dedicated copy stream, where one kernel per batch
// converts them (uint8 -> float32/float16/bfloat16, mean/std, NHWC -> NCHW)
// and applies the batched GPU augmentations (flip, crop/pad, colour jitter,
// affine warp), each sample's parameters drawn on the host from the same
// seeding scheme as the CPU augmentations. docs/gpu.md has the lifecycle.
//
//   auto stage = DeviceStage::Create(options, loader->height(), loader->width()).value();
//   LoaderOptions lo; lo.dtype = DType::kUint8; lo.layout = Layout::kNHWC;
//   lo.allocator = stage->host_allocator();           // pinned batch buffers
//   ... BatchPtr b; loader->Next(&b, &end);
//   void* out = framework_alloc(stage->output_bytes(b->size()), alloc_stream);
//   auto t = stage->Launch(b, out, labels, alloc_stream).value();  // async
//   b.reset();                       // the buffer is reused only after its copy
//   stage->Handoff(t, consumer_stream);  // consumer_stream waits for the batch
//
// Ownership: the caller owns the output device memory (allocate it from the
// framework's allocator on `alloc_stream`, e.g. torch.empty). The stage owns
// its copy stream, an event pool and one device staging buffer; batch
// buffers hold a reference to the pinned allocator and event pool, so they
// may outlive the stage.
//
// Thread-safety: Launch/Handoff/Synchronize must be called from one thread at
// a time (the consumer). The host allocator is thread-safe.
//
// Errors: Create returns Unimplemented when stoker was built without CUDA, or
// when there is no driver or no such device (the message quotes
// cudaGetDeviceCount's error); CUDA failures later return errors naming the
// CUDA call: ResourceExhausted when device or page-locked memory runs out,
// else Internal. A CPU-only Loader never touches CUDA.
#ifndef STOKER_DEVICE_H_
#define STOKER_DEVICE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/batch.h"
#include "stoker/status.h"
#include "stoker/types.h"

namespace stoker {

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N; anything else InvalidArgument.
StatusOr<int> ParseDevice(const std::string& device);

// True when stoker was compiled with the GPU stage.
bool BuiltWithCuda();

// OK when CUDA device `index` can be used; otherwise Unimplemented with a
// message such as "device='cuda:0' requested but no CUDA device is available
// (cudaGetDeviceCount: CUDA driver version is insufficient...)".
Status CheckCudaDevice(int index);

// Batched GPU augmentations. Each sample's parameters come from
// Rng(HashSeed(seed, epoch, sample id, kDeviceAugmentStream)), drawn in this
// order: flip, crop, brightness, contrast, saturation, angle, translation,
// scale. Defaults do nothing.
struct DeviceAugment {
  double flip_p = 0.0;           // RandomHorizontalFlip(p)
  // RandomCrop(size, padding): output (crop_height, crop_width) taken at a
  // random offset of the input padded by `pad` zeros on each side; 0 keeps
  // the input size.
  int crop_height = 0, crop_width = 0;
  int pad = 0;
  // ColorJitter: factors uniform in [max(0, 1 - x), 1 + x].
  float brightness = 0.f, contrast = 0.f, saturation = 0.f;
  // RandomAffine: angle uniform in [-degrees, degrees] (counter-clockwise),
  // translation up to translate * size (rounded to pixels), scale uniform in
  // [scale_min, scale_max]; bilinear, zero outside the image.
  float degrees = 0.f;
  float translate = 0.f;
  float scale_min = 1.f, scale_max = 1.f;

  bool any() const {
    return flip_p > 0 || crop_height > 0 || pad > 0 || brightness > 0 || contrast > 0 ||
           saturation > 0 || has_affine();
  }
  bool has_affine() const { return degrees != 0 || translate != 0 || scale_min != 1 || scale_max != 1; }
};

inline constexpr uint64_t kDeviceAugmentStream = 0x6770752D61756700ULL;  // "gpu-aug"

struct DeviceOptions {
  int device = 0;                        // CUDA device index
  DType dtype = DType::kFloat32;         // float32, float16 or bfloat16
  Layout layout = Layout::kNCHW;
  bool normalize = false;                // (v / 255 - mean) / std, as the CPU Normalize
  std::array<float, 3> mean{0.f, 0.f, 0.f};
  std::array<float, 3> std{1.f, 1.f, 1.f};
  DeviceAugment augment;
  uint64_t seed = 0;                     // the Loader's seed
  int batch_size = 1;                    // the Loader's batch size (sizes the staging buffer)
  // false: the batches have no primary image (a record of arrays): no image
  // copy and no kernel, only the labels and the record fields; output_dims
  // are {n, 0, 0, 0} and Launch's `out` may be null. Augmentations are refused.
  bool image = true;
};

// Records: one fixed-size block of a record batch (a stacked field's block,
// a padded field's block) for Launch to copy to the device. `host` is the
// batch's memory (page-locked when the batch comes from host_allocator());
// `out` is `bytes` of device memory from the caller's allocator, written on
// the stage's convert stream after `alloc_stream`'s work so far, as the
// images are.
struct DeviceFieldCopy {
  const void* host = nullptr;
  size_t bytes = 0;
  void* out = nullptr;
};

// An enqueued batch: its completion event on the copy stream.
struct DeviceTicket {
  void* done = nullptr;  // cudaEvent_t, owned by the stage's pool
};

class DeviceStage {
 public:
  // `height` x `width`: the Loader's uint8 NHWC sample size.
  static StatusOr<std::unique_ptr<DeviceStage>> Create(const DeviceOptions& options, int height,
                                                       int width);
  virtual ~DeviceStage() = default;  // synchronises the copy stream

  // Page-locked (cudaHostAlloc) batch memory for LoaderOptions::allocator.
  virtual std::shared_ptr<BatchAllocator> host_allocator() const = 0;

  // Output [n, 3, H, W] or [n, H, W, 3] and its bytes.
  virtual std::array<int64_t, 4> output_dims(int n) const = 0;
  size_t output_bytes(int n) const {
    size_t bytes = DTypeSize(options().dtype);
    for (int64_t d : output_dims(n)) bytes *= static_cast<size_t>(d);
    return bytes;
  }
  virtual const DeviceOptions& options() const = 0;

  // Enqueues, on the copy stream, the H2D copy of `batch` (uint8 NHWC, from
  // pinned memory), then, on the stage's convert stream (after that copy and
  // after `alloc_stream`'s work so far, so `out` may be memory the framework
  // just recycled), the conversion kernel into `out` and the labels into
  // `labels_out` (int64[n], device memory; may be null). Two staging buffers:
  // the next batch's copy overlaps this batch's kernel.
  // Sets the batch buffer's reuse fence to the copy's event (launch a batch
  // once: a second launch replaces the fence). Blocks on the GPU only when it
  // is 4 batches behind.
  // Records: each of `fields` is copied too, H2D on the copy stream into a
  // device staging block the stage owns (one per entry and staging buffer,
  // grown when a batch needs more, reused across batches), before the copy's
  // event (so the buffer goes back to the pool only after every copy), then
  // on the convert stream into its `out`. Staging, not a direct H2D into
  // `out`: the copy stream would have to wait for `alloc_stream`, i.e. for
  // the consumer's step, and the next batch's copy would no longer overlap it.
  virtual StatusOr<DeviceTicket> Launch(const BatchPtr& batch, void* out, int64_t* labels_out,
                                        uintptr_t alloc_stream,
                                        const std::vector<DeviceFieldCopy>& fields) = 0;
  StatusOr<DeviceTicket> Launch(const BatchPtr& batch, void* out, int64_t* labels_out,
                                uintptr_t alloc_stream) {
    return Launch(batch, out, labels_out, alloc_stream, {});
  }
  // Makes `consumer_stream` (0: the legacy default stream) wait for the
  // ticket's batch; the ticket is spent.
  virtual Status Handoff(DeviceTicket ticket, uintptr_t consumer_stream) = 0;
  // Gives back a ticket that will not be handed off (e.g. a batch launched
  // ahead and dropped); call it after Synchronize(). The ticket is spent.
  virtual void Release(DeviceTicket ticket) = 0;
  // Blocks until all work the stage enqueued (copy and convert streams) is done.
  virtual Status Synchronize() = 0;
  // The copy stream (cudaStream_t; the H2D copies only), e.g. for a benchmark.
  // A batch is complete when the consumer's stream has waited on its ticket.
  virtual uintptr_t copy_stream() const = 0;
};

}  // namespace stoker

#endif  // STOKER_DEVICE_H_
