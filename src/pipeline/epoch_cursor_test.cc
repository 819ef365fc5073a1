// Copyright 2026 The stoker Authors.
//
// The cursor's arithmetic alone: no loader, no threads, no clock.
#include "pipeline/epoch_cursor.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

LoaderState Saved(int64_t epoch, int64_t consumed, int world_size) {
  LoaderState st;
  st.epoch = epoch;
  st.consumed = consumed;
  st.world_size = world_size;
  return st;
}

TEST(EpochCursor, BeforeTheFirstStartTheStateIsTheNextEpochsBeginning) {
  EpochCursor c(/*world_size=*/1, /*epoch_samples=*/100);
  EXPECT_EQ(c.State(0).epoch, 0);
  c.SetEpoch(4);
  EXPECT_EQ(c.epoch(), 4);
  const LoaderState st = c.State(50);  // positions are ignored before a Start
  EXPECT_EQ(st.epoch, 4);
  EXPECT_EQ(st.consumed, 0);
}

TEST(EpochCursor, StateCountsThisRanksPositionsTimesTheRanksAfterTheOffset) {
  EpochCursor c(/*world_size=*/4, /*epoch_samples=*/1000);
  c.Resume(Saved(2, 120, 3));  // saved at another world size
  EXPECT_TRUE(c.resume_pending());
  EXPECT_EQ(c.State(0).consumed, 120);  // pending: the saved state, unchanged
  c.Begin();
  EXPECT_EQ(c.running_epoch(), 2);
  EXPECT_EQ(c.offset(), 120);
  EXPECT_FALSE(c.resume_pending());
  EXPECT_EQ(c.next_epoch(), 3);
  const LoaderState st = c.State(/*local_positions=*/25);
  EXPECT_EQ(st.epoch, 2);
  EXPECT_EQ(st.consumed, 120 + 25 * 4);
  EXPECT_EQ(st.world_size, 4);
}

TEST(EpochCursor, AnEpochHandedOutEntirelyIsTheNextEpochsBeginning) {
  EpochCursor c(2, 10);
  c.Begin();
  EXPECT_EQ(c.State(4).consumed, 8);
  const LoaderState done = c.State(5);  // 5 per rank x 2 ranks = the 10 draws
  EXPECT_EQ(done.epoch, 1);
  EXPECT_EQ(done.consumed, 0);
  c.Finish();
  EXPECT_EQ(c.State(0).epoch, 1);
}

TEST(EpochCursor, ResumingAFinishedEpochStartsTheNextFromItsBeginning) {
  EpochCursor c(1, 10);
  c.Resume(Saved(3, 10, 1));
  EXPECT_FALSE(c.resume_pending());
  EXPECT_TRUE(c.StartsFromTheBeginning(4));
  c.Begin();
  EXPECT_EQ(c.running_epoch(), 4);
  EXPECT_EQ(c.offset(), 0);
}

TEST(EpochCursor, SetEpochElsewhereDropsAPendingResume) {
  EpochCursor c(1, 100);
  c.Resume(Saved(5, 40, 1));
  c.SetEpoch(5);  // the same epoch: the resume stands
  EXPECT_TRUE(c.resume_pending());
  EXPECT_FALSE(c.StartsFromTheBeginning(5));
  c.SetEpoch(6);
  EXPECT_FALSE(c.resume_pending());
  c.Begin();
  EXPECT_EQ(c.running_epoch(), 6);
  EXPECT_EQ(c.offset(), 0);
}

TEST(EpochCursor, AStreamsStateIsNeverCappedAtAnEpochLength) {
  EpochCursor c(1, -1);  // a stream: no known length
  c.Begin();
  const LoaderState st = c.State(1 << 20);
  EXPECT_EQ(st.epoch, 0);
  EXPECT_EQ(st.consumed, 1 << 20);
}

TEST(EpochCursor, CheckResumeRefusesNegativePositionsAndStreamsAtAnotherWorldSize) {
  EXPECT_EQ(EpochCursor::CheckResume(Saved(0, -1, 1), true, 1).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(EpochCursor::CheckResume(Saved(0, 40, 2), /*random_access=*/true, 4).ok());
  EXPECT_EQ(EpochCursor::CheckResume(Saved(0, 40, 2), /*random_access=*/false, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(EpochCursor::CheckResume(Saved(0, 40, 4), false, 4).ok());
  EXPECT_TRUE(EpochCursor::CheckResume(Saved(3, 0, 2), false, 4).ok());  // an epoch boundary
}

// Issue 32 item 28: a negative epoch or a world size below 1 is refused,
// naming the field, for C++ callers as for Python's load_state_dict.
TEST(EpochCursor, CheckResumeRefusesANegativeEpochAndAWorldSizeBelowOne) {
  Status s = EpochCursor::CheckResume(Saved(-5, 0, 1), true, 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("epoch must be >= 0, got -5"), std::string::npos) << s.message();
  s = EpochCursor::CheckResume(Saved(0, 0, 0), true, 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("world_size must be >= 1, got 0"), std::string::npos)
      << s.message();
}

TEST(EpochCursor, SpecForCarriesTheOptionsAndTheOffset) {
  LoaderOptions o;
  o.seed = 9;
  o.shuffle = true;
  o.rank = 1;
  o.world_size = 3;
  o.drop_last = true;
  const EpochSpec s = SpecFor(o, 7, 33);
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.epoch, 7);
  EXPECT_TRUE(s.shuffle);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 3);
  EXPECT_TRUE(s.drop_last);
  EXPECT_EQ(s.offset, 33);
  EXPECT_EQ(s.sampler, &o.sampler);
}

}  // namespace
}  // namespace stoker
