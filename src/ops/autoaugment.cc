// Copyright 2026 The stoker Authors.
#include "ops/autoaugment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/color.h"
#include "ops/warp.h"

namespace stoker {
namespace {

// CPython's math.degrees constant.
constexpr double kRadToDeg = 180.0 / M_PI;

// torch.linspace(start, end, steps)[i] in float32 (ATen's CPU kernel: the
// first half counts up from start, the second half down from end).
float LinspaceF(double start_d, double end_d, int steps, int i) {
  const float start = static_cast<float>(start_d), end = static_cast<float>(end_d);
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  return i < halfway ? start + step * static_cast<float>(i)
                     : end - step * static_cast<float>(steps - i - 1);
}

// F.affine on a PIL image with an explicit centre, NEAREST.
void TorchvisionAffine(double angle, double tx, double ty, double scale, double shear_x,
                       double shear_y, double cx, double cy, const std::array<uint8_t, 3>& fill,
                       RgbImage* img, RgbImage* scratch) {
  stoker::TorchvisionAffine(angle, tx, ty, scale, shear_x, shear_y, /*has_center=*/true, cx, cy,
                            kPilNearest, fill, img, scratch);
}

}  // namespace

const char* AugOpName(AugOp op) {
  static const char* const kNames[kNumAugOpsAll] = {
      "Identity",  "ShearX",  "ShearY",   "TranslateX", "TranslateY",   "Rotate",  "Brightness",
      "Color",     "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize",
      "Invert"};
  return kNames[static_cast<int>(op)];
}

double AugMagnitude(AugOp op, int bin, int num_bins, bool wide, int width, int height,
                    bool* has_magnitude, bool* is_signed) {
  *has_magnitude = true;
  *is_signed = true;
  switch (op) {
    case AugOp::kShearX:
    case AugOp::kShearY:
      return LinspaceF(0.0, wide ? 0.99 : 0.3, num_bins, bin);
    case AugOp::kTranslateX:
      return LinspaceF(0.0, wide ? 32.0 : 150.0 / 331.0 * width, num_bins, bin);
    case AugOp::kTranslateY:
      return LinspaceF(0.0, wide ? 32.0 : 150.0 / 331.0 * height, num_bins, bin);
    case AugOp::kRotate:
      return LinspaceF(0.0, wide ? 135.0 : 30.0, num_bins, bin);
    case AugOp::kBrightness:
    case AugOp::kColor:
    case AugOp::kContrast:
    case AugOp::kSharpness:
      return LinspaceF(0.0, wide ? 0.99 : 0.9, num_bins, bin);
    case AugOp::kPosterize: {
      *is_signed = false;
      // 8 - (arange(num_bins) / ((num_bins - 1) / k)).round().int(), in float32.
      const float div = static_cast<float>((num_bins - 1) / (wide ? 6.0 : 4.0));
      return 8 - static_cast<int>(std::nearbyint(static_cast<float>(bin) / div));
    }
    case AugOp::kSolarize:
      *is_signed = false;
      return LinspaceF(255.0, 0.0, num_bins, bin);
    default:
      *has_magnitude = false;
      *is_signed = false;
      return 0.0;
  }
}

void RotateNearest(double angle, const std::array<uint8_t, 3>& fill, RgbImage* img,
                   RgbImage* scratch) {
  PilRotate(angle, kPilNearest, /*has_center=*/false, 0.0, 0.0, fill, img, scratch);
}

void ApplyAugOp(AugOp op, double magnitude, const std::array<uint8_t, 3>& fill, RgbImage* img,
                RgbImage* scratch) {
  const int w = img->width(), h = img->height();
  switch (op) {
    case AugOp::kIdentity: break;
    case AugOp::kShearX:
      TorchvisionAffine(0.0, 0, 0, 1.0, std::atan(magnitude) * kRadToDeg, 0.0, 0, 0, fill, img,
                        scratch);
      break;
    case AugOp::kShearY:
      TorchvisionAffine(0.0, 0, 0, 1.0, 0.0, std::atan(magnitude) * kRadToDeg, 0, 0, fill, img,
                        scratch);
      break;
    case AugOp::kTranslateX:
      TorchvisionAffine(0.0, static_cast<int>(magnitude), 0, 1.0, 0.0, 0.0, w * 0.5, h * 0.5,
                        fill, img, scratch);
      break;
    case AugOp::kTranslateY:
      TorchvisionAffine(0.0, 0, static_cast<int>(magnitude), 1.0, 0.0, 0.0, w * 0.5, h * 0.5,
                        fill, img, scratch);
      break;
    case AugOp::kRotate: RotateNearest(magnitude, fill, img, scratch); break;
    case AugOp::kBrightness: AdjustBrightness(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kColor: AdjustSaturation(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kContrast: AdjustContrast(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kSharpness:
      AdjustSharpness(img, static_cast<float>(1.0 + magnitude), scratch);
      break;
    case AugOp::kPosterize: Posterize(img, static_cast<int>(magnitude)); break;
    case AugOp::kSolarize: Solarize(img, magnitude); break;
    case AugOp::kAutoContrast: Autocontrast(img); break;
    case AugOp::kEqualize: Equalize(img); break;
    case AugOp::kInvert: Invert(img); break;
  }
}

namespace {

struct SubPolicyOp {
  AugOp op;
  double p;
  int magnitude_id;  // -1: None
};
// torchvision's AutoAugmentPolicy.IMAGENET.
constexpr SubPolicyOp kImageNetPolicy[25][2] = {
    {{AugOp::kPosterize, 0.4, 8}, {AugOp::kRotate, 0.6, 9}},
    {{AugOp::kSolarize, 0.6, 5}, {AugOp::kAutoContrast, 0.6, -1}},
    {{AugOp::kEqualize, 0.8, -1}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kPosterize, 0.6, 7}, {AugOp::kPosterize, 0.6, 6}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kSolarize, 0.2, 4}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kRotate, 0.8, 8}},
    {{AugOp::kSolarize, 0.6, 3}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kPosterize, 0.8, 5}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kRotate, 0.2, 3}, {AugOp::kSolarize, 0.6, 8}},
    {{AugOp::kEqualize, 0.6, -1}, {AugOp::kPosterize, 0.4, 6}},
    {{AugOp::kRotate, 0.8, 8}, {AugOp::kColor, 0.4, 0}},
    {{AugOp::kRotate, 0.4, 9}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kEqualize, 0.0, -1}, {AugOp::kEqualize, 0.8, -1}},
    {{AugOp::kInvert, 0.6, -1}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.6, 4}, {AugOp::kContrast, 1.0, 8}},
    {{AugOp::kRotate, 0.8, 8}, {AugOp::kColor, 1.0, 2}},
    {{AugOp::kColor, 0.8, 8}, {AugOp::kSolarize, 0.8, 7}},
    {{AugOp::kSharpness, 0.4, 7}, {AugOp::kInvert, 0.6, -1}},
    {{AugOp::kShearX, 0.6, 5}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.4, 0}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kSolarize, 0.2, 4}},
    {{AugOp::kSolarize, 0.6, 5}, {AugOp::kAutoContrast, 0.6, -1}},
    {{AugOp::kInvert, 0.6, -1}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.6, 4}, {AugOp::kContrast, 1.0, 8}},
    {{AugOp::kEqualize, 0.8, -1}, {AugOp::kEqualize, 0.6, -1}},
};

int DrawAutoAugment(int width, int height, Rng* rng, AugDraw* out, int max_out) {
  const auto& sub = kImageNetPolicy[rng->Below(25)];
  const double probs[2] = {rng->Uniform(), rng->Uniform()};
  const uint64_t signs[2] = {rng->Below(2), rng->Below(2)};
  int n = 0;
  for (int i = 0; i < 2 && n < max_out; ++i) {
    if (!(probs[i] <= sub[i].p)) continue;
    double m = 0.0;
    if (sub[i].magnitude_id >= 0) {
      bool has, is_signed;
      m = AugMagnitude(sub[i].op, sub[i].magnitude_id, 10, false, width, height, &has,
                       &is_signed);
      if (is_signed && signs[i] == 0) m = -m;
    }
    out[n++] = AugDraw{sub[i].op, m};
  }
  return n;
}

}  // namespace

AugPolicy AugPolicyOf(const Transform& t) {
  if (t.name() == "AutoAugment") return AugPolicy::kAutoAugment;
  if (t.name() == "TrivialAugmentWide") return AugPolicy::kTrivialAugmentWide;
  return AugPolicy::kRandAugment;
}

int DrawAugPolicy(AugPolicy policy, const Transform& t, int width, int height, Rng* rng,
                  AugDraw* out, int max_out) {
  if (policy == AugPolicy::kAutoAugment) {
    return DrawAutoAugment(width, height, rng, out, max_out);
  }
  const bool wide = policy == AugPolicy::kTrivialAugmentWide;
  const int n = std::min(wide ? 1 : t.num_ops, max_out);
  for (int i = 0; i < n; ++i) {
    const AugOp op = static_cast<AugOp>(rng->Below(kNumAugOps));
    bool has, is_signed;
    // The bin: TrivialAugmentWide draws it (only for ops with a magnitude),
    // RandAugment uses t.magnitude.
    AugMagnitude(op, 0, t.num_magnitude_bins, wide, width, height, &has, &is_signed);
    int bin = t.magnitude;
    if (wide) bin = has ? static_cast<int>(rng->Below(t.num_magnitude_bins)) : 0;
    double m = has ? AugMagnitude(op, bin, t.num_magnitude_bins, wide, width, height, &has,
                                  &is_signed)
                   : 0.0;
    if (is_signed && rng->Below(2) == 1) m = -m;
    out[i] = AugDraw{op, m};
  }
  return n;
}

namespace {

void ApplyAugPolicy(AugPolicy policy, const Transform& t, Rng* rng, RgbImage* img,
                    RgbImage* scratch) {
  constexpr int kMaxOps = 16;
  AugDraw draws[kMaxOps];
  const int n = DrawAugPolicy(policy, t, img->width(), img->height(), rng, draws, kMaxOps);
  const std::array<uint8_t, 3> fill = {static_cast<uint8_t>(t.fill[0]),
                                       static_cast<uint8_t>(t.fill[1]),
                                       static_cast<uint8_t>(t.fill[2])};
  for (int i = 0; i < n; ++i) ApplyAugOp(draws[i].op, draws[i].magnitude, fill, img, scratch);
}

}  // namespace

void ApplyTrivialAugmentWide(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyAugPolicy(AugPolicy::kTrivialAugmentWide, t, rng, img, scratch);
}
void ApplyRandAugment(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyAugPolicy(AugPolicy::kRandAugment, t, rng, img, scratch);
}
void ApplyAutoAugment(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyAugPolicy(AugPolicy::kAutoAugment, t, rng, img, scratch);
}

}  // namespace stoker
