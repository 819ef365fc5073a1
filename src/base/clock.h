// Copyright 2026 The stoker Authors.
//
// The monotonic clock the counters use. Thread-safe.
#ifndef STOKER_BASE_CLOCK_H_
#define STOKER_BASE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace stoker {

// Nanoseconds of std::chrono::steady_clock (about 20 ns a call).
inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace stoker

#endif  // STOKER_BASE_CLOCK_H_
