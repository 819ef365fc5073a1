// Copyright 2026 The stoker Authors.
#include "ops/geometry.h"

#include <cmath>
#include <string>

namespace stoker {

int RoundHalfEven(double x) { return static_cast<int>(std::nearbyint(x)); }

void ShorterSideSize(int width, int height, int size, int* out_width, int* out_height) {
  // torchvision 0.14 _compute_resized_output_size: the long side is
  // int(size * long / short), truncated.
  if (width <= height) {
    *out_width = size;
    *out_height = static_cast<int>(static_cast<double>(size) * height / width);
  } else {
    *out_height = size;
    *out_width = static_cast<int>(static_cast<double>(size) * width / height);
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
Rect Unflip(Rect r, int cur_w, bool flip) {
  if (flip) r.x = cur_w - r.x - r.width;
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

Status PlanGeometry(const std::vector<Transform>& transforms, int width, int height, Rng* rng,
                    GeometryPlan* plan) {
  plan->num_stages = 1;
  plan->flip = false;
  GeometryStage* st = &plan->stages[0];
  *st = GeometryStage{Rect{0, 0, width, height}, width, height, Rect{0, 0, width, height}};
  bool resampled = false;  // does the open stage resample already?
  // Size of the current grid: the open stage's window.
  auto cur_w = [&] { return st->window.width; };
  auto cur_h = [&] { return st->window.height; };

  auto crop_current = [&](Rect r) {  // r in the (unflipped) current grid
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
    return Status::OK();
  };
  auto resample_to = [&](int w, int h) {
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
        crop_current(Unflip(r, cur_w(), plan->flip));
        resample_to(t.width, t.height);
        break;
      }
      case Transform::Kind::kResize: {
        STOKER_RETURN_IF_ERROR(new_stage_if_needed());
        int w = t.width, h = t.height;
        if (t.width == 0) ShorterSideSize(cur_w(), cur_h(), t.height, &w, &h);
        resample_to(w, h);
        break;
      }
      case Transform::Kind::kCenterCrop: {
        Rect r = CenterCropRect(cur_w(), cur_h(), t.width, t.height);
        crop_current(Unflip(r, cur_w(), plan->flip));
        break;
      }
      case Transform::Kind::kRandomHorizontalFlip:
        if (rng->Uniform() < t.p) plan->flip = !plan->flip;
        break;
      case Transform::Kind::kNormalize:
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
      return width == 0 ? "Resize(" + std::to_string(height) + ")" : "Resize(" + size() + ")";
    case Kind::kCenterCrop: return "CenterCrop(" + size() + ")";
    case Kind::kRandomHorizontalFlip: return "RandomHorizontalFlip(p=" + num(p) + ")";
    case Kind::kNormalize:
      return "Normalize(mean=[" + num(mean[0]) + ", " + num(mean[1]) + ", " + num(mean[2]) +
             "], std=[" + num(std[0]) + ", " + num(std[1]) + ", " + num(std[2]) + "])";
  }
  return "?";
}

}  // namespace stoker
