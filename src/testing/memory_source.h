// Copyright 2026 The stoker Authors.
//
// MemorySource: a random-access source over samples held in memory, for
// tests. Each sample is encoded bytes (or raw RGB pixels), a label and a
// name. Optional per-read delay makes a deliberately slow source.
//
// Thread-safety: immutable after construction except the read counter
// (atomic); ReadIndex is thread-safe.
#ifndef STOKER_TESTING_MEMORY_SOURCE_H_
#define STOKER_TESTING_MEMORY_SOURCE_H_

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "stoker/source.h"

namespace stoker::testing {

struct MemorySample {
  std::vector<uint8_t> bytes;   // encoded image, or raw RGB when raw_width > 0
  int raw_width = 0;
  int raw_height = 0;
  int64_t label = 0;
  std::string name;
};

class MemorySource : public RandomAccessSource {
 public:
  explicit MemorySource(std::vector<MemorySample> samples, int read_delay_us = 0)
      : samples_(std::move(samples)), delay_us_(read_delay_us) {}

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  std::string Describe() const override {
    return "MemorySource(" + std::to_string(samples_.size()) + " samples)";
  }
  std::string NameOf(int64_t index) const override { return samples_[index].name; }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    const MemorySample& s = samples_[index];
    out->id = index;
    out->label = s.label;
    if (s.raw_width > 0) {
      out->bytes = nullptr;
      out->size = s.bytes.size();
      out->pixels = s.bytes.data();
      out->pixel_width = s.raw_width;
      out->pixel_height = s.raw_height;
      out->pixel_stride = static_cast<ptrdiff_t>(s.raw_width) * 3;
    } else {
      scratch->bytes.assign(s.bytes.begin(), s.bytes.end());
      out->bytes = scratch->bytes.data();
      out->size = s.bytes.size();
      out->pixels = nullptr;
    }
    return Status::OK();
  }
  int64_t reads() const { return reads_.load(); }

 private:
  std::vector<MemorySample> samples_;
  int delay_us_;
  mutable std::atomic<int64_t> reads_{0};
};

}  // namespace stoker::testing

#endif  // STOKER_TESTING_MEMORY_SOURCE_H_
