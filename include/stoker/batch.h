// Copyright 2026 The stoker Authors.
//
// Batch memory. A batch buffer is allocated once, from a BatchAllocator, with
// room for `batch_size` samples, their labels and their ids; workers write
// each sample's final pixels straight into its slot (no collate copy). The
// pool recycles buffers: one returns to the pool when the consumer releases
// it, and is handed out again only after its reuse fence (if any) has been
// waited on -- the hook a GPU stage uses to keep pinned memory until the
// copy that reads it has completed (a CUDA event).
//
// Variable-size batches (BatchShape::variable, collate="list"): each slot has
// its own region of memory, from the same allocator, sized for its sample
// (ReserveSlot). A region only grows, and stays with its buffer through the
// pool, so in steady state no batch memory is allocated; samples move between
// slots (and buffers) by swapping regions, not by copying.
//
// Records (stoker/record.h): every field besides the primary image and label
// has its own storage in the buffer (BatchShape::fields): a fixed-shape field
// one block of batch_size samples from the same allocator (pinned when it
// is), a variable one (varying shape, text, bytes, json) a region per slot,
// grown and recycled as the images' regions are. A sample's fields move
// together: CopySample / MoveSample move the image, every field, the label
// and the id of one slot, never parts of two.
//
// Ownership: BatchPool owns idle buffers; a BatchPtr owns a buffer while the
// user holds it and returns it to the pool when the last copy dies (the pool
// is kept alive by the BatchPtr). Thread-safety: BatchPool is thread-safe; a
// Batch is immutable once handed to the consumer.
#ifndef STOKER_BATCH_H_
#define STOKER_BATCH_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/record.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"
#include "stoker/types.h"

namespace stoker {

// Where batch memory comes from. The default is aligned host memory; a CUDA
// build provides a page-locked (cudaHostAlloc) allocator.
class BatchAllocator {
 public:
  virtual ~BatchAllocator() = default;
  virtual StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* p, size_t bytes) = 0;
  virtual const char* name() const = 0;
};

// 64-byte aligned host memory (std::aligned_alloc).
std::shared_ptr<BatchAllocator> HostAllocator();

// A field of a record batch besides the primary image and label: what each
// slot holds (elements of `elem` with the per-sample shape `dims` when
// `fixed`; else each slot its own shape, and for arrays whose dtype varies,
// its own element type).
struct FieldLayout {
  FieldSpec spec;  // as the source declares it (name, kind)
  ElemType elem = ElemType::kUint8;
  std::vector<int64_t> dims;
  bool fixed = false;
  // collate="pad" (LoaderOptions::Collate::kPad): a variable array field
  // that is also delivered padded to the batch's largest sample along each
  // dimension, one block [size, max dims...], with each sample's shape
  // (PaddedField, made by PadFields in pipeline/record_pad.h).
  bool pad = false;
  size_t sample_bytes() const;
};

// collate="pad": a padded field of a delivered batch. `data` holds
// [size, dims[0..ndim)] elements of `elem`, C order, the pad value where a
// sample is shorter; `lengths` holds each sample's own shape (size x ndim,
// sample-major). A pooled region of the buffer, grown only when too small.
struct PaddedField {
  uint8_t* data = nullptr;
  size_t capacity = 0;
  size_t bytes = 0;
  ElemType elem = ElemType::kUint8;
  int ndim = 0;
  std::array<int64_t, kMaxFieldDims> dims{};
  std::vector<int64_t> lengths;
};

struct BatchShape {
  int batch_size = 0;  // capacity in samples
  int height = 0;      // 0 when `variable`
  int width = 0;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // Each sample has its own height x width (collate="list"): no contiguous
  // image block; slot i is a region of its own (BatchBuffer::ReserveSlot).
  bool variable = false;
  // Whether batches carry a primary image (a record of arrays may have none:
  // height, width 0, no image block).
  bool image = true;
  // Records: the other fields, in the order the batch reports them.
  std::vector<FieldLayout> fields;
  // Records: whether the batch is reported as a record (name -> field) rather
  // than (images, labels), and the names of the primary image and label
  // fields ("" when the schema has none).
  bool records = false;
  std::string image_name = "image";
  std::string label_name = "label";
  size_t sample_bytes() const { return static_cast<size_t>(height) * width * 3 * DTypeSize(dtype); }
};

// One slot of a record field: where its sample is and what shape it has.
struct FieldSlot {
  uint8_t* data = nullptr;
  size_t capacity = 0;  // variable fields: the region's size (0 for fixed)
  size_t bytes = 0;
  ElemType elem = ElemType::kUint8;
  int ndim = 0;
  std::array<int64_t, kMaxFieldDims> dims{};
};

class BatchPool;

// One batch's memory. Fields other than the reuse fence are written by the
// engine's workers (each its own slot) and read by the consumer after the
// batch is complete.
class BatchBuffer {
 public:
  // The contiguous image block (fixed-size batches; null when variable).
  uint8_t* images() { return images_; }
  const uint8_t* images() const { return images_; }
  uint8_t* slot(int i) {
    return shape_.variable ? regions_[i].data
                           : images_ + static_cast<size_t>(i) * shape_.sample_bytes();
  }
  const uint8_t* slot(int i) const { return const_cast<BatchBuffer*>(this)->slot(i); }
  // Size of the sample in slot i (the batch's, unless variable).
  int slot_height(int i) const { return shape_.variable ? regions_[i].height : shape_.height; }
  int slot_width(int i) const { return shape_.variable ? regions_[i].width : shape_.width; }
  size_t slot_bytes(int i) const {
    return static_cast<size_t>(slot_height(i)) * slot_width(i) * 3 * DTypeSize(shape_.dtype);
  }
  // Variable-size batches: makes slot i hold a height x width sample and
  // returns its memory, growing the slot's region (from the pool's allocator)
  // only when it is too small. Called by the one thread writing slot i.
  // Errors: ResourceExhausted when the allocator fails (the slot keeps its
  // old region); Internal on a fixed-size batch.
  StatusOr<uint8_t*> ReserveSlot(int i, int height, int width);
  // Variable-size batches: exchanges slot i's region (memory and size) with
  // slot j of `other` (which may be this buffer): a sample moves, no copy.
  void SwapSlots(int i, BatchBuffer* other, int j);
  // Bytes of slot memory held (variable-size batches).
  size_t region_bytes() const;
  // Records: the fields besides the primary image and label (shape().fields).
  int num_fields() const { return static_cast<int>(fields_.size()); }
  // A fixed field's block (batch_size samples), or null.
  uint8_t* field_block(int f) { return fields_[static_cast<size_t>(f)].block; }
  const FieldSlot& field_slot(int f, int i) const {
    return fields_[static_cast<size_t>(f)].slots[static_cast<size_t>(i)];
  }
  // Makes slot i of field f hold `bytes` bytes: a fixed field checks the size
  // (Internal when it differs) and returns the slot's place in the block; a
  // variable one records elem and dims and grows the slot's region only when
  // it is too small. Called by the one thread writing slot i. Errors:
  // ResourceExhausted when the allocator fails.
  StatusOr<uint8_t*> ReserveField(int f, int i, size_t bytes, ElemType elem,
                                  const int64_t* dims, int ndim);
  // collate="pad": field f's padded block; ReservePadded makes it hold
  // `bytes` (growing its region from the pool's allocator only when too
  // small; ResourceExhausted when that fails). Called by the consumer's
  // thread on a complete batch.
  PaddedField& padded(int f) { return fields_[static_cast<size_t>(f)].padded; }
  const PaddedField& padded(int f) const { return fields_[static_cast<size_t>(f)].padded; }
  StatusOr<uint8_t*> ReservePadded(int f, size_t bytes);
  // Copies sample `from` of `src` (image, every field, label, id) into slot
  // `to`; variable parts get their regions reserved first
  // (ResourceExhausted when that fails). `src` may be this buffer.
  Status CopySample(int to, const BatchBuffer& src, int from);
  // The same when `src`'s slot is not read again: variable parts move by
  // swapping regions, without a copy (fixed parts are copied).
  void MoveSample(int to, BatchBuffer* src, int from);
  int64_t* labels() { return labels_.data(); }
  const int64_t* labels() const { return labels_.data(); }
  int64_t* ids() { return ids_.data(); }
  const int64_t* ids() const { return ids_.data(); }
  std::vector<Status>& errors() { return errors_; }
  const BatchShape& shape() const { return shape_; }
  size_t image_bytes() const { return static_cast<size_t>(shape_.batch_size) * shape_.sample_bytes(); }
  // Bytes of the fixed fields' blocks.
  size_t field_block_bytes() const;

  // Number of valid samples (the last batch of an epoch may be short).
  int size = 0;
  int64_t epoch = 0;
  int64_t index = 0;  // batch index within the epoch

  // Called (once) by the pool before the buffer is reused. Set by the
  // consumer side, e.g. to wait for a CUDA event recorded after a copy.
  void SetReuseFence(std::function<void()> fence) { fence_ = std::move(fence); }

 private:
  friend class BatchPool;
  struct Region {
    uint8_t* data = nullptr;
    size_t capacity = 0;
    int height = 0;
    int width = 0;
  };
  struct FieldStore {
    uint8_t* block = nullptr;      // fixed fields
    bool fixed = false;            // the layout's, kept here for ReserveField's fast path
    size_t sample_bytes = 0;       // fixed fields: each slot's bytes
    std::vector<FieldSlot> slots;  // one per slot
    PaddedField padded;            // collate="pad" fields
  };
  BatchBuffer() = default;
  // Grows a region (`*data`, `*capacity`) to hold `bytes` (the pool's
  // allocator), keeping it when large enough.
  Status GrowRegion(uint8_t** data, size_t* capacity, size_t bytes);
  BatchShape shape_;
  BatchPool* pool_ = nullptr;  // the pool that made it (outlives it)
  uint8_t* images_ = nullptr;
  std::vector<Region> regions_;  // variable-size batches: one per slot
  std::vector<FieldStore> fields_;  // records: one per BatchShape::fields entry
  std::vector<int64_t> labels_;
  std::vector<int64_t> ids_;
  std::vector<Status> errors_;
  std::function<void()> fence_;
};

class BatchPool : public std::enable_shared_from_this<BatchPool> {
 public:
  // Keeps at most `max_idle` idle buffers; extra released buffers are freed.
  static std::shared_ptr<BatchPool> Create(const BatchShape& shape,
                                           std::shared_ptr<BatchAllocator> allocator,
                                           int max_idle);
  ~BatchPool();

  // An idle buffer (after waiting on its reuse fence), or a new one.
  StatusOr<BatchBuffer*> Acquire();
  void Release(BatchBuffer* buffer);

  const BatchShape& shape() const { return shape_; }
  // Buffers currently allocated (idle + in use) and their bytes (slot
  // regions of variable-size batches included).
  int allocated() const;
  size_t allocated_bytes() const;
  int64_t total_allocations() const;
  // Variable-size batches: slot regions allocated or grown, ever.
  int64_t total_region_allocations() const {
    return region_allocations_.load(std::memory_order_relaxed);
  }

 private:
  friend class BatchBuffer;
  BatchPool(const BatchShape& shape, std::shared_ptr<BatchAllocator> allocator, int max_idle);
  void Free(BatchBuffer* b);
  // A new buffer's field storage (blocks of the fixed fields, slots), and
  // giving it back.
  Status AllocateFields(BatchBuffer* b);
  void FreeFields(BatchBuffer* b);

  const BatchShape shape_;
  const std::shared_ptr<BatchAllocator> allocator_;
  const int max_idle_;
  mutable Mutex mu_;
  std::vector<BatchBuffer*> idle_ STOKER_GUARDED_BY(mu_);
  int allocated_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t total_allocations_ STOKER_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> region_allocations_{0};
  std::atomic<size_t> region_bytes_{0};  // held by the regions of live buffers
};

// A complete batch as the consumer sees it. Releasing the last BatchPtr
// returns the buffer to its pool.
class Batch {
 public:
  Batch(std::shared_ptr<BatchPool> pool, BatchBuffer* buffer)
      : pool_(std::move(pool)), buffer_(buffer) {}
  ~Batch() { pool_->Release(buffer_); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  int size() const { return buffer_->size; }
  int64_t epoch() const { return buffer_->epoch; }
  int64_t index() const { return buffer_->index; }
  const BatchShape& shape() const { return buffer_->shape(); }
  // [size, 3, H, W] (NCHW) or [size, H, W, 3] (NHWC). Fixed-size batches.
  std::array<int64_t, 4> image_dims() const;
  const uint8_t* images() const { return buffer_->images(); }
  size_t image_bytes() const { return static_cast<size_t>(size()) * shape().sample_bytes(); }
  // Whether each sample has its own size (collate="list"); then images() is
  // null and the samples are read one by one:
  bool variable() const { return shape().variable; }
  // Sample i's pixels, [3, H, W] (NCHW) or [H, W, 3] (NHWC), and its bytes
  // (any batch).
  const uint8_t* sample(int i) const { return buffer_->slot(i); }
  std::array<int64_t, 3> sample_dims(int i) const;
  size_t sample_bytes(int i) const { return buffer_->slot_bytes(i); }
  const int64_t* labels() const { return buffer_->labels(); }
  // Whether the batch has a primary image (records may not).
  bool has_image() const { return shape().image; }
  // Records: the fields besides the primary image and label.
  int num_fields() const { return buffer_->num_fields(); }
  const FieldLayout& field(int f) const { return shape().fields[static_cast<size_t>(f)]; }
  int FindField(const std::string& name) const;
  // A fixed field's samples, [size, dims...] of field(f).elem, contiguous.
  const uint8_t* field_block(int f) const { return buffer_->field_block(f); }
  // Sample i of field f (any field): its bytes, element type and shape.
  const FieldSlot& field_sample(int f, int i) const { return buffer_->field_slot(f, i); }
  // collate="pad": a padded field's block and shapes (field(f).pad).
  const PaddedField& padded_field(int f) const { return buffer_->padded(f); }
  // Dataset index of each sample (after on_error="skip" replacement: the
  // replacement's index).
  const int64_t* ids() const { return buffer_->ids(); }
  BatchBuffer* buffer() const { return buffer_; }

 private:
  std::shared_ptr<BatchPool> pool_;
  BatchBuffer* buffer_;
};

using BatchPtr = std::shared_ptr<Batch>;

}  // namespace stoker

#endif  // STOKER_BATCH_H_
