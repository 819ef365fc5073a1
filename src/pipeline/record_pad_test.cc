// Copyright 2026 The stoker Authors.
#include "pipeline/record_pad.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace stoker {
namespace {

// A pool of 3-sample record batches with one padded array field "seq" (no image).
std::shared_ptr<BatchPool> PadPool() {
  BatchShape shape;
  shape.batch_size = 3;
  shape.image = false;
  shape.records = true;
  FieldLayout l;
  l.spec = ArrayField("seq", ElemType::kInt16, {-1, -1});
  l.elem = ElemType::kInt16;
  l.pad = true;
  shape.fields.push_back(l);
  return BatchPool::Create(shape, HostAllocator(), 2);
}

// Writes sample i: an int16 [rows, cols] array of value 100 * i + element index.
void Put(BatchBuffer* b, int i, int64_t rows, int64_t cols, ElemType elem = ElemType::kInt16) {
  const int64_t dims[2] = {rows, cols};
  const size_t bytes = static_cast<size_t>(rows * cols) * ElemSize(elem);
  uint8_t* p = b->ReserveField(0, i, bytes, elem, dims, 2).value();
  for (int64_t k = 0; k < rows * cols && elem == ElemType::kInt16; ++k) {
    const int16_t v = static_cast<int16_t>(100 * i + k);
    std::memcpy(p + 2 * k, &v, 2);
  }
  b->ids()[i] = 10 + i;
}

TEST(RecordPadTest, PadsEachSampleIntoTheBatchMaximumWithItsShape) {
  auto pool = PadPool();
  BatchBuffer* b = pool->Acquire().value();
  b->size = 3;
  Put(b, 0, 2, 3);
  Put(b, 1, 1, 1);
  Put(b, 2, 0, 2);
  ASSERT_TRUE(PadFields(b, -1).ok());
  const PaddedField& p = b->padded(0);
  ASSERT_EQ(p.ndim, 2);
  EXPECT_EQ(p.dims[0], 2);
  EXPECT_EQ(p.dims[1], 3);
  EXPECT_EQ(p.elem, ElemType::kInt16);
  std::vector<int16_t> got(3 * 2 * 3);
  std::memcpy(got.data(), p.data, got.size() * 2);
  const std::vector<int16_t> want = {0,   1,  2,  3,  4,  5,    // sample 0: all its own
                                     100, -1, -1, -1, -1, -1,   // sample 1: [1, 1]
                                     -1,  -1, -1, -1, -1, -1};  // sample 2: empty
  EXPECT_EQ(got, want);
  EXPECT_EQ(p.lengths, (std::vector<int64_t>{2, 3, 1, 1, 0, 2}));
  pool->Release(b);
}

TEST(RecordPadTest, ReusesItsRegionForSmallerBatches) {
  auto pool = PadPool();
  BatchBuffer* b = pool->Acquire().value();
  b->size = 2;
  Put(b, 0, 40, 40);
  Put(b, 1, 3, 3);
  ASSERT_TRUE(PadFields(b, 0).ok());
  const int64_t grown = pool->total_region_allocations();
  Put(b, 0, 5, 5);
  Put(b, 1, 3, 6);
  ASSERT_TRUE(PadFields(b, 0).ok());
  EXPECT_EQ(pool->total_region_allocations(), grown);
  EXPECT_EQ(b->padded(0).dims[1], 6);
  pool->Release(b);
}

TEST(RecordPadTest, ADtypeThatDiffersNamesTheFieldAndTheSamples) {
  auto pool = PadPool();
  BatchBuffer* b = pool->Acquire().value();
  b->size = 2;
  Put(b, 0, 1, 2);
  Put(b, 1, 1, 2, ElemType::kInt32);
  Status st = PadFields(b, 0);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("field 'seq'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sample 11 holds int32"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sample 10 holds int16"), std::string::npos) << st.message();
  pool->Release(b);
}

}  // namespace
}  // namespace stoker
