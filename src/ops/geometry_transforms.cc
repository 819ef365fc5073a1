// Copyright 2026 The stoker Authors.
//
// Declarations of the geometric transforms (stage kGeometry): crops,
// resizes, pads and flips, planned per sample by ops/geometry.cc. See
// ops/transform_registry.h for how a declaration reads.
#include "ops/detection_crops.h"
#include "ops/geometry.h"
#include "ops/transform_registry.h"

namespace stoker {
namespace {

constexpr char kResampling[] =
    "same names and arguments; `interpolation=` BILINEAR (the default) and `antialias=True` "
    "or `None` accepted (Pillow's antialiased bilinear filter, bit-identical to torchvision on "
    "PIL), others raise a ValueError naming BILINEAR";
constexpr char kSameArguments[] = "same names and arguments";

Status CheckMaxSize(const TransformSchema& s, const Transform& t) {
  if (t.max_size == 0) return Status::OK();
  if (t.width != 0) {
    return params::ParamError(StatusCode::kInvalidArgument, s, "max_size",
                              "None when size is (height, width)", std::to_string(t.max_size),
                              "torchvision allows max_size only with an int size (the shorter "
                              "side)");
  }
  if (t.max_size <= t.height) {
    return params::ParamError(
        StatusCode::kInvalidArgument, s, "max_size",
        "strictly greater than the requested size for the smaller edge (" +
            std::to_string(t.height) + ")",
        std::to_string(t.max_size));
  }
  return Status::OK();
}

// min <= max for two Number parameters.
Status CheckOrdered(const TransformSchema& s, const char* lo_name, double lo,
                    const char* hi_name, double hi) {
  if (lo <= hi) return Status::OK();
  return params::ParamError(StatusCode::kInvalidArgument, s, hi_name,
                            std::string(">= ") + lo_name + " (" + params::FormatNumber(lo) + ")",
                            params::FormatNumber(hi));
}

Status CheckIoUCrop(const TransformSchema& s, const Transform& t) {
  STOKER_RETURN_IF_ERROR(CheckOrdered(s, "min_scale", t.scale_min, "max_scale", t.scale_max));
  return CheckOrdered(s, "min_aspect_ratio", t.ratio_min, "max_aspect_ratio", t.ratio_max);
}

}  // namespace

void DeclareGeometryTransforms(TransformFamily& f) {
  f.Declare("RandomResizedCrop", TransformStage::kGeometry)
      .Doc("Crop a random area (fraction `scale` of the image, aspect `ratio`) and resize it "
           "to `size`.")
      .Torchvision(kResampling)
      .Param(params::Size("size"))
      .Param(params::Range("scale", &Transform::scale_min, &Transform::scale_max, {0.08, 1.0},
                           {0.0, true, params::kUnbounded}))
      .Param(params::Range("ratio", &Transform::ratio_min, &Transform::ratio_max,
                           {3.0 / 4.0, 4.0 / 3.0}, {0.0, true, params::kUnbounded}))
      .Param(params::BilinearOnly("interpolation"))
      .Param(params::AntialiasOnly("antialias"))
      .Plan(&PlanRandomResizedCrop, &CropOutputSize)
      .RandomGeometry();

  f.Declare("Resize", TransformStage::kGeometry)
      .Doc("Resize: an int (or [int]) sets the shorter side, aspect kept, the longer side "
           "capped at `max_size` if given (torchvision's rule); (h, w) sets both.")
      .Torchvision(kResampling)
      .Param(params::ResizeSize("size"))
      .Param(params::BilinearOnly("interpolation"))
      .Param(params::MaxSize("max_size"))
      .Param(params::AntialiasOnly("antialias"))
      .Check(&CheckMaxSize)
      .Plan(&PlanResize, &ResizeOutputSize)
      .Deterministic();

  f.Declare("CenterCrop", TransformStage::kGeometry)
      .Doc("Crop the centre `size` (zero-padded when the image is smaller, as torchvision "
           "does).")
      .Torchvision(kSameArguments)
      .Param(params::Size("size"))
      .Plan(&PlanCenterCrop, &CropOutputSize)
      .Deterministic();

  f.Declare("RandomCrop", TransformStage::kGeometry)
      .Doc("torchvision's RandomCrop: optional padding (an int, (left/right, top/bottom) or "
           "(left, top, right, bottom)), pad_if_needed, then a uniform crop of `size`. "
           "padding_mode 'constant' (with `fill`: a number or 3 numbers in [0, 255]), 'edge', "
           "'reflect' or 'symmetric' (np.pad's, as torchvision pads a PIL image).")
      .Torchvision("same arguments: `padding`, `pad_if_needed`, `fill` (a number or RGB "
                   "triple), `padding_mode` `\"constant\"`, `\"edge\"`, `\"reflect\"`, "
                   "`\"symmetric\"` (np.pad's, as torchvision pads a PIL image); in the "
                   "geometry plan, bit-identical to torchvision on PIL")
      .Param(params::Size("size"))
      .Param(params::Padding("padding", /*required=*/false))
      .Param(params::Bool("pad_if_needed", &Transform::pad_if_needed, false))
      .Param(params::Fill("fill", 0))
      .Param(params::PaddingMode("padding_mode"))
      .Plan(&PlanRandomCrop, &CropOutputSize);

  f.Declare("RandomHorizontalFlip", TransformStage::kGeometry)
      .Doc("Mirror the image left-right with probability `p`.")
      .Torchvision(kSameArguments)
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Plan(&PlanRandomHorizontalFlip, &SameOutputSize);

  f.Declare("RandomVerticalFlip", TransformStage::kGeometry)
      .Doc("Mirror the image top-bottom with probability `p`.")
      .Torchvision(kSameArguments)
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Plan(&PlanRandomVerticalFlip, &SameOutputSize);

  f.Declare("Pad", TransformStage::kGeometry)
      .Doc("torchvision's Pad: pad the sides by `padding` (an int, (left/right, top/bottom) or "
           "(left, top, right, bottom)) with `fill` ('constant') or the image folded as np.pad "
           "folds it ('edge', 'reflect', 'symmetric'), as torchvision pads a PIL image. The "
           "output grows by the padding. Negative padding (torchvision's crop) is not "
           "supported.")
      .Torchvision("same arguments: `padding` (an int, 2 or 4 values, >= 0), `fill` (a number "
                   "or RGB triple), `padding_mode` `\"constant\"`, `\"edge\"`, `\"reflect\"`, "
                   "`\"symmetric\"`; in the geometry plan (a later crop or resize reads the "
                   "padded image without making it), bit-identical to torchvision on PIL")
      .Param(params::Padding("padding", /*required=*/true))
      .Param(params::Fill("fill", 0))
      .Param(params::PaddingMode("padding_mode"))
      .Plan(&PlanPad, &PadOutputSize)
      .Deterministic();

  f.Declare("RandomIoUCrop", TransformStage::kGeometry)
      .Doc("torchvision.transforms.v2's RandomIoUCrop (SSD's crop): draw a minimum IoU from "
           "`sampler_options` (None: [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0]; an option >= 1 "
           "leaves the sample uncropped), then up to `trials` crops of `min_scale`..`max_scale` "
           "of each side and aspect `min_aspect_ratio`..`max_aspect_ratio`; the first crop in "
           "which some box's centre lies and whose IoU with one of those boxes reaches the "
           "option is taken, else another option is drawn. Boxes whose centre falls outside "
           "the crop are removed with their per-box rows (stats()['boxes_removed']). The draw "
           "reads the sample's boxes, so the Loader needs a boxes target (targets=); the crop "
           "is decided before decode and decoded as a region. Unlike v2, which can draw "
           "options forever, after 100 options without a crop the sample is left uncropped; "
           "a sample without boxes is left uncropped (as v2 ends up leaving it). Each sample "
           "keeps its own size: follow it with Resize((h, w)) or use collate='list'.")
      .Torchvision("torchvision.transforms.v2's (not in 0.14): same arguments; needs a boxes "
                   "target; drawn from stoker's per-sample stream; at most 100 option draws")
      .Param(params::Number("min_scale", &Transform::scale_min, 0.0, 1.0, 0.3))
      .Param(params::Number("max_scale", &Transform::scale_max, 0.0, 1.0, 1.0))
      .Param(params::Number("min_aspect_ratio", &Transform::ratio_min, 0.0, params::kUnbounded,
                            0.5))
      .Param(params::Number("max_aspect_ratio", &Transform::ratio_max, 0.0, params::kUnbounded,
                            2.0))
      .Param(params::NumberList("sampler_options", &Transform::sampler_options, 0.0,
                                params::kUnbounded, {0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0}))
      .Param(params::Int("trials", &Transform::trials, 1, 1000, 40))
      .Check(&CheckIoUCrop)
      .Plan(&PlanRandomIoUCrop, &VariableOutputSize)
      .NeedsBoxes();

  f.Declare("RandomZoomOut", TransformStage::kGeometry)
      .Doc("torchvision.transforms.v2's RandomZoomOut: with probability `p`, place the image "
           "at a random offset on a canvas `r` times its size (r uniform in `side_range`), "
           "the rest `fill`; masks are padded with their ignore_index, boxes and keypoints "
           "shifted. Each sample keeps its own size: follow it with Resize((h, w)) or use "
           "collate='list'.")
      .Torchvision("torchvision.transforms.v2's (not in 0.14): same arguments (`fill` a number "
                   "or RGB triple); drawn from stoker's per-sample stream")
      .Param(params::Fill("fill", 0))
      .Param(params::Range("side_range", &Transform::side_range, {1.0, 4.0},
                           {1.0, false, 100.0}))
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Plan(&PlanRandomZoomOut, &VariableOutputSize);

  f.Declare("ScaleJitter", TransformStage::kGeometry)
      .Doc("torchvision v2's ScaleJitter: resize to (int(h * s), int(w * s)) with s = "
           "min(target_h / h, target_w / w) * r, r drawn uniformly from `scale_range` (in "
           "float64; v2 computes r in float32). Each sample its own size (collate='list', or "
           "end with a crop, Pad or Letterbox for a batch).")
      .Torchvision("v2 only (torchvision.transforms.v2.ScaleJitter): same arguments, "
                   "`interpolation=` BILINEAR, `antialias=True`; pixels as F.resize on PIL")
      .Param(params::Size("target_size"))
      .Param(params::Range("scale_range", &Transform::scale_min, &Transform::scale_max,
                           {0.1, 2.0}, {0.0, true, 100.0}))
      .Param(params::BilinearOnly("interpolation"))
      .Param(params::AntialiasOnly("antialias"))
      .Plan(&PlanScaleJitter, &VariableOutputSize)
      .RandomGeometry();

  f.Declare("RandomShortestSize", TransformStage::kGeometry)
      .Doc("torchvision v2's RandomShortestSize: the shorter side drawn from `min_size` "
           "(an int or a list), aspect kept, the longer side capped at `max_size` if given: "
           "r = min(size / min(h, w), max_size / max(h, w)), then (int(h * r), int(w * r)). "
           "Each sample its own size.")
      .Torchvision("v2 only (torchvision.transforms.v2.RandomShortestSize): same arguments, "
                   "`interpolation=` BILINEAR, `antialias=True`; pixels as F.resize on PIL")
      .Param(params::SizeList("min_size"))
      .Param(params::MaxSize("max_size"))
      .Param(params::BilinearOnly("interpolation"))
      .Param(params::AntialiasOnly("antialias"))
      .Plan(&PlanRandomShortestSize, &VariableOutputSize)
      .RandomGeometry();

  f.Declare("Letterbox", TransformStage::kGeometry)
      .Doc("Resize keeping the aspect so the image fits `size` (an int: size x size, or (h, w)): "
           "the limiting side becomes its size, the other int(size * other / limiting); then "
           "pad to `size` with `fill`, centred (left = (W - w) // 2, top = (H - h) // 2, the "
           "odd pixel right and bottom). Equals F.pad(F.resize(img, [h, w]), [left, top, "
           "right, bottom], fill). Masks are padded with their ignore_index; boxes and "
           "keypoints are scaled, then shifted by (left, top).")
      .Torchvision("not in torchvision (YOLO's letterbox): F.resize then F.pad with `fill`, "
                   "bit-identical to them on PIL")
      .Param(params::Size("size"))
      .Param(params::Fill("fill", 114))
      .Param(params::BilinearOnly("interpolation"))
      .Param(params::AntialiasOnly("antialias"))
      .Plan(&PlanLetterbox, &CropOutputSize)
      .Deterministic();

  f.NotProvided("FiveCrop", "not supported (one image per sample)");
  f.NotProvided("TenCrop", "not supported (one image per sample)");
  f.NotProvided("ElasticTransform",
                "not implemented: apply it to the batch, or in a stoker.Lambda");
}

}  // namespace stoker
