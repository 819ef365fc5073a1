// Copyright 2026 The stoker Authors.
//
// Declarations of the transforms on the output: Normalize (stage kConvert,
// fused into the PixelWriter's conversion, ops/convert.h), RandomErasing
// (stage kTensor, ops/erasing.h), and Lambda, the Python callback (stage
// kImage; made by stoker.Lambda, not from arguments). The notes name what
// replaces torchvision's conversion and container transforms. See
// ops/transform_registry.h for how a declaration reads.
#include "ops/erasing.h"
#include "ops/transform_registry.h"

namespace stoker {
namespace {

Status CheckHasFunction(const TransformSchema& s, const Transform& t) {
  if (t.callback != nullptr && *t.callback) return Status::OK();
  return params::ParamError(StatusCode::kInvalidArgument, s, "fn", "a function",
                            "none (in " + t.ToString() + ")");
}

bool IsZero(const ArgValue& v) {
  if (v.is_number()) return v.as_double() == 0.0;
  if (v.type() != ArgValue::Type::kList) return false;
  for (const ArgValue& e : v.as_list()) {
    if (!e.is_number() || e.as_double() != 0.0) return false;
  }
  return true;
}

}  // namespace

void DeclareOutputTransforms(TransformFamily& f) {
  f.Declare("Normalize", TransformStage::kConvert)
      .Doc("(x / 255 - mean) / std per channel, exactly as ToTensor + Normalize compute it in "
           "float32. `inplace` is accepted and has no effect (stoker writes each value once).")
      .Torchvision("same arguments; one only, fused into the conversion to `dtype` (not with "
                   "`dtype=\"uint8\"`)")
      .Param(params::Floats3("mean", &Transform::mean, /*nonzero=*/false))
      .Param(params::Floats3("std", &Transform::std, /*nonzero=*/true))
      .Param(params::Ignored("inplace", false, "stoker writes each value once"))
      .Deterministic();

  f.Declare("RandomErasing", TransformStage::kTensor)
      .Doc("torchvision's RandomErasing on the output tensor (after Normalize and the dtype "
           "conversion), wherever it sits in the list: with probability `p`, a rectangle of "
           "area fraction `scale` and aspect `ratio` is set to 0. Only value=0 (the default) "
           "is implemented; `inplace` has no effect.")
      .Torchvision("same arguments, `value=0` only; applied to the output tensor (after "
                   "Normalize), last")
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Param(params::Range("scale", &Transform::scale_min, &Transform::scale_max, {0.02, 0.33},
                           {0.0, false, 1.0}))
      .Param(params::Range("ratio", &Transform::ratio_min, &Transform::ratio_max, {0.3, 3.3},
                           {0.0, true, params::kUnbounded}))
      .Param(params::OnlyIf("value", 0, &IsZero, "0 (or a sequence of zeros)",
                            "stoker erases with 0 (the default) only", "0"))
      .Param(params::Ignored("inplace", false, "stoker writes each value once"))
      .Tensor(&ApplyRandomErasing);

  f.Declare("Lambda", TransformStage::kImage)
      .Doc("A C++ or Python function per sample, on the uint8 output-size image "
           "(stoker/transforms.h SampleCallback; Python: stoker.Lambda).")
      .Torchvision("stoker.Lambda(fn): fn(image) per sample on the uint8 [H, W, 3] numpy array")
      .Check(&CheckHasFunction)
      .Describe([](const Transform& t) { return "Lambda(" + t.callback_name + ")"; })
      .NotInPython();

  f.NotProvided("ToTensor",
                "remove it: stoker always yields tensors, and dtype='float32' (the default) "
                "scales to [0, 1] as ToTensor does");
  f.NotProvided("PILToTensor", "remove it and pass dtype='uint8' to the Loader");
  f.NotProvided("ToPILImage", "remove it: stoker never makes PIL images");
  f.NotProvided("ConvertImageDtype", "remove it and pass dtype= to the Loader");
  f.NotProvided("Lambda",
                "its function expects a PIL image or a tensor; stoker.Lambda(fn) calls fn on "
                "the sample's uint8 [H, W, 3] numpy array (use stoker.Lambda(t.lambd) if the "
                "function works on numpy arrays)");
  f.NotProvided("RandomApply",
                "not implemented: a stoker.Lambda(fn, rng=True) can draw whether to apply its "
                "step");
  f.NotProvided("RandomChoice",
                "not implemented: a stoker.Lambda(fn, rng=True) can draw which step to apply");
  f.NotProvided("RandomOrder", "not implemented: list the transforms in one order");
  f.NotProvided("MixUp", "use stoker.MixUp(num_classes=...) on the batches in the training loop");
  f.NotProvided("CutMix", "use stoker.CutMix(num_classes=...) on the batches in the training loop");
}

}  // namespace stoker
