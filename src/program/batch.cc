// Copyright 2026 The stoker Authors.
#include <cstdlib>
#include <cstring>
#include <utility>

#include "stoker/batch.h"

namespace stoker {
namespace {

class AlignedHostAllocator : public BatchAllocator {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (p == nullptr) {
      return ResourceExhaustedError("cannot allocate " + std::to_string(bytes) +
                                    " bytes of batch memory");
    }
    return p;
  }
  void Deallocate(void* p, size_t) override { std::free(p); }
  const char* name() const override { return "host"; }
};

// Region capacities step through 2^k * {1, 1.25, 1.5, 1.75}: a slot that
// sees many sizes settles after a few grows, wasting at most a quarter.
size_t RegionCapacity(size_t bytes) {
  size_t p = 4096;
  while (p < bytes) {
    for (size_t q : {p + p / 4, p + p / 2, p + 3 * p / 4}) {
      if (q >= bytes) return q;
    }
    p *= 2;
  }
  return p;
}

}  // namespace

std::shared_ptr<BatchAllocator> HostAllocator() {
  static std::shared_ptr<BatchAllocator> a = std::make_shared<AlignedHostAllocator>();
  return a;
}

StatusOr<uint8_t*> BatchBuffer::ReserveSlot(int i, int height, int width) {
  if (!shape_.variable) return InternalError("ReserveSlot on a fixed-size batch");
  if (height < 0 || width < 0) return InvalidArgumentError("negative sample size");
  Region& r = regions_[static_cast<size_t>(i)];
  const size_t bytes = static_cast<size_t>(height) * width * 3 * DTypeSize(shape_.dtype);
  if (bytes > r.capacity || r.data == nullptr) {
    const size_t cap = RegionCapacity(bytes);
    STOKER_ASSIGN_OR_RETURN(void* mem, pool_->allocator_->Allocate(cap));
    if (r.data != nullptr) {
      pool_->allocator_->Deallocate(r.data, r.capacity);
      pool_->region_bytes_.fetch_sub(r.capacity, std::memory_order_relaxed);
    }
    r.data = static_cast<uint8_t*>(mem);
    r.capacity = cap;
    pool_->region_bytes_.fetch_add(cap, std::memory_order_relaxed);
    pool_->region_allocations_.fetch_add(1, std::memory_order_relaxed);
  }
  r.height = height;
  r.width = width;
  return r.data;
}

void BatchBuffer::SwapSlots(int i, BatchBuffer* other, int j) {
  std::swap(regions_[static_cast<size_t>(i)], other->regions_[static_cast<size_t>(j)]);
}

size_t FieldLayout::sample_bytes() const {
  size_t n = ElemSize(elem);
  for (int64_t d : dims) n *= static_cast<size_t>(d < 0 ? 0 : d);
  return n;
}

size_t BatchBuffer::field_block_bytes() const {
  size_t n = 0;
  for (const FieldLayout& f : shape_.fields) {
    if (f.fixed) n += static_cast<size_t>(shape_.batch_size) * f.sample_bytes();
  }
  return n;
}

Status BatchBuffer::GrowRegion(uint8_t** data, size_t* capacity, size_t bytes) {
  if (*data != nullptr && bytes <= *capacity) return Status::OK();
  const size_t cap = RegionCapacity(bytes);
  STOKER_ASSIGN_OR_RETURN(void* mem, pool_->allocator_->Allocate(cap));
  if (*data != nullptr) {
    pool_->allocator_->Deallocate(*data, *capacity);
    pool_->region_bytes_.fetch_sub(*capacity, std::memory_order_relaxed);
  }
  *data = static_cast<uint8_t*>(mem);
  *capacity = cap;
  pool_->region_bytes_.fetch_add(cap, std::memory_order_relaxed);
  pool_->region_allocations_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

StatusOr<uint8_t*> BatchBuffer::ReserveField(int f, int i, size_t bytes, ElemType elem,
                                             const int64_t* dims, int ndim) {
  FieldStore& store = fields_[static_cast<size_t>(f)];
  if (store.fixed) {  // the block's slot i, without touching the slot's record
    if (bytes != store.sample_bytes) {
      return InternalError("field '" + shape_.fields[static_cast<size_t>(f)].spec.name + "': " +
                           std::to_string(bytes) + " bytes for a slot of " +
                           std::to_string(store.sample_bytes));
    }
    return store.block + static_cast<size_t>(i) * store.sample_bytes;
  }
  FieldSlot& slot = store.slots[static_cast<size_t>(i)];
  if (ndim < 0 || ndim > kMaxFieldDims) return InternalError("too many dimensions");
  STOKER_RETURN_IF_ERROR(GrowRegion(&slot.data, &slot.capacity, bytes));
  slot.bytes = bytes;
  slot.elem = elem;
  slot.ndim = ndim;
  for (int k = 0; k < ndim; ++k) slot.dims[static_cast<size_t>(k)] = dims[k];
  return slot.data;
}

StatusOr<uint8_t*> BatchBuffer::ReservePadded(int f, size_t bytes) {
  PaddedField& p = fields_[static_cast<size_t>(f)].padded;
  STOKER_RETURN_IF_ERROR(GrowRegion(&p.data, &p.capacity, bytes));
  p.bytes = bytes;
  return p.data;
}

Status BatchBuffer::CopySample(int to, const BatchBuffer& src, int from) {
  if (shape_.image) {
    uint8_t* target = slot(to);
    if (shape_.variable) {
      STOKER_ASSIGN_OR_RETURN(target,
                              ReserveSlot(to, src.slot_height(from), src.slot_width(from)));
    }
    std::memcpy(target, src.slot(from), src.slot_bytes(from));
  }
  for (int f = 0; f < num_fields(); ++f) {
    const FieldSlot& s = src.field_slot(f, from);
    STOKER_ASSIGN_OR_RETURN(uint8_t* target,
                            ReserveField(f, to, s.bytes, s.elem, s.dims.data(), s.ndim));
    if (s.bytes > 0 && target != s.data) std::memcpy(target, s.data, s.bytes);
  }
  labels_[static_cast<size_t>(to)] = src.labels_[static_cast<size_t>(from)];
  ids_[static_cast<size_t>(to)] = src.ids_[static_cast<size_t>(from)];
  errors_[static_cast<size_t>(to)] = Status::OK();
  return Status::OK();
}

void BatchBuffer::MoveSample(int to, BatchBuffer* src, int from) {
  if (shape_.image) {
    if (shape_.variable) {
      src->SwapSlots(from, this, to);
    } else if (src != this || from != to) {
      std::memcpy(slot(to), src->slot(from), src->slot_bytes(from));
    }
  }
  for (int f = 0; f < num_fields(); ++f) {
    FieldSlot& a = fields_[static_cast<size_t>(f)].slots[static_cast<size_t>(to)];
    FieldSlot& b = src->fields_[static_cast<size_t>(f)].slots[static_cast<size_t>(from)];
    if (shape_.fields[static_cast<size_t>(f)].fixed) {
      if (&a != &b) std::memcpy(a.data, b.data, b.bytes);
    } else {
      std::swap(a, b);
    }
  }
  labels_[static_cast<size_t>(to)] = src->labels_[static_cast<size_t>(from)];
  ids_[static_cast<size_t>(to)] = src->ids_[static_cast<size_t>(from)];
  errors_[static_cast<size_t>(to)] = Status::OK();
}

int Batch::FindField(const std::string& name) const {
  for (int f = 0; f < num_fields(); ++f) {
    if (field(f).spec.name == name) return f;
  }
  return -1;
}

size_t BatchBuffer::region_bytes() const {
  size_t n = 0;
  for (const Region& r : regions_) n += r.capacity;
  return n;
}

std::array<int64_t, 3> Batch::sample_dims(int i) const {
  const int h = buffer_->slot_height(i), w = buffer_->slot_width(i);
  if (shape().layout == Layout::kNCHW) return {3, h, w};
  return {h, w, 3};
}

std::array<int64_t, 4> Batch::image_dims() const {
  const BatchShape& s = shape();
  if (s.layout == Layout::kNCHW) return {size(), 3, s.height, s.width};
  return {size(), s.height, s.width, 3};
}

std::shared_ptr<BatchPool> BatchPool::Create(const BatchShape& shape,
                                             std::shared_ptr<BatchAllocator> allocator,
                                             int max_idle) {
  return std::shared_ptr<BatchPool>(new BatchPool(shape, std::move(allocator), max_idle));
}

BatchPool::BatchPool(const BatchShape& shape, std::shared_ptr<BatchAllocator> allocator,
                     int max_idle)
    : shape_(shape), allocator_(std::move(allocator)), max_idle_(max_idle) {}

BatchPool::~BatchPool() {
  for (BatchBuffer* b : idle_) Free(b);
}

void BatchPool::Free(BatchBuffer* b) {
  if (b->fence_) b->fence_();
  if (shape_.image) allocator_->Deallocate(b->images_, b->image_bytes());
  for (BatchBuffer::Region& r : b->regions_) {
    if (r.data == nullptr) continue;
    allocator_->Deallocate(r.data, r.capacity);
    region_bytes_.fetch_sub(r.capacity, std::memory_order_relaxed);
  }
  FreeFields(b);
  delete b;
}

void BatchPool::FreeFields(BatchBuffer* b) {
  for (size_t f = 0; f < b->fields_.size(); ++f) {
    BatchBuffer::FieldStore& store = b->fields_[f];
    if (store.padded.data != nullptr) {
      allocator_->Deallocate(store.padded.data, store.padded.capacity);
      region_bytes_.fetch_sub(store.padded.capacity, std::memory_order_relaxed);
    }
    if (store.block != nullptr) {
      allocator_->Deallocate(store.block, static_cast<size_t>(shape_.batch_size) *
                                              shape_.fields[f].sample_bytes());
      continue;
    }
    for (FieldSlot& s : store.slots) {
      if (s.data == nullptr || s.capacity == 0) continue;
      allocator_->Deallocate(s.data, s.capacity);
      region_bytes_.fetch_sub(s.capacity, std::memory_order_relaxed);
    }
  }
}

Status BatchPool::AllocateFields(BatchBuffer* b) {
  b->fields_.resize(shape_.fields.size());
  for (size_t f = 0; f < shape_.fields.size(); ++f) {
    const FieldLayout& layout = shape_.fields[f];
    BatchBuffer::FieldStore& store = b->fields_[f];
    store.slots.resize(static_cast<size_t>(shape_.batch_size));
    if (!layout.fixed) continue;
    const size_t per = layout.sample_bytes();
    STOKER_ASSIGN_OR_RETURN(void* mem,
                            allocator_->Allocate(static_cast<size_t>(shape_.batch_size) * per));
    store.block = static_cast<uint8_t*>(mem);
    store.fixed = true;
    store.sample_bytes = per;
    for (int i = 0; i < shape_.batch_size; ++i) {
      FieldSlot& s = store.slots[static_cast<size_t>(i)];
      s.data = store.block + static_cast<size_t>(i) * per;
      s.bytes = per;
      s.elem = layout.elem;
      s.ndim = static_cast<int>(layout.dims.size());
      for (size_t k = 0; k < layout.dims.size(); ++k) s.dims[k] = layout.dims[k];
    }
  }
  return Status::OK();
}

StatusOr<BatchBuffer*> BatchPool::Acquire() {
  BatchBuffer* b = nullptr;
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      b = idle_.back();
      idle_.pop_back();
    }
  }
  if (b != nullptr) {
    if (b->fence_) {
      auto fence = std::move(b->fence_);
      b->fence_ = nullptr;
      fence();
    }
    return b;
  }
  auto* nb = new BatchBuffer();
  nb->shape_ = shape_;
  nb->pool_ = this;
  if (shape_.variable) nb->regions_.resize(static_cast<size_t>(shape_.batch_size));
  if (shape_.image) {  // (variable: an empty block, as before records)
    auto mem = allocator_->Allocate(nb->image_bytes());
    if (!mem.ok()) {
      delete nb;
      return mem.status();
    }
    nb->images_ = static_cast<uint8_t*>(mem.value());
  }
  Status fields = AllocateFields(nb);
  if (!fields.ok()) {
    FreeFields(nb);
    if (shape_.image) allocator_->Deallocate(nb->images_, nb->image_bytes());
    delete nb;
    return fields;
  }
  nb->labels_.assign(shape_.batch_size, 0);
  nb->ids_.assign(shape_.batch_size, -1);
  nb->errors_.assign(shape_.batch_size, Status::OK());
  MutexLock lock(&mu_);
  ++allocated_;
  ++total_allocations_;
  return nb;
}

void BatchPool::Release(BatchBuffer* b) {
  {
    MutexLock lock(&mu_);
    if (static_cast<int>(idle_.size()) < max_idle_) {
      idle_.push_back(b);
      return;
    }
    --allocated_;
  }
  Free(b);
}

int BatchPool::allocated() const {
  MutexLock lock(&mu_);
  return allocated_;
}

size_t BatchPool::allocated_bytes() const {
  MutexLock lock(&mu_);
  size_t fixed_fields = 0;
  for (const FieldLayout& f : shape_.fields) {
    if (f.fixed) fixed_fields += f.sample_bytes();
  }
  const size_t image = shape_.image && !shape_.variable ? shape_.sample_bytes() : 0;
  return static_cast<size_t>(allocated_) * shape_.batch_size * (image + fixed_fields) +
         region_bytes_.load(std::memory_order_relaxed);
}

int64_t BatchPool::total_allocations() const {
  MutexLock lock(&mu_);
  return total_allocations_;
}

}  // namespace stoker
