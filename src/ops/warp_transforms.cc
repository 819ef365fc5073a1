// Copyright 2026 The stoker Authors.
//
// Declarations of the geometric warps (stage kWarp): they run on the
// output-size image with Pillow's arithmetic (ops/warp.cc), so they must
// follow every crop, resize and flip in the list (the Loader says so
// otherwise). See ops/transform_registry.h for how a declaration reads.
#include "ops/transform_registry.h"
#include "ops/warp.h"

namespace stoker {

void DeclareWarpTransforms(TransformFamily& f) {
  const std::string kAfterTheCrops =
      "on the output-size image, so it must follow the crops, resizes and flips (a ValueError "
      "says so otherwise)";
  f.Declare("RandomRotation", TransformStage::kWarp)
      .Doc("torchvision's RandomRotation on the PIL image (Image.rotate): an angle uniform in "
           "`degrees` ((-d, d) for a number d), counter-clockwise about `center` (default the "
           "image centre), pixels outside the source set to `fill`. NEAREST (the default), "
           "BILINEAR and BICUBIC, bit-identical to torchvision on PIL. Runs on the output-size "
           "image, so it must follow the crops, resizes and flips in the list. expand=True is "
           "not supported (one output size).")
      .Torchvision("same names and arguments (`interpolation` NEAREST (default), BILINEAR or "
                   "BICUBIC, `fill`, `center`); bit-identical to torchvision on PIL for fixed "
                   "parameters; " + kAfterTheCrops + "; `expand=True` raises (one output size)")
      .Param(params::Degrees("degrees", &Transform::degrees))
      .Param(params::WarpInterpolation("interpolation", kPilNearest))
      .Param(params::Only("expand", false, {false}, "False",
                          "it makes the output size depend on the angle, and stoker's batches "
                          "have one size; rotate before a fixed-size crop on the batch instead"))
      .Param(params::Center("center"))
      .Param(params::Fill("fill", 0))
      .Image(&ApplyRandomRotation);

  f.Declare("RandomAffine", TransformStage::kWarp)
      .Doc("torchvision's RandomAffine on the PIL image (F.affine): angle uniform in `degrees`, "
           "translation uniform in +-translate * (width, height) rounded to whole pixels, scale "
           "uniform in `scale`, shear uniform in `shear` (a number s: x in (-s, s); 2 values: x "
           "range; 4: x and y ranges). NEAREST (the default), BILINEAR and BICUBIC, "
           "bit-identical to torchvision on PIL. Runs on the output-size image, after the "
           "crops, resizes and flips.")
      .Torchvision("same names and arguments (`interpolation` NEAREST (default), BILINEAR or "
                   "BICUBIC, `fill`, `center`); bit-identical to torchvision on PIL for fixed "
                   "parameters; " + kAfterTheCrops)
      .Param(params::Degrees("degrees", &Transform::degrees))
      .Param(params::Translate("translate"))
      .Param(params::AffineScale("scale"))
      .Param(params::Shear("shear"))
      .Param(params::WarpInterpolation("interpolation", kPilNearest))
      .Param(params::Fill("fill", 0))
      .Param(params::Center("center"))
      .Image(&ApplyRandomAffine);

  f.Declare("RandomPerspective", TransformStage::kWarp)
      .Doc("torchvision's RandomPerspective on the PIL image: with probability `p`, the "
           "corners move inwards by up to `distortion_scale` of half the size (get_params' "
           "integer draws), then Pillow's perspective transform (BILINEAR, the default, NEAREST "
           "or BICUBIC). The resampling is Pillow's, exactly; the 8 coefficients are solved in "
           "double and rounded to float32 (as torchvision >= 0.15 does), torchvision 0.14 "
           "solves in float32: a few pixels per image may differ from it. Runs on the "
           "output-size image, after the crops, resizes and flips.")
      .Torchvision("same arguments (`interpolation` BILINEAR (default), NEAREST or BICUBIC, "
                   "`fill`); Pillow's perspective resampling, exact for the same coefficients; "
                   "the coefficients are solved in float64 and rounded to float32 (torchvision "
                   ">= 0.15); against torchvision 0.14's float32 solve ~0.1% of pixels differ "
                   "(tested bound: 2% per image); " + kAfterTheCrops)
      .Param(params::Number("distortion_scale", &Transform::distortion_scale, 0.0, 1.0, 0.5))
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Param(params::WarpInterpolation("interpolation", kPilBilinear))
      .Param(params::Fill("fill", 0))
      .Image(&ApplyRandomPerspective);
}

}  // namespace stoker
