// Copyright 2026 The stoker Authors.
//
// SizeTally: one worker's count of the image sizes (before any transform)
// of the samples it made, for the data monitor (LoaderOptions::tally_sizes,
// LoaderStats::source_sizes): width, height and aspect ratio in thousandths,
// as value -> count, as `stoker stats` keeps them, so the two compare with
// the same tests (stoker/drift.h).
//
// Thread-safety: Add by the owning worker; AddTo from any thread. Each tally
// has its own mutex, so the worker's lock is uncontended but for stats().
#ifndef STOKER_PIPELINE_SIZE_TALLY_H_
#define STOKER_PIPELINE_SIZE_TALLY_H_

#include <cstdint>

#include "stoker/loader.h"
#include "stoker/mutex.h"

namespace stoker {

class SizeTally {
 public:
  // One image of `width` x `height` (ignored unless both are positive).
  void Add(int width, int height);
  // Adds the counts into `out`.
  void AddTo(ImageSizes* out) const;

 private:
  mutable Mutex mu_;
  ImageSizes sizes_ STOKER_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_SIZE_TALLY_H_
