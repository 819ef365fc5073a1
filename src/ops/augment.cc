// Copyright 2026 The stoker Authors.
#include "stoker/augment.h"

#include <cmath>
#include <cstring>

#include "base/rng.h"
#include "codec/image.h"
#include "ops/autoaugment.h"
#include "ops/color.h"
#include "ops/geometry.h"
#include "ops/targets.h"
#include "ops/transform_ops.h"
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
                     int width, int height, uint8_t* rgb, int interpolation) {
  STOKER_RETURN_IF_ERROR(CheckSize(width, height, rgb));
  if (interpolation != kPilNearest && interpolation != kPilBilinear &&
      interpolation != kPilBicubic) {
    return InvalidArgumentError("interpolation must be 0 (NEAREST), 2 (BILINEAR) or 3 (BICUBIC)");
  }
  int found = -1;
  for (int k = 0; k < kNumAugOpsAll; ++k) {
    if (op == AugOpName(static_cast<AugOp>(k))) found = k;
  }
  if (found < 0) return InvalidArgumentError("unknown policy op '" + op + "'");
  RgbImage img, scratch;
  CopyIn(width, height, rgb, &img);
  ApplyAugOp(static_cast<AugOp>(found), magnitude, interpolation, fill, &img, &scratch);
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

Status FollowTargetsForTesting(const std::vector<Transform>& transforms, int width, int height,
                               uint64_t seed, const uint8_t* mask, int mask_bpp,
                               int64_t ignore_index, const double* boxes, int n,
                               const std::string& box_format, double min_size,
                               double min_area_fraction, const double* keypoints, int k,
                               int kcols, TargetsForTesting* out,
                               const uint8_t* instances) {
  Rng rng(seed);
  GeometryPlan plan;
  TargetGeometry g;
  g.Reset(width, height);
  STOKER_ASSIGN_OR_RETURN(const BoxFormat format, ParseBoxFormat(box_format));
  std::vector<double> xyxy;  // for the draws that read the boxes (RandomIoUCrop)
  BoxesToXyxy(format, boxes, n, &xyxy);
  STOKER_RETURN_IF_ERROR(
      PlanGeometry(transforms, width, height, &rng, &plan, &g.steps, &xyxy));
  for (const Transform& t : transforms) {
    if (StageOf(t) != TransformStage::kWarp) continue;
    GeometryStep s;
    s.kind = GeometryStep::kWarp;
    s.in_width = s.out_width = g.out_width();
    s.in_height = s.out_height = g.out_height();
    DrawWarp(t, &rng, s.in_width, s.in_height, &s.warp);
    g.steps.push_back(s);
  }
  out->steps.clear();
  for (const GeometryStep& s : g.steps) {
    const double v[15] = {static_cast<double>(s.kind), double(s.in_width), double(s.in_height),
                          double(s.out_width), double(s.out_height), double(s.crop.x),
                          double(s.crop.y), double(s.crop.width), double(s.crop.height),
                          double(s.pad_mode), double(s.pad1[0]), double(s.pad1[1]),
                          double(s.pad1[2]), double(s.pad1[3]), 0};
    out->steps.insert(out->steps.end(), v, v + 14);
    out->steps.insert(out->steps.end(), s.warp.params, s.warp.params + 9);
    out->steps.push_back(s.drop_outside_centres ? 1 : 0);
  }
  if (mask != nullptr) {
    MaskImage m, scratch;
    m.width = width;
    m.height = height;
    m.bpp = mask_bpp;
    m.pixels.assign(mask, mask + static_cast<size_t>(width) * height * mask_bpp);
    STOKER_RETURN_IF_ERROR(TransformMask(g, ignore_index, &m, &scratch));
    out->mask_width = m.width;
    out->mask_height = m.height;
    out->mask.assign(m.pixels.begin(),
                     m.pixels.begin() + static_cast<size_t>(m.width) * m.height * m.bpp);
  }
  TransformBoxes(g, format, boxes, n, BoxRules{min_size, min_area_fraction}, &out->boxes,
                 &out->keep);
  TransformKeypoints(g, keypoints, k, kcols, &out->keypoints);
  out->instances.clear();
  if (instances != nullptr) {
    int kept = 0;
    for (uint8_t x : out->keep) kept += x;
    out->instances.resize(static_cast<size_t>(kept) * g.out_width() * g.out_height());
    MaskImage a, b;
    STOKER_RETURN_IF_ERROR(TransformMaskPlanes(g, 0, instances, n, width, height, 1,
                                               out->keep.data(), &a, &b,
                                               out->instances.data()));
  }
  return Status::OK();
}

}  // namespace stoker
