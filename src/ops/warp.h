// Copyright 2026 The stoker Authors.
//
// Geometric warps of an 8-bit RGB image, in place and at the same size, with
// the arithmetic torchvision uses on a PIL image (torchvision.transforms v1):
//   - PilAffine / PilPerspective: Pillow's Image.transform(AFFINE /
//     PERSPECTIVE) with NEAREST (ImagingScaleAffine, the 16.16 fixed-point
//     affine path, or the float path, chosen as Pillow chooses them) or
//     BILINEAR (ImagingGenericTransform + bilinear_filter32RGB: doubles,
//     edge-clamped neighbours, truncation to uint8);
//   - PilRotate: Image.rotate (angle % 360, its transpose shortcuts, the
//     matrix rounded to 15 decimals), no expand;
//   - TorchvisionAffine: F.affine (_get_inverse_affine_matrix);
//   - PerspectiveCoeffs: F.perspective's _get_perspective_coeffs (an 8x8
//     solve in double, rounded to float32 as torchvision rounds its lstsq
//     solution);
//   - ApplyRandomRotation / Affine / Perspective: the transforms, their
//     parameters drawn as their get_params draw them.
// Pixels outside the source get `fill`.
//
// Thread-safety: pure functions of their arguments. No errors: parameters are
// checked when the loader is created.
#ifndef STOKER_OPS_WARP_H_
#define STOKER_OPS_WARP_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/rng.h"
#include "codec/image.h"
#include "stoker/transforms.h"

namespace stoker {

// Pillow's resampling codes (PIL.Image.NEAREST / BILINEAR / BICUBIC).
constexpr int kPilNearest = 0;
constexpr int kPilBilinear = 2;
constexpr int kPilBicubic = 3;

// A plane of `bpp`-byte pixels (1 or 2: a label map; 3: RGB), rows `stride`
// bytes apart. Does not own the memory.
struct PixelPlane {
  uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;
  int bpp = 3;
};

// A drawn warp as Pillow applies it, at the same size: kAffine's m[0..5] and
// kPerspective's m[0..7] are the inverse map (output pixel centre -> input
// coordinates, as Image.transform takes it); kRotate90/180/270 are
// Image.rotate's transpose shortcuts (90 and 270 on square images only).
struct WarpStep {
  enum Kind { kIdentity, kAffine, kPerspective, kRotate90, kRotate180, kRotate270 };
  Kind kind = kIdentity;
  double m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  // The parameters DrawWarp drew (DrawWarpParams' values; for the tests).
  double params[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
};

// Applies `step` to `img` in place with Pillow's arithmetic; pixels outside
// the source get `fill` (img.bpp bytes). `scratch`: a plane of img's size
// and bpp. BILINEAR / BICUBIC for RGB planes only (others: NEAREST, as a
// label map is resampled).
void ApplyWarpStep(const WarpStep& step, int interpolation, const uint8_t* fill,
                   const PixelPlane& img, const PixelPlane& scratch);

// Image.resize(size, NEAREST) of `src` into `dst` (its size), any bpp:
// Pillow's ImagingScaleAffine (a copy at the same size).
void ResizeNearest(const PixelPlane& src, const PixelPlane& dst);

// The steps Image.rotate (PilRotate) and F.affine (TorchvisionAffine) apply
// to a w x h image.
WarpStep RotateStep(double angle, bool has_center, double cx, double cy, int w, int h);
WarpStep AffineStep(double angle, double tx, double ty, double scale, double shear_x,
                    double shear_y, bool has_center, double cx, double cy, int w, int h);

// Where `step` takes the point (*x, *y) of a w x h image (continuous
// coordinates: pixel i spans [i, i + 1)): the inverse of the affine map;
// torchvision v2's inverse coefficients for a perspective. False when the
// map is singular or the result not finite.
bool WarpPoint(const WarpStep& step, int w, int h, double* x, double* y);

// Draws RandomRotation / RandomAffine / RandomPerspective `t`'s parameters
// for a width x height image (DrawWarpParams) into the step it applies, and
// applies a drawn step to the RGB image with t's interpolation and fill.
// ApplyRandomRotation & co are these two.
void DrawWarp(const Transform& t, Rng* rng, int width, int height, WarpStep* step);
void ApplyDrawnWarp(const Transform& t, const WarpStep& step, RgbImage* img, RgbImage* scratch);

// `a`: the inverse matrix (output pixel -> input), as Image.transform takes it.
void PilAffine(const double a[6], int interpolation, const std::array<uint8_t, 3>& fill,
               RgbImage* img, RgbImage* scratch);
void PilPerspective(const double a[8], int interpolation, const std::array<uint8_t, 3>& fill,
                    RgbImage* img, RgbImage* scratch);

// Image.rotate(angle, resample, expand=False, center) (counter-clockwise
// degrees; the image centre when !has_center).
void PilRotate(double angle, int interpolation, bool has_center, double cx, double cy,
               const std::array<uint8_t, 3>& fill, RgbImage* img, RgbImage* scratch);

// F.affine(img, angle, [tx, ty], scale, [shear_x, shear_y], interpolation,
// fill, center) on a PIL image (center = the image centre when !has_center).
void TorchvisionAffine(double angle, double tx, double ty, double scale, double shear_x,
                       double shear_y, bool has_center, double cx, double cy, int interpolation,
                       const std::array<uint8_t, 3>& fill, RgbImage* img, RgbImage* scratch);

// _get_perspective_coeffs(startpoints, endpoints) (points as x0, y0, ... x3,
// y3): the 8 coefficients, each rounded to float32.
void PerspectiveCoeffs(const double start[8], const double end[8], double coeffs[8]);

enum class WarpKind { kRotation, kAffine, kPerspective };
// The kind of RandomRotation / RandomAffine / RandomPerspective `t`.
WarpKind WarpKindOf(const Transform& t);

// One draw of RandomRotation / RandomAffine / RandomPerspective's parameters
// for a width x height image, in get_params' order:
//   rotation: {angle};
//   affine: {angle, tx, ty, scale, shear_x, shear_y};
//   perspective: {applied (0/1), then the 8 endpoint coordinates x0, y0, ...
//   (top-left, top-right, bottom-right, bottom-left)} (zeros when not applied).
// Returns the number of values written (<= 9).
int DrawWarpParams(WarpKind kind, const Transform& t, int width, int height, Rng* rng,
                   double* out);

// Draw and apply RandomRotation / RandomAffine / RandomPerspective `t` (their
// declarations: ops/warp_transforms.cc).
void ApplyRandomRotation(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomAffine(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandomPerspective(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);

}  // namespace stoker

#endif  // STOKER_OPS_WARP_H_
