// Copyright 2026 The stoker Authors.
//
// Declarations of torchvision's automatic augmentation policies (stage
// kImage): their ops run on the output-size image with Pillow's arithmetic
// (ops/autoaugment.cc). See ops/transform_registry.h for how a declaration
// reads.
#include "ops/autoaugment.h"
#include "ops/transform_registry.h"

namespace stoker {
namespace {

constexpr char kPolicies[] =
    "same names and arguments (`interpolation` NEAREST, `fill`); on the output-size image; "
    "every op bit-identical to torchvision's `_apply_op` on PIL at the same magnitude";

Status CheckMagnitude(const TransformSchema& s, const Transform& t) {
  if (t.magnitude < t.num_magnitude_bins) return Status::OK();
  return params::ParamError(StatusCode::kInvalidArgument, s, "magnitude",
                            "less than num_magnitude_bins (" +
                                std::to_string(t.num_magnitude_bins) + ")",
                            std::to_string(t.magnitude));
}

}  // namespace

void DeclarePolicyTransforms(TransformFamily& f) {
  f.Declare("TrivialAugmentWide", TransformStage::kImage)
      .Doc("torchvision's TrivialAugmentWide: one op of 14, uniformly, at a uniform magnitude "
           "bin with a random sign; on the output-size image, with Pillow's arithmetic "
           "(NEAREST warps).")
      .Torchvision(kPolicies)
      .Param(params::Int("num_magnitude_bins", &Transform::num_magnitude_bins, 2, 1000, 31))
      .Param(params::NearestOnly("interpolation"))
      .Param(params::Fill("fill", ArgValue()))
      .Image(&ApplyTrivialAugmentWide);

  f.Declare("RandAugment", TransformStage::kImage)
      .Doc("torchvision's RandAugment: `num_ops` ops drawn uniformly from 14, each at bin "
           "`magnitude` with a random sign; on the output-size image (NEAREST warps).")
      .Torchvision(kPolicies)
      .Param(params::Int("num_ops", &Transform::num_ops, 0, 16, 2))
      .Param(params::Int("magnitude", &Transform::magnitude, 0, 999, 9))
      .Param(params::Int("num_magnitude_bins", &Transform::num_magnitude_bins, 2, 1000, 31))
      .Param(params::NearestOnly("interpolation"))
      .Param(params::Fill("fill", ArgValue()))
      .Check(&CheckMagnitude)
      .Image(&ApplyRandAugment);

  f.Declare("AutoAugment", TransformStage::kImage)
      .Doc("torchvision's AutoAugment with the ImageNet policy (the default): one of its 25 "
           "sub-policies uniformly, each of its two ops applied with its probability at its "
           "magnitude; on the output-size image (NEAREST warps). CIFAR10 and SVHN policies are "
           "not implemented.")
      .Torchvision(std::string(kPolicies) + "; the ImageNet policy (the CIFAR10 and SVHN "
                                            "policies raise)")
      .Param(params::Only("policy", ArgValue(), {ArgValue(), "imagenet"},
                          "AutoAugmentPolicy.IMAGENET (or None)",
                          "stoker has the ImageNet policy only; use stoker.RandAugment or "
                          "stoker.TrivialAugmentWide otherwise",
                          "IMAGENET"))
      .Param(params::NearestOnly("interpolation"))
      .Param(params::Fill("fill", ArgValue()))
      .Image(&ApplyAutoAugment);

  f.NotProvided("AugMix", "not implemented: apply it to the batch");
}

}  // namespace stoker
