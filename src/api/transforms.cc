// Copyright 2026 The stoker Authors.
//
// The public Transform type (stoker/transforms.h): its factories, which
// record torchvision's arguments, and its description. What a transform does
// to pixels is in ops/ (geometry, color, warp, autoaugment).
#include <array>
#include <cstdio>
#include <string>
#include <utility>

#include "stoker/transforms.h"

namespace stoker {

Transform Transform::RandomResizedCrop(int height, int width, double scale_min, double scale_max,
                                       double ratio_min, double ratio_max) {
  Transform t;
  t.kind = Kind::kRandomResizedCrop;
  t.height = height;
  t.width = width;
  t.scale_min = scale_min;
  t.scale_max = scale_max;
  t.ratio_min = ratio_min;
  t.ratio_max = ratio_max;
  return t;
}
Transform Transform::Resize(int size) {
  Transform t;
  t.kind = Kind::kResize;
  t.height = size;
  t.width = 0;
  return t;
}
Transform Transform::Resize(int height, int width) {
  Transform t;
  t.kind = Kind::kResize;
  t.height = height;
  t.width = width;
  return t;
}
Transform Transform::CenterCrop(int height, int width) {
  Transform t;
  t.kind = Kind::kCenterCrop;
  t.height = height;
  t.width = width;
  return t;
}
Transform Transform::RandomHorizontalFlip(double p) {
  Transform t;
  t.kind = Kind::kRandomHorizontalFlip;
  t.p = p;
  return t;
}
Transform Transform::Normalize(std::array<float, 3> mean, std::array<float, 3> std) {
  Transform t;
  t.kind = Kind::kNormalize;
  t.mean = mean;
  t.std = std;
  return t;
}

Transform Transform::RandomVerticalFlip(double p) {
  Transform t;
  t.kind = Kind::kRandomVerticalFlip;
  t.p = p;
  return t;
}
Transform Transform::ColorJitter(std::array<double, 2> brightness, std::array<double, 2> contrast,
                                 std::array<double, 2> saturation, std::array<double, 2> hue) {
  Transform t;
  t.kind = Kind::kColorJitter;
  t.brightness = brightness;
  t.contrast = contrast;
  t.saturation = saturation;
  t.hue = hue;
  return t;
}
Transform Transform::RandomGrayscale(double p) {
  Transform t;
  t.kind = Kind::kRandomGrayscale;
  t.p = p;
  return t;
}
Transform Transform::RandomAutocontrast(double p) {
  Transform t;
  t.kind = Kind::kRandomAutocontrast;
  t.p = p;
  return t;
}
Transform Transform::RandomEqualize(double p) {
  Transform t;
  t.kind = Kind::kRandomEqualize;
  t.p = p;
  return t;
}
Transform Transform::RandomPosterize(int bits, double p) {
  Transform t;
  t.kind = Kind::kRandomPosterize;
  t.bits = bits;
  t.p = p;
  return t;
}
Transform Transform::RandomSolarize(double threshold, double p) {
  Transform t;
  t.kind = Kind::kRandomSolarize;
  t.threshold = threshold;
  t.p = p;
  return t;
}
Transform Transform::RandomAdjustSharpness(double sharpness_factor, double p) {
  Transform t;
  t.kind = Kind::kRandomAdjustSharpness;
  t.sharpness_factor = sharpness_factor;
  t.p = p;
  return t;
}

Transform Transform::TrivialAugmentWide(int num_magnitude_bins, std::array<int, 3> fill) {
  Transform t;
  t.kind = Kind::kTrivialAugmentWide;
  t.num_magnitude_bins = num_magnitude_bins;
  t.fill = fill;
  return t;
}
Transform Transform::RandomErasing(double p, double scale_min, double scale_max,
                                   double ratio_min, double ratio_max) {
  Transform t;
  t.kind = Kind::kRandomErasing;
  t.p = p;
  t.scale_min = scale_min;
  t.scale_max = scale_max;
  t.ratio_min = ratio_min;
  t.ratio_max = ratio_max;
  return t;
}
Transform Transform::RandomCrop(int height, int width, std::array<int, 4> padding,
                                bool pad_if_needed, int padding_mode, std::array<int, 3> fill) {
  Transform t;
  t.padding_mode = padding_mode;
  t.fill = fill;
  t.kind = Kind::kRandomCrop;
  t.height = height;
  t.width = width;
  t.padding = padding;
  t.pad_if_needed = pad_if_needed;
  return t;
}
Transform Transform::GaussianBlur(std::array<int, 2> kernel_size, std::array<double, 2> sigma) {
  Transform t;
  t.kind = Kind::kGaussianBlur;
  t.kernel_size = kernel_size;
  t.sigma = sigma;
  return t;
}
Transform Transform::AutoAugment(std::array<int, 3> fill) {
  Transform t;
  t.kind = Kind::kAutoAugment;
  t.fill = fill;
  return t;
}
Transform Transform::RandAugment(int num_ops, int magnitude, int num_magnitude_bins,
                                 std::array<int, 3> fill) {
  Transform t;
  t.kind = Kind::kRandAugment;
  t.num_ops = num_ops;
  t.magnitude = magnitude;
  t.num_magnitude_bins = num_magnitude_bins;
  t.fill = fill;
  return t;
}

Transform Transform::RandomRotation(std::array<double, 2> degrees, int interpolation,
                                    bool has_center, std::array<double, 2> center,
                                    std::array<int, 3> fill) {
  Transform t;
  t.kind = Kind::kRandomRotation;
  t.degrees = degrees;
  t.interpolation = interpolation;
  t.has_center = has_center;
  t.center = center;
  t.fill = fill;
  return t;
}

Transform Transform::RandomAffine(std::array<double, 2> degrees, std::array<double, 2> translate,
                                  std::array<double, 2> scale, std::array<double, 4> shear,
                                  int interpolation, bool has_center,
                                  std::array<double, 2> center, std::array<int, 3> fill) {
  Transform t = RandomRotation(degrees, interpolation, has_center, center, fill);
  t.kind = Kind::kRandomAffine;
  t.translate = translate;
  t.affine_scale = scale;
  t.shear = shear;
  return t;
}

Transform Transform::RandomPerspective(double distortion_scale, double p, int interpolation,
                                       std::array<int, 3> fill) {
  Transform t;
  t.kind = Kind::kRandomPerspective;
  t.distortion_scale = distortion_scale;
  t.p = p;
  t.interpolation = interpolation;
  t.fill = fill;
  return t;
}

Transform Transform::Callback(SampleCallback fn, std::string name) {
  Transform t;
  t.kind = Kind::kCallback;
  if (fn) t.callback = std::make_shared<const SampleCallback>(std::move(fn));
  t.name = std::move(name);
  return t;
}

bool Transform::photometric() const {
  switch (kind) {
    case Kind::kCallback:
    case Kind::kColorJitter:
    case Kind::kRandomGrayscale:
    case Kind::kRandomAutocontrast:
    case Kind::kRandomEqualize:
    case Kind::kRandomPosterize:
    case Kind::kRandomSolarize:
    case Kind::kRandomAdjustSharpness:
    case Kind::kTrivialAugmentWide:
    case Kind::kRandAugment:
    case Kind::kAutoAugment:
    case Kind::kGaussianBlur:
    case Kind::kRandomRotation:
    case Kind::kRandomAffine:
    case Kind::kRandomPerspective:
      return true;
    default:
      return false;
  }
}

bool Transform::random_geometry() const { return kind == Kind::kRandomResizedCrop; }

std::string Transform::ToString() const {
  auto size = [&] { return "(" + std::to_string(height) + ", " + std::to_string(width) + ")"; };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  switch (kind) {
    case Kind::kRandomResizedCrop:
      return "RandomResizedCrop(size=" + size() + ", scale=(" + num(scale_min) + ", " +
             num(scale_max) + "), ratio=(" + num(ratio_min) + ", " + num(ratio_max) + "))";
    case Kind::kResize:
      if (width != 0) return "Resize(" + size() + ")";
      return "Resize(" + std::to_string(height) +
             (max_size > 0 ? ", max_size=" + std::to_string(max_size) : std::string()) + ")";
    case Kind::kCenterCrop: return "CenterCrop(" + size() + ")";
    case Kind::kRandomHorizontalFlip: return "RandomHorizontalFlip(p=" + num(p) + ")";
    case Kind::kNormalize:
      return "Normalize(mean=[" + num(mean[0]) + ", " + num(mean[1]) + ", " + num(mean[2]) +
             "], std=[" + num(std[0]) + ", " + num(std[1]) + ", " + num(std[2]) + "])";
    case Kind::kRandomVerticalFlip: return "RandomVerticalFlip(p=" + num(p) + ")";
    case Kind::kRandomCrop:
      return "RandomCrop(size=" + size() + ", padding=(" + std::to_string(padding[0]) + ", " +
             std::to_string(padding[1]) + ", " + std::to_string(padding[2]) + ", " +
             std::to_string(padding[3]) + "), pad_if_needed=" +
             (pad_if_needed ? "True" : "False") + ", fill=[" + std::to_string(fill[0]) + ", " +
             std::to_string(fill[1]) + ", " + std::to_string(fill[2]) + "], padding_mode=" +
             (padding_mode == 1   ? "edge"
              : padding_mode == 2 ? "reflect"
              : padding_mode == 3 ? "symmetric"
                                  : "constant") +
             ")";
    case Kind::kGaussianBlur:
      return "GaussianBlur(kernel_size=(" + std::to_string(kernel_size[0]) + ", " +
             std::to_string(kernel_size[1]) + "), sigma=(" + num(sigma[0]) + ", " +
             num(sigma[1]) + "))";
    case Kind::kRandomErasing:
      return "RandomErasing(p=" + num(p) + ", scale=(" + num(scale_min) + ", " + num(scale_max) +
             "), ratio=(" + num(ratio_min) + ", " + num(ratio_max) + "), value=0)";
    case Kind::kColorJitter: {
      auto range = [&](const std::array<double, 2>& r) {
        return "(" + num(r[0]) + ", " + num(r[1]) + ")";
      };
      return "ColorJitter(brightness=" + range(brightness) + ", contrast=" + range(contrast) +
             ", saturation=" + range(saturation) + ", hue=" + range(hue) + ")";
    }
    case Kind::kCallback: return "Lambda(" + name + ")";
    case Kind::kRandomRotation:
    case Kind::kRandomAffine:
    case Kind::kRandomPerspective: {
      auto pair = [&](const std::array<double, 2>& r) {
        return "(" + num(r[0]) + ", " + num(r[1]) + ")";
      };
      std::string s;
      const std::string interp =
          std::string("interpolation=") +
          (interpolation == 2 ? "BILINEAR" : interpolation == 3 ? "BICUBIC" : "NEAREST");
      const std::string f = "fill=[" + std::to_string(fill[0]) + ", " + std::to_string(fill[1]) +
                            ", " + std::to_string(fill[2]) + "]";
      if (kind == Kind::kRandomPerspective) {
        return "RandomPerspective(distortion_scale=" + num(distortion_scale) + ", p=" + num(p) +
               ", " + interp + ", " + f + ")";
      }
      s = (kind == Kind::kRandomRotation ? "RandomRotation(degrees=" : "RandomAffine(degrees=") +
          pair(degrees);
      if (kind == Kind::kRandomAffine) {
        s += ", translate=" + pair(translate) + ", scale=" + pair(affine_scale) + ", shear=(" +
             num(shear[0]) + ", " + num(shear[1]) + ", " + num(shear[2]) + ", " +
             num(shear[3]) + ")";
      }
      s += ", " + interp;
      if (has_center) s += ", center=" + pair(center);
      return s + ", " + f + ")";
    }
    case Kind::kRandomGrayscale: return "RandomGrayscale(p=" + num(p) + ")";
    case Kind::kRandomAutocontrast: return "RandomAutocontrast(p=" + num(p) + ")";
    case Kind::kRandomEqualize: return "RandomEqualize(p=" + num(p) + ")";
    case Kind::kRandomPosterize:
      return "RandomPosterize(bits=" + std::to_string(bits) + ", p=" + num(p) + ")";
    case Kind::kRandomSolarize:
      return "RandomSolarize(threshold=" + num(threshold) + ", p=" + num(p) + ")";
    case Kind::kRandomAdjustSharpness:
      return "RandomAdjustSharpness(sharpness_factor=" + num(sharpness_factor) + ", p=" + num(p) +
             ")";
    case Kind::kTrivialAugmentWide:
    case Kind::kRandAugment:
    case Kind::kAutoAugment: {
      const std::string f = "fill=[" + std::to_string(fill[0]) + ", " + std::to_string(fill[1]) +
                            ", " + std::to_string(fill[2]) + "])";
      if (kind == Kind::kAutoAugment) return "AutoAugment(policy=IMAGENET, " + f;
      if (kind == Kind::kTrivialAugmentWide) {
        return "TrivialAugmentWide(num_magnitude_bins=" + std::to_string(num_magnitude_bins) +
               ", " + f;
      }
      return "RandAugment(num_ops=" + std::to_string(num_ops) + ", magnitude=" +
             std::to_string(magnitude) + ", num_magnitude_bins=" +
             std::to_string(num_magnitude_bins) + ", " + f;
    }
  }
  return "?";
}

}  // namespace stoker
