// Copyright 2026 The stoker Authors.
#include "stats/hypothesis.h"

#include <cmath>
#include <limits>

namespace stoker {

double RegularizedGammaQ(double a, double x) {
  if (x <= 0) return 1.0;
  if (std::isinf(x)) return 0.0;
  const double log_prefix = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    // P(a, x) by its series; Q = 1 - P.
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 10000; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-15) break;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  // Continued fraction (modified Lentz).
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(log_prefix) * h;
}

double ChiSquareSurvival(double x, double df) { return RegularizedGammaQ(df / 2, x / 2); }

ChiSquareResult ChiSquareTest(const std::vector<int64_t>& observed,
                              const std::vector<double>& proportions) {
  ChiSquareResult r;
  double total_p = 0;
  int64_t n = 0;
  for (size_t i = 0; i < observed.size() && i < proportions.size(); ++i) {
    total_p += proportions[i];
    n += observed[i];
  }
  if (n == 0 || total_p <= 0) return r;
  int positive = 0;
  for (size_t i = 0; i < observed.size() && i < proportions.size(); ++i) {
    const double p = proportions[i] / total_p;
    if (p <= 0) {
      if (observed[i] > 0) r.statistic = std::numeric_limits<double>::infinity();
      continue;
    }
    ++positive;
    const double e = p * static_cast<double>(n);
    const double diff = static_cast<double>(observed[i]) - e;
    r.statistic += diff * diff / e;
  }
  r.df = positive - 1;
  if (std::isinf(r.statistic)) {
    r.p_value = 0;
  } else {
    r.p_value = r.df > 0 ? ChiSquareSurvival(r.statistic, r.df) : 1.0;
  }
  return r;
}

int64_t HistogramTotal(const Histogram& h) {
  int64_t n = 0;
  for (const auto& [v, c] : h) n += c;
  return n;
}

double KsStatistic(const Histogram& a, const Histogram& b) {
  const double na = static_cast<double>(HistogramTotal(a));
  const double nb = static_cast<double>(HistogramTotal(b));
  if (na == 0 || nb == 0) return 0;
  auto ia = a.begin(), ib = b.begin();
  int64_t ca = 0, cb = 0;
  double d = 0;
  while (ia != a.end() || ib != b.end()) {
    // Step both CDFs past the next distinct value.
    int64_t v;
    if (ib == b.end() || (ia != a.end() && ia->first <= ib->first)) {
      v = ia->first;
    } else {
      v = ib->first;
    }
    if (ia != a.end() && ia->first == v) ca += (ia++)->second;
    if (ib != b.end() && ib->first == v) cb += (ib++)->second;
    d = std::fmax(d, std::fabs(ca / na - cb / nb));
  }
  return d;
}

double KolmogorovSurvival(double lambda) {
  if (lambda <= 0) return 1.0;
  const double a2 = -2.0 * lambda * lambda;
  double sum = 0, fac = 2, prev = 0;
  for (int j = 1; j <= 100; ++j) {
    const double term = fac * std::exp(a2 * j * j);
    sum += term;
    if (std::fabs(term) <= 1e-10 * prev || std::fabs(term) <= 1e-16 * sum) {
      return std::fmin(1.0, std::fmax(0.0, sum));
    }
    fac = -fac;
    prev = std::fabs(term);
  }
  return 1.0;  // no convergence: lambda tiny, Q ~ 1
}

double KsPValue(double d, int64_t n, int64_t m) {
  if (n <= 0 || m <= 0) return 1.0;
  const double en = std::sqrt(static_cast<double>(n) * m / (static_cast<double>(n) + m));
  return KolmogorovSurvival((en + 0.12 + 0.11 / en) * d);
}

double KsCriticalValue(int64_t n, int64_t m, double alpha) {
  if (n <= 0 || m <= 0) return std::numeric_limits<double>::infinity();
  const double c = std::sqrt(-0.5 * std::log(alpha / 2));
  return c * std::sqrt((static_cast<double>(n) + m) / (static_cast<double>(n) * m));
}

}  // namespace stoker
