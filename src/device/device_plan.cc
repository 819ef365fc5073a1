// Copyright 2026 The stoker Authors.
#include "device/device_plan.h"

#include <cmath>
#include <string>

#include "base/rng.h"

namespace stoker {

StatusOr<int> ParseDevice(const std::string& device) {
  if (device == "cpu") return -1;
  if (device == "cuda") return 0;
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() < 9) {
    int index = 0;
    for (size_t i = 5; i < device.size(); ++i) {
      if (device[i] < '0' || device[i] > '9') index = -1;
      if (index >= 0) index = index * 10 + (device[i] - '0');
    }
    if (index >= 0) return index;
  }
  return InvalidArgumentError("device must be 'cpu', 'cuda' or 'cuda:N', got '" + device + "'");
}

StatusOr<device::BatchGeometry> MakeBatchGeometry(const DeviceOptions& o, int height, int width) {
  if (!o.image) {
    if (o.augment.any() || o.normalize) {
      return InvalidArgumentError(
          "device augmentations and Normalize need an image: the record has no primary image");
    }
    height = width = 0;
  } else if (height <= 0 || width <= 0) {
    return InvalidArgumentError("the device stage needs a fixed sample size");
  }
  device::BatchGeometry g;
  g.in_height = height;
  g.in_width = width;
  switch (o.dtype) {
    case DType::kFloat32: g.out_type = device::kOutFloat32; break;
    case DType::kFloat16: g.out_type = device::kOutFloat16; break;
    case DType::kBFloat16: g.out_type = device::kOutBFloat16; break;
    case DType::kUint8:
      return InvalidArgumentError(
          "on a CUDA device the output dtype must be float32, float16 or bfloat16 (uint8 is what "
          "crosses the bus); use device='cpu' for uint8 batches");
  }
  g.nchw = o.layout == Layout::kNCHW ? 1 : 0;
  g.normalize = o.normalize ? 1 : 0;
  for (int c = 0; c < 3; ++c) {
    if (o.normalize && !(o.std[c] != 0.f)) return InvalidArgumentError("Normalize std must be non-zero");
    g.mean[c] = o.mean[c];
    g.std[c] = o.std[c];
  }
  const DeviceAugment& a = o.augment;
  if (a.flip_p < 0 || a.flip_p > 1) return InvalidArgumentError("device flip_p must be in [0, 1]");
  if (a.pad < 0 || a.crop_height < 0 || a.crop_width < 0) {
    return InvalidArgumentError("device crop sizes and pad must be >= 0");
  }
  g.out_height = a.crop_height > 0 ? a.crop_height : height;
  g.out_width = a.crop_width > 0 ? a.crop_width : width;
  if (g.out_height > height + 2 * a.pad || g.out_width > width + 2 * a.pad) {
    return InvalidArgumentError("device crop " + std::to_string(g.out_height) + "x" +
                                std::to_string(g.out_width) + " is larger than the padded input " +
                                std::to_string(height + 2 * a.pad) + "x" +
                                std::to_string(width + 2 * a.pad));
  }
  if (a.brightness < 0 || a.contrast < 0 || a.saturation < 0) {
    return InvalidArgumentError("device colour jitter amounts must be >= 0");
  }
  if (a.degrees < 0 || a.translate < 0 || a.translate > 1 || !(a.scale_min > 0) ||
      a.scale_min > a.scale_max) {
    return InvalidArgumentError(
        "device affine: degrees >= 0, translate in [0, 1], 0 < scale_min <= scale_max");
  }
  return g;
}

namespace {

float JitterFactor(Rng* rng, float amount) {
  if (amount <= 0) return 1.f;
  const double lo = std::max(0.0, 1.0 - amount), hi = 1.0 + amount;
  return static_cast<float>(rng->Uniform(lo, hi));
}

}  // namespace

device::SampleParams DrawSampleParams(const DeviceAugment& a, const device::BatchGeometry& g,
                                      uint64_t seed, int64_t epoch, int64_t id) {
  Rng rng(HashSeed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(id),
                   kDeviceAugmentStream));
  device::SampleParams p;
  // Same draw as the CPU RandomHorizontalFlip.
  if (a.flip_p > 0) p.flip = rng.Uniform() < a.flip_p ? 1 : 0;
  if (g.out_height != g.in_height || g.out_width != g.in_width || a.pad > 0) {
    // torchvision's RandomCrop.get_params on the padded image.
    const int ph = g.in_height + 2 * a.pad, pw = g.in_width + 2 * a.pad;
    p.offset_y = static_cast<int>(rng.Below(static_cast<uint64_t>(ph - g.out_height + 1))) - a.pad;
    p.offset_x = static_cast<int>(rng.Below(static_cast<uint64_t>(pw - g.out_width + 1))) - a.pad;
  }
  p.brightness = JitterFactor(&rng, a.brightness);
  p.contrast = JitterFactor(&rng, a.contrast);
  p.saturation = JitterFactor(&rng, a.saturation);
  if (a.has_affine()) {
    const double angle = a.degrees > 0 ? rng.Uniform(-a.degrees, a.degrees) : 0.0;
    double tx = 0, ty = 0;
    if (a.translate > 0) {
      const double mx = a.translate * g.out_width, my = a.translate * g.out_height;
      tx = std::round(rng.Uniform(-mx, mx));
      ty = std::round(rng.Uniform(-my, my));
    }
    const double s = a.scale_min < a.scale_max ? rng.Uniform(a.scale_min, a.scale_max)
                                               : static_cast<double>(a.scale_min);
    // Forward: input centre -> rotate by `angle` counter-clockwise (y points
    // down), scale, translate -> output centre. Inverse, in output pixel
    // units, plus the crop offset.
    const double rad = angle * M_PI / 180.0;
    const double c = std::cos(rad) / s, sn = std::sin(rad) / s;
    const double ocx = g.out_width / 2.0 + tx, ocy = g.out_height / 2.0 + ty;
    const double icx = g.out_width / 2.0 + p.offset_x, icy = g.out_height / 2.0 + p.offset_y;
    // input = R(angle)^-1 / s * (out - oc) + ic, with R^-1 for y-down CCW.
    p.affine = 1;
    p.m[0] = static_cast<float>(c);
    p.m[1] = static_cast<float>(-sn);
    p.m[2] = static_cast<float>(icx - c * ocx + sn * ocy);
    p.m[3] = static_cast<float>(sn);
    p.m[4] = static_cast<float>(c);
    p.m[5] = static_cast<float>(icy - sn * ocx - c * ocy);
  }
  return p;
}

float GreyMeanOnHost(const uint8_t* image, int height, int width) {
  uint64_t sum = 0;
  const int64_t n = static_cast<int64_t>(height) * width;
  for (int64_t i = 0; i < n; ++i) sum += device::GreyLevel(image[3 * i], image[3 * i + 1], image[3 * i + 2]);
  return device::GreyMeanFromSum(sum, height, width);
}

void TransformBatchOnHost(const uint8_t* in, int n, const device::BatchGeometry& g,
                          const device::SampleParams* params, void* out) {
  const size_t in_sample = static_cast<size_t>(g.in_height) * g.in_width * 3;
  for (int i = 0; i < n; ++i) {
    for (int y = 0; y < g.out_height; ++y) {
      for (int x = 0; x < g.out_width; ++x) {
        device::TransformPixel(in + i * in_sample, g, params[i], i, y, x, out);
      }
    }
  }
}

}  // namespace stoker
