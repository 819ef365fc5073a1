// Copyright 2026 The stoker Authors.
//
// The public Transform type (stoker/transforms.h): its factories, which
// record torchvision's arguments without checking them (CheckTransform does,
// from the declaration), and what derives from its declaration. The
// declarations are in ops/*_transforms.cc; what a transform does to pixels
// is in ops/ (geometry, color, warp, autoaugment).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ops/transform_ops.h"
#include "ops/transform_registry.h"
#include "stoker/transform_schema.h"
#include "stoker/transforms.h"

namespace stoker {
namespace {

// A Transform of the declaration `name`, its fields at their C++ defaults.
Transform Declared(const char* name) {
  Transform t;
  t.schema = FindTransformSchema(name);
  if (t.schema == nullptr) {
    std::fprintf(stderr, "stoker: no declaration for the factory of %s\n", name);
    std::abort();
  }
  return t;
}

}  // namespace

Transform Transform::RandomResizedCrop(int height, int width, double scale_min, double scale_max,
                                       double ratio_min, double ratio_max) {
  Transform t = Declared("RandomResizedCrop");
  t.height = height;
  t.width = width;
  t.scale_min = scale_min;
  t.scale_max = scale_max;
  t.ratio_min = ratio_min;
  t.ratio_max = ratio_max;
  return t;
}
Transform Transform::Resize(int size) {
  Transform t = Declared("Resize");
  t.height = size;
  t.width = 0;
  return t;
}
Transform Transform::Resize(int height, int width) {
  Transform t = Declared("Resize");
  t.height = height;
  t.width = width;
  return t;
}
Transform Transform::CenterCrop(int height, int width) {
  Transform t = Declared("CenterCrop");
  t.height = height;
  t.width = width;
  return t;
}
Transform Transform::RandomHorizontalFlip(double p) {
  Transform t = Declared("RandomHorizontalFlip");
  t.p = p;
  return t;
}
Transform Transform::Normalize(std::array<float, 3> mean, std::array<float, 3> std) {
  Transform t = Declared("Normalize");
  t.mean = mean;
  t.std = std;
  return t;
}

Transform Transform::RandomVerticalFlip(double p) {
  Transform t = Declared("RandomVerticalFlip");
  t.p = p;
  return t;
}
Transform Transform::ColorJitter(std::array<double, 2> brightness, std::array<double, 2> contrast,
                                 std::array<double, 2> saturation, std::array<double, 2> hue) {
  Transform t = Declared("ColorJitter");
  t.brightness = brightness;
  t.contrast = contrast;
  t.saturation = saturation;
  t.hue = hue;
  return t;
}
Transform Transform::RandomGrayscale(double p) {
  Transform t = Declared("RandomGrayscale");
  t.p = p;
  return t;
}
Transform Transform::RandomAutocontrast(double p) {
  Transform t = Declared("RandomAutocontrast");
  t.p = p;
  return t;
}
Transform Transform::RandomEqualize(double p) {
  Transform t = Declared("RandomEqualize");
  t.p = p;
  return t;
}
Transform Transform::RandomPosterize(int bits, double p) {
  Transform t = Declared("RandomPosterize");
  t.bits = bits;
  t.p = p;
  return t;
}
Transform Transform::RandomSolarize(double threshold, double p) {
  Transform t = Declared("RandomSolarize");
  t.threshold = threshold;
  t.p = p;
  return t;
}
Transform Transform::RandomAdjustSharpness(double sharpness_factor, double p) {
  Transform t = Declared("RandomAdjustSharpness");
  t.sharpness_factor = sharpness_factor;
  t.p = p;
  return t;
}

Transform Transform::TrivialAugmentWide(int num_magnitude_bins, std::array<int, 3> fill) {
  Transform t = Declared("TrivialAugmentWide");
  t.num_magnitude_bins = num_magnitude_bins;
  t.fill = fill;
  return t;
}
Transform Transform::RandomErasing(double p, double scale_min, double scale_max,
                                   double ratio_min, double ratio_max) {
  Transform t = Declared("RandomErasing");
  t.p = p;
  t.scale_min = scale_min;
  t.scale_max = scale_max;
  t.ratio_min = ratio_min;
  t.ratio_max = ratio_max;
  return t;
}
Transform Transform::RandomCrop(int height, int width, std::array<int, 4> padding,
                                bool pad_if_needed, int padding_mode, std::array<int, 3> fill) {
  Transform t = Declared("RandomCrop");
  t.padding_mode = padding_mode;
  t.fill = fill;
  t.height = height;
  t.width = width;
  t.padding = padding;
  t.pad_if_needed = pad_if_needed;
  return t;
}
Transform Transform::GaussianBlur(std::array<int, 2> kernel_size, std::array<double, 2> sigma) {
  Transform t = Declared("GaussianBlur");
  t.kernel_size = kernel_size;
  t.sigma = sigma;
  return t;
}
Transform Transform::AutoAugment(std::array<int, 3> fill) {
  Transform t = Declared("AutoAugment");
  t.fill = fill;
  return t;
}
Transform Transform::RandAugment(int num_ops, int magnitude, int num_magnitude_bins,
                                 std::array<int, 3> fill) {
  Transform t = Declared("RandAugment");
  t.num_ops = num_ops;
  t.magnitude = magnitude;
  t.num_magnitude_bins = num_magnitude_bins;
  t.fill = fill;
  return t;
}

Transform Transform::RandomRotation(std::array<double, 2> degrees, int interpolation,
                                    bool has_center, std::array<double, 2> center,
                                    std::array<int, 3> fill) {
  Transform t = Declared("RandomRotation");
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
  t.schema = Declared("RandomAffine").schema;
  t.translate = translate;
  t.affine_scale = scale;
  t.shear = shear;
  return t;
}

Transform Transform::RandomPerspective(double distortion_scale, double p, int interpolation,
                                       std::array<int, 3> fill) {
  Transform t = Declared("RandomPerspective");
  t.distortion_scale = distortion_scale;
  t.p = p;
  t.interpolation = interpolation;
  t.fill = fill;
  return t;
}

Transform Transform::Callback(SampleCallback fn, std::string name) {
  Transform t = Declared("Lambda");
  if (fn) t.callback = std::make_shared<const SampleCallback>(std::move(fn));
  t.callback_name = std::move(name);
  return t;
}

std::string_view Transform::name() const {
  return schema == nullptr ? std::string_view() : std::string_view(schema->name);
}

bool Transform::photometric() const {
  return schema != nullptr &&
         (schema->stage == TransformStage::kImage || schema->stage == TransformStage::kWarp);
}

bool Transform::random_geometry() const { return schema != nullptr && schema->random_geometry; }

std::string Transform::ToString() const { return DescribeTransform(*this); }

std::string TransformShortName(const Transform& t) {
  return t.schema != nullptr ? t.schema->name : std::string("Transform");
}

bool IsDeterministic(const std::vector<Transform>& transforms) {
  for (const Transform& t : transforms) {
    if (t.schema == nullptr || !t.schema->deterministic) return false;
  }
  return true;
}

bool HasNormalize(const std::vector<Transform>& transforms) {
  for (const auto& t : transforms) {
    if (t.schema != nullptr && t.schema->stage == TransformStage::kConvert) return true;
  }
  return false;
}

Transform NormalizeOf(const std::vector<Transform>& transforms) {
  Transform n = Transform::Normalize({0.f, 0.f, 0.f}, {1.f, 1.f, 1.f});
  for (const auto& t : transforms) {
    if (t.schema != nullptr && t.schema->stage == TransformStage::kConvert) n = t;
  }
  return n;
}

}  // namespace stoker
