// Copyright 2026 The stoker Authors.
//
// Diagnose: is the consumer waiting for data, and which stage is to blame?
//
// The stage-caching method: the training step is fed from (1) one batch
// kept ready, (2) one batch copied before every step (the host-to-device
// copy; on a machine without a GPU a host-to-host copy stands in for it and
// the report says so), (3) one processed sample copied into every slot (the
// collation), (4) the encoded bytes of the samples cached in memory (adds
// decode and augmentation), and (5) the full pipeline (adds reading from
// storage). Each mode runs at the speed of the slowest stage it includes, so
// the last stage whose addition cuts throughput by more than 1.5x (or, when
// none does, the largest cut) is the bottleneck, and that cut is its cost (a
// cut at the read stage only when reading takes >= 1/4 of the busy time). A
// pipeline within 5% of the step alone is not data-bound.
//
// Thread-safety: Diagnose() drives the loader from the calling thread and
// must not run while the loader is iterated elsewhere.
#ifndef STOKER_DIAGNOSE_DIAGNOSE_H_
#define STOKER_DIAGNOSE_DIAGNOSE_H_

#include <functional>
#include <string>
#include <vector>

#include "stoker/loader.h"

namespace stoker {

struct DiagnoseOptions {
  // Steps measured per mode.
  int batches = 30;
};

struct ModeResult {
  std::string name;         // e.g. "cached encoded bytes (adds decode + augment)"
  std::string stage;        // the stage this mode adds: "", "copy", "collate", "decode+augment", "read"
  double images_per_sec = 0;
  double ratio_to_previous = 1;  // previous mode's images/s over this one's
};

struct Diagnosis {
  std::vector<ModeResult> modes;
  LoaderStats pipeline_stats;  // the full pipeline's counters (mode 5)
  bool data_bound = false;
  std::string bottleneck;      // "read", "decode", "augment", "copy", "collate" or ""
  double cost_factor = 1;      // how much slower the pipeline is than the step alone
  std::string verdict;         // one line
};

// Takes the next batch of a started loader, starting the next epoch when
// one ends (measurements run for a number of batches, not epochs). An epoch
// that ends before its first batch is an error (DataLoss), not a spin.
Status NextBatchAcrossEpochs(Loader* loader, BatchPtr* batch);

// `step` is the training step (called once per batch). Returns the table
// and a verdict.
StatusOr<Diagnosis> Diagnose(Loader* loader, const std::function<void(const BatchPtr&)>& step,
                             const DiagnoseOptions& options);

// A text table plus the stage breakdown and the verdict.
std::string FormatDiagnosis(const Diagnosis& d);

}  // namespace stoker

#endif  // STOKER_DIAGNOSE_DIAGNOSE_H_
