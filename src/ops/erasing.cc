// Copyright 2026 The stoker Authors.
#include "ops/erasing.h"

#include <cmath>
#include <cstring>

#include "ops/geometry.h"

namespace stoker {

void ApplyRandomErasing(const Transform& t, Rng* rng, const OutputTensor& out) {
  // torchvision.transforms.RandomErasing.forward / get_params.
  if (!(rng->Uniform() < t.p)) return;
  const int img_h = out.height, img_w = out.width;
  uint8_t* slot = out.data;
  const double area = static_cast<double>(img_h) * img_w;
  const double lr0 = std::log(t.ratio_min), lr1 = std::log(t.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * rng->Uniform(t.scale_min, t.scale_max);
    const double aspect = std::exp(rng->Uniform(lr0, lr1));
    const int h = RoundHalfEven(std::sqrt(erase_area * aspect));
    const int w = RoundHalfEven(std::sqrt(erase_area / aspect));
    if (!(h < img_h && w < img_w)) continue;
    const int i = static_cast<int>(rng->Below(static_cast<uint64_t>(img_h - h + 1)));
    const int j = static_cast<int>(rng->Below(static_cast<uint64_t>(img_w - w + 1)));
    // All-zero bytes are 0 in uint8, float32, float16 and bfloat16.
    const size_t elem = out.elem_size;
    if (out.nchw) {
      for (int c = 0; c < 3; ++c) {
        for (int y = i; y < i + h; ++y) {
          std::memset(slot + ((static_cast<size_t>(c) * img_h + y) * img_w + j) * elem, 0,
                      static_cast<size_t>(w) * elem);
        }
      }
    } else {
      for (int y = i; y < i + h; ++y) {
        std::memset(slot + (static_cast<size_t>(y) * img_w + j) * 3 * elem, 0,
                    static_cast<size_t>(w) * 3 * elem);
      }
    }
    return;
  }
}

}  // namespace stoker
