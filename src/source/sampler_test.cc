// Copyright 2026 The stoker Authors.
#include "source/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "stoker/source.h"

namespace stoker {
namespace {

// Pearson's chi-square statistic of `counts` against probabilities `p`.
double ChiSquare(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  double chi2 = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const double expected = p[k] * static_cast<double>(total);
    chi2 += (counts[k] - expected) * (counts[k] - expected) / expected;
  }
  return chi2;
}

// Upper 0.1% points of chi-square (df = 3, 4, 9).
constexpr double kChi2Df3 = 16.27, kChi2Df4 = 18.47, kChi2Df9 = 27.88;

TEST(SamplerTest, WeightedWithReplacementFollowsTheWeights) {
  const std::vector<double> w = {1, 2, 3, 4, 10};
  SamplerSpec spec = SamplerSpec::Weighted(w, 60000);
  int64_t n = 0;
  ASSERT_TRUE(ValidateSampler(spec, 5, {}, &n).ok());
  EXPECT_EQ(n, 60000);
  const auto draws = SampleEpoch(spec, 5, {}, /*seed=*/7, /*epoch=*/0, false);
  ASSERT_EQ(draws.size(), 60000u);
  std::vector<int64_t> counts(5, 0);
  for (uint32_t d : draws) ++counts.at(d);
  std::vector<double> p;
  for (double x : w) p.push_back(x / 20.0);
  EXPECT_LT(ChiSquare(counts, p), kChi2Df4);
  // A wrong proportion would be caught: against uniform it is far off.
  EXPECT_GT(ChiSquare(counts, {0.2, 0.2, 0.2, 0.2, 0.2}), 1000);
}

TEST(SamplerTest, ZeroWeightsAreNeverDrawn) {
  const auto draws =
      SampleEpoch(SamplerSpec::Weighted({0, 1, 0, 1}, 5000), 4, {}, 1, 3, false);
  for (uint32_t d : draws) EXPECT_TRUE(d == 1 || d == 3) << d;
}

TEST(SamplerTest, ClassBalancedMakesClassesEquallyLikely) {
  // 10 classes of sizes 1, 2, ..., 10 (55 samples), drawn 55,000 times.
  std::vector<int64_t> labels;
  for (int c = 0; c < 10; ++c) {
    for (int i = 0; i <= c; ++i) labels.push_back(c);
  }
  SamplerSpec spec = SamplerSpec::ClassBalanced(55000);
  int64_t n = 0;
  ASSERT_TRUE(ValidateSampler(spec, 55, labels, &n).ok());
  const auto draws = SampleEpoch(spec, 55, labels, 11, 2, false);
  std::vector<int64_t> per_class(10, 0);
  for (uint32_t d : draws) ++per_class.at(labels.at(d));
  EXPECT_LT(ChiSquare(per_class, std::vector<double>(10, 0.1)), kChi2Df9);
  // Within the largest class, every sample equally likely.
  std::vector<int64_t> in_class9(10, 0);
  for (uint32_t d : draws) {
    if (labels[d] == 9) ++in_class9[d - 45];
  }
  EXPECT_LT(ChiSquare(in_class9, std::vector<double>(10, 0.1)), kChi2Df9);
}

TEST(SamplerTest, WithoutReplacementDrawsDistinctSamplesLikeSequentialDraws) {
  const std::vector<double> w = {1, 1, 2, 4};
  SamplerSpec spec = SamplerSpec::Weighted(w, 2, /*replacement=*/false);
  int64_t n = 0;
  ASSERT_TRUE(ValidateSampler(spec, 4, {}, &n).ok());
  // The first draw of each epoch is proportional to the weights; over
  // 50,000 epochs the counts follow them.
  std::vector<int64_t> first(4, 0);
  for (int64_t e = 0; e < 50000; ++e) {
    const auto d = SampleEpoch(spec, 4, {}, 5, e, false);
    ASSERT_EQ(d.size(), 2u);
    ASSERT_NE(d[0], d[1]);
    ++first[d[0]];
  }
  EXPECT_LT(ChiSquare(first, {0.125, 0.125, 0.25, 0.5}), kChi2Df3);
  // All of them without replacement: a permutation.
  const auto all = SampleEpoch(SamplerSpec::Weighted(w, 4, false), 4, {}, 5, 0, false);
  EXPECT_EQ(std::set<uint32_t>(all.begin(), all.end()).size(), 4u);
}

TEST(SamplerTest, DrawsDependOnSeedAndEpochOnly) {
  const SamplerSpec spec = SamplerSpec::Weighted({1, 2, 3, 4, 5, 6}, 100);
  EXPECT_EQ(SampleEpoch(spec, 6, {}, 3, 4, false), SampleEpoch(spec, 6, {}, 3, 4, false));
  EXPECT_NE(SampleEpoch(spec, 6, {}, 3, 4, false), SampleEpoch(spec, 6, {}, 3, 5, false));
  EXPECT_NE(SampleEpoch(spec, 6, {}, 3, 4, false), SampleEpoch(spec, 6, {}, 4, 4, false));
}

TEST(SamplerTest, SubsetKeepsOrderOrShufflesTheSubset) {
  const SamplerSpec spec = SamplerSpec::Subset({7, 3, 5, 3});
  int64_t n = 0;
  ASSERT_TRUE(ValidateSampler(spec, 8, {}, &n).ok());
  EXPECT_EQ(n, 4);
  EXPECT_EQ(SampleEpoch(spec, 8, {}, 1, 0, false), (std::vector<uint32_t>{7, 3, 5, 3}));
  auto shuffled = SampleEpoch(spec, 8, {}, 1, 0, true);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, (std::vector<uint32_t>{3, 3, 5, 7}));
  bool differs = false;  // some epoch reorders it
  for (int64_t e = 0; e < 10 && !differs; ++e) {
    differs = SampleEpoch(spec, 8, {}, 1, e, true) != std::vector<uint32_t>{7, 3, 5, 3};
  }
  EXPECT_TRUE(differs);
}

TEST(SamplerTest, AllIsThePermutationOrIdentity) {
  const SamplerSpec all;
  EXPECT_EQ(SampleEpoch(all, 5, {}, 2, 1, true), EpochPermutation(5, 2, 1));
  EXPECT_EQ(SampleEpoch(all, 3, {}, 2, 1, false), (std::vector<uint32_t>{0, 1, 2}));
}

TEST(SamplerTest, RejectsBadSpecsNamingTheProblem) {
  int64_t n = 0;
  Status s = ValidateSampler(SamplerSpec::Weighted({1, 2}), 3, {}, &n);
  EXPECT_NE(s.message().find("one weight per sample"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::Weighted({1, -1, 2}), 3, {}, &n);
  EXPECT_NE(s.message().find(">= 0"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::Weighted({0, 0, 0}), 3, {}, &n);
  EXPECT_NE(s.message().find("positive weight"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::Weighted({1, 0, 2}, 3, false), 3, {}, &n);
  EXPECT_NE(s.message().find("exceeds"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::Subset({0, 9}), 3, {}, &n);
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::ClassBalanced(), 3, {}, &n);
  EXPECT_NE(s.message().find("labels"), std::string::npos) << s.message();
  s = ValidateSampler(SamplerSpec::Weighted({1}), -1, {}, &n);
  EXPECT_NE(s.message().find("random-access"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace stoker
