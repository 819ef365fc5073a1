// Copyright 2026 The stoker Authors.
#include "ops/geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace stoker {

int RoundHalfEven(double x) { return static_cast<int>(std::nearbyint(x)); }

void ShorterSideSize(int width, int height, int size, int* out_width, int* out_height,
                     int max_size) {
  // torchvision 0.14 _compute_resized_output_size: the long side is
  // int(size * long / short), truncated; with max_size, a long side above it
  // becomes max_size and the short side int(max_size * short / long).
  const int shorter = std::min(width, height), longer = std::max(width, height);
  int new_short = size;
  int new_long = static_cast<int>(static_cast<double>(size) * longer / shorter);
  if (max_size > 0 && new_long > max_size) {
    new_short = static_cast<int>(static_cast<double>(max_size) * new_short / new_long);
    new_long = max_size;
  }
  if (width <= height) {
    *out_width = new_short;
    *out_height = new_long;
  } else {
    *out_height = new_short;
    *out_width = new_long;
  }
}

CropBox SampleRandomResizedCropBox(int width, int height, const Transform& t, uint64_t seed,
                                   uint64_t stream) {
  Rng rng(HashSeed(seed, stream));
  const Rect r = SampleRandomResizedCrop(width, height, t, &rng);
  return CropBox{r.y, r.x, r.height, r.width};
}

Rect SampleRandomResizedCrop(int width, int height, const Transform& t, Rng* rng) {
  const double area = static_cast<double>(width) * height;
  const double log_r0 = std::log(t.ratio_min), log_r1 = std::log(t.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng->Uniform(t.scale_min, t.scale_max);
    const double aspect = std::exp(rng->Uniform(log_r0, log_r1));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target_area * aspect)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target_area / aspect)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int i = static_cast<int>(rng->Below(static_cast<uint64_t>(height - h + 1)));
      const int j = static_cast<int>(rng->Below(static_cast<uint64_t>(width - w + 1)));
      return Rect{j, i, w, h};
    }
  }
  // Fallback to a central crop.
  const double in_ratio = static_cast<double>(width) / height;
  int w, h;
  if (in_ratio < t.ratio_min) {
    w = width;
    h = static_cast<int>(std::nearbyint(w / t.ratio_min));
  } else if (in_ratio > t.ratio_max) {
    h = height;
    w = static_cast<int>(std::nearbyint(h * t.ratio_max));
  } else {
    w = width;
    h = height;
  }
  return Rect{(width - w) / 2, (height - h) / 2, w, h};
}

namespace {

// A crop of the current grid (cur_w x cur_h) given in the grid as the user
// sees it; when the image is flipped, the user's grid is mirrored.
Rect Unflip(Rect r, int cur_w, int cur_h, const GeometryPlan& plan) {
  if (plan.flip) r.x = cur_w - r.x - r.width;
  if (plan.vflip) r.y = cur_h - r.y - r.height;
  return r;
}

// torchvision's CenterCrop offsets, including its zero padding when the crop
// is larger than the image: the result is the crop rectangle in the
// unpadded grid (it may extend outside it).
Rect CenterCropRect(int cur_w, int cur_h, int crop_w, int crop_h) {
  int pad_l = 0, pad_t = 0, pad_r = 0, pad_b = 0;
  if (crop_w > cur_w) {
    pad_l = (crop_w - cur_w) / 2;
    pad_r = (crop_w - cur_w + 1) / 2;
  }
  if (crop_h > cur_h) {
    pad_t = (crop_h - cur_h) / 2;
    pad_b = (crop_h - cur_h + 1) / 2;
  }
  const int pw = cur_w + pad_l + pad_r, ph = cur_h + pad_t + pad_b;
  const int top = RoundHalfEven((ph - crop_h) / 2.0);
  const int left = RoundHalfEven((pw - crop_w) / 2.0);
  return Rect{left - pad_l, top - pad_t, crop_w, crop_h};
}

}  // namespace

int FoldCoord(int v, int n, int mode) {
  if (v >= 0 && v < n) return v;
  if (mode == kPadEdge || n == 1) return v < 0 ? 0 : n - 1;
  if (mode == kPadReflect) {
    const int period = 2 * (n - 1);
    v %= period;
    if (v < 0) v += period;
    return v < n ? v : period - v;
  }
  const int period = 2 * n;  // symmetric
  v %= period;
  if (v < 0) v += period;
  return v < n ? v : period - 1 - v;
}

Status PlanGeometry(const std::vector<Transform>& transforms, int width, int height, Rng* rng,
                    GeometryPlan* plan) {
  plan->num_stages = 1;
  plan->flip = false;
  plan->vflip = false;
  GeometryStage* st = &plan->stages[0];
  *st = GeometryStage{Rect{0, 0, width, height}, width, height, Rect{0, 0, width, height}};
  bool resampled = false;  // does the open stage resample already?
  // Size of the current grid: the open stage's window.
  auto cur_w = [&] { return st->window.width; };
  auto cur_h = [&] { return st->window.height; };

  bool cropped = false;  // has the open stage a crop already?
  auto crop_current = [&](Rect r) {  // r in the (unflipped) current grid
    cropped = true;
    if (!resampled) {
      st->crop = Rect{st->crop.x + r.x, st->crop.y + r.y, r.width, r.height};
      st->out_width = r.width;
      st->out_height = r.height;
      st->window = Rect{0, 0, r.width, r.height};
    } else {
      st->window = Rect{st->window.x + r.x, st->window.y + r.y, r.width, r.height};
    }
  };
  auto new_stage_if_needed = [&]() -> Status {
    if (!resampled) return Status::OK();
    if (plan->num_stages == GeometryPlan::kMaxStages) {
      return InvalidArgumentError("too many resizing transforms (at most " +
                                  std::to_string(GeometryPlan::kMaxStages) + ")");
    }
    const int w = cur_w(), h = cur_h();
    st = &plan->stages[plan->num_stages++];
    *st = GeometryStage{Rect{0, 0, w, h}, w, h, Rect{0, 0, w, h}};
    resampled = false;
    cropped = false;
    return Status::OK();
  };
  // A stage whose crop is a padded RandomCrop's takes no further crop.
  bool sealed = false;
  // Opens a new stage (input: the open stage's output) unless the open one
  // is untouched (its crop is its whole input grid, no resample).
  auto fresh_stage = [&]() -> Status {
    if (!resampled && !sealed && !cropped) {
      return Status::OK();
    }
    resampled = true;  // force
    sealed = false;
    return new_stage_if_needed();
  };
  auto resample_to = [&](int w, int h) {
    sealed = false;  // later crops are windows of the resampled output
    st->out_width = w;
    st->out_height = h;
    st->window = Rect{0, 0, w, h};
    resampled = true;
  };

  for (const Transform& t : transforms) {
    switch (t.kind) {
      case Transform::Kind::kRandomResizedCrop: {
        STOKER_RETURN_IF_ERROR(new_stage_if_needed());
        Rect r = SampleRandomResizedCrop(cur_w(), cur_h(), t, rng);
        crop_current(Unflip(r, cur_w(), cur_h(), *plan));
        resample_to(t.width, t.height);
        break;
      }
      case Transform::Kind::kResize: {
        STOKER_RETURN_IF_ERROR(new_stage_if_needed());
        int w = t.width, h = t.height;
        if (t.width == 0) ShorterSideSize(cur_w(), cur_h(), t.height, &w, &h, t.max_size);
        resample_to(w, h);
        break;
      }
      case Transform::Kind::kCenterCrop: {
        if (sealed) STOKER_RETURN_IF_ERROR(fresh_stage());
        Rect r = CenterCropRect(cur_w(), cur_h(), t.width, t.height);
        crop_current(Unflip(r, cur_w(), cur_h(), *plan));
        break;
      }
      case Transform::Kind::kRandomCrop: {
        // torchvision's RandomCrop.forward on the padded image, then the crop
        // mapped back to the current grid (outside it: zeros, as padding).
        const bool padded_mode = t.padding_mode != kPadConstant || t.fill[0] != 0 ||
                                 t.fill[1] != 0 || t.fill[2] != 0;
        if (sealed || padded_mode) STOKER_RETURN_IF_ERROR(fresh_stage());
        int left = t.padding[0], top = t.padding[1];
        int w = cur_w() + t.padding[0] + t.padding[2];
        int h = cur_h() + t.padding[1] + t.padding[3];
        if (t.pad_if_needed && w < t.width) {
          const int d = t.width - w;
          left += d;
          w += 2 * d;
        }
        if (t.pad_if_needed && h < t.height) {
          const int d = t.height - h;
          top += d;
          h += 2 * d;
        }
        if (h + 1 < t.height || w + 1 < t.width) {
          return InvalidArgumentError("RandomCrop: required crop size (" +
                                      std::to_string(t.height) + ", " + std::to_string(t.width) +
                                      ") is larger than the input image size (" +
                                      std::to_string(h) + ", " + std::to_string(w) + ")");
        }
        int i = 0, j = 0;
        if (!(w == t.width && h == t.height)) {
          i = static_cast<int>(rng->Below(static_cast<uint64_t>(h - t.height + 1)));
          j = static_cast<int>(rng->Below(static_cast<uint64_t>(w - t.width + 1)));
        }
        Rect r{j - left, i - top, t.width, t.height};
        if (padded_mode) {
          st->pad_mode = t.padding_mode;
          st->pad_fill = {static_cast<uint8_t>(t.fill[0]), static_cast<uint8_t>(t.fill[1]),
                          static_cast<uint8_t>(t.fill[2])};
          st->pad1 = t.padding;
          if (plan->flip) std::swap(st->pad1[0], st->pad1[2]);
          if (plan->vflip) std::swap(st->pad1[1], st->pad1[3]);
          sealed = true;
        }
        crop_current(Unflip(r, cur_w(), cur_h(), *plan));
        break;
      }
      case Transform::Kind::kRandomHorizontalFlip:
        if (rng->Uniform() < t.p) plan->flip = !plan->flip;
        break;
      case Transform::Kind::kRandomVerticalFlip:
        if (rng->Uniform() < t.p) plan->vflip = !plan->vflip;
        break;
      default:  // Normalize and the photometric kinds: not geometry
        break;
    }
  }
  return Status::OK();
}

Status StaticOutputSize(const std::vector<Transform>& transforms, int* height, int* width) {
  bool fixed = false;
  for (const Transform& t : transforms) {
    switch (t.kind) {
      case Transform::Kind::kRandomResizedCrop:
      case Transform::Kind::kCenterCrop:
      case Transform::Kind::kRandomCrop:
        *height = t.height;
        *width = t.width;
        fixed = true;
        break;
      case Transform::Kind::kResize:
        fixed = t.width != 0;
        *height = t.height;
        *width = t.width;
        break;
      default:
        break;
    }
  }
  if (!fixed) {
    return InvalidArgumentError(
        "the transforms do not produce a fixed image size, so samples cannot be batched: end "
        "the geometric transforms with CenterCrop(size), RandomResizedCrop(size) or "
        "Resize((height, width))");
  }
  if (*height <= 0 || *width <= 0) {
    return InvalidArgumentError("output size must be positive, got " + std::to_string(*height) +
                                "x" + std::to_string(*width));
  }
  return Status::OK();
}

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
