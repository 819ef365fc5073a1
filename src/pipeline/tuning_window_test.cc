// Copyright 2026 The stoker Authors.
#include "pipeline/tuning_window.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(TuningWindowTest, ClosesAfterMinBatchesAndATenthOfASecond) {
  TuningWindow w(2);
  EXPECT_FALSE(w.OnBatch(1000 * kMs, 8, 0, 0, false));  // opens the window
  EXPECT_FALSE(w.OnBatch(1050 * kMs, 8, 0, 0, false));  // 1 batch
  EXPECT_FALSE(w.OnBatch(1090 * kMs, 8, 0, 0, false));  // 2 batches but only 90 ms
  auto closed = w.OnBatch(1200 * kMs, 8, 30 * kMs, 30 * kMs, false);
  ASSERT_TRUE(closed);
  EXPECT_NEAR(closed->seconds, 0.2, 1e-9);
  EXPECT_EQ(closed->images, 24);
  EXPECT_NEAR(closed->consumer_wait_s, 0.03, 1e-9);
  // The next window starts where this one closed.
  EXPECT_FALSE(w.OnBatch(1300 * kMs, 8, 0, 30 * kMs, false));
  closed = w.OnBatch(1400 * kMs, 4, 0, 30 * kMs, false);
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->images, 12);
  EXPECT_NEAR(closed->consumer_wait_s, 0, 1e-9);
}

TEST(TuningWindowTest, LeavesTheEpochRestartGapOut) {
  TuningWindow w(2);
  EXPECT_FALSE(w.OnBatch(0 + kMs, 8, 0, 0, false));
  EXPECT_FALSE(w.OnBatch(51 * kMs, 8, 0, 0, false));
  // A new epoch: its first batch came 500 ms later, 450 ms of it waited for.
  EXPECT_FALSE(w.OnBatch(551 * kMs, 8, 450 * kMs, 450 * kMs, true));
  auto closed = w.OnBatch(601 * kMs, 8, 0, 450 * kMs, false);
  ASSERT_TRUE(closed);
  EXPECT_NEAR(closed->seconds, 0.1, 1e-9);  // 50 + 50 ms of batches, not the gap
  EXPECT_EQ(closed->images, 16);
  EXPECT_NEAR(closed->consumer_wait_s, 0, 1e-9);  // the restart's wait is not counted
}

}  // namespace
}  // namespace stoker
