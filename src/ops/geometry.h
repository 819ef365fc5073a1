// Copyright 2026 The stoker Authors.
//
// Compiles a transform list, for one image of known size and one random
// stream, into a GeometryPlan: the crops, resizes and flip that torchvision
// would apply, expressed as at most kMaxStages "crop -> resample -> window"
// stages in the coordinates of the image itself. The common chains
// (RandomResizedCrop; Resize + CenterCrop; CenterCrop; each with flips) are
// a single stage, which the loader executes fused with a region decode.
//
// Thread-safety: pure functions. Errors: InvalidArgument for unusable lists.
#ifndef STOKER_OPS_GEOMETRY_H_
#define STOKER_OPS_GEOMETRY_H_

#include <array>
#include <vector>

#include "base/rng.h"
#include "codec/image.h"
#include "ops/transform_ops.h"
#include "ops/warp.h"
#include "stoker/status.h"
#include "stoker/transforms.h"

namespace stoker {

// One stage: crop the input grid to `crop` (pixels outside the input are
// zero: torchvision's padding), resample the crop to out_width x out_height
// with Pillow's bilinear filter, then keep `window` of the result (again
// zero outside).
//
// A RandomCrop with fill != 0 or padding_mode != "constant" gets a stage of
// its own (its crop on the stage's input grid): the crop's out-of-image part
// is then `pad_fill` (kPadConstant) or the input folded as np.pad folds it,
// through torchvision's two pads: `pad1` (padding: left, top, right, bottom,
// in the unflipped grid), then pad_if_needed's (whatever lies beyond).
enum PadMode { kPadConstant = 0, kPadEdge = 1, kPadReflect = 2, kPadSymmetric = 3 };
struct GeometryStage {
  Rect crop;
  int out_width = 0;
  int out_height = 0;
  Rect window;
  int pad_mode = kPadConstant;
  std::array<uint8_t, 3> pad_fill{0, 0, 0};
  std::array<int, 4> pad1{0, 0, 0, 0};
  // A window reaching outside the resampled output (a constant pad after a
  // resize: Letterbox, Pad or RandomCrop with a non-zero fill) has its
  // outside painted `window_fill` instead of zero.
  bool window_filled = false;
  std::array<uint8_t, 3> window_fill{0, 0, 0};
};

// np.pad's fold of coordinate `v` into [0, n) for `mode` (edge, reflect,
// symmetric; any distance outside).
int FoldCoord(int v, int n, int mode);
// The source coordinate of `u` (in the unpadded grid of length n) under a
// stage's padding: u itself inside; -1 (the fill) for kPadConstant; else
// folded through torchvision's two pads (first pads lo, hi; then
// pad_if_needed's).
int PaddedCoord(int u, int n, int lo, int hi, int mode);

struct GeometryPlan {
  static constexpr int kMaxStages = 4;
  GeometryStage stages[kMaxStages];
  int num_stages = 0;
  // Mirror the final output horizontally / vertically.
  bool flip = false;
  bool vflip = false;
  int width() const { return stages[num_stages - 1].window.width; }
  int height() const { return stages[num_stages - 1].window.height; }
};

// One geometric step of a sample as its transform list applies it, in the
// grid before it as the user sees it (earlier flips are steps of their own):
// what the targets (masks, boxes, keypoints; ops/targets.h) replay with the
// image's random draw. Unlike the GeometryPlan, the steps keep the list's
// order: a mask resampled then flipped is not a mask flipped then resampled.
//   kCrop: `crop` of the in_width x in_height grid (may extend outside it:
//     the padding, filled per pad_mode, pad1 as GeometryStage's);
//   kResize: the grid resampled to out_width x out_height;
//   kHFlip / kVFlip: mirrored;
//   kWarp: `warp` (RandomRotation / Affine / Perspective), same size.
// A kCrop with `drop_outside_centres` (RandomIoUCrop's) also removes the
// boxes whose centre is not strictly inside the crop (torchvision v2's
// is_within_crop_area).
struct GeometryStep {
  enum Kind { kCrop, kResize, kHFlip, kVFlip, kWarp };
  Kind kind = kCrop;
  int in_width = 0, in_height = 0;
  int out_width = 0, out_height = 0;
  Rect crop;
  int pad_mode = kPadConstant;
  std::array<int, 4> pad1{0, 0, 0, 0};
  bool drop_outside_centres = false;
  WarpStep warp;
};

// Builds a GeometryPlan from the geometric transforms, in list order: each
// one's plan function (its declaration's TransformOps::plan) calls these.
// Rectangles are given in the current grid as the user sees it (earlier
// flips mirror it); they may extend outside it (zeros there, as
// torchvision's padding). Not thread-safe: one per plan.
class GeometryBuilder {
 public:
  // Starts `plan` as one stage over a width x height image; with `steps`,
  // also appends each call as GeometrySteps there (for the targets).
  GeometryBuilder(int width, int height, GeometryPlan* plan,
                  std::vector<GeometryStep>* steps = nullptr);

  // The current grid: the size the transforms so far give.
  int width() const { return st_->window.width; }
  int height() const { return st_->window.height; }

  // A crop of the current grid (CenterCrop, a constant-zero RandomCrop).
  Status Crop(Rect r);
  // A crop whose outside is `fill` (kPadConstant) or the grid folded as
  // np.pad folds it (edge, reflect, symmetric), through torchvision's two
  // pads: `pad1` (left, top, right, bottom, as the user sees the grid), then
  // whatever lies beyond it. With constant zero fill this is Crop.
  Status PadCrop(Rect r, int mode, const std::array<int, 3>& fill,
                 const std::array<int, 4>& pad1);
  // A crop inside the current grid that also removes the boxes whose centre
  // lies outside it (RandomIoUCrop; GeometryStep::drop_outside_centres).
  Status CropKeepingCentres(Rect r);
  // Resample the current grid to w x h (Resize).
  Status Resize(int w, int h);
  // Crop `r`, then resample the crop to w x h (RandomResizedCrop).
  Status ResizedCrop(Rect r, int w, int h);
  // Mirror everything after this horizontally / vertically.
  void ToggleFlip();
  void ToggleVFlip();

  // The sample's boxes, xyxy in the original image's pixels (null: the
  // sample has none known before decode; not owned, outlives the builder).
  void SetBoxes(const std::vector<double>* xyxy) { boxes_ = xyxy; }
  const std::vector<double>* boxes() const { return boxes_; }
  // The steps recorded so far (null unless the builder records them).
  const std::vector<GeometryStep>* steps() const { return steps_; }

 private:
  Rect Unflip(Rect r) const;
  void CropCurrent(Rect r);  // r in the unflipped grid
  Status NewStageIfResampled();
  Status FreshStage();
  void ResampleTo(int w, int h);
  void Record(GeometryStep::Kind kind, Rect crop, int out_w, int out_h, int mode = kPadConstant,
              const std::array<int, 4>& pad1 = {0, 0, 0, 0});

  GeometryPlan* plan_;
  GeometryStage* st_;
  bool resampled_ = false;  // does the open stage resample already?
  bool cropped_ = false;    // has the open stage a crop already?
  bool sealed_ = false;     // is the open stage's crop a padded crop (no further crop)?
  std::vector<GeometryStep>* steps_ = nullptr;
  const std::vector<double>* boxes_ = nullptr;
};

// Draws the random parameters from `rng` in list order and fills `plan`,
// calling each geometric transform's plan function; the other stages'
// transforms (Normalize, the photometric ones) are not geometry.
// With `steps`, the transforms' GeometrySteps are appended there. `boxes`:
// the sample's boxes (xyxy, the original image's pixels) for the transforms
// whose draw depends on them (RandomIoUCrop: they need `steps` too).
Status PlanGeometry(const std::vector<Transform>& transforms, int width, int height, Rng* rng,
                    GeometryPlan* plan, std::vector<GeometryStep>* steps = nullptr,
                    const std::vector<double>* boxes = nullptr);

// The output size every sample will have, or InvalidArgument naming the
// problem when the list does not end in a fixed size (a batch needs one).
Status StaticOutputSize(const std::vector<Transform>& transforms, int* height, int* width);
// The same for samples whose images all are in_height x in_width (a source's
// FixedImageSize; 0 x 0: unknown): a list without a size-fixing transform,
// or with Resize(int), then has a fixed size too.
Status StaticOutputSize(const std::vector<Transform>& transforms, int in_height, int in_width,
                        int* height, int* width);

// The geometric transforms' plan and output-size functions (their
// declarations are in ops/geometry_transforms.cc).
Status PlanRandomResizedCrop(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanResize(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanCenterCrop(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanRandomCrop(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanRandomHorizontalFlip(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanRandomVerticalFlip(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanPad(const Transform& t, Rng* rng, GeometryBuilder* b);
// torchvision v2's ScaleJitter and RandomShortestSize (a drawn resize), and
// Letterbox (a resize keeping the aspect into size, then a centred constant
// pad to size).
Status PlanScaleJitter(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanRandomShortestSize(const Transform& t, Rng* rng, GeometryBuilder* b);
Status PlanLetterbox(const Transform& t, Rng* rng, GeometryBuilder* b);
// Crops set a fixed size; Resize(size) with a shorter side does not; flips
// keep it.
void CropOutputSize(const Transform& t, OutputSize* size);
void ResizeOutputSize(const Transform& t, OutputSize* size);
void SameOutputSize(const Transform& t, OutputSize* size);
// ScaleJitter, RandomShortestSize, RandomIoUCrop, RandomZoomOut: each sample
// its own size.
void VariableOutputSize(const Transform& t, OutputSize* size);
// Pad: a fixed size grows by the padding.
void PadOutputSize(const Transform& t, OutputSize* size);

// torchvision's RandomResizedCrop.get_params: a crop of the width x height
// grid, drawn from `rng`. Exposed for the distribution tests.
Rect SampleRandomResizedCrop(int width, int height, const Transform& t, Rng* rng);

// torchvision's size rule for Resize(size, max_size) on a width x height
// image (max_size 0: none).
void ShorterSideSize(int width, int height, int size, int* out_width, int* out_height,
                     int max_size = 0);

// v2's ScaleJitter size for a width x height image and the drawn factor r
// from scale_range: scale = min(target_h / h, target_w / w) * r, then
// (int(w * scale), int(h * scale)), each at least 1.
void ScaleJitterSize(int width, int height, int target_w, int target_h, double r,
                     int* out_width, int* out_height);
// v2's RandomShortestSize size: r = min_size / min(h, w), capped at
// max_size / max(h, w) when max_size > 0; (int(w * r), int(h * r)), >= 1.
void ShortestSizeSize(int width, int height, int min_size, int max_size, int* out_width,
                      int* out_height);
// Letterbox: the resize of width x height that fits size_w x size_h keeping
// the aspect (the limiting side exactly its size, the other
// int(size * other / limiting), >= 1).
void LetterboxSize(int width, int height, int size_w, int size_h, int* out_width,
                   int* out_height);

// Python 3's round() (half to even) of x, as torchvision's CenterCrop uses.
int RoundHalfEven(double x);

// rng->Uniform(lo, hi) for any bounds, with one draw: the same value where
// hi - lo is finite; lo when lo == hi (an infinite bound included: Uniform
// gives NaN there, inf - inf); otherwise, where the span overflows (bounds
// of +-1e308), lo * (1 - u) + hi * u, finite for finite bounds.
double UniformBetween(Rng* rng, double lo, double hi);

// torchvision's RandomErasing.forward and get_params for an img_w x img_h
// image: one draw against p, then up to 10 attempts (area and log-ratio
// draws, then the position). False when not applied or when no attempt fits
// (the image is left unchanged); otherwise the rectangle, inside the image.
// An attempt whose height or width is not a finite number below the image's
// (ratio inf or 1e300, NaN parameters) fails like any that does not fit, so
// no parameter can give a rectangle outside the image or a long loop.
bool SampleRandomErasing(int img_w, int img_h, const Transform& t, Rng* rng, Rect* out);

}  // namespace stoker

#endif  // STOKER_OPS_GEOMETRY_H_
