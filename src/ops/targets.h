// Copyright 2026 The stoker Authors.
//
// Targets that follow the primary image (stoker/record.h, TargetRole): a
// sample's geometry as its transform list applied it to the image
// (TargetGeometry: the GeometrySteps PlanGeometry recorded, then the drawn
// warps), replayed on
//   - a mask (a one-channel label map, 1 or 2 bytes per pixel): nearest
//     neighbour with Pillow's arithmetic, as torchvision's functional ops
//     with NEAREST on a PIL image (crop: Image.crop; resize: Image.resize
//     NEAREST; flips: transposes; warps: Image.transform / Image.rotate),
//     never blending labels; padding is `fill` (the field's ignore_index)
//     where the image's padding is a constant, the mask folded as the image
//     is for edge / reflect / symmetric;
//   - instance masks (a plane per box, [N, H, W]): each plane as a mask,
//     the planes of removed boxes dropped (TransformMaskPlanes);
//   - boxes: torchvision v2's box maths (crop: shift, then clamp to the
//     crop; resize: scale; flips: mirror; rotation / affine / perspective:
//     the box around the 4 transformed corners, clamped to the image), then
//     clamped to the output and sanitised (SanitizeBoxes);
//   - keypoints: the same maps; a point outside the grid after a crop or a
//     warp, or outside the output, is marked invisible (never dropped).
// Coordinates are continuous: pixel i spans [i, i + 1); a box is xyxy.
// The steps are in the primary image's original coordinates, whatever DCT
// scale or region the decoder used for its pixels.
//
// Thread-safety: pure functions of their arguments.
#ifndef STOKER_OPS_TARGETS_H_
#define STOKER_OPS_TARGETS_H_

#include <cstdint>
#include <vector>

#include "ops/geometry.h"
#include "stoker/record.h"
#include "stoker/status.h"

namespace stoker {

struct TargetGeometry {
  int src_width = 0, src_height = 0;  // the primary image as read (its header)
  std::vector<GeometryStep> steps;     // geometry, then warps, in list order
  int out_width() const;
  int out_height() const;
  void Reset(int width, int height) {
    src_width = width;
    src_height = height;
    steps.clear();
  }
};

// A label map, `bpp` (1 or 2) bytes per pixel, rows packed.
struct MaskImage {
  std::vector<uint8_t> pixels;
  int width = 0, height = 0, bpp = 1;
};

// Replays `g` on the mask `src` (src_width x src_height: else
// InvalidArgument naming both sizes; never written), using the buffers `a`
// and `b` (reused) as needed: *result views the transformed mask, in `src`
// itself when only crops inside it were applied (no copy), else in a or b.
// `fill` is written in the mask's element type (bpp 1 or 2).
//
// With `first_row` >= 0, `src` is a band of the mask: its rows first_row ..
// first_row + src.height - 1 of a mask `mask_height` rows tall (the rows
// MaskRowsNeeded(g) gave, all the first step reads; else InternalError).
Status TransformMaskView(const TargetGeometry& g, int64_t fill, const PixelPlane& src,
                         MaskImage* a, MaskImage* b, PixelPlane* result, int first_row = -1,
                         int mask_height = 0);
// The rows [*y0, *y1) of the source mask that replaying `g` reads, when that
// is fewer than all of them: true when the first step is a crop inside the
// source (a RandomResizedCrop, a RandomCrop without padding), so a decoder
// may stop after the crop's last row (ImageDecoder::DecodeNative's rows).
bool MaskRowsNeeded(const TargetGeometry& g, int* y0, int* y1);
// The same in place (for tests).
Status TransformMask(const TargetGeometry& g, int64_t fill, MaskImage* mask, MaskImage* scratch);

// Instance masks: `n` planes [n, src_height, src_width] of `bpp` (1 or 2)
// bytes per pixel at `planes`, one per box. Each plane whose keep[i] is set
// is replayed as a mask (TransformMaskView, padding `fill`: 0, the instance's
// outside, for Coco's instance masks) and written packed into `out`, kept
// planes in order, each out_height x out_width (the removed boxes' planes
// are skipped, so the rows stay aligned with the kept boxes). `keep` has n
// entries. Errors: a plane of another size than the image (InvalidArgument).
Status TransformMaskPlanes(const TargetGeometry& g, int64_t fill, const uint8_t* planes, int n,
                           int width, int height, int bpp, const uint8_t* keep, MaskImage* a,
                           MaskImage* b, uint8_t* out);

// Boxes `in` (n rows of 4 in `format`, source pixels) -> xyxy in output
// pixels, clamped to the output. A box is removed (keep[i] = 0) when its
// clamped width or height is below `min_size` or not positive, or when the
// clamped area is below `min_area_fraction` of the area it would have
// without any clamping, or when a RandomIoUCrop step found its centre
// outside the crop (GeometryStep::drop_outside_centres). `out` gets the kept
// rows only.
struct BoxRules {
  double min_size = 1.0;
  double min_area_fraction = 0.0;
};
void TransformBoxes(const TargetGeometry& g, BoxFormat format, const double* in, int n,
                    const BoxRules& rules, std::vector<float>* out, std::vector<uint8_t>* keep);

// n boxes `in` in `format` -> xyxy (n rows of 4) in *out.
void BoxesToXyxy(BoxFormat format, const double* in, int n, std::vector<double>* out);

// The boxes `xyxy` (the original image's pixels, n rows of 4) as they stand
// after `steps` (each clamped as TransformBoxes clamps it), xyxy, without
// the ones a RandomIoUCrop step removed (GeometryStep::drop_outside_centres):
// what a transform whose draw depends on the boxes sees (RandomIoUCrop).
void BoxesAfterSteps(const std::vector<GeometryStep>& steps, const std::vector<double>& xyxy,
                     std::vector<double>* out);

// Keypoints `in` (k rows of `cols` = 2 (x, y) or 3 (x, y, visibility)) ->
// k rows of 3 (x, y, visibility) in output pixels: visibility is the
// input's (1 without one), 0 once the point leaves the grid after a crop or
// a warp or lies outside [0, W] x [0, H] of the output.
void TransformKeypoints(const TargetGeometry& g, const double* in, int k, int cols,
                        std::vector<float>* out);

}  // namespace stoker

#endif  // STOKER_OPS_TARGETS_H_
