// Copyright 2026 The stoker Authors.
// The chi-square and Kolmogorov-Smirnov functions against closed forms and
// textbook values.
#include "stats/hypothesis.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(RegularizedGammaQ, MatchesClosedForms) {
  for (double x : {0.01, 0.5, 1.0, 2.0, 7.5, 30.0}) {
    EXPECT_NEAR(RegularizedGammaQ(1, x), std::exp(-x), 1e-13) << x;            // Q(1, x)
    EXPECT_NEAR(RegularizedGammaQ(2, x), (1 + x) * std::exp(-x), 1e-13) << x;  // Q(2, x)
    EXPECT_NEAR(RegularizedGammaQ(0.5, x), std::erfc(std::sqrt(x)), 1e-13) << x;
  }
  EXPECT_EQ(RegularizedGammaQ(3, 0), 1.0);
}

TEST(ChiSquareSurvival, MatchesClosedFormsAndTables) {
  for (double x : {0.1, 1.0, 3.0, 11.07, 40.0}) {
    EXPECT_NEAR(ChiSquareSurvival(x, 2), std::exp(-x / 2), 1e-13) << x;
    EXPECT_NEAR(ChiSquareSurvival(x, 1), std::erfc(std::sqrt(x / 2)), 1e-13) << x;
    // df 3 and 5: erfc(sqrt(x/2)) + sqrt(2x/pi) e^(-x/2) (1 [+ x/3]).
    const double base = std::erfc(std::sqrt(x / 2)),
                 g = std::sqrt(2 * x / M_PI) * std::exp(-x / 2);
    EXPECT_NEAR(ChiSquareSurvival(x, 3), base + g, 1e-12) << x;
    EXPECT_NEAR(ChiSquareSurvival(x, 5), base + g * (1 + x / 3), 1e-12) << x;
  }
  // Table values: the 5% critical points for 1 and 10 degrees of freedom.
  EXPECT_NEAR(ChiSquareSurvival(3.841459, 1), 0.05, 1e-6);
  EXPECT_NEAR(ChiSquareSurvival(18.307038, 10), 0.05, 1e-6);
}

TEST(ChiSquareTest, LoadedDieExample) {
  // 60 rolls of a die: 5, 8, 9, 8, 10, 20 against a fair die (10 each):
  // chi2 = (25 + 4 + 1 + 4 + 0 + 100) / 10 = 13.4 with 5 degrees of freedom.
  const ChiSquareResult r = ChiSquareTest({5, 8, 9, 8, 10, 20}, {1, 1, 1, 1, 1, 1});
  EXPECT_NEAR(r.statistic, 13.4, 1e-12);
  EXPECT_EQ(r.df, 5);
  const double x = 13.4, g = std::sqrt(2 * x / M_PI) * std::exp(-x / 2);
  EXPECT_NEAR(r.p_value, std::erfc(std::sqrt(x / 2)) + g * (1 + x / 3), 1e-12);
  EXPECT_NEAR(r.p_value, 0.0199, 1e-4);
}

TEST(ChiSquareTest, ProportionsAreNormalisedAndEdgeCases) {
  // The same shape at another scale: no difference.
  ChiSquareResult r = ChiSquareTest({10, 20, 30}, {100, 200, 300});
  EXPECT_NEAR(r.statistic, 0, 1e-12);
  EXPECT_NEAR(r.p_value, 1, 1e-12);
  // A category the proportions say is impossible.
  r = ChiSquareTest({10, 20, 1}, {1, 2, 0});
  EXPECT_TRUE(std::isinf(r.statistic));
  EXPECT_EQ(r.p_value, 0);
  // ... but absent on both sides it does not count.
  r = ChiSquareTest({10, 20, 0}, {1, 2, 0});
  EXPECT_EQ(r.df, 1);
  EXPECT_NEAR(r.p_value, 1, 1e-12);
  // Nothing observed, or one category: nothing to test.
  EXPECT_EQ(ChiSquareTest({0, 0}, {1, 1}).p_value, 1);
  EXPECT_EQ(ChiSquareTest({5}, {1}).p_value, 1);
}

TEST(KsStatistic, HandWorkedExamples) {
  // {1..5} against {3..8}: the CDFs differ most just after 5 (1 vs 3/6).
  Histogram a, b;
  for (int v = 1; v <= 5; ++v) a[v] = 1;
  for (int v = 3; v <= 8; ++v) b[v] = 1;
  EXPECT_NEAR(KsStatistic(a, b), 0.5, 1e-15);
  EXPECT_NEAR(KsStatistic(b, a), 0.5, 1e-15);
  EXPECT_EQ(KsStatistic(a, a), 0);
  // Disjoint supports.
  EXPECT_EQ(KsStatistic({{1, 4}}, {{2, 7}}), 1);
  // Ties: {1, 1, 2, 2} against {1, 2, 2, 2}: 0.5 vs 0.25 after 1.
  EXPECT_NEAR(KsStatistic({{1, 2}, {2, 2}}, {{1, 1}, {2, 3}}), 0.25, 1e-15);
  // Scale does not matter, only the shape.
  EXPECT_EQ(KsStatistic({{1, 1}, {2, 1}}, {{1, 50}, {2, 50}}), 0);
  EXPECT_EQ(KsStatistic({}, a), 0);
}

TEST(Kolmogorov, CriticalValuesMatchTheTable) {
  // Q_KS(c(alpha)) = alpha for the usual table values of c(alpha).
  EXPECT_NEAR(KolmogorovSurvival(1.2238), 0.10, 2e-4);
  EXPECT_NEAR(KolmogorovSurvival(1.3581), 0.05, 2e-4);
  EXPECT_NEAR(KolmogorovSurvival(1.6276), 0.01, 2e-5);
  EXPECT_EQ(KolmogorovSurvival(0), 1);
  // c(0.05) = 1.3581; threshold c sqrt((n + m) / (n m)).
  EXPECT_NEAR(KsCriticalValue(100, 100, 0.05), 1.35810 * std::sqrt(0.02), 1e-5);
  EXPECT_NEAR(KsCriticalValue(50, 200, 0.01), 1.62762 * std::sqrt(250.0 / 10000), 1e-5);
  EXPECT_TRUE(std::isinf(KsCriticalValue(0, 10, 0.05)));
  // p-value falls as D grows; D = 0 gives 1.
  EXPECT_NEAR(KsPValue(0, 30, 40), 1, 1e-12);
  EXPECT_GT(KsPValue(0.2, 30, 40), KsPValue(0.4, 30, 40));
  EXPECT_LT(KsPValue(1.0, 30, 40), 1e-6);
}

}  // namespace
}  // namespace stoker
