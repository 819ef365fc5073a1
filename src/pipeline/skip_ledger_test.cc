// Copyright 2026 The stoker Authors.
#include "pipeline/skip_ledger.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(SkipLedger, CountsEachFileOnceAndKeepsTheLowestPositionsFailure) {
  SkipLedger l;
  l.Note(SkipLedger::FileOf(7, "a.jpg"), 30, DataLossError("thirty"), false);
  l.Note(SkipLedger::FileOf(7, "a.jpg"), 12, DataLossError("twelve"), false);  // drawn twice
  l.Note(SkipLedger::FileOf(-1, "b.jpg"), 40, DataLossError("forty"), false);
  EXPECT_EQ(l.files_epoch(), 2);
  EXPECT_EQ(l.files_total(), 2);
  EXPECT_EQ(l.FirstFailure().message(), "twelve");
  EXPECT_EQ(SkipLedger::FileOf(-1, "b.jpg"), "#b.jpg");
}

TEST(SkipLedger, ThePrefetchsRecordIsAdoptedOrDropped) {
  SkipLedger l;
  l.Note("1", 3, DataLossError("epoch"), false);
  l.Note("2", 5, DataLossError("prefetched"), true);
  EXPECT_EQ(l.files_epoch(), 1);
  l.BeginEpoch(/*adopt_prefetch=*/true);
  EXPECT_EQ(l.files_epoch(), 1);
  EXPECT_EQ(l.FirstFailure().message(), "prefetched");
  l.Note("3", 1, DataLossError("dropped"), true);
  l.BeginEpoch(/*adopt_prefetch=*/false);
  EXPECT_EQ(l.files_epoch(), 0);
  EXPECT_TRUE(l.FirstFailure().ok());
  EXPECT_EQ(l.files_total(), 3);  // every file ever found bad
}

}  // namespace
}  // namespace stoker
