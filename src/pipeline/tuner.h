// Copyright 2026 The stoker Authors.
//
// Tuner: picks the loader's worker threads and prefetch depth online, from
// the counters, while training runs (threads="auto" / prefetch="auto").
//
// The tuner is pure: no threads, no clock. The engine measures a window of
// batches at the current settings and feeds the window's numbers to
// Observe(), which returns the settings for the next window. Because it only
// sees numbers, tests drive it with simulated pipelines.
//
// The policy is hill climbing with probes, one step at a time:
//  - the consumer waits (more than `starved_fraction` of the window):
//    probe one more thread; keep it when throughput rose by more than
//    `gain` (or the consumer stopped waiting at no cost), otherwise go back and remember that more threads did not help;
//    with threads settled and the consumer still waiting, probe a deeper
//    prefetch the same way (it hides jitter, it cannot add throughput);
//  - the consumer never waits (less than `fed_fraction`): probe one thread
//    fewer (then a shallower prefetch); keep it when the consumer is still
//    fed and throughput fell by less than `gain`, otherwise go back: the
//    smallest configuration that keeps the consumer fed wins;
//  - a rejected probe is not retried in that direction for `cooldown`
//    windows, doubling at each further rejection (so a settled loader pays
//    for a failed probe ever more rarely), reset when the load changes
//    enough to flip the consumer between waiting and fed.
//
// Thread-safety: none; the engine calls it from the consumer thread.
#ifndef STOKER_PIPELINE_TUNER_H_
#define STOKER_PIPELINE_TUNER_H_

#include <cstdint>
#include <string>

namespace stoker {

struct TunerConfig {
  bool tune_threads = true;
  bool tune_prefetch = true;
  int min_threads = 1;
  int max_threads = 1;
  int min_prefetch = 1;
  int max_prefetch = 8;
  // The consumer is starved when it waits more than this fraction of the
  // window, and fed when it waits less than `fed_fraction`.
  double starved_fraction = 0.02;
  double fed_fraction = 0.005;
  // A relative throughput change smaller than this is noise.
  double gain = 0.04;
  // Windows before a rejected direction is probed again (doubles each time).
  int cooldown = 6;
  int max_cooldown = 96;
};

// What the engine saw during one window at the settings the tuner last
// returned.
struct TunerWindow {
  double seconds = 0;          // wall time of the window
  int64_t images = 0;          // images delivered to the consumer
  double consumer_wait_s = 0;  // time the consumer spent waiting for batches
};

struct TunerSettings {
  int threads = 1;
  int prefetch = 1;
  bool operator==(const TunerSettings& o) const {
    return threads == o.threads && prefetch == o.prefetch;
  }
};

class Tuner {
 public:
  // Starts at `initial`, clamped to the configured ranges.
  Tuner(const TunerConfig& config, TunerSettings initial);

  // Feeds the window measured at settings(); returns the settings to use
  // for the next window (also available as settings()).
  TunerSettings Observe(const TunerWindow& w);

  TunerSettings settings() const { return current_; }
  // The settings the tuner believes best so far (differs from settings()
  // while a probe runs).
  TunerSettings accepted() const { return base_; }
  // Why the last decision was taken, for logs and stats.
  const std::string& reason() const { return reason_; }
  int64_t windows() const { return windows_; }
  int64_t changes() const { return changes_; }

 private:
  enum class Dir { kNone, kMoreThreads, kFewerThreads, kMorePrefetch, kLessPrefetch };
  struct Backoff {
    int64_t until = 0;  // window index before which the direction is not probed
    int length = 0;     // current cooldown length (0: never rejected)
  };

  bool Allowed(Dir d) const;
  TunerSettings Step(Dir d) const;
  void Reject(Dir d);
  Backoff& BackoffOf(Dir d);
  const Backoff& BackoffOf(Dir d) const;
  void StartProbe(Dir d, const char* why);

  TunerConfig config_;
  TunerSettings base_;      // accepted settings
  TunerSettings current_;   // settings of the window being measured
  double base_rate_ = 0;    // images/s measured at base_ (0: not yet)
  int base_state_ = 0;      // the consumer at base_: +1 starved, -1 fed, 0 in between
  Dir probing_ = Dir::kNone;
  Backoff more_threads_, fewer_threads_, more_prefetch_, less_prefetch_;
  int last_state_ = 0;      // +1 starved, -1 fed, 0 in between
  int64_t windows_ = 0;
  int64_t changes_ = 0;
  std::string reason_ = "starting";
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_TUNER_H_
