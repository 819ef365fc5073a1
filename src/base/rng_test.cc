// Copyright 2026 The stoker Authors.
#include "base/rng.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace stoker {
namespace {

TEST(RngTest, SameSeedSameStream) {
  Rng a(HashSeed(1, 2, 3)), b(HashSeed(1, 2, 3));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(RngTest, HashSeedDependsOnEveryArgumentAndOrder) {
  std::set<uint64_t> seen = {HashSeed(0, 0, 0), HashSeed(1, 0, 0), HashSeed(0, 1, 0),
                             HashSeed(0, 0, 1), HashSeed(0, 0, 0, 1)};
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_NE(HashSeed(1, 2), HashSeed(2, 1));
}

TEST(RngTest, UniformInRangeWithRightMean) {
  Rng r(7);
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = r.Uniform(0.25, 0.75);
    ASSERT_GE(u, 0.25);
    ASSERT_LT(u, 0.75);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(RngTest, BelowIsUnbiasedAndInRange) {
  Rng r(11);
  std::vector<int> counts(6, 0);
  const int n = 60000;
  for (int i = 0; i < n; ++i) {
    const uint64_t v = r.Below(6);
    ASSERT_LT(v, 6u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 6, 500);
  EXPECT_EQ(r.Below(1), 0u);
}

}  // namespace
}  // namespace stoker
