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

double UniformBetween(Rng* rng, double lo, double hi) {
  const double u = rng->Uniform();
  const double span = hi - lo;
  if (std::isfinite(span)) return lo + span * u;  // Rng::Uniform(lo, hi)
  if (lo == hi) return lo;
  return lo * (1.0 - u) + hi * u;
}

bool SampleRandomErasing(int img_w, int img_h, const Transform& t, Rng* rng, Rect* out) {
  if (!(rng->Uniform() < t.p)) return false;
  const double area = static_cast<double>(img_h) * img_w;
  const double lr0 = std::log(t.ratio_min), lr1 = std::log(t.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * UniformBetween(rng, t.scale_min, t.scale_max);
    const double aspect = std::exp(UniformBetween(rng, lr0, lr1));
    // int(round(.)) in torchvision; compared before the conversion, which
    // is undefined for values outside int (a NaN or 1e152 here).
    const double h = std::nearbyint(std::sqrt(erase_area * aspect));
    const double w = std::nearbyint(std::sqrt(erase_area / aspect));
    if (!(h < img_h && w < img_w && h >= 0 && w >= 0)) continue;
    const int hi = static_cast<int>(h), wi = static_cast<int>(w);
    const int i = static_cast<int>(rng->Below(static_cast<uint64_t>(img_h - hi + 1)));
    const int j = static_cast<int>(rng->Below(static_cast<uint64_t>(img_w - wi + 1)));
    *out = Rect{j, i, wi, hi};
    return true;
  }
  return false;
}

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

}  // namespace stoker
