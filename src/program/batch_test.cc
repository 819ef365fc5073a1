// Copyright 2026 The stoker Authors.
#include "stoker/batch.h"

#include <gtest/gtest.h>

#include <atomic>

namespace stoker {
namespace {

class CountingAllocator : public BatchAllocator {
 public:
  StatusOr<void*> Allocate(size_t bytes) override {
    ++allocs;
    live += 1;
    return HostAllocator()->Allocate(bytes);
  }
  void Deallocate(void* p, size_t bytes) override {
    live -= 1;
    HostAllocator()->Deallocate(p, bytes);
  }
  const char* name() const override { return "counting"; }
  int allocs = 0;
  int live = 0;
};

BatchShape Shape() {
  BatchShape s;
  s.batch_size = 4;
  s.height = 8;
  s.width = 6;
  s.dtype = DType::kFloat32;
  return s;
}

TEST(BatchPoolTest, RecyclesReleasedBuffers) {
  auto alloc = std::make_shared<CountingAllocator>();
  auto pool = BatchPool::Create(Shape(), alloc, 2);
  BatchBuffer* a = pool->Acquire().value();
  EXPECT_EQ(a->image_bytes(), 4u * 8 * 6 * 3 * 4);
  EXPECT_EQ(a->slot(1) - a->slot(0), static_cast<ptrdiff_t>(8 * 6 * 3 * 4));
  pool->Release(a);
  BatchBuffer* b = pool->Acquire().value();
  EXPECT_EQ(a, b);
  EXPECT_EQ(alloc->allocs, 1);
  pool->Release(b);
}

TEST(BatchPoolTest, FreesBeyondMaxIdleAndOnDestruction) {
  auto alloc = std::make_shared<CountingAllocator>();
  {
    auto pool = BatchPool::Create(Shape(), alloc, 1);
    BatchBuffer* a = pool->Acquire().value();
    BatchBuffer* b = pool->Acquire().value();
    EXPECT_EQ(pool->allocated(), 2);
    pool->Release(a);
    pool->Release(b);  // beyond max_idle: freed
    EXPECT_EQ(alloc->live, 1);
    EXPECT_EQ(pool->allocated(), 1);
  }
  EXPECT_EQ(alloc->live, 0);
}

TEST(BatchPoolTest, ReuseFenceRunsBeforeReuse) {
  auto pool = BatchPool::Create(Shape(), HostAllocator(), 2);
  BatchBuffer* a = pool->Acquire().value();
  int fenced = 0;
  a->SetReuseFence([&] { ++fenced; });
  pool->Release(a);
  EXPECT_EQ(fenced, 0);  // not yet: only when handed out again
  BatchBuffer* b = pool->Acquire().value();
  EXPECT_EQ(b, a);
  EXPECT_EQ(fenced, 1);
  pool->Release(b);
  BatchBuffer* c = pool->Acquire().value();  // fence already consumed
  EXPECT_EQ(fenced, 1);
  pool->Release(c);
}

TEST(BatchTest, ReleasingTheLastReferenceReturnsTheBuffer) {
  auto alloc = std::make_shared<CountingAllocator>();
  auto pool = BatchPool::Create(Shape(), alloc, 2);
  BatchBuffer* raw = pool->Acquire().value();
  raw->size = 3;
  {
    BatchPtr batch = std::make_shared<Batch>(pool, raw);
    EXPECT_EQ(batch->image_dims(), (std::array<int64_t, 4>{3, 3, 8, 6}));
    BatchPtr copy = batch;
    batch.reset();
    BatchBuffer* other = pool->Acquire().value();
    EXPECT_NE(other, raw);  // still held by `copy`
    pool->Release(other);
  }
  // Released last, so handed out first.
  BatchBuffer* again = pool->Acquire().value();
  EXPECT_EQ(again, raw);
  pool->Release(again);
}

}  // namespace
}  // namespace stoker
