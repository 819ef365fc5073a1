// Copyright 2026 The stoker Authors.
#include <cstdlib>
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
  allocator_->Deallocate(b->images_, b->image_bytes());
  for (BatchBuffer::Region& r : b->regions_) {
    if (r.data == nullptr) continue;
    allocator_->Deallocate(r.data, r.capacity);
    region_bytes_.fetch_sub(r.capacity, std::memory_order_relaxed);
  }
  delete b;
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
  auto mem = allocator_->Allocate(nb->image_bytes());
  if (!mem.ok()) {
    delete nb;
    return mem.status();
  }
  nb->images_ = static_cast<uint8_t*>(mem.value());
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
  return static_cast<size_t>(allocated_) * shape_.batch_size * shape_.sample_bytes() +
         region_bytes_.load(std::memory_order_relaxed);
}

int64_t BatchPool::total_allocations() const {
  MutexLock lock(&mu_);
  return total_allocations_;
}

}  // namespace stoker
