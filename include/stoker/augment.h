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

}  // namespace stoker

#endif  // STOKER_AUGMENT_H_
