// Copyright 2026 The stoker Authors.
//
// Declarations of the photometric transforms (stage kImage): they run on the
// uint8 image of the output size, in list order, with Pillow's arithmetic
// (ops/color.cc). See ops/transform_registry.h for how a declaration reads.
#include "ops/color.h"
#include "ops/transform_registry.h"

namespace stoker {
namespace {

using params::kUnbounded;

constexpr char kPillowExact[] =
    "same names and arguments, Pillow's arithmetic (bit-identical to torchvision on PIL for "
    "fixed parameters); on the output-size image, after the crop, wherever it sits in the list";

}  // namespace

void DeclareColorTransforms(TransformFamily& f) {
  f.Declare("ColorJitter", TransformStage::kImage)
      .Doc("torchvision's ColorJitter on the PIL image: the four adjustments in a random "
           "order, each factor uniform in its range (Pillow's ImageEnhance blends, and its HSV "
           "hue shift).")
      .Torchvision(kPillowExact)
      .Param(params::Jitter("brightness", &Transform::brightness, 1.0, 0.0, kUnbounded, true))
      .Param(params::Jitter("contrast", &Transform::contrast, 1.0, 0.0, kUnbounded, true))
      .Param(params::Jitter("saturation", &Transform::saturation, 1.0, 0.0, kUnbounded, true))
      .Param(params::Jitter("hue", &Transform::hue, 0.0, -0.5, 0.5, false))
      .Image(&ApplyColorJitter);

  f.Declare("Grayscale", TransformStage::kImage)
      .Doc("Pillow's convert(\"L\"), as three equal channels (stoker's batches are RGB).")
      .Torchvision(std::string(kPillowExact) + "; `num_output_channels=3` only")
      .Param(params::Only("num_output_channels", 1, {3}, "3",
                          "stoker's batches have 3 channels; use "
                          "Grayscale(num_output_channels=3) (three equal channels) and take one "
                          "channel of the batch if you need one",
                          "3"))
      .Image(&ApplyGrayscale);

  f.Declare("RandomGrayscale", TransformStage::kImage)
      .Doc("With probability `p`, Pillow's convert(\"L\") copied to the three channels.")
      .Torchvision(kPillowExact)
      .Param(params::Probability("p", &Transform::p, 0.1))
      .Image(&ApplyRandomGrayscale);

  f.Declare("RandomAutocontrast", TransformStage::kImage)
      .Doc("With probability `p`, ImageOps.autocontrast: each channel stretched to [0, 255].")
      .Torchvision(kPillowExact)
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomAutocontrast);

  f.Declare("RandomEqualize", TransformStage::kImage)
      .Doc("With probability `p`, ImageOps.equalize (per-channel histogram equalisation).")
      .Torchvision(kPillowExact)
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomEqualize);

  f.Declare("RandomPosterize", TransformStage::kImage)
      .Doc("With probability `p`, keep the top `bits` bits of every channel.")
      .Torchvision(kPillowExact)
      .Param(params::Int("bits", &Transform::bits, 0, 8))
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomPosterize);

  f.Declare("RandomSolarize", TransformStage::kImage)
      .Doc("With probability `p`, invert every value >= `threshold`.")
      .Torchvision(kPillowExact)
      .Param(params::Number("threshold", &Transform::threshold, -kUnbounded, kUnbounded))
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomSolarize);

  f.Declare("RandomAdjustSharpness", TransformStage::kImage)
      .Doc("With probability `p`, ImageEnhance.Sharpness(sharpness_factor).")
      .Torchvision(kPillowExact)
      .Param(params::Number("sharpness_factor", &Transform::sharpness_factor, 0.0, kUnbounded))
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomAdjustSharpness);

  f.Declare("GaussianBlur", TransformStage::kImage)
      .Doc("torchvision's GaussianBlur: sigma uniform in `sigma` (or fixed), an odd kernel; on "
           "the output-size image, within 1 level of torchvision (float32 rounding order).")
      .Torchvision("same arguments; on the output-size image; within 1 level of torchvision "
                   "(float32 summation order)")
      .Param(params::KernelSize("kernel_size"))
      .Param(params::Sigma("sigma", {0.1, 2.0}))
      .Image(&ApplyGaussianBlur);

  f.Declare("RandomInvert", TransformStage::kImage)
      .Doc("With probability `p`, ImageOps.invert: every value v becomes 255 - v.")
      .Torchvision(kPillowExact)
      .Param(params::Probability("p", &Transform::p, 0.5))
      .Image(&ApplyRandomInvert);

  f.NotProvided("LinearTransformation",
                "not implemented: apply it to the batch (a matrix product on the GPU)");
}

}  // namespace stoker
