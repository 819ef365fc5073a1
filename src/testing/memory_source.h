// Copyright 2026 The stoker Authors.
//
// The in-memory source for tests: stoker::MemorySource plus an optional
// delay per read (a deliberately slow source), a count of reads that a test
// can wait on (AwaitReads: no sleeping and polling), and a gate that holds
// every read until the test opens it (HoldReads/OpenReads: a worker blocked
// at a known point).
//
// Thread-safety: ReadIndex and the test's calls are thread-safe.
#ifndef STOKER_TESTING_MEMORY_SOURCE_H_
#define STOKER_TESTING_MEMORY_SOURCE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <thread>
#include <vector>

#include "source/memory_source.h"

namespace stoker::testing {

using stoker::MemorySample;

// Appends one field value to a record sample held in memory (MemorySource's
// records): `bytes` (none for the primary image's and label's entries, which
// the sample gives by `bytes` and `label`), its element type and dims.
inline void AppendField(MemorySample* s, std::vector<uint8_t> bytes = {},
                        ElemType dtype = ElemType::kUint8, std::vector<int64_t> dims = {}) {
  FieldValue v;
  v.dtype = dtype;
  v.ndim = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) v.dims[d] = dims[d];
  v.size = bytes.size();
  s->field_bytes.push_back(std::move(bytes));
  v.data = v.size > 0 ? s->field_bytes.back().data() : nullptr;
  s->fields.push_back(v);
}

// The bytes of `values`, for AppendField.
template <typename T>
std::vector<uint8_t> BytesOf(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

class MemorySource : public stoker::MemorySource {
 public:
  explicit MemorySource(std::vector<MemorySample> samples, int read_delay_us = 0)
      : stoker::MemorySource(std::move(samples)), delay_us_(read_delay_us) {}

  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      const int64_t nth = reads_.fetch_add(1, std::memory_order_relaxed) + 1;
      ++in_progress_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held_ || nth <= hold_after_; });
    }
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    Status st = stoker::MemorySource::ReadIndex(index, scratch, out);
    std::lock_guard<std::mutex> lock(mu_);
    --in_progress_;
    return st;
  }
  int64_t reads() const { return reads_.load(); }
  // Reads begun and not yet returned.
  int in_progress() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_progress_;
  }
  // Blocks until `n` reads have begun; false if that takes over `limit` (a
  // failure guard for a broken engine, not a timing assumption).
  bool AwaitReads(int64_t n, std::chrono::seconds limit = std::chrono::seconds(60)) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return reads_.load() >= n; });
  }
  // While held, every read after the first `after` ones waits (counted as
  // begun) until OpenReads().
  void HoldReads(int64_t after = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
    hold_after_ = after;
  }
  void OpenReads() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }

 private:
  int delay_us_;
  mutable std::atomic<int64_t> reads_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int in_progress_ = 0;
  bool held_ = false;
  int64_t hold_after_ = 0;
};

}  // namespace stoker::testing

#endif  // STOKER_TESTING_MEMORY_SOURCE_H_
