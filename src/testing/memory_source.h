// Copyright 2026 The stoker Authors.
//
// The in-memory source for tests: stoker::MemorySource plus an optional
// delay per read (a deliberately slow source) and a count of reads.
//
// Thread-safety: ReadIndex is thread-safe (the counter is atomic).
#ifndef STOKER_TESTING_MEMORY_SOURCE_H_
#define STOKER_TESTING_MEMORY_SOURCE_H_

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "source/memory_source.h"

namespace stoker::testing {

using stoker::MemorySample;

class MemorySource : public stoker::MemorySource {
 public:
  explicit MemorySource(std::vector<MemorySample> samples, int read_delay_us = 0)
      : stoker::MemorySource(std::move(samples)), delay_us_(read_delay_us) {}

  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    return stoker::MemorySource::ReadIndex(index, scratch, out);
  }
  int64_t reads() const { return reads_.load(); }

 private:
  int delay_us_;
  mutable std::atomic<int64_t> reads_{0};
};

}  // namespace stoker::testing

#endif  // STOKER_TESTING_MEMORY_SOURCE_H_
