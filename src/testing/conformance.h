// Copyright 2026 The stoker Authors.
//
// The source conformance suite's shared part (tf.data's dataset_test_base is
// the model): one dataset, written by every source in its own format, and
// the table of sources the suite runs on. The tests themselves are in
// src/source/conformance_test.cc; they use the public Loader / Source API
// only, and read a source's capabilities from it (Source::random_access(),
// Source::size() < 0 for a stream of unknown length), so each source meets
// the guarantee its kind documents, or the documented refusal.
//
// Adding a source to the suite = adding one row to ConformanceSources()
// (conformance_sources.cc): a name and a function that writes the dataset
// below in the source's format and opens it. Nothing else changes.
//
// The dataset: kSamples samples in dataset order i = 0 .. kSamples - 1;
// sample i is the image MakePixels(kWidth, kHeight, i) (testing/
// test_images.h), as a JPEG (ConformanceJpeg) or as raw pixels, with label i,
// so a delivered sample is known by its label. kSamples divides by 1, 2, 3
// and 4, and shard-based sources write kShards shards of equal size, so
// every world size 1-4 splits an epoch exactly (streams deal whole shards).
//
// Thread-safety: the table is built once (thread-safe static); factories
// are called from the test's thread.
#ifndef STOKER_TESTING_CONFORMANCE_H_
#define STOKER_TESTING_CONFORMANCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker::testing {

struct ConformanceData {
  static constexpr int kSamples = 48;
  static constexpr int kShards = 12;  // of kSamples / kShards samples each
  static constexpr int kWidth = 32;
  static constexpr int kHeight = 24;
  // Samples to make unreadable, as far as the format allows (a JPEG that is
  // no image; a raw array can only be cut short: its last sample).
  std::set<int> corrupt;
};

// Sample i's pixels (RGB, HWC) and its JPEG (quality 90, 4:4:4).
std::vector<uint8_t> ConformancePixels(int i);
std::vector<uint8_t> ConformanceJpeg(int i);

struct MadeSource {
  std::shared_ptr<Source> source;
  // Labels of the samples that fail to read or decode.
  std::set<int64_t> corrupt;
  // Whatever must outlive the source (e.g. the HTTP server it reads from).
  std::shared_ptr<void> keep_alive;
};

struct SourceFactory {
  std::string name;  // the test-name suffix: letters and digits only
  // Writes the dataset into `dir` (an empty directory that outlives the
  // source) and opens it.
  std::function<StatusOr<MadeSource>(const std::string& dir, const ConformanceData& data)> make;
};

// Every source the suite runs on.
const std::vector<SourceFactory>& ConformanceSources();

// GoogleTest prints a parameter by its name.
inline void PrintTo(const SourceFactory& factory, std::ostream* os) { *os << factory.name; }

}  // namespace stoker::testing

#endif  // STOKER_TESTING_CONFORMANCE_H_
