// Copyright 2026 The stoker Authors.
#include "stats/drift.h"
#include "stats/hypothesis.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/json.h"

namespace stoker {
namespace {

DriftVerdict ClassBalance(const DatasetStats& now, const DatasetStats& old, double alpha,
                          double min_shift) {
  DriftVerdict v{"class balance"};
  v.threshold = alpha;
  int64_t n_now = 0, n_old = 0;
  for (const ClassStat& c : now.classes) n_now += c.count;
  for (const ClassStat& c : old.classes) n_old += c.count;
  if (n_now == 0 || n_old == 0) {
    v.skipped = true;
    v.detail = "no labelled images on one side";
    return v;
  }
  // Classes are matched by name; when the two sides share no name (e.g. a
  // folder against shards that only number their classes), by label.
  // Names as a saved report holds them (bytes that are not UTF-8 as \xNN),
  // so a live dataset matches its own report.
  std::set<std::string> old_names;
  for (const ClassStat& c : old.classes) old_names.insert(EscapeNonUtf8(c.name));
  bool by_label = true;
  for (const ClassStat& c : now.classes) {
    by_label = by_label && old_names.count(EscapeNonUtf8(c.name)) == 0;
  }
  auto key = [by_label](const ClassStat& c) {
    return by_label ? "label " + std::to_string(c.label) : EscapeNonUtf8(c.name);
  };
  std::map<std::string, std::pair<int64_t, int64_t>> by_name;  // name -> (now, old)
  for (const ClassStat& c : now.classes) by_name[key(c)].first += c.count;
  for (const ClassStat& c : old.classes) by_name[key(c)].second += c.count;
  std::vector<int64_t> observed;
  std::vector<double> proportions;
  std::string unseen;
  for (const auto& [name, counts] : by_name) {
    observed.push_back(counts.first);
    proportions.push_back(static_cast<double>(counts.second));
    if (counts.second == 0 && counts.first > 0) unseen += (unseen.empty() ? "" : ", ") + name;
  }
  const ChiSquareResult r = ChiSquareTest(observed, proportions);
  double tv = 0;
  for (const auto& [name, counts] : by_name) {
    tv += std::fabs(static_cast<double>(counts.first) / static_cast<double>(n_now) -
                    static_cast<double>(counts.second) / static_cast<double>(n_old));
  }
  tv /= 2;
  v.statistic = r.p_value;
  v.shifted = (r.p_value < alpha && tv > min_shift) || !unseen.empty();
  if (!unseen.empty()) {
    v.detail = "classes not in OLD: " + unseen;
  } else {
    char buf[160];
    std::snprintf(buf, sizeof buf, "chi2 = %.4g, df %d, p = %.3g %s alpha %g; proportions' "
                  "total variation %.4f %s %g", r.statistic, r.df, r.p_value,
                  r.p_value < alpha ? "<" : ">=", alpha, tv, tv > min_shift ? ">" : "<=",
                  min_shift);
    v.detail = buf;
  }
  if (by_label) v.detail += " (no class name in common: matched by label)";
  return v;
}

DriftVerdict Ks(const char* item, const Histogram& now, const Histogram& old, double alpha,
                double min_d, double scale) {
  DriftVerdict v{item};
  const int64_t n = HistogramTotal(now), m = HistogramTotal(old);
  if (n == 0 || m == 0) {
    v.skipped = true;
    v.detail = "no images on one side";
    return v;
  }
  v.statistic = KsStatistic(now, old);
  const double critical = KsCriticalValue(n, m, alpha);
  v.threshold = std::fmax(critical, min_d);
  v.shifted = v.statistic > v.threshold;
  auto median = [scale](const Histogram& h) {
    const int64_t total = HistogramTotal(h);
    int64_t seen = 0;
    for (const auto& [val, c] : h) {
      seen += c;
      if (2 * seen >= total) return static_cast<double>(val) / scale;
    }
    return 0.0;
  };
  char buf[240];
  std::snprintf(buf, sizeof buf, "KS D = %.4f %s %.4f (critical %.4f at alpha %g, n %lld, m %lld; "
                "floor %g), p = %.3g; median %g vs %g", v.statistic, v.shifted ? ">" : "<=",
                v.threshold, critical, alpha, static_cast<long long>(n),
                static_cast<long long>(m), min_d, KsPValue(v.statistic, n, m), median(now),
                median(old));
  v.detail = buf;
  return v;
}

DriftVerdict Colour(const char* item, const std::array<double, 3>& now,
                    const std::array<double, 3>& old, const DatasetStats& a,
                    const DatasetStats& b, double threshold) {
  DriftVerdict v{item};
  v.threshold = threshold;
  if (a.pixels == 0 || b.pixels == 0) {
    v.skipped = true;
    v.detail = "no images on one side";
    return v;
  }
  static const char* kChannel[] = {"R", "G", "B"};
  int worst = 0;
  for (int c = 0; c < 3; ++c) {
    const double d = std::fabs(now[static_cast<size_t>(c)] - old[static_cast<size_t>(c)]);
    if (d > v.statistic) v.statistic = d, worst = c;
  }
  v.shifted = v.statistic > threshold;
  char buf[240];
  std::snprintf(buf, sizeof buf, "max |difference| %.4f (%s) %s %g; NEW %.4f %.4f %.4f, OLD %.4f "
                "%.4f %.4f", v.statistic, kChannel[worst], v.shifted ? ">" : "<=", threshold,
                now[0], now[1], now[2], old[0], old[1], old[2]);
  v.detail = buf;
  if (a.resolution != b.resolution) {
    v.detail += "; resolutions differ (" + std::to_string(a.resolution) + " vs " +
                std::to_string(b.resolution) + ")";
  }
  return v;
}

DriftVerdict FormatMix(const DatasetStats& now, const DatasetStats& old, double threshold) {
  DriftVerdict v{"format mix"};
  v.threshold = threshold;
  int64_t n = 0, m = 0;
  for (const auto& [k, c] : now.modes) n += c;
  for (const auto& [k, c] : old.modes) m += c;
  if (n == 0 || m == 0) {
    v.skipped = true;
    v.detail = "no images on one side";
    return v;
  }
  std::set<std::string> keys;
  for (const auto& [k, c] : now.modes) keys.insert(k);
  for (const auto& [k, c] : old.modes) keys.insert(k);
  double l1 = 0;
  std::string worst;
  double worst_diff = -1, worst_now = 0, worst_old = 0;
  for (const std::string& k : keys) {
    const auto a = now.modes.find(k), b = old.modes.find(k);
    const double pa = a == now.modes.end() ? 0 : static_cast<double>(a->second) / n;
    const double pb = b == old.modes.end() ? 0 : static_cast<double>(b->second) / m;
    l1 += std::fabs(pa - pb);
    if (std::fabs(pa - pb) > worst_diff) {
      worst_diff = std::fabs(pa - pb), worst = k, worst_now = pa, worst_old = pb;
    }
  }
  v.statistic = l1 / 2;
  v.shifted = v.statistic > threshold;
  char buf[240];
  std::snprintf(buf, sizeof buf, "total variation %.4f %s %g; most changed: %s %.1f%% vs %.1f%%",
                v.statistic, v.shifted ? ">" : "<=", threshold, worst.c_str(), 100 * worst_now,
                100 * worst_old);
  v.detail = buf;
  return v;
}

}  // namespace

std::vector<DriftVerdict> CompareStats(const DatasetStats& now, const DatasetStats& old,
                                       const DriftOptions& o) {
  std::vector<DriftVerdict> out;
  out.push_back(ClassBalance(now, old, o.class_alpha, o.class_min_shift));
  out.push_back(Ks("width", now.widths, old.widths, o.ks_alpha, o.ks_min_d, 1));
  out.push_back(Ks("height", now.heights, old.heights, o.ks_alpha, o.ks_min_d, 1));
  out.push_back(Ks("aspect", now.aspects, old.aspects, o.ks_alpha, o.ks_min_d, 1000));
  out.push_back(Colour("colour mean", now.mean, old.mean, now, old, o.colour_threshold));
  out.push_back(Colour("colour std", now.stddev, old.stddev, now, old, o.colour_threshold));
  out.push_back(FormatMix(now, old, o.format_threshold));
  return out;
}

bool AnyShifted(const std::vector<DriftVerdict>& verdicts) {
  for (const DriftVerdict& v : verdicts) {
    if (v.shifted) return true;
  }
  return false;
}

std::string FormatVerdicts(const std::vector<DriftVerdict>& verdicts) {
  std::string out;
  int shifted = 0;
  for (const DriftVerdict& v : verdicts) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-14s %-8s ", v.item.c_str(),
                  v.skipped ? "skipped" : v.shifted ? "SHIFTED" : "same");
    out += buf + v.detail + "\n";
    shifted += v.shifted;
  }
  out += shifted ? "drift: " + std::to_string(shifted) + " of " +
                       std::to_string(verdicts.size()) + " items shifted\n"
                 : "drift: none (all items within their thresholds)\n";
  return out;
}

std::string VerdictsToJson(const std::vector<DriftVerdict>& verdicts) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const DriftVerdict& v : verdicts) {
    a.push_back({{"item", v.item},
                 {"verdict", v.skipped ? "skipped" : v.shifted ? "shifted" : "same"},
                 {"statistic", v.statistic},
                 {"threshold", std::isfinite(v.threshold) ? nlohmann::ordered_json(v.threshold)
                                                          : nlohmann::ordered_json(nullptr)},
                 {"detail", v.detail}});
  }
  return a.dump();
}

}  // namespace stoker
