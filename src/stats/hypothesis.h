// Copyright 2026 The stoker Authors.
//
// The two tests `stoker stats --against` uses, as pure functions:
//  - Pearson's chi-square goodness of fit of observed counts against
//    expected proportions, with its p-value (the regularised upper
//    incomplete gamma function Q(df/2, x/2));
//  - the two-sample Kolmogorov-Smirnov statistic D of two empirical
//    distributions given as value -> count maps (exact for discrete values:
//    the CDFs are compared after each distinct value), its asymptotic
//    p-value (Kolmogorov's distribution with Stephens' small-sample
//    correction, as in Numerical Recipes' probks) and the critical value
//    c(alpha) * sqrt((n + m) / (n * m)), c(alpha) = sqrt(-ln(alpha / 2) / 2).
// Thread-safety: pure functions. Errors: none; degenerate inputs give the
// documented values (see each function).
#ifndef STOKER_STATS_HYPOTHESIS_H_
#define STOKER_STATS_HYPOTHESIS_H_

#include <cstdint>
#include <map>
#include <vector>

namespace stoker {

// Q(a, x) = Gamma(a, x) / Gamma(a), a > 0, x >= 0 (series for x < a + 1,
// continued fraction otherwise; relative accuracy ~1e-12).
double RegularizedGammaQ(double a, double x);

// P(X >= x) for X ~ chi-square with `df` > 0 degrees of freedom.
double ChiSquareSurvival(double x, double df);

struct ChiSquareResult {
  double statistic = 0;  // sum (o - e)^2 / e; +inf when a category with
                         // expected proportion 0 is observed
  int df = 0;            // categories with a positive proportion, minus 1
  double p_value = 1;    // 1 when df == 0 or nothing was observed
};

// `observed[i]` counts against `proportions[i]` (non-negative, normalised
// here; same length). Categories with proportion 0 and count 0 are ignored.
ChiSquareResult ChiSquareTest(const std::vector<int64_t>& observed,
                              const std::vector<double>& proportions);

// A sample as value -> count.
using Histogram = std::map<int64_t, int64_t>;

int64_t HistogramTotal(const Histogram& h);

// sup |F_a - F_b|; 0 when either is empty.
double KsStatistic(const Histogram& a, const Histogram& b);

// Kolmogorov's Q_KS(lambda) = 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2 lambda^2).
double KolmogorovSurvival(double lambda);

// Asymptotic p-value of D for sample sizes n and m.
double KsPValue(double d, int64_t n, int64_t m);

// The D above which the distributions differ at level `alpha`.
double KsCriticalValue(int64_t n, int64_t m, double alpha);

}  // namespace stoker

#endif  // STOKER_STATS_HYPOTHESIS_H_
