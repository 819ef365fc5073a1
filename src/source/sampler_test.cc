// Copyright 2026 The stoker Authors.
#include "source/sampler.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <vector>

#include "stoker/source.h"
#include "testing/memory_source.h"
#include "testing/sanitizers.h"

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

// Issue 32 item 19: two weights of 1e308 used to overflow the sum (inf), so
// the alias table gave them 306 of 30,000 draws instead of ~15,000 each.
TEST(SamplerTest, HugeWeightsAreNormalisedBeforeSumming) {
  std::vector<double> w = {1e308, 1e308};
  w.resize(103, 1.0);
  const SamplerSpec spec = SamplerSpec::Weighted(w, 30000);
  int64_t n = 0;
  ASSERT_TRUE(ValidateSampler(spec, 103, {}, &n).ok());
  const auto draws = SampleEpoch(spec, 103, {}, /*seed=*/1, /*epoch=*/0, false);
  int64_t first = 0, second = 0, rest = 0;
  for (uint32_t d : draws) (d == 0 ? first : d == 1 ? second : rest) += 1;
  EXPECT_EQ(rest, 0);  // the 1.0 weights are ~1e-308 of the total
  EXPECT_NEAR(first, 15000, 600) << second;  // binomial sd ~87
  EXPECT_NEAR(second, 15000, 600) << first;
  // Without replacement the two come first, in either order.
  const auto two = SampleEpoch(SamplerSpec::Weighted(w, 2, false), 103, {}, 1, 0, false);
  EXPECT_EQ(std::set<uint32_t>(two.begin(), two.end()), (std::set<uint32_t>{0, 1}));
}

// Issue 32 item 20: denormal weights (1e-320) made every key log(u)/w -inf, so
// draws without replacement were 0, 1, 2, 3, 4 for every seed and epoch.
TEST(SamplerTest, TinyWeightsAreRescaled) {
  const std::vector<double> w(103, 1e-320);
  std::set<std::vector<uint32_t>> seen;
  for (int e = 0; e < 6; ++e) {
    const auto d = SampleEpoch(SamplerSpec::Weighted(w, 5, false), 103, {}, 7, e, false);
    ASSERT_EQ(d.size(), 5u);
    EXPECT_EQ(std::set<uint32_t>(d.begin(), d.end()).size(), 5u);
    seen.insert(d);
  }
  EXPECT_EQ(seen.size(), 6u);  // a different draw each epoch
  EXPECT_EQ(seen.count({0, 1, 2, 3, 4}), 0u);
  // With replacement: uniform over the 103.
  const auto many = SampleEpoch(SamplerSpec::Weighted(w, 103000), 103, {}, 7, 0, false);
  std::vector<int64_t> counts(103, 0);
  for (uint32_t d : many) ++counts.at(d);
  EXPECT_LT(*std::max_element(counts.begin(), counts.end()), 1200);  // mean 1000, sd ~32
  EXPECT_GT(*std::min_element(counts.begin(), counts.end()), 800);
  // Mixed scales keep their proportions: 1e-320 vs 3e-320 is 1 : 3.
  const auto mixed = SampleEpoch(SamplerSpec::Weighted({1e-320, 3e-320}, 40000), 2, {}, 3, 0, false);
  int64_t ones = 0;
  for (uint32_t d : mixed) ones += d == 1;
  EXPECT_NEAR(ones, 30000, 600);
}

// Issue 32 item 12: num_samples = 2^32 - 1 with replacement used to
// materialise every draw (a 17 GB vector) at the first read. Draws are made
// on demand now: an epoch of 2^32 - 1 draws over 103 samples is read under
// a 1 GiB address-space limit, in a child process.
TEST(SamplerTest, HugeNumSamplesIsDrawnOnDemand) {
  std::vector<MemorySample> samples(103);
  for (int i = 0; i < 103; ++i) samples[i].name = "s" + std::to_string(i);
  testing::MemorySource source(std::move(samples));
  const SamplerSpec spec = SamplerSpec::Weighted(std::vector<double>(103, 1.0), 0xFFFFFFFFll);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
#ifndef STOKER_SANITIZED  // the sanitizers' shadow memory cannot start under the limit
    struct rlimit lim = {size_t{1} << 30, size_t{1} << 30};
    ::setrlimit(RLIMIT_AS, &lim);
#endif
    try {
      EpochSpec e;
      e.sampler = &spec;
      e.seed = 5;
      auto reader = source.StartEpoch(e);
      if (!reader.ok() || reader.value()->size() != 0xFFFFFFFFll) ::_exit(2);
      // Every read names a sample in range; the draws are a function of the position.
      for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{0xFFFFFFFE}}) {
        const int64_t k = reader.value()->KeyAt(p);
        if (k < 0 || k >= 103 || reader.value()->KeyAt(p) != k) ::_exit(3);
      }
    } catch (...) {  // std::bad_alloc: the draws were materialised
      ::_exit(4);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The on-demand draws are the same whichever positions are read, in any order.
TEST(SamplerTest, OnDemandDrawsMatchTheEpochSequence) {
  const SamplerSpec spec = SamplerSpec::Weighted({1, 2, 3, 4}, 1000);
  std::vector<MemorySample> samples(4);
  testing::MemorySource source(std::move(samples));
  EpochSpec e;
  e.sampler = &spec;
  e.seed = 9;
  e.epoch = 2;
  auto reader = source.StartEpoch(e).value();
  const auto draws = SampleEpoch(spec, 4, {}, 9, 2, false);
  ASSERT_EQ(reader->size(), 1000);
  for (int64_t p = 999; p >= 0; --p) EXPECT_EQ(reader->KeyAt(p), draws[p]) << p;
}

}  // namespace
}  // namespace stoker
