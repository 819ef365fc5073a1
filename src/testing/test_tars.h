// Copyright 2026 The stoker Authors.
//
// Test tar shards written with libarchive: pax (default), GNU or ustar
// headers, plain, gzip or zstd. Thread-safety: pure functions.
#ifndef STOKER_TESTING_TEST_TARS_H_
#define STOKER_TESTING_TEST_TARS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::testing {

struct TarEntry {
  std::string path;
  std::vector<uint8_t> data;
};

enum class TarFormat { kPax, kGnu, kUstar };
enum class TarFilter { kNone, kGzip, kZstd };

// The archive's bytes.
std::vector<uint8_t> MakeTar(const std::vector<TarEntry>& entries,
                             TarFormat format = TarFormat::kPax,
                             TarFilter filter = TarFilter::kNone);

std::vector<uint8_t> Text(const std::string& s);

}  // namespace stoker::testing

#endif  // STOKER_TESTING_TEST_TARS_H_
