// Copyright 2026 The stoker Authors.
#include "pipeline/size_tally.h"

#include <cmath>

namespace stoker {

void SizeTally::Add(int width, int height) {
  if (width <= 0 || height <= 0) return;
  MutexLock lock(&mu_);
  ++sizes_.widths[width];
  ++sizes_.heights[height];
  ++sizes_.aspects_milli[std::llround(1000.0 * width / height)];
  ++sizes_.images;
}

void SizeTally::AddTo(ImageSizes* out) const {
  MutexLock lock(&mu_);
  for (const auto& [v, c] : sizes_.widths) out->widths[v] += c;
  for (const auto& [v, c] : sizes_.heights) out->heights[v] += c;
  for (const auto& [v, c] : sizes_.aspects_milli) out->aspects_milli[v] += c;
  out->images += sizes_.images;
}

}  // namespace stoker
