// Copyright 2026 The stoker Authors.
//
// Transform specifications, with torchvision's names, arguments and meaning.
// A transform list is plain data: the engine compiles it, per sample, into
// one region decode plus one fused resample/flip/normalise/convert pass.
//
// Resampling reproduces Pillow's antialiased bilinear filter (the one
// torchvision applies to PIL images), including its fixed-point rounding, so
// Resize(256) + CenterCrop(224) gives the same pixels as torchvision on
// PIL-decoded images (see docs/architecture.md for the exceptions: JPEG
// DCT-domain scaling, which the loader may use when a crop is downscaled by
// 2x or more, and chains with more than one resize, whose later crops and
// flips are composed into one pass).
#ifndef STOKER_TRANSFORMS_H_
#define STOKER_TRANSFORMS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

struct Transform {
  enum class Kind {
    kRandomResizedCrop,
    kResize,
    kCenterCrop,
    kRandomHorizontalFlip,
    kNormalize,
  };
  Kind kind = Kind::kNormalize;
  // Output size for RandomResizedCrop, CenterCrop and Resize((h, w)). For
  // Resize(size) (shorter side) `height` holds size and `width` is 0.
  int height = 0;
  int width = 0;
  // RandomResizedCrop.
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  // RandomHorizontalFlip: probability of flipping.
  double p = 0.5;
  // Normalize, per RGB channel, applied to pixels scaled to [0, 1].
  std::array<float, 3> mean{0.f, 0.f, 0.f};
  std::array<float, 3> std{1.f, 1.f, 1.f};

  static Transform RandomResizedCrop(int height, int width, double scale_min = 0.08,
                                     double scale_max = 1.0, double ratio_min = 3.0 / 4.0,
                                     double ratio_max = 4.0 / 3.0);
  // Shorter side to `size`, keeping the aspect ratio (torchvision's rule).
  static Transform Resize(int size);
  static Transform Resize(int height, int width);
  static Transform CenterCrop(int height, int width);
  static Transform RandomHorizontalFlip(double p = 0.5);
  static Transform Normalize(std::array<float, 3> mean, std::array<float, 3> std);

  // "RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.33))".
  std::string ToString() const;
};

// The crop RandomResizedCrop `t` draws for a `width` x `height` image from
// the random stream Rng(HashSeed(seed, stream)), exactly as torchvision's
// RandomResizedCrop.get_params does (for distribution tests). Pure.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};
CropBox SampleRandomResizedCropBox(int width, int height, const Transform& t, uint64_t seed,
                                   uint64_t stream);

}  // namespace stoker

#endif  // STOKER_TRANSFORMS_H_
