// Copyright 2026 The stoker Authors.
//
// The engine's counters. Each worker owns one WorkerCounters (on its own
// cache line) and adds to it with relaxed atomics; stats() sums them into a
// Totals from any thread. Totals are plain values: an epoch's figures are
// the totals now minus a snapshot taken when the epoch started.
//
// Thread-safety: WorkerCounters::Add is called by its owning worker only;
// loads from other threads are relaxed (the figures are statistics, not
// synchronisation). Totals are not shared.
#ifndef STOKER_PIPELINE_LOADER_STATS_H_
#define STOKER_PIPELINE_LOADER_STATS_H_

#include <atomic>
#include <cstdint>

#include "stoker/loader.h"

namespace stoker {

struct alignas(64) WorkerCounters {
  std::atomic<int64_t> read_ns{0}, decode_ns{0}, augment_ns{0}, wait_ns{0}, callback_ns{0};
  std::atomic<int64_t> images{0}, skipped{0}, bytes{0};
  // Single writer: a load and a store, no read-modify-write.
  static void Add(std::atomic<int64_t>& c, int64_t v) {
    c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
};

struct Totals {
  int64_t read_ns = 0, decode_ns = 0, augment_ns = 0, wait_ns = 0, images = 0, skipped = 0,
          bytes = 0, callback_ns = 0, consumer_wait_ns = 0, batches = 0, wall_ns = 0;

  // Adds one worker's counters (relaxed loads).
  void AddWorker(const WorkerCounters& c);
  Totals& operator-=(const Totals& b);
  StageStats ToStageStats() const;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_LOADER_STATS_H_
