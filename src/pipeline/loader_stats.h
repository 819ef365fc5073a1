// Copyright 2026 The stoker Authors.
//
// The engine's counters. Each worker owns one WorkerCounters (on its own
// cache line) and adds to it with relaxed atomics; stats() sums them into a
// Totals from any thread. Totals are plain values: an epoch's figures are
// the totals now minus a snapshot taken when the epoch started.
//
// Thread-safety: WorkerCounters::Add is called by its owning worker only;
// loads from other threads are relaxed (the figures are statistics, not
// synchronisation). Totals are not shared. LoaderCounters is not
// thread-safe: the Loader holds it under its lock.
#ifndef STOKER_PIPELINE_LOADER_STATS_H_
#define STOKER_PIPELINE_LOADER_STATS_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "stoker/loader.h"

namespace stoker {

// The decode-video stage's counters (VideoWork summed), by index.
enum VideoCounter : int {
  kVideoClips, kVideoFramesDecoded, kVideoFramesConverted, kVideoFramesDelivered,
  kVideoGops, kVideoSeeks, kVideoIndexes, kVideoDemuxNs, kVideoSeekNs, kVideoDecodeNs,
  kVideoConvertNs, kVideoTransformNs, kVideoCounters
};

struct alignas(64) WorkerCounters {
  std::atomic<int64_t> read_ns{0}, decode_ns{0}, augment_ns{0}, wait_ns{0}, callback_ns{0};
  std::atomic<int64_t> images{0}, skipped{0}, bytes{0}, boxes_removed{0};
  std::atomic<int64_t> video[kVideoCounters] = {};
  // Single writer: a load and a store, no read-modify-write.
  static void Add(std::atomic<int64_t>& c, int64_t v) {
    c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  // One clip's decode-video work (VideoClips' SampleData::video).
  void AddVideo(const VideoWork& w);
};

struct Totals {
  int64_t read_ns = 0, decode_ns = 0, augment_ns = 0, wait_ns = 0, images = 0, skipped = 0,
          bytes = 0, callback_ns = 0, consumer_wait_ns = 0, batches = 0, wall_ns = 0,
          boxes_removed = 0;
  int64_t video[kVideoCounters] = {};

  // Adds one worker's counters (relaxed loads).
  void AddWorker(const WorkerCounters& c);
  Totals& operator-=(const Totals& b);
  StageStats ToStageStats() const;
};

// The consumer's counters (batches taken, time waited), the epochs' wall
// time, and the snapshot the running epoch's figures are taken from. The
// workers' counters are passed in: they are written without the lock.
class LoaderCounters {
 public:
  using Workers = std::vector<WorkerCounters>;

  // A new epoch: its figures start from the totals now, its clock runs.
  void BeginEpoch(const Workers& workers);
  // The epoch ended or stopped: its wall time is counted (once).
  void EndEpoch();
  void AddConsumerWait(int64_t ns) { consumer_wait_ns_ += ns; }
  int64_t consumer_wait_ns() const { return consumer_wait_ns_; }
  void AddBatch() { ++batches_; }

  Totals Sum(const Workers& workers) const;
  // Samples skipped in the running epoch.
  int64_t EpochSkipped(const Workers& workers) const {
    return Sum(workers).skipped - snapshot_.skipped;
  }
  // stats()'s total and epoch figures; `running`: an epoch is open (its
  // clock counts up to now).
  void Fill(const Workers& workers, bool running, LoaderStats* s) const;

 private:
  int64_t consumer_wait_ns_ = 0;
  int64_t batches_ = 0;
  int64_t wall_ns_ = 0;
  int64_t epoch_start_ns_ = 0;
  bool epoch_done_ = true;
  Totals snapshot_;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_LOADER_STATS_H_
