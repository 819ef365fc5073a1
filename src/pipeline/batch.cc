// Copyright 2026 The stoker Authors.
#include <cstdlib>

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

}  // namespace

std::shared_ptr<BatchAllocator> HostAllocator() {
  static std::shared_ptr<BatchAllocator> a = std::make_shared<AlignedHostAllocator>();
  return a;
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
  return static_cast<size_t>(allocated_) * shape_.batch_size * shape_.sample_bytes();
}

int64_t BatchPool::total_allocations() const {
  MutexLock lock(&mu_);
  return total_allocations_;
}

}  // namespace stoker
