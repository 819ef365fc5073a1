// Copyright 2026 The stoker Authors.
//
// Batch assembly over hand-made position batches: skip, a stream's end,
// padding and the delivered counts, with no loader, no threads, no clock.
#include "pipeline/batch_assembler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace stoker {
namespace {

constexpr int kB = 4;
constexpr int64_t kNone = int64_t{1} << 62;  // no stream end (random access)
using Carry = BatchAssembler::Carry;

class BatchAssemblerTest : public ::testing::Test {
 protected:
  BatchAssemblerTest() {
    BatchShape shape;
    shape.batch_size = kB;
    shape.height = 1;
    shape.width = 1;
    shape.dtype = DType::kUint8;
    pool_ = BatchPool::Create(shape, HostAllocator(), 16);
  }
  ~BatchAssemblerTest() override {
    for (BatchBuffer* b : held_) pool_->Release(b);
  }

  // Position batch b: sample id 10*p + 1 at position p (pixels = id), or a
  // skipped slot where `bad` says so.
  BatchBuffer* PositionBatch(int64_t b, std::vector<bool> bad = {}) {
    BatchBuffer* buf = pool_->Acquire().value();
    buf->size = kB;
    for (int s = 0; s < kB; ++s) {
      const int64_t p = b * kB + s;
      const bool skipped = s < static_cast<int>(bad.size()) && bad[s];
      buf->ids()[s] = skipped ? BatchAssembler::kSkippedId : 10 * p + 1;
      buf->labels()[s] = p % 3;
      buf->slot(s)[0] = static_cast<uint8_t>(buf->ids()[s]);
      buf->errors()[s] = Status::OK();
    }
    return buf;
  }
  // The ids of a delivered batch (checked against its pixels); the test
  // releases it.
  std::vector<int64_t> Ids(BatchBuffer* buf) {
    held_.push_back(buf);
    std::vector<int64_t> ids(buf->ids(), buf->ids() + buf->size);
    for (int s = 0; s < buf->size; ++s) {
      EXPECT_EQ(buf->slot(s)[0], static_cast<uint8_t>(ids[s]));
      EXPECT_EQ(buf->labels()[s], ((ids[s] - 1) / 10) % 3);
    }
    return ids;
  }

  std::shared_ptr<BatchPool> pool_;
  std::vector<BatchBuffer*> held_;
};

TEST_F(BatchAssemblerTest, CompactClosesTheGapsInOrderAndCutsAStreamsEnd) {
  BatchBuffer* buf = PositionBatch(2, {false, true, false, false});
  std::vector<int64_t> pos;
  EXPECT_EQ(BatchAssembler::Compact(2, kB, kNone, buf, &pos), 3);
  EXPECT_EQ(pos, (std::vector<int64_t>{8, 10, 11}));
  EXPECT_EQ(Ids(buf), (std::vector<int64_t>{81, 101, 111}));

  BatchBuffer* tail = PositionBatch(1, {true});
  EXPECT_EQ(BatchAssembler::Compact(1, kB, /*valid_end=*/7, tail, &pos), 2);  // 4..6 exist
  EXPECT_EQ(pos, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(Ids(tail), (std::vector<int64_t>{51, 61}));
}

TEST_F(BatchAssemblerTest, FullBatchesPassThroughAndSkipsArePackedIntoFullOnes) {
  Carry carry;
  BatchBuffer* b0 = PositionBatch(0);
  EXPECT_EQ(BatchAssembler::Assemble(0, kB, kNone, b0, &carry, pool_.get()), b0);
  EXPECT_EQ(carry.buffer, nullptr);
  EXPECT_EQ(Ids(b0), (std::vector<int64_t>{1, 11, 21, 31}));
  // Batch 1 loses two samples: they wait for batch 2.
  EXPECT_EQ(BatchAssembler::Assemble(1, kB, kNone, PositionBatch(1, {true, false, true}), &carry,
                                     pool_.get()),
            nullptr);
  ASSERT_NE(carry.buffer, nullptr);
  EXPECT_EQ(carry.positions, (std::vector<int64_t>{5, 7}));
  // Batch 2 completes it; its last two samples are carried on.
  BatchBuffer* ready =
      BatchAssembler::Assemble(2, kB, kNone, PositionBatch(2), &carry, pool_.get());
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(Ids(ready), (std::vector<int64_t>{51, 71, 81, 91}));
  EXPECT_EQ(carry.positions, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(Ids(carry.buffer), (std::vector<int64_t>{101, 111}));
  carry.buffer = nullptr;  // held_ releases it
  // A batch with nothing good goes back to the pool.
  EXPECT_EQ(BatchAssembler::Assemble(3, kB, kNone, PositionBatch(3, {true, true, true, true}),
                                     &carry, pool_.get()),
            nullptr);
  EXPECT_EQ(carry.buffer, nullptr);
  const int allocated = pool_->allocated();
  BatchBuffer* again = pool_->Acquire().value();  // the released one, not a new one
  EXPECT_EQ(pool_->allocated(), allocated);
  pool_->Release(again);
}

TEST_F(BatchAssemblerTest, DeliveredCountsPositionsUpToTheFirstCarriedOne) {
  BatchAssembler a(pool_.get(), kB, /*drop_last=*/false, /*pads_ranks=*/false);
  a.BeginEpoch();
  Carry carry = a.TakeCarry();
  BatchBuffer* b0 = BatchAssembler::Assemble(0, kB, kNone, PositionBatch(0), &carry,
                                             pool_.get());
  a.Delivered(b0, &carry, 0, false);
  EXPECT_EQ(b0->index, 0);
  EXPECT_EQ(a.delivered_positions(), 4);
  carry = a.TakeCarry();
  EXPECT_EQ(BatchAssembler::Assemble(1, kB, kNone, PositionBatch(1, {true, true}), &carry,
                                     pool_.get()),
            nullptr);
  BatchBuffer* b1 = BatchAssembler::Assemble(2, kB, kNone, PositionBatch(2), &carry, pool_.get());
  a.Delivered(b1, &carry, 2, false);
  EXPECT_EQ(b1->index, 1);
  // Positions 10 and 11 are still carried: a resume reads them again.
  EXPECT_EQ(a.delivered_positions(), 10);
  EXPECT_EQ(a.delivered_samples(), 8);
  Ids(b0);
  Ids(b1);
  // Stop(): the carried samples go back; a new epoch counts from zero.
  a.DropCarry();
  EXPECT_EQ(a.TakeCarry().buffer, nullptr);
  a.BeginEpoch();
  EXPECT_EQ(a.delivered_positions(), 0);
  a.Release();
}

TEST_F(BatchAssemblerTest, PutBackKeepsCarriedSamplesUnlessSomeAreHeldAlready) {
  BatchAssembler a(pool_.get(), kB, false, false);
  Carry carry;
  carry.buffer = PositionBatch(0);
  carry.buffer->size = 2;
  carry.positions = {0, 1};
  EXPECT_TRUE(a.PutBack(&carry));
  EXPECT_EQ(carry.buffer, nullptr);
  Carry other;
  other.buffer = PositionBatch(1);
  EXPECT_FALSE(a.PutBack(&other));  // the caller releases `other`
  pool_->Release(other.buffer);
  Carry back = a.TakeCarry();
  EXPECT_EQ(back.positions, (std::vector<int64_t>{0, 1}));
  pool_->Release(back.buffer);
}

TEST_F(BatchAssemblerTest, ARankShortOfSamplesIsPaddedWithItsFirstOnesInOrder) {
  BatchAssembler a(pool_.get(), kB, /*drop_last=*/false, /*pads_ranks=*/true);
  a.BeginEpoch();
  // This rank's 10 positions: batch 0 whole, batch 1 with one bad sample,
  // then the two of batch 2: 9 good samples, one short of its share.
  Carry carry = a.TakeCarry();
  BatchBuffer* b0 = BatchAssembler::Assemble(0, kB, kNone, PositionBatch(0), &carry,
                                             pool_.get());
  a.KeepForPadding(b0);
  a.Delivered(b0, &carry, 0, false);
  EXPECT_EQ(BatchAssembler::Assemble(1, kB, kNone, PositionBatch(1, {false, true}), &carry,
                                     pool_.get()),
            nullptr);
  BatchBuffer* b1 = BatchAssembler::Assemble(2, kB, /*valid_end=*/10, PositionBatch(2), &carry,
                                             pool_.get());
  ASSERT_NE(b1, nullptr);
  a.KeepForPadding(b1);  // already holds a batch's worth: nothing more kept
  a.Delivered(b1, &carry, 2, false);
  EXPECT_EQ(Ids(b1), (std::vector<int64_t>{41, 61, 71, 81}));
  carry = a.TakeCarry();
  ASSERT_NE(carry.buffer, nullptr);
  EXPECT_EQ(carry.buffer->size, 1);  // position 9
  // The end: 10 positions owed, 8 delivered, 1 carried: one repeat.
  ASSERT_TRUE(a.StartPadding(/*total=*/10, carry.buffer->size));
  EXPECT_TRUE(a.padding());
  BatchBuffer* last = carry.buffer;
  ASSERT_TRUE(a.FillPadded(last).ok());
  EXPECT_EQ(Ids(last), (std::vector<int64_t>{91, 1}));  // the carried one, then the first
  EXPECT_EQ(last->index, 2);
  EXPECT_EQ(a.padded_samples(), 1);
  EXPECT_FALSE(a.padding());
  EXPECT_EQ(a.delivered_positions(), BatchAssembler::kAllPositions);
  Ids(b0);
  a.Release();
}

TEST_F(BatchAssemblerTest, PaddingOwesNothingWithoutSkipsOrUnderDropLast) {
  BatchAssembler plain(pool_.get(), kB, false, /*pads_ranks=*/false);
  BatchBuffer* b0 = PositionBatch(0);
  plain.KeepForPadding(b0);
  EXPECT_FALSE(plain.StartPadding(12, 0));  // not ranks under skip
  BatchAssembler drop(pool_.get(), kB, /*drop_last=*/true, true);
  drop.KeepForPadding(b0);
  Carry none;
  drop.Delivered(b0, &none, 0, false);
  // 6 positions under drop_last owe one batch of 4, delivered already.
  EXPECT_FALSE(drop.StartPadding(6, 0));
  EXPECT_TRUE(drop.StartPadding(9, 0));  // two batches owed, one delivered
  Ids(b0);
  plain.Release();
  drop.Release();
}

}  // namespace
}  // namespace stoker
