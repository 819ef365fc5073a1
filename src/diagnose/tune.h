// Copyright 2026 The stoker Authors.
//
// Tune: sweeps a grid of loader settings (threads x prefetch x batch size)
// over one source and measures each: images/s, CPU-seconds per 1,000
// images, peak RSS, and how long the consumer waited. Recommend() then
// picks the smallest configuration that does the job: within 5% of the best
// throughput, or, when a training step is simulated, one that keeps the
// consumer waiting less than 2% of the time; fewest threads first, then
// least memory. Optionally it also runs the online tuner (threads="auto",
// prefetch="auto") for comparison with the best static configuration.
//
// Thread-safety: Tune() runs the loaders from the calling thread; it resets
// the process's peak-RSS mark (/proc/self/clear_refs) before each
// configuration, so run it in a process that does nothing else.
// Errors: a configuration that fails (bad options, unreadable data) stops
// the sweep with its Status.
#ifndef STOKER_DIAGNOSE_TUNE_H_
#define STOKER_DIAGNOSE_TUNE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/loader.h"

namespace stoker {

struct TuneOptions {
  std::vector<int> threads = {1, 2, 4};
  std::vector<int> prefetch = {1, 2, 4, 8};
  std::vector<int> batch_sizes = {64};
  // Measured seconds per configuration, after `warmup_batches` batches.
  double seconds = 2;
  int warmup_batches = 2;
  // A simulated training step (a sleep: a GPU step leaves the CPU free).
  double step_ms = 0;
  // Also run threads="auto", prefetch="auto" (per batch size) for
  // `auto_batches` batches, starting from 1 thread, prefetch 2.
  bool include_auto = true;
  int auto_batches = 300;
  // Called before each configuration runs: (index, total, description).
  std::function<void(int, int, const std::string&)> progress;
};

struct TuneResult {
  int threads = 0;
  int prefetch = 0;
  int batch_size = 0;
  bool auto_tuned = false;     // threads/prefetch tuned online; the fields hold where it ended
  double images_per_sec = 0;   // for auto: over the last third of its batches
  double cpu_s_per_1000 = 0;
  double peak_rss_mib = 0;
  double consumer_wait = 0;    // fraction of the measured time the consumer waited
  int64_t images = 0;
  int64_t tuning_changes = 0;  // auto only
};

struct TuneRecommendation {
  int index = -1;        // into the results (static configurations only)
  bool consumer_fed = false;  // with a step: whether the pick keeps it waiting < 2%
  std::string reason;    // one line
};

// Runs the sweep. `base` supplies transforms, dtype, layout and the rest.
StatusOr<std::vector<TuneResult>> Tune(std::shared_ptr<Source> source, const LoaderOptions& base,
                                       const TuneOptions& options);

// The smallest configuration within 5% of the best throughput (no step), or
// the smallest keeping consumer wait < 2% (step_ms > 0; when none does, the
// fastest, and says so). Smallest: fewest threads, then least peak RSS, then
// least prefetch. Pure.
TuneRecommendation Recommend(const std::vector<TuneResult>& results, double step_ms);

// The table plus the recommendation line (and the auto rows' ratio to the
// best static configuration).
std::string FormatTune(const std::vector<TuneResult>& results, const TuneRecommendation& rec);

// One JSON object: {"configs": [...], "recommended": {...}, "reason": ...}.
std::string TuneJson(const std::vector<TuneResult>& results, const TuneRecommendation& rec,
                     double step_ms);

}  // namespace stoker

#endif  // STOKER_DIAGNOSE_TUNE_H_
