// Copyright 2026 The stoker Authors.
//
// TuningClock: where the Loader's tuning (threads="auto" / prefetch="auto")
// reads the time and the consumer's wait for each batch it takes. By default
// the time is NowNs() and the wait is the one BatchRing measured; the tuning
// window (tuning_window.h) turns them into the windows the Tuner observes.
//
// An internal test seam, not a user option: tests install their own clock with
// SetTuningClockForTesting so that they, not the machine's load, decide how
// long each batch took and how long the consumer waited, and check that the
// Loader applies what the tuner decides (src/pipeline/loader_test.cc).
//
// Thread-safety: the Loader calls both functions from its consumer thread,
// inside Next(), under its mutex: they must not call back into the Loader.
#ifndef STOKER_PIPELINE_TUNING_CLOCK_H_
#define STOKER_PIPELINE_TUNING_CLOCK_H_

#include <cstdint>
#include <functional>

namespace stoker {

class Loader;

struct TuningClock {
  // The time now, in ns; monotonic and never 0 (0 means "no window open" to
  // TuningWindow). Null: NowNs().
  std::function<int64_t()> now_ns;
  // The consumer's wait for the batch just taken, in ns, given the wait the
  // Loader measured. Null: the measured wait.
  std::function<int64_t(int64_t measured_ns)> waited_ns;
};

// Installs `clock` in `loader` (made by Loader::Create), replacing the
// previous one; call it before Start(). Returns false, and changes nothing,
// when `loader` is not the engine's Loader.
bool SetTuningClockForTesting(Loader* loader, TuningClock clock);

}  // namespace stoker

#endif  // STOKER_PIPELINE_TUNING_CLOCK_H_
