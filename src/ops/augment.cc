// Copyright 2026 The stoker Authors.
#include "stoker/augment.h"

#include <cmath>
#include <cstring>

#include "base/rng.h"
#include "codec/image.h"
#include "ops/autoaugment.h"
#include "ops/color.h"
#include "ops/warp.h"

namespace stoker {
namespace {

Status CheckSize(int width, int height, const uint8_t* rgb) {
  if (width <= 0 || height <= 0 || rgb == nullptr) {
    return InvalidArgumentError("need an RGB image with width > 0 and height > 0");
  }
  return Status::OK();
}

void CopyIn(int width, int height, const uint8_t* rgb, RgbImage* img) {
  img->Resize(width, height);
  std::memcpy(img->data(), rgb, static_cast<size_t>(width) * height * 3);
}

void CopyOut(RgbImage& img, uint8_t* rgb) {
  std::memcpy(rgb, img.data(), static_cast<size_t>(img.width()) * img.height() * 3);
}

}  // namespace

Status ApplyColorOp(const std::string& op, double arg, int width, int height, uint8_t* rgb) {
  STOKER_RETURN_IF_ERROR(CheckSize(width, height, rgb));
  RgbImage img, scratch;
  CopyIn(width, height, rgb, &img);
  const float f = static_cast<float>(arg);
  if (op == "brightness") AdjustBrightness(&img, f);
  else if (op == "contrast") AdjustContrast(&img, f);
  else if (op == "saturation") AdjustSaturation(&img, f);
  else if (op == "hue") AdjustHue(&img, arg);
  else if (op == "grayscale") ToGrayscale(&img);
  else if (op == "autocontrast") Autocontrast(&img);
  else if (op == "equalize") Equalize(&img);
  else if (op == "posterize") Posterize(&img, static_cast<int>(arg));
  else if (op == "solarize") Solarize(&img, arg);
  else if (op == "sharpness") AdjustSharpness(&img, f, &scratch);
  else if (op == "gaussian_blur_3") GaussianBlur(&img, 3, 3, arg, arg, &scratch);
  else if (op == "gaussian_blur_9") GaussianBlur(&img, 9, 9, arg, arg, &scratch);
  else if (op == "gaussian_blur_23") GaussianBlur(&img, 23, 23, arg, arg, &scratch);
  else return InvalidArgumentError("unknown colour op '" + op + "'");
  CopyOut(img, rgb);
  return Status::OK();
}

Status ApplyPolicyOp(const std::string& op, double magnitude, const std::array<uint8_t, 3>& fill,
                     int width, int height, uint8_t* rgb) {
  STOKER_RETURN_IF_ERROR(CheckSize(width, height, rgb));
  int found = -1;
  for (int k = 0; k < kNumAugOpsAll; ++k) {
    if (op == AugOpName(static_cast<AugOp>(k))) found = k;
  }
  if (found < 0) return InvalidArgumentError("unknown policy op '" + op + "'");
  RgbImage img, scratch;
  CopyIn(width, height, rgb, &img);
  ApplyAugOp(static_cast<AugOp>(found), magnitude, fill, &img, &scratch);
  CopyOut(img, rgb);
  return Status::OK();
}

int PolicyOpCount() { return kNumAugOps; }

std::vector<double> PolicyMagnitudes(int num_bins, bool wide, int width, int height) {
  std::vector<double> out(static_cast<size_t>(kNumAugOps) * num_bins);
  for (int k = 0; k < kNumAugOps; ++k) {
    for (int b = 0; b < num_bins; ++b) {
      bool has = false, is_signed = false;
      const double m =
          AugMagnitude(static_cast<AugOp>(k), b, num_bins, wide, width, height, &has, &is_signed);
      out[static_cast<size_t>(k) * num_bins + b] = has ? m : std::nan("");
    }
  }
  return out;
}

std::vector<double> SamplePolicy(const Transform& t, int width, int height, uint64_t seed, int n,
                                 int per_draw) {
  std::vector<double> out(static_cast<size_t>(n) * per_draw * 2, std::nan(""));
  for (int i = 0; i < n; ++i) {
    Rng rng(HashSeed(seed, static_cast<uint64_t>(i)));
    AugDraw draws[16];
    const int got = DrawAugPolicy(AugPolicyOf(t), t, width, height, &rng, draws, 16);
    for (int j = 0; j < got && j < per_draw; ++j) {
      double* o = &out[(static_cast<size_t>(i) * per_draw + j) * 2];
      o[0] = static_cast<double>(draws[j].op);
      o[1] = draws[j].magnitude;
    }
  }
  return out;
}

std::vector<double> SampleColorJitter(const Transform& t, uint64_t seed, int n) {
  std::vector<double> out(static_cast<size_t>(n) * 8);
  for (int i = 0; i < n; ++i) {
    Rng rng(HashSeed(seed, static_cast<uint64_t>(i)));
    const ColorJitterParams p = DrawColorJitter(t, &rng);
    double* o = &out[static_cast<size_t>(i) * 8];
    for (int k = 0; k < 4; ++k) o[k] = p.order[k];
    for (int k = 0; k < 4; ++k) o[4 + k] = p.enabled[k] ? p.factor[k] : std::nan("");
  }
  return out;
}

Status ApplyWarpOp(const std::string& op, const std::vector<double>& params, int interpolation,
                   const std::array<uint8_t, 3>& fill, int width, int height, uint8_t* rgb) {
  STOKER_RETURN_IF_ERROR(CheckSize(width, height, rgb));
  if (interpolation != kPilNearest && interpolation != kPilBilinear &&
      interpolation != kPilBicubic) {
    return InvalidArgumentError("interpolation must be 0 (NEAREST), 2 (BILINEAR) or 3 (BICUBIC)");
  }
  RgbImage img, scratch;
  CopyIn(width, height, rgb, &img);
  const size_t n = params.size();
  if (op == "rotate" && (n == 1 || n == 3)) {
    PilRotate(params[0], interpolation, n == 3, n == 3 ? params[1] : 0.0,
              n == 3 ? params[2] : 0.0, fill, &img, &scratch);
  } else if (op == "affine" && (n == 6 || n == 8)) {
    TorchvisionAffine(params[0], params[1], params[2], params[3], params[4], params[5], n == 8,
                      n == 8 ? params[6] : 0.0, n == 8 ? params[7] : 0.0, interpolation, fill,
                      &img, &scratch);
  } else if (op == "perspective" && n == 8) {  // the coefficients themselves
    PilPerspective(params.data(), interpolation, fill, &img, &scratch);
  } else if (op == "perspective" && n == 16) {
    double coeffs[8];
    PerspectiveCoeffs(params.data(), params.data() + 8, coeffs);
    PilPerspective(coeffs, interpolation, fill, &img, &scratch);
  } else {
    return InvalidArgumentError("unknown warp '" + op + "' with " + std::to_string(n) +
                                " parameters (rotate: 1 or 3, affine: 6 or 8, perspective: 16 points or 8 coefficients)");
  }
  CopyOut(img, rgb);
  return Status::OK();
}

std::vector<double> SampleWarp(const Transform& t, int width, int height, uint64_t seed, int n,
                               int* per_draw) {
  const WarpKind kind = WarpKindOf(t);
  *per_draw = kind == WarpKind::kRotation ? 1 : kind == WarpKind::kAffine ? 6 : 9;
  std::vector<double> out(static_cast<size_t>(n) * *per_draw);
  for (int i = 0; i < n; ++i) {
    Rng rng(HashSeed(seed, static_cast<uint64_t>(i)));
    double p[9];
    DrawWarpParams(kind, t, width, height, &rng, p);
    std::memcpy(&out[static_cast<size_t>(i) * *per_draw], p, sizeof(double) * *per_draw);
  }
  return out;
}

}  // namespace stoker
