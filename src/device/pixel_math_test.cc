// Copyright 2026 The stoker Authors.
//
// The GPU stage's per-pixel maths, compiled for the host: bit for bit against
// the CPU path's PixelWriter where the same operation exists, and against
// straightforward references for the GPU-only augmentations. The kernels run
// exactly this code (src/cuda/kernels.cu).
#include "device/pixel_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "device/device_plan.h"
#include "ops/convert.h"

namespace stoker {
namespace {

using device::BatchGeometry;
using device::SampleParams;

std::vector<uint8_t> RandomPixels(int n, int height, int width, uint64_t seed) {
  std::vector<uint8_t> v(static_cast<size_t>(n) * height * width * 3);
  Rng rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng.Next() >> 56);
  return v;
}

float FloatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

BatchGeometry Geometry(int h, int w, DType dtype, Layout layout, bool normalize) {
  DeviceOptions o;
  o.dtype = dtype;
  o.layout = layout;
  o.normalize = normalize;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  return MakeBatchGeometry(o, h, w).value();
}

// The batch as PixelWriter writes it, from (possibly edited) HWC rows.
std::vector<uint8_t> ViaPixelWriter(const std::vector<uint8_t>& hwc, int n, int h, int w,
                                    const BatchGeometry& g, DType dtype, Layout layout) {
  PixelWriter writer(dtype, layout, h, w, g.normalize != 0, {g.mean[0], g.mean[1], g.mean[2]},
                     {g.std[0], g.std[1], g.std[2]});
  std::vector<uint8_t> out(writer.sample_bytes() * n);
  for (int i = 0; i < n; ++i) {
    for (int y = 0; y < h; ++y) {
      writer.WriteRow(hwc.data() + (static_cast<size_t>(i) * h + y) * w * 3, y,
                      out.data() + i * writer.sample_bytes());
    }
  }
  return out;
}

std::vector<uint8_t> OnHost(const std::vector<uint8_t>& in, int n, const BatchGeometry& g,
                            const std::vector<SampleParams>& params, DType dtype) {
  std::vector<uint8_t> out(static_cast<size_t>(n) * g.out_height * g.out_width * 3 *
                           DTypeSize(dtype));
  TransformBatchOnHost(in.data(), n, g, params.data(), out.data());
  return out;
}

struct ConvertCase {
  DType dtype;
  Layout layout;
  bool normalize;
};

class ConvertTest : public ::testing::TestWithParam<ConvertCase> {};

// No augmentation: the device conversion equals the CPU path byte for byte.
TEST_P(ConvertTest, EqualsPixelWriter) {
  const ConvertCase c = GetParam();
  const int n = 3, h = 9, w = 37;  // odd width: PixelWriter's AVX2 tails too
  const auto in = RandomPixels(n, h, w, 7);
  const BatchGeometry g = Geometry(h, w, c.dtype, c.layout, c.normalize);
  const std::vector<SampleParams> params(n);
  EXPECT_EQ(OnHost(in, n, g, params, c.dtype), ViaPixelWriter(in, n, h, w, g, c.dtype, c.layout));
}

// Flip: equals PixelWriter on mirrored rows.
TEST_P(ConvertTest, FlipEqualsPixelWriterOnMirroredRows) {
  const ConvertCase c = GetParam();
  const int n = 2, h = 5, w = 19;
  const auto in = RandomPixels(n, h, w, 8);
  auto mirrored = in;
  for (int i = 0; i < n * h; ++i) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < 3; ++k) {
        mirrored[(static_cast<size_t>(i) * w + x) * 3 + k] =
            in[(static_cast<size_t>(i) * w + (w - 1 - x)) * 3 + k];
      }
    }
  }
  const BatchGeometry g = Geometry(h, w, c.dtype, c.layout, c.normalize);
  std::vector<SampleParams> params(n);
  for (auto& p : params) p.flip = 1;
  EXPECT_EQ(OnHost(in, n, g, params, c.dtype),
            ViaPixelWriter(mirrored, n, h, w, g, c.dtype, c.layout));
  params[0].flip = 0;  // and the flag matters
  EXPECT_NE(OnHost(in, n, g, params, c.dtype),
            ViaPixelWriter(mirrored, n, h, w, g, c.dtype, c.layout));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, ConvertTest,
    ::testing::Values(ConvertCase{DType::kFloat32, Layout::kNCHW, true},
                      ConvertCase{DType::kFloat32, Layout::kNCHW, false},
                      ConvertCase{DType::kFloat16, Layout::kNCHW, true},
                      ConvertCase{DType::kBFloat16, Layout::kNCHW, true},
                      ConvertCase{DType::kFloat32, Layout::kNHWC, true},
                      ConvertCase{DType::kFloat16, Layout::kNHWC, false},
                      ConvertCase{DType::kBFloat16, Layout::kNHWC, true}));

TEST(HalfBitsTest, EqualsCpuConversionOnRandomFloats) {
  Rng rng(3);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng.Next());
    const float f = FloatOf(bits);
    if (std::isnan(f)) {
      EXPECT_EQ(device::HalfBits(f) & 0x7C00u, 0x7C00u);
      EXPECT_NE(device::HalfBits(f) & 0x3FFu, 0u);
      continue;
    }
    ASSERT_EQ(device::HalfBits(f), FloatToHalf(f)) << std::hex << bits;
    ASSERT_EQ(device::BFloat16Bits(f), FloatToBFloat16(f)) << std::hex << bits;
  }
}

TEST(HalfBitsTest, SubnormalsAndTies) {
  // Every half subnormal and the ties between them (exact in float).
  for (uint32_t m = 0; m < 1024; ++m) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    EXPECT_EQ(device::HalfBits(v), m);
    EXPECT_EQ(device::HalfBits(-v), 0x8000u | m);
    const float tie = std::ldexp(static_cast<float>(2 * m + 1), -25);  // m + 0.5 units
    EXPECT_EQ(device::HalfBits(tie), FloatToHalf(tie)) << m;
    EXPECT_EQ(device::HalfBits(tie), (m & 1u) ? m + 1 : m) << m;  // to even
  }
  EXPECT_EQ(device::HalfBits(65504.f), 0x7BFFu);
  EXPECT_EQ(device::HalfBits(65520.f), 0x7C00u);  // rounds to infinity
  EXPECT_EQ(device::HalfBits(1.0f), 0x3C00u);
}

// Crop/pad reads input (y + oy, x + ox) and zero outside: the same as
// PixelWriter on a zero-padded copy of the input.
TEST(AugmentTest, CropPadEqualsPixelWriterOnPaddedImage) {
  const int h = 8, w = 11, pad = 3, oh = 10, ow = 9;
  const auto in = RandomPixels(1, h, w, 9);
  DeviceOptions o;
  o.normalize = true;
  o.mean = {0.5f, 0.25f, 0.125f};
  o.std = {0.3f, 0.2f, 0.1f};
  o.augment.crop_height = oh;
  o.augment.crop_width = ow;
  o.augment.pad = pad;
  const BatchGeometry g = MakeBatchGeometry(o, h, w).value();
  for (int oy = -pad; oy <= h + pad - oh; ++oy) {
    for (int ox = -pad; ox <= w + pad - ow; ox += 2) {
      std::vector<uint8_t> window(static_cast<size_t>(oh) * ow * 3, 0);
      for (int y = 0; y < oh; ++y) {
        for (int x = 0; x < ow; ++x) {
          const int sy = y + oy, sx = x + ox;
          if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
          std::memcpy(&window[(static_cast<size_t>(y) * ow + x) * 3],
                      &in[(static_cast<size_t>(sy) * w + sx) * 3], 3);
        }
      }
      SampleParams p;
      p.offset_y = oy;
      p.offset_x = ox;
      ASSERT_EQ(OnHost(in, 1, g, {p}, DType::kFloat32),
                ViaPixelWriter(window, 1, oh, ow, g, DType::kFloat32, Layout::kNCHW))
          << oy << "," << ox;
    }
  }
}

// Colour jitter against a plain float reference (same operations, same
// order: contrast towards the image's mean grey, brightness, saturation).
TEST(AugmentTest, JitterEqualsReference) {
  const int h = 6, w = 7;
  const auto in = RandomPixels(1, h, w, 10);
  const BatchGeometry g = Geometry(h, w, DType::kFloat32, Layout::kNHWC, false);
  SampleParams p;
  p.brightness = 1.3f;
  p.contrast = 0.6f;
  p.saturation = 1.7f;
  uint64_t grey_sum = 0;
  for (int i = 0; i < h * w; ++i) {
    grey_sum += (in[3 * i] * 299u + in[3 * i + 1] * 587u + in[3 * i + 2] * 114u + 500u) / 1000u;
  }
  p.grey_mean = static_cast<float>(static_cast<double>(grey_sum) / (h * w)) / 255.f;
  EXPECT_EQ(p.grey_mean, GreyMeanOnHost(in.data(), h, w));
  const auto got = OnHost(in, 1, g, {p}, DType::kFloat32);
  auto clamp = [](float v) { return std::min(1.f, std::max(0.f, v)); };
  for (int i = 0; i < h * w; ++i) {
    float v[3];
    for (int c = 0; c < 3; ++c) v[c] = static_cast<float>(in[3 * i + c]) / 255.f;
    for (float& x : v) x = clamp(0.6f * x + (1.f - 0.6f) * p.grey_mean);
    for (float& x : v) x = clamp(1.3f * x);
    const float grey = 0.299f * v[0] + 0.587f * v[1] + 0.114f * v[2];
    for (float& x : v) x = clamp(1.7f * x + (1.f - 1.7f) * grey);
    for (int c = 0; c < 3; ++c) {
      float out;
      std::memcpy(&out, &got[(static_cast<size_t>(i) * 3 + c) * 4], 4);
      ASSERT_EQ(out, v[c]) << "pixel " << i << " channel " << c;
    }
  }
  // Jitter changes pixels (the test would pass vacuously otherwise).
  EXPECT_NE(got, OnHost(in, 1, g, {SampleParams{}}, DType::kFloat32));
}

// The affine path's bilinear sampling at an identity or whole-pixel
// translation reads exactly the integer path's pixels.
TEST(AugmentTest, AffineIdentityAndIntegerShiftAreExact) {
  const int n = 1, h = 12, w = 10;
  const auto in = RandomPixels(n, h, w, 11);
  const BatchGeometry g = Geometry(h, w, DType::kFloat32, Layout::kNCHW, true);
  SampleParams affine;
  affine.affine = 1;
  EXPECT_EQ(OnHost(in, n, g, {affine}, DType::kFloat32),
            OnHost(in, n, g, {SampleParams{}}, DType::kFloat32));
  affine.m[2] = 3.f;   // input x = output x + 3
  affine.m[5] = -2.f;  // input y = output y - 2
  SampleParams shift;
  shift.offset_x = 3;
  shift.offset_y = -2;
  EXPECT_EQ(OnHost(in, n, g, {affine}, DType::kFloat32),
            OnHost(in, n, g, {shift}, DType::kFloat32));
}

// A half-pixel shift averages neighbours (zero beyond the edge).
TEST(AugmentTest, AffineSamplesBilinearly) {
  const int h = 4, w = 6;
  const auto in = RandomPixels(1, h, w, 12);
  const BatchGeometry g = Geometry(h, w, DType::kFloat32, Layout::kNHWC, false);
  SampleParams p;
  p.affine = 1;
  p.m[2] = 0.5f;
  const auto got = OnHost(in, 1, g, {p}, DType::kFloat32);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float a = in[(y * w + x) * 3 + c];
        const float b = x + 1 < w ? in[(y * w + x + 1) * 3 + c] : 0.f;
        float v;
        std::memcpy(&v, &got[((y * w + x) * 3 + c) * 4], 4);
        ASSERT_EQ(v, (0.5f * a + 0.5f * b) / 255.f) << y << "," << x;
      }
    }
  }
  // DrawSampleParams' matrix is a rotation about the centre.
  DeviceOptions o;
  o.augment.degrees = 180.f;
  const BatchGeometry g2 = MakeBatchGeometry(o, h, w).value();
  const SampleParams q = DrawSampleParams(o.augment, g2, 1, 0, 5);
  ASSERT_EQ(q.affine, 1);
  // A rotation about the centre: the centre maps to itself, lengths keep.
  const float cx = w / 2.f, cy = h / 2.f;
  EXPECT_NEAR(q.m[0] * cx + q.m[1] * cy + q.m[2], cx, 1e-4);
  EXPECT_NEAR(q.m[3] * cx + q.m[4] * cy + q.m[5], cy, 1e-4);
  EXPECT_NEAR(q.m[0] * q.m[0] + q.m[3] * q.m[3], 1.0, 1e-5);
  EXPECT_NEAR(q.m[0] * q.m[4] - q.m[1] * q.m[3], 1.0, 1e-5);
}

}  // namespace
}  // namespace stoker
