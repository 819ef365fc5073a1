// Copyright 2026 The stoker Authors.
//
// DeviceLoader: a Loader that feeds a GPU. It owns a host Loader (uint8 NHWC
// batches in page-locked memory) and a DeviceStage (copy stream, events,
// the uint8 -> float32/float16/bfloat16 kernels, docs/gpu.md), and runs the
// feeding policy: each batch's copy and conversion are launched one batch
// ahead, so the copy of batch k+1 overlaps the consumer's step on batch k;
// a batch is handed to the consumer's stream, which waits for it on the
// device (the host does not block); a batch launched ahead is synchronised
// before its memory can be released (Stop, Start of another epoch, an
// error, destruction).
//
//   LoaderOptions o;                       // the *device output's* options
//   o.batch_size = 256; o.shuffle = true; o.dtype = DType::kBFloat16;
//   o.transforms = {Transform::RandomResizedCrop(224, 224), Transform::Normalize(m, s)};
//   DeviceLoaderOptions d;                 // d.device = 0: cuda:0
//   auto loader = DeviceLoader::Create(ImageFolder::Open(root).value(), o, d).value();
//   STOKER_RETURN_IF_ERROR(loader->Start());
//   for (;;) {
//     DeviceBatch b; bool end;
//     STOKER_RETURN_IF_ERROR(loader->Next(&b, &end, stream));  // stream: cudaStream_t
//     if (end) break;
//     Train(b.images, b.dims, b.labels, stream);  // work on `stream` sees the batch
//   }
//
// Options. `options` are a Loader's, with dtype and layout those of the
// device output (float32, float16 or bfloat16; uint8 is refused) and
// transforms the whole pipeline: a Normalize in it runs on the device (the
// host writes uint8), the rest on the host. The host Loader gets dtype
// uint8, layout NHWC and the page-locked allocator; `options.allocator` must
// be null. DeviceLoaderOptions::augment adds the batched GPU augmentations.
//
// Device memory. Each batch's output images and labels come from
// DeviceLoaderOptions::allocate (null: DefaultDeviceAllocator), called in
// Next() on the consumer thread with the stream passed to Next(): a
// framework can hand out its own memory (Python passes a callback that
// makes torch tensors, so PyTorch's caching allocator owns it). The copy
// stream waits for that stream's work so far before writing, so memory the
// framework just recycled on that stream is safe to use. The DeviceBatch
// holds the allocation's owners; the memory lives as long as they do.
//
// Records (stoker/record.h; a source whose schema is not {image, label}, with
// a primary image of a fixed output size): the image goes through the stage
// as above; every fixed-shape field's block (stacked fields, and padded
// fields under collate="pad") is copied to the device on the stage's copy
// stream, into memory from the same allocator (DeviceBatch::fields), and the
// host batch's buffer returns to the pool only after those copies too. The
// variable fields and the padded fields' lengths stay on the host
// (DeviceBatch::host). A record without a primary image (arrays only) has no
// images output (DeviceBatch::images null, dims {n, 0, 0, 0}): the stage copies
// its labels and fields; DeviceAugment is then refused.
//
// Host fallback: DeviceLoaderOptions::device = kHostDevice runs the stage's
// work (the same maths as the kernel, stoker/device_host.h) on a host thread
// of its own, with the same launch-ahead, hand-off (the hand-off waits for
// the batch) and synchronisation; the allocator then returns host memory.
// It needs no CUDA and is how the CPU-only tests run this class.
//
// Ownership: the DeviceLoader owns the host Loader and the stage; batches
// handed out own their memory through DeviceBatch's owners and stay valid
// after the DeviceLoader is gone. Thread-safety: Start, Next, Stop,
// SetEpoch, Resume and state() from one consumer thread at a time (as a
// Loader); stats() from any thread. The allocator is called on the
// consumer's thread, inside Next().
//
// Errors: Create returns InvalidArgument for unusable options (uint8 output,
// two Normalize transforms, an allocator in `options`, what the Loader or
// the stage refuse) and Unimplemented when the CUDA device cannot be used
// (stoker built without CUDA, no driver, no device: the message says which).
// A batch's error from the host Loader (a bad file under on_error=raise) or
// from the allocator is returned by the Next() that would have returned that
// batch, after the batches before it; it ends the epoch, and Next() returns
// it again until Start(). A `poll` error is returned at once and the epoch
// goes on (the next Next() returns the batch that was due).
#ifndef STOKER_DEVICE_LOADER_H_
#define STOKER_DEVICE_LOADER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/batch.h"
#include "stoker/device.h"
#include "stoker/loader.h"
#include "stoker/record.h"
#include "stoker/source.h"
#include "stoker/status.h"
#include "stoker/types.h"

namespace stoker {

// DeviceLoaderOptions::device for the host fallback.
inline constexpr int kHostDevice = -1;

// Memory for one output: `ptr` (device memory, or host memory in the host
// fallback) stays valid while `owner` lives.
struct DeviceAllocation {
  void* ptr = nullptr;
  std::shared_ptr<void> owner;
};

// Returns `bytes` of memory usable on `stream` (a cudaStream_t; 0 in the
// host fallback). Called on the consumer thread.
using DeviceAllocator = std::function<StatusOr<DeviceAllocation>(size_t bytes, uintptr_t stream)>;

// CUDA device `device`: cudaMallocAsync on the stream, freed with
// cudaFreeAsync on the same stream when the owner dies (so that stream must
// outlive the batch). kHostDevice: 64-byte aligned host memory.
DeviceAllocator DefaultDeviceAllocator(int device);

struct DeviceLoaderOptions {
  int device = 0;           // CUDA device index, or kHostDevice
  DeviceAugment augment;    // batched GPU augmentations (stoker/device.h)
  DeviceAllocator allocate;  // output memory; null: DefaultDeviceAllocator(device)
};

// Records: one fixed-shape field of a record batch on the device (a stacked
// field: [size, dims...]; a padded field: [size, max dims...]), the same
// bytes as the host batch's block.
struct DeviceField {
  std::string name;
  void* data = nullptr;           // device memory (host memory in the host fallback)
  ElemType elem = ElemType::kUint8;
  std::vector<int64_t> dims;      // [size, ...]
  bool padded = false;            // collate="pad": the lengths stay in `host`
  std::shared_ptr<void> owner;    // from the allocator: keep to keep the memory
};

// One batch on the device, safe to use on the stream it was handed to.
struct DeviceBatch {
  void* images = nullptr;            // dims, dtype, layout as below; null without an image
  std::array<int64_t, 4> dims{};     // [n, 3, H, W] (NCHW) or [n, H, W, 3] (NHWC)
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  int64_t* labels = nullptr;         // int64[size], device memory
  std::vector<int64_t> ids;          // dataset index of each sample, host memory
  int size = 0;                      // samples (the epoch's last batch may be short)
  int64_t epoch = 0;
  int64_t index = 0;                 // batch index within the epoch
  int device = 0;                    // CUDA device, or kHostDevice
  std::shared_ptr<void> images_owner;  // from the allocator: keep to keep the memory
  std::shared_ptr<void> labels_owner;
  // Records (the source's schema is not {image, label}): the primary image
  // and label are `images` and `labels` as above; every fixed-shape field
  // (stacked, and padded under collate="pad") is in `fields`, in the batch's
  // field order; the variable fields (text, bytes, json, arrays of varying
  // shape) and the padded fields' lengths stay on the host, in `host`, the
  // host batch, kept only when it has such fields (its pinned buffer goes
  // back to the pool when the last holder drops it).
  bool records = false;
  std::string image_name, label_name;  // the record's names for them ("" when none)
  std::vector<DeviceField> fields;
  BatchPtr host;
};

class DeviceLoader {
 public:
  static StatusOr<std::unique_ptr<DeviceLoader>> Create(std::shared_ptr<Source> source,
                                                        const LoaderOptions& options,
                                                        const DeviceLoaderOptions& device);
  // Stops the epoch and synchronises a batch launched ahead.
  virtual ~DeviceLoader() = default;

  // Begins an epoch (cancelling one in progress, after synchronising its
  // batch launched ahead).
  virtual Status Start() = 0;
  // The next batch, handed off to `stream` (cudaStream_t, 0: the legacy
  // default stream; ignored in the host fallback, where the batch is
  // complete on return). Also launches the following batch, its memory
  // allocated on `stream`. `*end` is set when the epoch is done. `poll`, if
  // set, is called about every `poll_ms` while waiting for the host Loader
  // (as Loader::Next).
  virtual Status Next(DeviceBatch* batch, bool* end, uintptr_t stream,
                      const std::function<Status()>& poll = nullptr, int poll_ms = 50) = 0;
  // Ends the epoch: stops the host Loader, waits for the batch launched
  // ahead and releases it. Returns a CUDA error met while waiting.
  virtual Status Stop() = 0;

  // Passed through to the host Loader (stoker/loader.h).
  virtual void SetEpoch(int64_t epoch) = 0;
  virtual int64_t epoch() const = 0;
  virtual Status Resume(const LoaderState& state) = 0;
  // The consumer's position: a batch launched ahead but not yet returned by
  // Next() does not count as consumed.
  virtual LoaderState state() const = 0;
  // The host Loader's counters (the batch launched ahead counts as taken).
  virtual LoaderStats stats() const = 0;
  virtual int64_t num_batches() const = 0;
  // Loader::num_batches_left(); a batch launched ahead is not delivered yet.
  virtual int64_t num_batches_left() const = 0;

  // The stage's options (dtype, layout, normalise, mean/std as moved from
  // the transforms, augment, seed, batch size) and output dims for n samples.
  virtual const DeviceOptions& device_options() const = 0;
  virtual std::array<int64_t, 4> output_dims(int n) const = 0;
  // The parts, for inspection and benchmarks: starting, stopping or taking
  // batches from them directly bypasses the policy above.
  virtual Loader& loader() = 0;
  virtual DeviceStage& stage() = 0;
};

}  // namespace stoker

#endif  // STOKER_DEVICE_LOADER_H_
