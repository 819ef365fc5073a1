// Copyright 2026 The stoker Authors.
#include "pipeline/record_pad.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace stoker {
namespace {

constexpr int64_t kNoBound = INT64_MAX;

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
  ASSERT_TRUE(PadFields(b, -1, kNoBound).ok());
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
  ASSERT_TRUE(PadFields(b, 0, kNoBound).ok());
  const int64_t grown = pool->total_region_allocations();
  Put(b, 0, 5, 5);
  Put(b, 1, 3, 6);
  ASSERT_TRUE(PadFields(b, 0, kNoBound).ok());
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
  Status st = PadFields(b, 0, kNoBound);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("field 'seq'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sample 11 holds int32"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("sample 10 holds int16"), std::string::npos) << st.message();
  pool->Release(b);
}

TEST(RecordPadTest, ABlockPastTheBoundIsRefusedBeforeAnythingIsReserved) {
  // (1, 1200) and (1200, 1) int16: 4.7 KB of samples pad to 2 x [1200, 1200],
  // 5.5 MiB.
  auto pool = PadPool();
  BatchBuffer* b = pool->Acquire().value();
  b->size = 2;
  Put(b, 0, 1, 1200);
  Put(b, 1, 1200, 1);
  const int64_t before = pool->total_region_allocations();
  Status st = PadFields(b, 0, int64_t{2} * 1200 * 1200 * 2 - 1);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  const std::string& m = st.message();
  EXPECT_NE(m.find("field 'seq'"), std::string::npos) << m;
  EXPECT_NE(m.find("int16 [1200, 1200]"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension 0 (1200) from sample 11 [1200, 1]"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension 1 (1200) from sample 10 [1, 1200]"), std::string::npos) << m;
  EXPECT_NE(m.find("max_padded_bytes=5759999"), std::string::npos) << m;
  EXPECT_EQ(pool->total_region_allocations(), before);
  // At the bound itself the batch is padded.
  ASSERT_TRUE(PadFields(b, 0, int64_t{2} * 1200 * 1200 * 2).ok());
  EXPECT_EQ(b->padded(0).dims[0], 1200);
  pool->Release(b);
}

TEST(RecordPadTest, ABlockPastSizeTIsRefusedNotWrapped) {
  // Two samples whose padded box has 2^62 x 2^62 elements: the byte count
  // would wrap around size_t.
  auto pool = PadPool();
  BatchBuffer* b = pool->Acquire().value();
  b->size = 2;
  const int64_t huge = int64_t{1} << 62;
  const int64_t wide[2] = {1, huge};
  const int64_t tall[2] = {huge, 1};
  ASSERT_TRUE(b->ReserveField(0, 0, 2, ElemType::kInt16, wide, 2).ok());
  ASSERT_TRUE(b->ReserveField(0, 1, 2, ElemType::kInt16, tall, 2).ok());
  Status st = PadFields(b, 0, kNoBound);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.message();
  EXPECT_NE(st.message().find("max_padded_bytes"), std::string::npos) << st.message();
  pool->Release(b);
}

}  // namespace
}  // namespace stoker
