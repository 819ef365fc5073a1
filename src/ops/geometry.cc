// Copyright 2026 The stoker Authors.
#include "ops/geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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
    // Compared as doubles before any conversion: an extreme scale or ratio
    // (1e300, or a non-finite value in a Transform built field by field)
    // gives a size no int holds, or NaN, and fails the attempt like one
    // that does not fit (torchvision's rule), instead of an undefined cast.
    const double wd = std::nearbyint(std::sqrt(target_area * aspect));
    const double hd = std::nearbyint(std::sqrt(target_area / aspect));
    if (wd >= 1 && hd >= 1 && wd <= width && hd <= height) {
      const int w = static_cast<int>(wd), h = static_cast<int>(hd);
      const int i = static_cast<int>(rng->Below(static_cast<uint64_t>(height - h + 1)));
      const int j = static_cast<int>(rng->Below(static_cast<uint64_t>(width - w + 1)));
      return Rect{j, i, w, h};
    }
  }
  // Fallback to a central crop. An extreme ratio (1e300) rounds torchvision's
  // side to 0, an empty crop it cannot resize: it is at least 1 pixel here.
  const double in_ratio = static_cast<double>(width) / height;
  int w, h;
  if (in_ratio < t.ratio_min) {
    w = width;
    h = std::max(1, static_cast<int>(std::nearbyint(w / t.ratio_min)));
  } else if (in_ratio > t.ratio_max) {
    h = height;
    w = std::max(1, static_cast<int>(std::nearbyint(h * t.ratio_max)));
  } else {
    w = width;
    h = height;
  }
  return Rect{(width - w) / 2, (height - h) / 2, w, h};
}

namespace {

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

int PaddedCoord(int u, int n, int lo, int hi, int mode) {
  if (u >= 0 && u < n) return u;
  if (mode == kPadConstant) return -1;
  const int v = FoldCoord(u + lo, n + lo + hi, mode) - lo;  // pad_if_needed's pad
  return FoldCoord(v, n, mode);                             // padding's pad
}

// ---------------------------------------------------------------- builder --

GeometryBuilder::GeometryBuilder(int width, int height, GeometryPlan* plan,
                                 std::vector<GeometryStep>* steps)
    : plan_(plan), steps_(steps) {
  plan_->num_stages = 1;
  plan_->flip = false;
  plan_->vflip = false;
  st_ = &plan_->stages[0];
  *st_ = GeometryStage{Rect{0, 0, width, height}, width, height, Rect{0, 0, width, height}};
}

// A crop of the current grid given in the grid as the user sees it; when the
// image is flipped, the user's grid is mirrored.
Rect GeometryBuilder::Unflip(Rect r) const {
  if (plan_->flip) r.x = width() - r.x - r.width;
  if (plan_->vflip) r.y = height() - r.y - r.height;
  return r;
}

void GeometryBuilder::CropCurrent(Rect r) {
  cropped_ = true;
  if (!resampled_) {
    st_->crop = Rect{st_->crop.x + r.x, st_->crop.y + r.y, r.width, r.height};
    st_->out_width = r.width;
    st_->out_height = r.height;
    st_->window = Rect{0, 0, r.width, r.height};
  } else {
    st_->window = Rect{st_->window.x + r.x, st_->window.y + r.y, r.width, r.height};
  }
}

Status GeometryBuilder::NewStageIfResampled() {
  if (!resampled_) return Status::OK();
  if (plan_->num_stages == GeometryPlan::kMaxStages) {
    return InvalidArgumentError("too many resizing transforms (at most " +
                                std::to_string(GeometryPlan::kMaxStages) + ")");
  }
  const int w = width(), h = height();
  st_ = &plan_->stages[plan_->num_stages++];
  *st_ = GeometryStage{Rect{0, 0, w, h}, w, h, Rect{0, 0, w, h}};
  resampled_ = false;
  cropped_ = false;
  return Status::OK();
}

// Opens a new stage (input: the open stage's output) unless the open one is
// untouched (its crop is its whole input grid, no resample).
Status GeometryBuilder::FreshStage() {
  if (!resampled_ && !sealed_ && !cropped_) return Status::OK();
  resampled_ = true;  // force
  sealed_ = false;
  return NewStageIfResampled();
}

void GeometryBuilder::ResampleTo(int w, int h) {
  sealed_ = false;  // later crops are windows of the resampled output
  st_->out_width = w;
  st_->out_height = h;
  st_->window = Rect{0, 0, w, h};
  resampled_ = true;
}

void GeometryBuilder::Record(GeometryStep::Kind kind, Rect crop, int out_w, int out_h, int mode,
                             const std::array<int, 4>& pad1) {
  if (steps_ == nullptr) return;
  GeometryStep s;
  s.kind = kind;
  s.in_width = width();
  s.in_height = height();
  s.out_width = out_w;
  s.out_height = out_h;
  s.crop = crop;
  s.pad_mode = mode;
  s.pad1 = pad1;
  steps_->push_back(s);
}

void GeometryBuilder::ToggleFlip() {
  Record(GeometryStep::kHFlip, Rect{}, width(), height());
  plan_->flip = !plan_->flip;
}

void GeometryBuilder::ToggleVFlip() {
  Record(GeometryStep::kVFlip, Rect{}, width(), height());
  plan_->vflip = !plan_->vflip;
}

Status GeometryBuilder::Crop(Rect r) {
  Record(GeometryStep::kCrop, r, r.width, r.height);
  if (sealed_) STOKER_RETURN_IF_ERROR(FreshStage());
  CropCurrent(Unflip(r));
  return Status::OK();
}

Status GeometryBuilder::PadCrop(Rect r, int mode, const std::array<int, 3>& fill,
                                const std::array<int, 4>& pad1) {
  if (mode == kPadConstant && fill[0] == 0 && fill[1] == 0 && fill[2] == 0) return Crop(r);
  Record(GeometryStep::kCrop, r, r.width, r.height, mode, pad1);
  if (mode == kPadConstant && resampled_ && !sealed_ &&
      st_->window == Rect{0, 0, st_->out_width, st_->out_height}) {
    // A constant pad of a resampled grid nothing has cropped yet: a window of
    // the resample, its outside painted `fill` (one stage, so the fast path
    // and DCT scaling still apply). Later crops and resizes open a new stage.
    st_->window_filled = true;
    st_->window_fill = {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
                        static_cast<uint8_t>(fill[2])};
    CropCurrent(Unflip(r));
    sealed_ = true;
    return Status::OK();
  }
  // A stage of its own, whose crop is the padded one; it takes no further crop.
  STOKER_RETURN_IF_ERROR(FreshStage());
  st_->pad_mode = mode;
  st_->pad_fill = {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
                   static_cast<uint8_t>(fill[2])};
  st_->pad1 = pad1;
  if (plan_->flip) std::swap(st_->pad1[0], st_->pad1[2]);
  if (plan_->vflip) std::swap(st_->pad1[1], st_->pad1[3]);
  sealed_ = true;
  CropCurrent(Unflip(r));
  return Status::OK();
}

Status GeometryBuilder::CropKeepingCentres(Rect r) {
  STOKER_RETURN_IF_ERROR(Crop(r));
  if (steps_ != nullptr) steps_->back().drop_outside_centres = true;
  return Status::OK();
}

Status GeometryBuilder::Resize(int w, int h) {
  Record(GeometryStep::kResize, Rect{}, w, h);
  STOKER_RETURN_IF_ERROR(NewStageIfResampled());
  ResampleTo(w, h);
  return Status::OK();
}

Status GeometryBuilder::ResizedCrop(Rect r, int w, int h) {
  Record(GeometryStep::kCrop, r, r.width, r.height);
  if (steps_ != nullptr) {
    GeometryStep s;  // the resize of the crop: recorded before the grid changes
    s.kind = GeometryStep::kResize;
    s.in_width = r.width;
    s.in_height = r.height;
    s.out_width = w;
    s.out_height = h;
    steps_->push_back(s);
  }
  STOKER_RETURN_IF_ERROR(NewStageIfResampled());
  CropCurrent(Unflip(r));
  ResampleTo(w, h);
  return Status::OK();
}

// ----------------------------------------------------------- the transforms --

Status PlanRandomResizedCrop(const Transform& t, Rng* rng, GeometryBuilder* b) {
  const Rect r = SampleRandomResizedCrop(b->width(), b->height(), t, rng);
  return b->ResizedCrop(r, t.width, t.height);
}

Status PlanResize(const Transform& t, Rng*, GeometryBuilder* b) {
  int w = t.width, h = t.height;
  if (t.width == 0) ShorterSideSize(b->width(), b->height(), t.height, &w, &h, t.max_size);
  return b->Resize(w, h);
}

Status PlanCenterCrop(const Transform& t, Rng*, GeometryBuilder* b) {
  return b->Crop(CenterCropRect(b->width(), b->height(), t.width, t.height));
}

Status PlanRandomCrop(const Transform& t, Rng* rng, GeometryBuilder* b) {
  // torchvision's RandomCrop.forward on the padded image, then the crop
  // mapped back to the current grid (outside it: the padding).
  int left = t.padding[0], top = t.padding[1];
  int w = b->width() + t.padding[0] + t.padding[2];
  int h = b->height() + t.padding[1] + t.padding[3];
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
    return InvalidArgumentError("RandomCrop: required crop size (" + std::to_string(t.height) +
                                ", " + std::to_string(t.width) +
                                ") is larger than the input image size (" + std::to_string(h) +
                                ", " + std::to_string(w) + ")");
  }
  int i = 0, j = 0;
  if (!(w == t.width && h == t.height)) {
    i = static_cast<int>(rng->Below(static_cast<uint64_t>(h - t.height + 1)));
    j = static_cast<int>(rng->Below(static_cast<uint64_t>(w - t.width + 1)));
  }
  return b->PadCrop(Rect{j - left, i - top, t.width, t.height}, t.padding_mode, t.fill,
                    t.padding);
}

Status PlanRandomHorizontalFlip(const Transform& t, Rng* rng, GeometryBuilder* b) {
  if (rng->Uniform() < t.p) b->ToggleFlip();
  return Status::OK();
}

Status PlanRandomVerticalFlip(const Transform& t, Rng* rng, GeometryBuilder* b) {
  if (rng->Uniform() < t.p) b->ToggleVFlip();
  return Status::OK();
}

Status PlanPad(const Transform& t, Rng*, GeometryBuilder* b) {
  // The whole padded image: a crop of the current grid reaching `padding`
  // beyond each side, its outside filled as torchvision's F.pad fills it.
  const Rect r{-t.padding[0], -t.padding[1], b->width() + t.padding[0] + t.padding[2],
               b->height() + t.padding[1] + t.padding[3]};
  return b->PadCrop(r, t.padding_mode, t.fill, t.padding);
}

void ScaleJitterSize(int width, int height, int target_w, int target_h, double r,
                     int* out_width, int* out_height) {
  const double scale = std::min(static_cast<double>(target_h) / height,
                                static_cast<double>(target_w) / width) * r;
  auto side = [](double v) {
    return static_cast<int>(std::clamp(v, 1.0, static_cast<double>(1 << 30)));
  };
  *out_width = side(width * scale);
  *out_height = side(height * scale);
}

void ShortestSizeSize(int width, int height, int min_size, int max_size, int* out_width,
                      int* out_height) {
  double r = static_cast<double>(min_size) / std::min(width, height);
  if (max_size > 0) r = std::min(r, static_cast<double>(max_size) / std::max(width, height));
  *out_width = std::max(1, static_cast<int>(width * r));
  *out_height = std::max(1, static_cast<int>(height * r));
}

void LetterboxSize(int width, int height, int size_w, int size_h, int* out_width,
                   int* out_height) {
  if (static_cast<int64_t>(size_h) * width <= static_cast<int64_t>(size_w) * height) {
    *out_height = size_h;  // the height limits
    *out_width = static_cast<int>(static_cast<double>(size_h) * width / height);
  } else {
    *out_width = size_w;
    *out_height = static_cast<int>(static_cast<double>(size_w) * height / width);
  }
  *out_width = std::clamp(*out_width, 1, size_w);
  *out_height = std::clamp(*out_height, 1, size_h);
}

Status PlanScaleJitter(const Transform& t, Rng* rng, GeometryBuilder* b) {
  const double r = UniformBetween(rng, t.scale_min, t.scale_max);
  int w = 0, h = 0;
  ScaleJitterSize(b->width(), b->height(), t.width, t.height, r, &w, &h);
  return b->Resize(w, h);
}

Status PlanRandomShortestSize(const Transform& t, Rng* rng, GeometryBuilder* b) {
  if (t.sizes.empty()) return InvalidArgumentError("RandomShortestSize: min_size is empty");
  const int s = t.sizes[static_cast<size_t>(rng->Below(t.sizes.size()))];
  int w = 0, h = 0;
  ShortestSizeSize(b->width(), b->height(), s, t.max_size, &w, &h);
  return b->Resize(w, h);
}

Status PlanLetterbox(const Transform& t, Rng*, GeometryBuilder* b) {
  int w = 0, h = 0;
  LetterboxSize(b->width(), b->height(), t.width, t.height, &w, &h);
  STOKER_RETURN_IF_ERROR(b->Resize(w, h));
  const int left = (t.width - w) / 2, top = (t.height - h) / 2;
  return b->PadCrop(Rect{-left, -top, t.width, t.height}, kPadConstant, t.fill,
                    {left, top, t.width - w - left, t.height - h - top});
}

void VariableOutputSize(const Transform&, OutputSize* size) { size->fixed = false; }

void CropOutputSize(const Transform& t, OutputSize* size) {
  size->height = t.height;
  size->width = t.width;
  size->fixed = true;
}

void ResizeOutputSize(const Transform& t, OutputSize* size) {
  if (t.width == 0 && size->fixed) {
    // The shorter side of a known size: as PlanResize resizes every sample.
    int w = 0, h = 0;
    ShorterSideSize(size->width, size->height, t.height, &w, &h, t.max_size);
    size->height = h;
    size->width = w;
    return;
  }
  size->fixed = t.width != 0;
  size->height = t.height;
  size->width = t.width;
}

void SameOutputSize(const Transform&, OutputSize*) {}

void PadOutputSize(const Transform& t, OutputSize* size) {
  size->height += t.padding[1] + t.padding[3];
  size->width += t.padding[0] + t.padding[2];
}

// ----------------------------------------------------------------- the list --

Status PlanGeometry(const std::vector<Transform>& transforms, int width, int height, Rng* rng,
                    GeometryPlan* plan, std::vector<GeometryStep>* steps,
                    const std::vector<double>* boxes) {
  GeometryBuilder b(width, height, plan, steps);
  b.SetBoxes(boxes);
  for (const Transform& t : transforms) {
    if (t.schema == nullptr || StageOf(t) != TransformStage::kGeometry) continue;
    STOKER_RETURN_IF_ERROR(OpsOf(t).plan(t, rng, &b));
  }
  return Status::OK();
}

Status StaticOutputSize(const std::vector<Transform>& transforms, int* height, int* width) {
  return StaticOutputSize(transforms, 0, 0, height, width);
}

Status StaticOutputSize(const std::vector<Transform>& transforms, int in_height, int in_width,
                        int* height, int* width) {
  OutputSize size;
  if (in_height > 0 && in_width > 0) {
    size.height = in_height;
    size.width = in_width;
    size.fixed = true;
  }
  for (const Transform& t : transforms) {
    if (t.schema == nullptr || StageOf(t) != TransformStage::kGeometry) continue;
    OpsOf(t).output_size(t, &size);
  }
  *height = size.height;
  *width = size.width;
  if (!size.fixed) {
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
