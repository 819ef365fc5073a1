// Copyright 2026 The stoker Authors.
//
// Finding out where the time goes: Diagnose() (`stoker diagnose`) and Tune()
// with Recommend() (`stoker tune`). docs/diagnosis.md explains the method.
//
// Diagnose: is the consumer waiting for data, and which stage is to blame?
//
// The verdict rests on how long the real step waits for data: the full
// pipeline feeds `step` in rounds of `batches` steps, and the time the
// consumer was blocked in Next() until a batch was ready (the loader's
// consumer-wait counter; not the hand-off or an epoch restart's bookkeeping,
// which a loaded machine stretches without any lack of data) is set against
// the round's wall time. A round whose step waited under `fed_below` of the time says "fed",
// over `starved_above` "data-bound", in between "marginal". Rounds repeat
// until the last `agree` rounds say the same (that is the verdict, with the
// median wait of those rounds) or `max_rounds` have run, when the diagnosis
// says it cannot decide ("undecided") and shows every round's wait. The gap
// between the two thresholds is the margin: a wait near one of them gives
// "marginal" or "undecided", never a flip between "fed" and "data-bound".
//
// CPU contention is a cause of its own: during the rounds the machine's
// busy cores (/proc/stat, every process) and this process's CPU are
// measured, and the step alone (mode 1, the loader stopped) gives the
// step's own CPU use (its threads: torch's intra-op pool). When the cores
// are saturated and the step's threads or other processes take a real share
// of them (at least half a core, and a quarter of the cores), the diagnosis
// names "cpu-contention" among the causes and says who competes.
//
// Which stage is short comes from the stage-caching method: the step is
// also fed from (1) one batch kept ready, (2) one batch copied before every
// step (the host-to-device copy; on a machine without a GPU a host-to-host
// copy stands in for it and the report says so), (3) one processed sample
// copied into every slot (the collation), (4) the encoded bytes of the
// samples cached in memory (adds decode and augmentation), and (5) the full
// pipeline (adds reading from storage), `batches` steps each. Records: modes
// 2 and 3 copy every stacked field's block with the image's, and mode 4
// caches every field's value with the encoded image (a record without an
// image: its fields alone, and a cut there is named "fields"). Each mode runs
// at the speed of the slowest stage it includes, so the last stage whose
// addition cuts throughput by more than 1.5x (or, when none does, the
// largest cut) is the bottleneck (a cut at the read stage only when reading
// takes >= 1/4 of the busy time). It is named only when the wait says
// data-bound. A VideoClips source: mode 4 caches its decoded clips (the
// stage it adds is "fields": the clip's copy) and mode 5 adds the
// decode-video stage ("decode-video": demux, seek, decode, conversion and
// the clip's transforms), whose advice sets workers x codec_threads against
// the cores and names frames decoded per frame delivered.
//
// Thread-safety: Diagnose() drives the loader from the calling thread and
// must not run while the loader is iterated elsewhere.
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
#ifndef STOKER_DIAGNOSE_H_
#define STOKER_DIAGNOSE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/loader.h"
#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

struct DiagnoseOptions {
  // Steps measured per mode, and per round of the full pipeline.
  int batches = 30;
  // Rounds of the full pipeline: the last `agree` must say the same; at most
  // `max_rounds` (agree <= max_rounds).
  int agree = 3;
  int max_rounds = 7;
  // A round's wait fraction: < fed_below is "fed", > starved_above is
  // "data-bound", in between "marginal".
  double fed_below = 0.03;
  double starved_above = 0.10;
};

// Who used the CPU while the full pipeline fed the step (cores busy on
// average over the rounds' wall time).
struct CpuUse {
  int cores = 0;              // cores this process may use (affinity)
  int machine_cores = 0;      // the machine's (/proc/stat; 0: unknown)
  double machine_busy = 0;    // cores busy on the machine, every process
  double process_busy = 0;    // cores busy in this process (workers + step)
  double step_alone = 0;      // cores the step used on its own (mode 1)
  double others_busy = 0;     // machine_busy - process_busy (other processes)
  bool saturated = false;     // the cores were >= 90% busy
  bool contended = false;     // saturated, and the step's threads or others take a real share
  std::string summary;        // one line
};

struct ModeResult {
  std::string name;         // e.g. "cached encoded bytes (adds decode + augment)"
  // The stage this mode adds: "", "copy", "collate", "decode+augment", "read".
  std::string stage;
  double images_per_sec = 0;
  double ratio_to_previous = 1;  // previous mode's images/s over this one's
};

struct Diagnosis {
  std::vector<ModeResult> modes;
  LoaderStats pipeline_stats;  // the full pipeline's counters (its rounds)
  // "fed", "marginal", "data-bound" or "undecided" (the rounds never agreed).
  std::string state;
  bool data_bound = false;     // state == "data-bound"
  bool decided = false;        // state != "undecided"
  double wait_fraction = 0;    // the median wait of the agreeing rounds (all, when undecided)
  std::vector<double> round_waits;  // each round's wait fraction, in order
  // The time inside Next() over the rounds' wall time: the wait plus hand-off
  // and epoch restarts (which a loaded machine lengthens; not a lack of data).
  double next_fraction = 0;
  // The step's time per batch with the full pipeline running over its time
  // alone (mode 1): > 1 when they compete for the CPU. A throughput ratio, so
  // noisy on a loaded machine: it is shown, it decides nothing.
  double step_slowdown = 1;
  CpuUse cpu;
  // The causes, most telling first: "cpu-contention" (whenever the CPU is
  // contended, fed or not: the loader then costs the step CPU rather than
  // waits) and/or the bottleneck stage (only when data-bound or marginal).
  std::vector<std::string> causes;
  std::string bottleneck;      // "read", "decode", "augment", "fields" (a record without an
                               // image), "decode-video" (a VideoClips source: demuxing,
                               // decoding and the clip's transforms), "copy", "collate" or ""
  double cost_factor = 1;      // mode 1's throughput over the full pipeline's
  std::string verdict;         // one line
};

// `step` is the training step (called once per batch). Returns the table
// and a verdict. Errors: InvalidArgument for options out of range (batches
// < 1, agree < 1 or > max_rounds, thresholds not 0 <= fed_below <
// starved_above <= 1), a loader with no batch or list batches; Unimplemented
// for records; the loader's own errors.
StatusOr<Diagnosis> Diagnose(Loader* loader, const std::function<void(const BatchPtr&)>& step,
                             const DiagnoseOptions& options);

// A text table plus the stage breakdown and the verdict.
std::string FormatDiagnosis(const Diagnosis& d);

struct TuneOptions {
  std::vector<int> threads = {1, 2, 4};
  std::vector<int> prefetch = {1, 2, 4, 8};
  std::vector<int> batch_sizes = {64};
  // A VideoClips source: FFmpeg's threads per clip to sweep as well (each
  // value reopens the source with that codec_threads); empty: the source's
  // own. Ignored for other sources.
  std::vector<int> codec_threads;
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
  int codec_threads = 0;       // the clip source's FFmpeg threads; 0: not a VideoClips source
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
// fastest, and says so). Smallest: fewest threads (threads x codec_threads
// for clips: the cores they use), then least peak RSS, then least prefetch.
// Pure.
TuneRecommendation Recommend(const std::vector<TuneResult>& results, double step_ms);

// The table plus the recommendation line (and the auto rows' ratio to the
// best static configuration).
std::string FormatTune(const std::vector<TuneResult>& results, const TuneRecommendation& rec);

// One JSON object: {"configs": [...], "recommended": {...}, "reason": ...}.
std::string TuneJson(const std::vector<TuneResult>& results, const TuneRecommendation& rec,
                     double step_ms);

}  // namespace stoker

#endif  // STOKER_DIAGNOSE_H_
