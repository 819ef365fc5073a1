// Copyright 2026 The stoker Authors.
//
// EpochImages: runs one epoch of a Loader over `source` and returns every
// batch's image bytes, concatenated; records a test failure on any error.
// Header only, for tests that link the pipeline. Thread-safety: a function.
#ifndef STOKER_TESTING_EPOCH_IMAGES_H_
#define STOKER_TESTING_EPOCH_IMAGES_H_

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stoker/loader.h"

namespace stoker::testing {

inline std::vector<uint8_t> EpochImages(std::shared_ptr<Source> source,
                                        const LoaderOptions& options) {
  std::vector<uint8_t> all;
  auto loader = Loader::Create(std::move(source), options);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return all;
  EXPECT_TRUE(loader.value()->Start().ok());
  for (;;) {
    BatchPtr b;
    bool end = false;
    Status s = loader.value()->Next(&b, &end);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok() || end) break;
    all.insert(all.end(), b->images(), b->images() + b->image_bytes());
  }
  return all;
}

}  // namespace stoker::testing

#endif  // STOKER_TESTING_EPOCH_IMAGES_H_
