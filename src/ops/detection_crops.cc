// Copyright 2026 The stoker Authors.
#include "ops/detection_crops.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/targets.h"

namespace stoker {
namespace {

// torchvision's box_iou of one box with the crop (left, top, right, bottom).
double IoU(const double* b, double l, double t, double r, double bt) {
  const double area1 = (b[2] - b[0]) * (b[3] - b[1]);
  const double area2 = (r - l) * (bt - t);
  const double iw = std::max(0.0, std::min(b[2], r) - std::max(b[0], l));
  const double ih = std::max(0.0, std::min(b[3], bt) - std::max(b[1], t));
  const double inter = iw * ih;
  return inter / (area1 + area2 - inter);
}

}  // namespace

Status PlanRandomIoUCrop(const Transform& t, Rng* rng, GeometryBuilder* b) {
  if (b->boxes() == nullptr || b->steps() == nullptr) {
    return InvalidArgumentError(
        "RandomIoUCrop needs the sample's boxes: give the Loader a boxes target "
        "(targets={'boxes': 'boxes'}, or a source whose schema has one)");
  }
  std::vector<double> boxes;
  BoxesAfterSteps(*b->steps(), *b->boxes(), &boxes);
  if (boxes.empty() || t.sampler_options.empty()) return Status::OK();
  const int w = b->width(), h = b->height();
  const size_t n = boxes.size() / 4;
  for (int draw = 0; draw < kIoUCropMaxOptionDraws; ++draw) {
    const double min_iou =
        t.sampler_options[static_cast<size_t>(rng->Below(t.sampler_options.size()))];
    if (min_iou >= 1.0) return Status::OK();  // v2: leave as is
    for (int trial = 0; trial < t.trials; ++trial) {
      const double r0 = t.scale_min + (t.scale_max - t.scale_min) * rng->Uniform();
      const double r1 = t.scale_min + (t.scale_max - t.scale_min) * rng->Uniform();
      const int new_w = static_cast<int>(w * r0), new_h = static_cast<int>(h * r1);
      // v2 divides by new_h (Python raises on 0) and refuses left == right.
      if (new_w <= 0 || new_h <= 0) continue;
      const double aspect = static_cast<double>(new_w) / new_h;
      if (!(t.ratio_min <= aspect && aspect <= t.ratio_max)) continue;
      const int left = static_cast<int>((w - new_w) * rng->Uniform());
      const int top = static_cast<int>((h - new_h) * rng->Uniform());
      const int right = left + new_w, bottom = top + new_h;
      bool any = false;
      double best = 0.0;
      for (size_t i = 0; i < n; ++i) {
        const double* bx = &boxes[4 * i];
        const double cx = 0.5 * (bx[0] + bx[2]), cy = 0.5 * (bx[1] + bx[3]);
        if (!(left < cx && cx < right && top < cy && cy < bottom)) continue;
        const double iou = IoU(bx, left, top, right, bottom);
        best = any ? std::max(best, iou) : iou;
        any = true;
      }
      if (!any || best < min_iou) continue;
      return b->CropKeepingCentres(Rect{left, top, new_w, new_h});
    }
  }
  return Status::OK();  // bounded: no crop found, the sample stays whole
}

Status PlanRandomZoomOut(const Transform& t, Rng* rng, GeometryBuilder* b) {
  if (!(rng->Uniform() < t.p)) return Status::OK();  // v2: torch.rand(1) >= p skips
  const int w = b->width(), h = b->height();
  const double r = t.side_range[0] + rng->Uniform() * (t.side_range[1] - t.side_range[0]);
  const int canvas_w = static_cast<int>(w * r), canvas_h = static_cast<int>(h * r);
  const int left = static_cast<int>((canvas_w - w) * rng->Uniform());
  const int top = static_cast<int>((canvas_h - h) * rng->Uniform());
  const int right = canvas_w - (left + w), bottom = canvas_h - (top + h);
  return b->PadCrop(Rect{-left, -top, canvas_w, canvas_h}, kPadConstant, t.fill,
                    {left, top, right, bottom});
}

}  // namespace stoker
