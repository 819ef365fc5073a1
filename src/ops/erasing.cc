// Copyright 2026 The stoker Authors.
#include "ops/erasing.h"

#include <cstring>

#include "ops/geometry.h"

namespace stoker {

void ApplyRandomErasing(const Transform& t, Rng* rng, const OutputTensor& out) {
  // torchvision.transforms.RandomErasing.forward / get_params (ops/geometry.h).
  Rect r;
  if (!SampleRandomErasing(out.width, out.height, t, rng, &r)) return;
  const int img_h = out.height, img_w = out.width;
  uint8_t* slot = out.data;
  // All-zero bytes are 0 in uint8, float32, float16 and bfloat16.
  const size_t elem = out.elem_size;
  if (out.nchw) {
    for (int c = 0; c < 3; ++c) {
      for (int y = r.y; y < r.bottom(); ++y) {
        std::memset(slot + ((static_cast<size_t>(c) * img_h + y) * img_w + r.x) * elem, 0,
                    static_cast<size_t>(r.width) * elem);
      }
    }
  } else {
    for (int y = r.y; y < r.bottom(); ++y) {
      std::memset(slot + (static_cast<size_t>(y) * img_w + r.x) * 3 * elem, 0,
                  static_cast<size_t>(r.width) * 3 * elem);
    }
  }
}

}  // namespace stoker
