// Copyright 2026 The stoker Authors.
//
// Replays every input kept under fuzz/regressions/<target> (inputs that once
// crashed or hung a fuzzer, and the seeds' edge cases) through the fuzz
// target's entry point, in the ordinary build. A file there is a test case.
// Built once per target; STOKER_FUZZ_TARGET names it (default "decode").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// The target whose inputs this binary replays (its regressions/ sub-directory).
#ifndef STOKER_FUZZ_TARGET
#define STOKER_FUZZ_TARGET "decode"
#endif

namespace {

TEST(FuzzRegressionTest, KeptInputsRunCleanly) {
  const std::filesystem::path dir = STOKER_FUZZ_REGRESSIONS "/" STOKER_FUZZ_TARGET;
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    std::ifstream f(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0) << entry.path();
    ++n;
  }
  EXPECT_GT(n, 0) << "no regression inputs in " << dir;
}

}  // namespace
