// Copyright 2026 The stoker Authors.
//
// CompareStats: has a new data drop drifted from an old one
// (`stoker stats NEW --against OLD`)? One verdict per item, each "shifted"
// when its statistic passes its threshold:
//  - "class balance": Pearson's chi-square of NEW's class counts against
//    OLD's class proportions (classes matched by name, or by label when no
//    name is on both sides); shifted when
//    p < class_alpha and the total variation distance of the class
//    proportions > class_min_shift, or when NEW has images of a class OLD
//    lacks;
//  - "width", "height", "aspect": two-sample Kolmogorov-Smirnov D of the
//    distributions; shifted when D > c(ks_alpha) sqrt((n + m) / (n m)) and
//    D > ks_min_d;
//  - "colour mean", "colour std": the largest per-channel absolute
//    difference (pixel values in [0, 1]); shifted above colour_threshold.
//    Both reports should use the same resolution (the detail says when not);
//  - "format mix": total variation distance (half the L1 distance) between
//    the colour-mode proportions (JPEG 4:2:0, PNG RGB 8-bit, ...); shifted
//    above format_threshold.
// Items without data on both sides (no labels, no images) are "skipped",
// never shifted. With very many images the two tests find even tiny
// differences significant; the effect-size floors (class_min_shift,
// ks_min_d) keep such differences from failing a CI gate.
// Thread-safety: pure functions.
#ifndef STOKER_DRIFT_H_
#define STOKER_DRIFT_H_

#include <string>
#include <vector>

#include "stoker/stats.h"

namespace stoker {

struct DriftOptions {
  double class_alpha = 0.01;        // chi-square p-value below which classes shifted
  double class_min_shift = 0.02;    // ... and the class proportions' total variation above this
  double ks_alpha = 0.01;           // KS significance level for sizes and aspect
  double ks_min_d = 0.05;           // ... and D above this
  double colour_threshold = 0.02;   // max |difference| of a channel's mean or std
  double format_threshold = 0.05;   // max total variation distance of the format mix
};

struct DriftVerdict {
  std::string item;
  bool shifted = false;
  bool skipped = false;
  double statistic = 0;   // chi-square p-value, KS D, colour difference, TV distance
  double threshold = 0;   // what `statistic` is compared with
  std::string detail;     // the numbers behind the verdict, for people
};

std::vector<DriftVerdict> CompareStats(const DatasetStats& now, const DatasetStats& old,
                                       const DriftOptions& options);

bool AnyShifted(const std::vector<DriftVerdict>& verdicts);

// One line per verdict, then a summary line.
std::string FormatVerdicts(const std::vector<DriftVerdict>& verdicts);
// A JSON array of {"item", "verdict" ("same" | "shifted" | "skipped"),
// "statistic", "threshold", "detail"}.
std::string VerdictsToJson(const std::vector<DriftVerdict>& verdicts);

}  // namespace stoker

#endif  // STOKER_DRIFT_H_
