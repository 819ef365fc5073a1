// Copyright 2026 The stoker Authors.
//
// The GPU stage's per-pixel arithmetic, written once and compiled twice: as
// __host__ __device__ code by nvcc for the kernels (src/cuda/kernels.cu), and
// as plain C++ for the host, where the tests check it bit for bit against a
// straightforward reference and against the CPU path's PixelWriter. This
// header needs no CUDA to compile.
//
// Bit-exactness between host and device rests on three rules, kept here:
//   1. every float operation is a single IEEE round-to-nearest operation
//      (Add/Sub/Mul/Div below use __fadd_rn & co. on the device, which nvcc
//      never contracts into an FMA; on the host plain operators, and the
//      project builds in ISO C++ mode, where GCC does not contract either);
//   2. no transcendental functions per pixel: angles, sines and cosines are
//      turned into six affine coefficients on the host, per sample;
//   3. float16/bfloat16 rounding is integer code (HalfBits, BFloat16Bits).
//
// Thread-safety: pure functions.
#ifndef STOKER_DEVICE_PIXEL_MATH_H_
#define STOKER_DEVICE_PIXEL_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define STOKER_HD __host__ __device__ __forceinline__
#else
#define STOKER_HD inline
#endif

namespace stoker::device {

// Output element types of the device stage (mirrors stoker::DType, which is
// not usable in device code without pulling in std::string).
enum OutType : int { kOutFloat32 = 0, kOutFloat16 = 1, kOutBFloat16 = 2 };

STOKER_HD uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
#endif
}

STOKER_HD float Add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
STOKER_HD float Sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
STOKER_HD float Mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
STOKER_HD float Div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
STOKER_HD float Clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }

// IEEE binary16 bits of `f`, round to nearest even (NaN stays NaN, overflow
// gives infinity). Integer code only, so host and device agree.
STOKER_HD uint16_t HalfBits(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // a half subnormal (unit 2^-24) or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to zero
    const uint32_t exp = abs >> 23;                              // 102..112
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exp;                           // 14..24
    uint32_t m = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t h = (abs >> 13) - (112u << 10);
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// bfloat16 bits of `f`, round to nearest even; NaN stays a quiet NaN.
STOKER_HD uint16_t BFloat16Bits(float f) {
  uint32_t bits = FloatBits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// Integer grey level of an RGB pixel (ITU-R 601 weights, PIL's "L"
// conversion): the contrast jitter blends towards the image's mean of it.
STOKER_HD uint32_t GreyLevel(uint32_t r, uint32_t g, uint32_t b) {
  return (r * 299u + g * 587u + b * 114u + 500u) / 1000u;
}

// The contrast jitter's mean grey, in [0, 1], from the sum of GreyLevel over
// an h x w image (an exact integer on host and device).
STOKER_HD float GreyMeanFromSum(uint64_t sum, int height, int width) {
  const double mean = static_cast<double>(sum) / (static_cast<double>(height) * width);
  return Div(static_cast<float>(mean), 255.f);
}

// What is the same for every sample of a batch.
struct BatchGeometry {
  int in_height = 0, in_width = 0;    // the host stage's uint8 NHWC samples
  int out_height = 0, out_width = 0;  // after crop/pad or the affine warp
  int out_type = kOutFloat32;
  int nchw = 1;                       // 1: [N, 3, H, W]; 0: [N, H, W, 3]
  int normalize = 0;
  float mean[3] = {0.f, 0.f, 0.f};
  float std[3] = {1.f, 1.f, 1.f};
};

// One sample's augmentation, drawn on the host from the sample's own random
// stream (src/device/augment.h). Identity values leave pixels untouched.
struct SampleParams {
  int flip = 0;                 // mirror the output horizontally
  int offset_y = 0;             // crop/pad: output (y, x) reads input
  int offset_x = 0;             //   (y + offset_y, x + offset_x); outside reads 0
  float brightness = 1.f;       // factors; 1 = unchanged
  float contrast = 1.f;
  float saturation = 1.f;
  float grey_mean = 0.f;        // the input's mean GreyLevel / 255 (contrast only)
  int affine = 0;               // 0: integer sampling; 1: bilinear through `m`
  // Output pixel centre (u, v) = (x + 0.5, y + 0.5), after the flip, maps to
  // input coordinates (m0 u + m1 v + m2, m3 u + m4 v + m5) in pixel units
  // (pixel centres at +0.5); crop offsets are folded in.
  float m[6] = {1.f, 0.f, 0.f, 0.f, 1.f, 0.f};
};

STOKER_HD float InputValue(const uint8_t* in, const BatchGeometry& g, int y, int x, int c) {
  if (y < 0 || y >= g.in_height || x < 0 || x >= g.in_width) return 0.f;
  return static_cast<float>(in[(static_cast<int64_t>(y) * g.in_width + x) * 3 + c]);
}

// RGB of output pixel (y, x) in [0, 1] units, before jitter: crop/pad and
// flip read one input pixel (v / 255, the CPU path's ToTensor); the affine
// warp samples bilinearly (zero outside the image).
STOKER_HD void SamplePixel(const uint8_t* in, const BatchGeometry& g, const SampleParams& p, int y,
                           int x, float rgb[3]) {
  const int xf = p.flip ? g.out_width - 1 - x : x;
  if (!p.affine) {
    for (int c = 0; c < 3; ++c) {
      rgb[c] = Div(InputValue(in, g, y + p.offset_y, xf + p.offset_x, c), 255.f);
    }
    return;
  }
  const float u = Add(static_cast<float>(xf), 0.5f);
  const float v = Add(static_cast<float>(y), 0.5f);
  const float sx = Sub(Add(Add(Mul(p.m[0], u), Mul(p.m[1], v)), p.m[2]), 0.5f);
  const float sy = Sub(Add(Add(Mul(p.m[3], u), Mul(p.m[4], v)), p.m[5]), 0.5f);
  const float fx0 = floorf(sx), fy0 = floorf(sy);
  const float fx = Sub(sx, fx0), fy = Sub(sy, fy0);
  // Far outside: avoid int overflow; every tap reads zero anyway.
  if (!(fx0 > -2.f && fx0 < static_cast<float>(g.in_width) + 1.f && fy0 > -2.f &&
        fy0 < static_cast<float>(g.in_height) + 1.f)) {
    rgb[0] = rgb[1] = rgb[2] = 0.f;
    return;
  }
  const int x0 = static_cast<int>(fx0), y0 = static_cast<int>(fy0);
  for (int c = 0; c < 3; ++c) {
    const float top = Add(Mul(Sub(1.f, fx), InputValue(in, g, y0, x0, c)),
                          Mul(fx, InputValue(in, g, y0, x0 + 1, c)));
    const float bottom = Add(Mul(Sub(1.f, fx), InputValue(in, g, y0 + 1, x0, c)),
                             Mul(fx, InputValue(in, g, y0 + 1, x0 + 1, c)));
    rgb[c] = Div(Add(Mul(Sub(1.f, fy), top), Mul(fy, bottom)), 255.f);
  }
}

// Colour jitter in a fixed order: contrast (towards the input's mean grey),
// brightness, saturation (towards the pixel's grey); each clamps to [0, 1].
STOKER_HD void Jitter(const SampleParams& p, float rgb[3]) {
  if (p.contrast != 1.f) {
    const float base = Mul(Sub(1.f, p.contrast), p.grey_mean);
    for (int c = 0; c < 3; ++c) rgb[c] = Clamp01(Add(Mul(p.contrast, rgb[c]), base));
  }
  if (p.brightness != 1.f) {
    for (int c = 0; c < 3; ++c) rgb[c] = Clamp01(Mul(p.brightness, rgb[c]));
  }
  if (p.saturation != 1.f) {
    const float grey =
        Add(Add(Mul(0.299f, rgb[0]), Mul(0.587f, rgb[1])), Mul(0.114f, rgb[2]));
    const float base = Mul(Sub(1.f, p.saturation), grey);
    for (int c = 0; c < 3; ++c) rgb[c] = Clamp01(Add(Mul(p.saturation, rgb[c]), base));
  }
}

// Writes output pixel (y, x) of sample `n`: sample, jitter, normalise
// ((v - mean) / std, as the CPU path and torchvision), convert, lay out.
// `in` points at sample n's input, `out` at the batch's output.
STOKER_HD void TransformPixel(const uint8_t* in, const BatchGeometry& g, const SampleParams& p,
                              int n, int y, int x, void* out) {
  float rgb[3];
  SamplePixel(in, g, p, y, x, rgb);
  Jitter(p, rgb);
  const int64_t plane = static_cast<int64_t>(g.out_height) * g.out_width;
  for (int c = 0; c < 3; ++c) {
    float v = rgb[c];
    if (g.normalize) v = Div(Sub(v, g.mean[c]), g.std[c]);
    const int64_t at = g.nchw ? (static_cast<int64_t>(n) * 3 + c) * plane +
                                    static_cast<int64_t>(y) * g.out_width + x
                              : ((static_cast<int64_t>(n) * g.out_height + y) * g.out_width + x) *
                                        3 + c;
    if (g.out_type == kOutFloat32) static_cast<float*>(out)[at] = v;
    else if (g.out_type == kOutFloat16) static_cast<uint16_t*>(out)[at] = HalfBits(v);
    else static_cast<uint16_t*>(out)[at] = BFloat16Bits(v);
  }
}

}  // namespace stoker::device

#endif  // STOKER_DEVICE_PIXEL_MATH_H_
