// Copyright 2026 The stoker Authors.
//
// The detection crops, as torchvision.transforms.v2 defines them, planned
// into the geometry like the other geometric transforms (ops/geometry.h):
//
//   RandomIoUCrop (SSD's crop): draws an option from sampler_options (an
//     option >= 1: no crop); otherwise up to `trials` crops of scale
//     [min_scale, max_scale] per side and aspect [min_aspect_ratio,
//     max_aspect_ratio], keeping the first one in which some box's centre
//     lies strictly inside and whose IoU with one of those boxes reaches the
//     option; else draws another option. The crop is a plain crop inside the
//     image (decoded as a region), recorded with
//     GeometryStep::drop_outside_centres: the boxes whose centre is outside
//     it are removed (ops/targets.h), with their per-box rows. v2 draws
//     options until a crop is found, forever when no option is >= 1 and no
//     crop fits; here at most kIoUCropMaxOptionDraws options are drawn, then
//     the sample is left uncropped. A sample without boxes (or with every
//     box removed by an earlier RandomIoUCrop) is left uncropped, as v2
//     leaves it once it draws the no-crop option. The draw reads the boxes
//     as the steps before it left them (BoxesAfterSteps); without the
//     sample's boxes (GeometryBuilder::boxes) it is InvalidArgument.
//   RandomZoomOut: with probability p, a canvas of side r x the image's (r
//     uniform in side_range) with the image at a random offset, the rest
//     `fill` (a mask's: its ignore_index, as for every constant padding).
//
// The random numbers come from the sample's stream (Rng), in v2's order.
//
// Thread-safety: pure functions of their arguments.
#ifndef STOKER_OPS_DETECTION_CROPS_H_
#define STOKER_OPS_DETECTION_CROPS_H_

#include "base/rng.h"
#include "ops/geometry.h"
#include "stoker/status.h"
#include "stoker/transforms.h"

namespace stoker {

inline constexpr int kIoUCropMaxOptionDraws = 100;

Status PlanRandomIoUCrop(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanRandomZoomOut(const Transform& t, Rng* rng, GeometryBuilder* b);
// Both give each sample its own size (VariableOutputSize, ops/geometry.h).

}  // namespace stoker

#endif  // STOKER_OPS_DETECTION_CROPS_H_
