// Copyright 2026 The stoker Authors.
//
// Photometric ops on an 8-bit RGB image, in place, with the arithmetic Pillow
// uses for the torchvision functional op on a PIL image (F.adjust_brightness
// -> ImageEnhance.Brightness -> Image.blend, and so on). They run on the
// output-size image, after all crops and resizes (the sample processor's
// scratch image), so their cost is per output pixel.
//
// Exactness (checked against Pillow by python/tests/test_color.py):
//   brightness, contrast, saturation, grayscale, autocontrast, equalize,
//   posterize, solarize, sharpness: bit-identical (same float32 blend with
//   truncation, same L = (19595 R + 38470 G + 7471 B + 2^15) >> 16, same
//   histogram rules, same 3x3 SMOOTH kernel in float32 with untouched borders);
//   hue: Pillow's RGB -> HSV -> RGB conversion, replicated in the same
//   float/double mix.
//
// Thread-safety: pure functions of their arguments. No errors: parameters are
// checked when the loader is created (stoker::Loader::Create).
#ifndef STOKER_OPS_COLOR_H_
#define STOKER_OPS_COLOR_H_

#include <array>

#include "base/rng.h"
#include "codec/image.h"
#include "stoker/transforms.h"

namespace stoker {

// Image.blend(degenerate, image, factor) with degenerate = black.
void AdjustBrightness(RgbImage* img, float factor);
// Blend with the grey image of the rounded mean luma.
void AdjustContrast(RgbImage* img, float factor);
// Blend with the image's own luma.
void AdjustSaturation(RgbImage* img, float factor);
// Rotates Pillow's 8-bit HSV hue by uint8(hue_factor * 255), hue_factor in [-0.5, 0.5].
void AdjustHue(RgbImage* img, double hue_factor);
// convert("L") then back to 3 equal channels.
void ToGrayscale(RgbImage* img);
// ImageOps.autocontrast (no cutoff): each channel stretched to [0, 255].
void Autocontrast(RgbImage* img);
// ImageOps.equalize, per channel.
void Equalize(RgbImage* img);
// ImageOps.posterize: keep the top `bits` bits.
void Posterize(RgbImage* img, int bits);
// ImageOps.solarize: invert values >= threshold.
void Solarize(RgbImage* img, double threshold);
// ImageOps.invert: every value v becomes 255 - v.
void Invert(RgbImage* img);
// ImageEnhance.Sharpness: blend with the SMOOTH-filtered image (borders kept).
// `scratch` holds the filtered copy.
void AdjustSharpness(RgbImage* img, float factor, RgbImage* scratch);

// torchvision's F.gaussian_blur on a PIL image (which runs the tensor
// path): float32 kernel exp(-x^2 / (2 sigma^2)) / sum on linspace(-(k-1)/2,
// (k-1)/2, k), reflect padding, rounded half-to-even. Computed separably in
// float32, so a value on a .5 boundary may round the other way from conv2d's
// summation order: within 1 level. `kx`, `ky` odd.
void GaussianBlur(RgbImage* img, int kx, int ky, double sigma_x, double sigma_y,
                  RgbImage* scratch);

// ColorJitter's draws, in torchvision's order: a permutation of the four
// adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue), then each
// enabled factor uniformly from its range.
struct ColorJitterParams {
  std::array<int, 4> order{0, 1, 2, 3};
  bool enabled[4] = {false, false, false, false};
  double factor[4] = {1.0, 1.0, 1.0, 0.0};
};
ColorJitterParams DrawColorJitter(const Transform& t, Rng* rng);
// Applies drawn ColorJitter parameters: the same bytes as AdjustBrightness,
// AdjustContrast, AdjustSaturation and AdjustHue applied in `p.order` (the
// enabled ones), but the steps between hue's place go fused, in at most two
// passes over the image (per-value tables composed; saturation with the
// tables before and after it; contrast's mean from a read-only pass, or from
// the luma of what saturation's pass wrote when contrast follows it).
void JitterColors(const ColorJitterParams& p, RgbImage* img);

// The photometric transforms (their declarations: ops/color_transforms.cc):
// each draws its parameters from `rng`, in torchvision's order, and applies
// itself to `img`; `scratch` is a second buffer some need.
void ApplyColorJitter(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomGrayscale(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyGrayscale(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomAutocontrast(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomEqualize(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomPosterize(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomSolarize(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomAdjustSharpness(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyGaussianBlur(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomInvert(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);

}  // namespace stoker

#endif  // STOKER_OPS_COLOR_H_
