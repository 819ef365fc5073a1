// Copyright 2026 The stoker Authors.
#include "ops/convert.h"

#include <cmath>
#include <cstring>

#include <cpuid.h>
#include <immintrin.h>

namespace stoker {
namespace {

// F16C is checked with cpuid: not every compiler's __builtin_cpu_supports
// knows its name.
bool CpuHasAvx2AndF16c() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return __builtin_cpu_supports("avx2") && (c & bit_F16C) != 0;
}

// a / b from the reciprocal r = 1 / b (float32): the product, its error by
// a fused multiply-add (exact), and the product corrected by it. For most
// divisors this is a / b correctly rounded; PixelWriter checks every value
// it will meet before using it (DividesByReciprocal).
inline float CorrectedQuotient(float a, float b, float r) {
  const float q = a * r;
  const float e = std::fma(-q, b, a);
  return std::fma(e, r, q);
}

}  // namespace

uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    // value = abs as float; half subnormal unit is 2^-24.
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // exact: multiply by 2^24
    // round to nearest even integer
    uint32_t m = static_cast<uint32_t>(scaled);
    const float frac = scaled - static_cast<float>(m);
    if (frac > 0.5f || (frac == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // normal: rebias exponent, round mantissa from 23 to 10 bits (RNE)
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  float f;
  if (exp == 0) {
    f = static_cast<float>(man) / 16777216.0f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  uint32_t bits;
  if (exp == 31) bits = sign | 0x7F800000u | (man << 13);
  else bits = sign | ((exp + 112u) << 23) | (man << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

PixelWriter::PixelWriter(DType dtype, Layout layout, int height, int width, bool normalize,
                         const std::array<float, 3>& mean, const std::array<float, 3>& std)
    : dtype_(dtype), layout_(layout), height_(height), width_(width) {
  avx2_ = CpuHasAvx2AndF16c();
  normalize_ = normalize;
  mean_ = mean;
  std_ = std;
  sample_bytes_ = static_cast<size_t>(height) * width * 3 * DTypeSize(dtype);
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      // Same float32 operations, in the same order, as torchvision:
      // img.float().div(255) then tensor.sub_(mean).div_(std).
      float x = static_cast<float>(v) / 255.0f;
      if (normalize) x = (x - mean[c]) / std[c];
      f32_[c][v] = x;
      u16_[c][v] = dtype == DType::kBFloat16 ? FloatToBFloat16(x) : FloatToHalf(x);
    }
  }
  // The AVX2 rows divide with two divisions per value (vdivps: the rows'
  // bottleneck). A multiply by the reciprocal with an FMA correction gives
  // the same float32 for every byte value of every channel, or it is not
  // used: all 768 are compared here, bit for bit.
  fma_ = avx2_ && __builtin_cpu_supports("fma");
  rcp255_ = 1.0f / 255.0f;
  for (int c = 0; c < 3; ++c) rcp_std_[c] = 1.0f / std[c];
  for (int c = 0; c < 3 && fma_; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = CorrectedQuotient(static_cast<float>(v), 255.0f, rcp255_);
      if (normalize) x = CorrectedQuotient(x - mean[c], std[c], rcp_std_[c]);
      if (std::memcmp(&x, &f32_[c][v], sizeof(x)) != 0) {
        fma_ = false;
        break;
      }
    }
  }
}

float PixelWriter::Value(int c, int v) const {
  switch (dtype_) {
    case DType::kUint8: return static_cast<float>(v);
    case DType::kFloat32: return f32_[c][v];
    case DType::kFloat16: return HalfToFloat(u16_[c][v]);
    case DType::kBFloat16: return BFloat16ToFloat(u16_[c][v]);
  }
  return 0.f;
}

namespace {

template <typename T, typename Lut>
__attribute__((always_inline)) inline void WritePlanar(const uint8_t* rgb, int width,
                                                       size_t plane, T* out, const Lut& lut) {
  T* r = out;
  T* g = out + plane;
  T* b = out + 2 * plane;
  for (int x = 0; x < width; ++x) {
    r[x] = lut[0][rgb[3 * x]];
    g[x] = lut[1][rgb[3 * x + 1]];
    b[x] = lut[2][rgb[3 * x + 2]];
  }
}

template <typename T, typename Lut>
__attribute__((always_inline)) inline void WriteInterleaved(const uint8_t* rgb, int width, T* out,
                                                            const Lut& lut) {
  for (int x = 0; x < width; ++x) {
    out[3 * x] = lut[0][rgb[3 * x]];
    out[3 * x + 1] = lut[1][rgb[3 * x + 1]];
    out[3 * x + 2] = lut[2][rgb[3 * x + 2]];
  }
}

}  // namespace

// Splits 8 RGB pixels (24 bytes) into three vectors of 8 bytes (low halves).
__attribute__((target("avx2"), always_inline)) inline void Deinterleave8(const uint8_t* rgb,
                                                                       __m128i* r, __m128i* g,
                                                                       __m128i* b) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb));       // bytes 0-15
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 8));   // bytes 8-23
  const __m128i r_lo = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_lo = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_lo = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1);
  *r = _mm_or_si128(_mm_shuffle_epi8(lo, r_lo), _mm_shuffle_epi8(hi, r_hi));
  *g = _mm_or_si128(_mm_shuffle_epi8(lo, g_lo), _mm_shuffle_epi8(hi, g_hi));
  *b = _mm_or_si128(_mm_shuffle_epi8(lo, b_lo), _mm_shuffle_epi8(hi, b_hi));
}

// uint8 NCHW rows, 8 pixels at a time. Returns the number of pixels
// written; the caller finishes the tail. (Table lookups for the float types
// stay scalar: AVX2 gathers measured slower than scalar loads on our
// machines.)
__attribute__((target("avx2"))) int WritePlanarU8Avx2(const uint8_t* rgb, int width, size_t plane,
                                                     uint8_t* out) {
  int x = 0;
  for (; x + 8 <= width; x += 8) {
    __m128i ch[3];
    Deinterleave8(rgb + 3 * x, &ch[0], &ch[1], &ch[2]);
    for (int c = 0; c < 3; ++c) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c * plane + x), ch[c]);
    }
  }
  return x;
}

// Float NCHW rows, 8 pixels at a time, with the same IEEE operations as the
// tables (v / 255, then (x - mean) / std, each rounded to float32), so the
// results are bit-identical; float16 via F16C's round-to-nearest-even,
// bfloat16 by the integer rounding of FloatToBFloat16. With `rcp` (1/255,
// then 1/std per channel) each division is CorrectedQuotient's multiply and
// two FMAs, which the writer has checked give the tables' values.
template <bool kReciprocal>
__attribute__((target("avx2,f16c,fma"), always_inline)) inline __m256 Quotient(__m256 a, __m256 b,
                                                                               __m256 r) {
  if (!kReciprocal) return _mm256_div_ps(a, b);
  const __m256 q = _mm256_mul_ps(a, r);
  const __m256 e = _mm256_fnmadd_ps(q, b, a);  // a - q * b, exact
  return _mm256_fmadd_ps(e, r, q);
}

template <bool kReciprocal>
__attribute__((target("avx2,f16c,fma"))) int WritePlanarFloatAvx2(
    const uint8_t* rgb, int width, size_t plane, DType dtype, bool normalize, const float* mean,
    const float* std, const float* rcp_std, float rcp255, uint8_t* out) {
  const __m256 k255 = _mm256_set1_ps(255.0f), r255 = _mm256_set1_ps(rcp255);
  int x = 0;
  for (; x + 8 <= width; x += 8) {
    __m128i ch[3];
    Deinterleave8(rgb + 3 * x, &ch[0], &ch[1], &ch[2]);
    for (int c = 0; c < 3; ++c) {
      __m256 v = Quotient<kReciprocal>(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(ch[c])), k255, r255);
      if (normalize) {
        v = Quotient<kReciprocal>(_mm256_sub_ps(v, _mm256_set1_ps(mean[c])),
                                  _mm256_set1_ps(std[c]), _mm256_set1_ps(rcp_std[c]));
      }
      if (dtype == DType::kFloat32) {
        _mm256_storeu_ps(reinterpret_cast<float*>(out) + c * plane + x, v);
        continue;
      }
      __m128i h;
      if (dtype == DType::kFloat16) {
        h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      } else {
        const __m256i bits = _mm256_castps_si256(v);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(
            _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb)), 16);
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08);
        h = _mm256_castsi256_si128(packed);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(reinterpret_cast<uint16_t*>(out) + c * plane + x), h);
    }
  }
  return x;
}

void PixelWriter::WriteRow(const uint8_t* rgb, int y, int height, int width,
                           uint8_t* slot) const {
  const size_t plane = static_cast<size_t>(height) * width;
  if (layout_ == Layout::kNCHW && dtype_ != DType::kUint8 && avx2_) {
    const size_t esize = DTypeSize(dtype_);
    uint8_t* row = slot + static_cast<size_t>(y) * width * esize;
    const int done =
        fma_ ? WritePlanarFloatAvx2<true>(rgb, width, plane, dtype_, normalize_, mean_.data(),
                                          std_.data(), rcp_std_.data(), rcp255_, row)
             : WritePlanarFloatAvx2<false>(rgb, width, plane, dtype_, normalize_, mean_.data(),
                                           std_.data(), rcp_std_.data(), rcp255_, row);
    for (int x = done; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const uint8_t v = rgb[3 * x + c];
        const size_t at = c * plane + x;
        if (dtype_ == DType::kFloat32) reinterpret_cast<float*>(row)[at] = f32_[c][v];
        else reinterpret_cast<uint16_t*>(row)[at] = u16_[c][v];
      }
    }
    return;
  }
  if (layout_ == Layout::kNCHW && dtype_ == DType::kUint8 && avx2_) {
    uint8_t* row = slot + static_cast<size_t>(y) * width;
    const int done = WritePlanarU8Avx2(rgb, width, plane, row);
    for (int x = done; x < width; ++x) {
      for (int c = 0; c < 3; ++c) row[c * plane + x] = rgb[3 * x + c];
    }
    return;
  }
  if (layout_ == Layout::kNHWC) {
    const size_t offset = static_cast<size_t>(y) * width * 3;
    switch (dtype_) {
      case DType::kUint8:
        std::memcpy(slot + offset, rgb, static_cast<size_t>(width) * 3);
        return;
      case DType::kFloat32:
        WriteInterleaved(rgb, width, reinterpret_cast<float*>(slot) + offset, f32_);
        return;
      case DType::kFloat16:
      case DType::kBFloat16:
        WriteInterleaved(rgb, width, reinterpret_cast<uint16_t*>(slot) + offset, u16_);
        return;
    }
  }
  const size_t offset = static_cast<size_t>(y) * width;
  switch (dtype_) {
    case DType::kUint8: {
      uint8_t* r = slot + offset;
      uint8_t* g = r + plane;
      uint8_t* b = g + plane;
      for (int x = 0; x < width; ++x) {
        r[x] = rgb[3 * x];
        g[x] = rgb[3 * x + 1];
        b[x] = rgb[3 * x + 2];
      }
      return;
    }
    case DType::kFloat32:
      WritePlanar(rgb, width, plane, reinterpret_cast<float*>(slot) + offset, f32_);
      return;
    case DType::kFloat16:
    case DType::kBFloat16:
      WritePlanar(rgb, width, plane, reinterpret_cast<uint16_t*>(slot) + offset, u16_);
      return;
  }
}

}  // namespace stoker
