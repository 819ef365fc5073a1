// Copyright 2026 The stoker Authors.
//
// The augmentations the Loader runs after its crop, one at a time on an RGB
// image, and their random draws on their own: for pixel checks against
// torchvision (the project's parity tests use them) and for tools. The
// Loader does not go through these functions; they call the same code.
//
// Images are interleaved RGB, `height` rows of `width * 3` bytes, packed,
// changed in place.
//
// Thread-safety: pure functions of their arguments; safe from any thread.
// Errors: InvalidArgument for an unknown op name or bad sizes.
#ifndef STOKER_AUGMENT_H_
#define STOKER_AUGMENT_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/status.h"
#include "stoker/transforms.h"

namespace stoker {

// A photometric op with a fixed parameter: "brightness", "contrast",
// "saturation" (factor), "hue" (hue factor), "grayscale", "autocontrast",
// "equalize", "posterize" (bits), "solarize" (threshold), "sharpness"
// (factor), "gaussian_blur_3" / "_9" / "_23" (kernel size; arg = sigma).
Status ApplyColorOp(const std::string& op, double arg, int width, int height, uint8_t* rgb);

// torchvision's _apply_op(img, op, magnitude, interpolation, fill) for the
// policy ops named as torchvision names them ("Identity", "ShearX", ...,
// "Invert"); interpolation: PIL's code, 0 (NEAREST), 2 (BILINEAR) or 3 (BICUBIC).
Status ApplyPolicyOp(const std::string& op, double magnitude, const std::array<uint8_t, 3>& fill,
                     int width, int height, uint8_t* rgb, int interpolation = 0);

// The policies' magnitude table for an image of `width` x `height`:
// PolicyOpCount() rows of `num_bins` values (row-major), NaN for ops without
// a magnitude. `wide`: TrivialAugmentWide's ranges, else RandAugment's.
int PolicyOpCount();
std::vector<double> PolicyMagnitudes(int num_bins, bool wide, int width, int height);

// `n` draws of policy transform `t` (TrivialAugmentWide, RandAugment,
// AutoAugment) for an image of `width` x `height`, draw i from the engine's
// generator seeded by (seed, i): per draw `per_draw` (op index, signed
// magnitude) pairs, NaN after the ops drawn. Returns n * per_draw * 2 values.
std::vector<double> SamplePolicy(const Transform& t, int width, int height, uint64_t seed, int n,
                                 int per_draw);

// `n` draws of ColorJitter `t`, draw i seeded by (seed, i): per draw the
// order of the four adjustments (0 brightness, 1 contrast, 2 saturation,
// 3 hue) then the four factors (NaN when off). Returns n * 8 values.
std::vector<double> SampleColorJitter(const Transform& t, uint64_t seed, int n);

// Testing hooks for the geometric warps (src/ops/warp.h), on a packed RGB
// image in place; `interpolation`: 0 NEAREST or 2 BILINEAR.
//   "rotate": params {angle} or {angle, cx, cy} (Image.rotate / F.rotate);
//   "affine": {angle, tx, ty, scale, shear_x, shear_y} or + {cx, cy}
//     (F.affine);
//   "perspective": 8 startpoint then 8 endpoint coordinates (F.perspective),
//     or the 8 coefficients (Image.transform(PERSPECTIVE)).
// InvalidArgument for an unknown op or a wrong parameter count.
Status ApplyWarpOp(const std::string& op, const std::vector<double>& params, int interpolation,
                   const std::array<uint8_t, 3>& fill, int width, int height, uint8_t* rgb);

// `n` draws of a warp's parameters (ops/warp.h DrawWarpParams) for a width x
// height image from Rng(HashSeed(seed, i)), `per_draw` values each (1, 6, 9).
std::vector<double> SampleWarp(const Transform& t, int width, int height, uint64_t seed, int n,
                               int* per_draw);

// Testing hook for the targets (src/ops/targets.h): the geometry of
// `transforms` (geometric and warp transforms only) for a width x height
// image drawn from Rng(seed) as a sample's is (PlanGeometry, then each warp
// in list order), replayed on a mask (uint8 or uint16 [height, width],
// `mask_bpp` 1 or 2; null: none), boxes (n x 4 in `box_format`) and
// keypoints (k x kcols). `steps`: per step 24 numbers: kind (0 crop,
// 1 resize, 2 hflip, 3 vflip, 4 warp), in_w, in_h, out_w, out_h, crop x, y,
// w, h, pad_mode, pad1 (4), then a warp's drawn parameters (9, as
// ops/warp.h DrawWarpParams gives them; zeros otherwise), then 1 for a crop
// that removes the boxes whose centre is outside it (RandomIoUCrop), else 0.
// The boxes are also what RandomIoUCrop's draw reads. `instances`
// (null: none): n uint8 planes [n, height, width], one per box, replayed as
// instance masks (padding 0), the kept boxes' planes into `instances`.
struct TargetsForTesting {
  std::vector<double> steps;
  int mask_width = 0, mask_height = 0;
  std::vector<uint8_t> mask;
  std::vector<float> boxes;
  std::vector<uint8_t> keep;
  std::vector<float> keypoints;
  std::vector<uint8_t> instances;  // the kept boxes' planes, each of the output's size
};
Status FollowTargetsForTesting(const std::vector<Transform>& transforms, int width, int height,
                               uint64_t seed, const uint8_t* mask, int mask_bpp,
                               int64_t ignore_index, const double* boxes, int n,
                               const std::string& box_format, double min_size,
                               double min_area_fraction, const double* keypoints, int k,
                               int kcols, TargetsForTesting* out,
                               const uint8_t* instances = nullptr);

}  // namespace stoker

#endif  // STOKER_AUGMENT_H_
