// Copyright 2026 The stoker Authors.
#include "ops/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <immintrin.h>

namespace stoker {
namespace {

inline double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

inline uint8_t Clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// A weight w as w = (w >> kSplitBits) * 2^kSplitBits + (w & (2^kSplitBits -
// 1)), both halves int16 (see "Why the split is exact" in resample.h). For
// the weights of taps k and k + 1: the high halves as one int32 holding the
// int16 pair (low 16 bits: tap k), and the low halves likewise, which is the
// operand vpmaddwd wants.
constexpr int kSplitBits = 11;
inline void SplitPair(int32_t w0, int32_t w1, int32_t* high, int32_t* low) {
  auto pack = [](int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint16_t>(a) |
                                (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16));
  };
  constexpr int32_t kLowMask = (1 << kSplitBits) - 1;
  *high = pack(w0 >> kSplitBits, w1 >> kSplitBits);
  *low = pack(w0 & kLowMask, w1 & kLowMask);
}

}  // namespace

void ComputeAxisCoeffs(double in0, double in1, int lo, int hi, int out_size, int window_start,
                       int window_length, bool reverse, AxisCoeffs* c, bool fixed_taps) {
  const int in_size = hi - lo;
  const double scale = (in1 - in0) / out_size;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = 1.0 * filterscale;
  const int taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  const double rel0 = in0 - lo;  // Pillow works relative to the crop
  c->taps = taps;
  c->length = window_length;
  c->start.assign(window_length, 0);
  c->count.assign(window_length, 0);
  c->weights.assign(static_cast<size_t>(window_length) * taps, 0);
  c->min_input = hi;
  c->max_input = lo;
  c->fixed_taps = fixed_taps && in_size >= taps;
  thread_local std::vector<double> k_scratch;  // grows only: no allocation per call
  if (k_scratch.size() < static_cast<size_t>(taps)) k_scratch.resize(taps);
  double* k = k_scratch.data();
  for (int i = 0; i < window_length; ++i) {
    const int xx = window_start + i;
    const int slot = reverse ? window_length - 1 - i : i;
    if (xx < 0 || xx >= out_size) {  // padding: all weights zero
      if (c->fixed_taps) {
        c->start[slot] = lo;
        c->count[slot] = taps;
        c->min_input = std::min(c->min_input, lo);
        c->max_input = std::max(c->max_input, lo + taps);
      }
      continue;
    }
    const double center = rel0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    if (xmax > taps) xmax = taps;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = BilinearFilter((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    int32_t* out = &c->weights[static_cast<size_t>(slot) * taps];
    for (int x = 0; x < xmax; ++x) {
      double v = k[x];
      if (ww != 0.0) v /= ww;
      // Pillow's normalize_coeffs_8bpc.
      out[x] = v < 0 ? static_cast<int32_t>(-0.5 + v * (1 << kPrecisionBits))
                     : static_cast<int32_t>(0.5 + v * (1 << kPrecisionBits));
    }
    int first = lo + xmin;
    if (c->fixed_taps) {
      // Exactly `taps` inputs, zero-weighted beyond the real ones, kept
      // inside [lo, hi) by shifting the window left at the right edge.
      const int shift = std::max(0, first + taps - hi);
      for (int x = xmax - 1; x >= 0; --x) out[x + shift] = out[x];
      for (int x = 0; x < shift; ++x) out[x] = 0;
      first -= shift;
      xmax = taps;
    }
    c->start[slot] = first;
    c->count[slot] = xmax;
    if (xmax > 0) {
      c->min_input = std::min(c->min_input, first);
      c->max_input = std::max(c->max_input, first + xmax);
    }
  }
  if (c->min_input >= c->max_input) c->min_input = c->max_input = lo;
  {
    const int i0 = std::clamp(-window_start, 0, window_length);
    const int i1 = std::clamp(out_size - window_start, i0, window_length);
    c->inside_begin = reverse ? window_length - i1 : i0;
    c->inside_end = reverse ? window_length - i0 : i1;
  }
  // The split weights of output pairs for the horizontal kernels (see
  // HorizontalRowSplitAvx2): for output pair q and tap pair j, 16 words (int16
  // pairs from SplitPair): high halves of output 2q four times, of output
  // 2q + 1 four times, then the low halves alike.
  c->split.clear();
  if (c->fixed_taps) {
    const int pairs = window_length / 2;
    const int tap_pairs = (taps + 1) / 2;
    c->split.resize(static_cast<size_t>(pairs) * tap_pairs * 16);
    int32_t* s = c->split.data();
    for (int q = 0; q < pairs; ++q) {
      for (int j = 0; j < tap_pairs; ++j, s += 16) {
        for (int o = 0; o < 2; ++o) {
          const int32_t* w = &c->weights[static_cast<size_t>(2 * q + o) * taps];
          int32_t high, low;
          SplitPair(w[2 * j], 2 * j + 1 < taps ? w[2 * j + 1] : 0, &high, &low);
          for (int lane = 0; lane < 4; ++lane) {
            s[o * 4 + lane] = high;
            s[8 + o * 4 + lane] = low;
          }
        }
      }
    }
  }
}

namespace {

typedef int32_t V4 __attribute__((vector_size(16)));
typedef uint8_t U8x4 __attribute__((vector_size(4)));

// One row of the horizontal pass. Each output pixel's three channels are
// accumulated together as lanes of one 4 x int32 vector (the fourth lane
// carries a neighbouring byte and is ignored), with Pillow's 22-bit weights
// and rounding. Reads one byte past each tap's pixel unless kSafeLoads, and
// writes one byte past each output pixel (the caller leaves room).
template <bool kSafeLoads>
__attribute__((always_inline)) inline void HorizontalRowImpl(const uint8_t* src, int origin_x,
                                                             const AxisCoeffs& h, uint8_t* out) {
  const int taps = h.taps;
  const int32_t* start = h.start.data();
  const int32_t* count = h.count.data();
  const int32_t* weights = h.weights.data();
  const V4 zero = {0, 0, 0, 0}, max = {255, 255, 255, 255};
  for (int i = 0; i < h.length; ++i) {
    const uint8_t* p = src + (start[i] - origin_x) * 3;
    const int32_t* w = weights + static_cast<size_t>(i) * taps;
    const int n = count[i];
    constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
    V4 acc = {kHalf, kHalf, kHalf, kHalf};
    for (int k = 0; k < n; ++k) {
      V4 px;
      if (kSafeLoads) {
        px = V4{p[3 * k], p[3 * k + 1], p[3 * k + 2], 0};
      } else {
        U8x4 b;
        std::memcpy(&b, p + 3 * k, 4);
        px = __builtin_convertvector(b, V4);
      }
      acc += px * w[k];
    }
    V4 v = acc >> kPrecisionBits;
    v = v < zero ? zero : v;
    v = v > max ? max : v;
    if (n == 0) v = zero;
    const U8x4 o = __builtin_convertvector(v, U8x4);
    std::memcpy(out + 3 * i, &o, 4);
  }
}

// (hi << kSplitBits) + lo >> kPrecisionBits: the split sums joined (lo
// carries the rounding half) and scaled down.
__attribute__((target("avx2"), always_inline)) inline __m256i Join(__m256i hi, __m256i lo) {
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi, kSplitBits), lo),
                           kPrecisionBits);
}

// HorizontalRowSplitAvx2 loads 16 bytes from each output's first tap pixel
// and, with more than 5 taps, 16 from byte kSplitSecondLoad.
template <int T>
constexpr bool kSplitTwoLoads = T > 5;
constexpr int kSplitSecondLoad = 12;

// HorizontalRowSplitAvx2's sums for output pixels 2q (lanes 0-3) and
// 2q + 1 (lanes 4-7), scaled down.
template <int T>
__attribute__((target("avx2"), always_inline)) inline __m256i SplitPairSums(
    const uint8_t* src, int origin_x, const int32_t* start, const int32_t* split,
    const __m256i* gather, __m256i half, int q) {
  constexpr int kPairs = (T + 1) / 2;
  constexpr bool kTwoLoads = kSplitTwoLoads<T>;
  const uint8_t* p0 = src + (start[2 * q] - origin_x) * 3;
  const uint8_t* p1 = src + (start[2 * q + 1] - origin_x) * 3;
  const __m256i first = _mm256_setr_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p0)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)));
  __m256i second = first;
  if (kTwoLoads) {
    second = _mm256_setr_m128i(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0 + kSplitSecondLoad)),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p1 + kSplitSecondLoad)));
  }
  const __m256i* w =
      reinterpret_cast<const __m256i*>(split + static_cast<size_t>(q) * kPairs * 16);
  __m256i acc_hi = _mm256_setzero_si256(), acc_lo = half;
  for (int j = 0; j < kPairs; ++j) {
    const __m256i px = _mm256_shuffle_epi8(kTwoLoads && j >= 2 ? second : first, gather[j]);
    acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(px, _mm256_loadu_si256(w + 2 * j)));
    acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(px, _mm256_loadu_si256(w + 2 * j + 1)));
  }
  return Join(acc_hi, acc_lo);
}

// The horizontal pass with a compile-time tap count T (coefficients computed
// with fixed_taps), AVX2: two output pixels per 256-bit vector (lanes 0-3
// pixel i, 4-7 pixel i + 1, int32 per channel; the fourth is ignored). The
// taps go in pairs: one byte shuffle puts (tap 2j, tap 2j + 1) of each
// channel into adjacent int16 lanes, and vpmaddwd multiplies them by the
// pair's high and low weight halves (AxisCoeffs::split) and adds each pair,
// which sums exactly what weight * pixel per tap does (resample.h). One
// 16-byte load per pixel covers taps 0-4; with T > 5 a second one from byte
// 12 covers taps 4-8. Reads up to 15 bytes past the last tap's pixel and
// writes up to 4 bytes past the last output pixel.
template <int T>
__attribute__((target("avx2"))) void HorizontalRowSplitAvx2(const uint8_t* src, int origin_x,
                                                           const AxisCoeffs& h, uint8_t* out) {
  static_assert(T % 2 == 1 && T <= 9, "two 16-byte loads must cover the taps");
  constexpr int kPairs = (T + 1) / 2;
  constexpr bool kTwoLoads = kSplitTwoLoads<T>;
  const int32_t* start = h.start.data();
  const int32_t* split = h.split.data();
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  // gather[j]: int16 lanes (tap 2j, tap 2j + 1) of channels 0-2; -1 gives 0.
  __m256i gather[kPairs];
  for (int j = 0; j < kPairs; ++j) {
    const int base = kTwoLoads && j >= 2 ? kSplitSecondLoad : 0;
    alignas(32) int8_t m[32];
    for (int lane = 0; lane < 2; ++lane) {
      for (int c = 0; c < 4; ++c) {
        int8_t* e = m + lane * 16 + c * 4;
        const bool second = 2 * j + 1 < T;
        e[0] = c < 3 ? static_cast<int8_t>(3 * (2 * j) + c - base) : -1;
        e[1] = -1;
        e[2] = c < 3 && second ? static_cast<int8_t>(3 * (2 * j + 1) + c - base) : -1;
        e[3] = -1;
      }
    }
    gather[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
  }
  // Four pixels per store: saturated to bytes, the dwords put in pixel order
  // and the fourth byte of each squeezed out (writes 4 bytes past the last).
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0);
  const __m128i squeeze = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const int pairs = h.length / 2;
  int q = 0;
  for (; q + 1 < pairs; q += 2) {
    // int16 lanes 0-3: pixel 2q, 4-7: 2q + 2, 8-11: 2q + 1, 12-15: 2q + 3.
    const __m256i words =
        _mm256_packs_epi32(SplitPairSums<T>(src, origin_x, start, split, gather, half, q),
                           SplitPairSums<T>(src, origin_x, start, split, gather, half, q + 1));
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words), order);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 6 * q),
                     _mm_shuffle_epi8(_mm256_castsi256_si128(bytes), squeeze));
  }
  if (q < pairs) {
    const __m256i acc = SplitPairSums<T>(src, origin_x, start, split, gather, half, q);
    const __m128i lo = _mm256_castsi256_si128(acc), hi = _mm256_extracti128_si256(acc, 1);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(lo, hi), lo);  // 8 bytes: 2q, 2q + 1
    const int32_t o0 = _mm_cvtsi128_si32(bytes), o1 = _mm_extract_epi32(bytes, 1);
    std::memcpy(out + 6 * q, &o0, 4);
    std::memcpy(out + 6 * q + 3, &o1, 4);
  }
  if (h.length % 2) {  // the odd last pixel
    const int i = h.length - 1;
    const uint8_t* p = src + (start[i] - origin_x) * 3;
    const int32_t* w = h.weights.data() + static_cast<size_t>(i) * T;
    int32_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1),
                      1 << (kPrecisionBits - 1)};
    for (int k = 0; k < T; ++k) {
      for (int c = 0; c < 3; ++c) acc[c] += p[3 * k + c] * w[k];
    }
    for (int c = 0; c < 3; ++c) out[3 * i + c] = Clip8(acc[c]);
  }
}

// 32 bytes [x, x + 32) of one output row of the vertical pass (see
// VerticalRowAvx2): rows in pairs, their bytes interleaved and widened into
// int16 lanes (row 2j, row 2j + 1), multiplied by the pair's split weights
// (SplitPair words; a missing row 2j + 1 reads as zero).
__attribute__((target("avx2"), always_inline)) inline void VerticalStep32(
    const uint8_t* base, size_t stride, const int32_t* whi, const int32_t* wlo, int n, int x,
    uint8_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  // Accumulators for bytes x + {0-3, 16-19}, {4-7, 20-23}, {8-11, 24-27},
  // {12-15, 28-31} (the 128-bit lanes of the unpacks).
  __m256i hi0 = zero, hi1 = zero, hi2 = zero, hi3 = zero;
  __m256i lo0 = half, lo1 = half, lo2 = half, lo3 = half;
  for (int j = 0; 2 * j < n; ++j) {
    const uint8_t* r = base + static_cast<size_t>(2 * j) * stride + x;
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r));
    const __m256i b =
        2 * j + 1 < n ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + stride)) : zero;
    const __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
    const __m256i p0 = _mm256_unpacklo_epi8(ab_lo, zero), p1 = _mm256_unpackhi_epi8(ab_lo, zero);
    const __m256i p2 = _mm256_unpacklo_epi8(ab_hi, zero), p3 = _mm256_unpackhi_epi8(ab_hi, zero);
    const __m256i wh = _mm256_set1_epi32(whi[j]), wl = _mm256_set1_epi32(wlo[j]);
    hi0 = _mm256_add_epi32(hi0, _mm256_madd_epi16(p0, wh));
    lo0 = _mm256_add_epi32(lo0, _mm256_madd_epi16(p0, wl));
    hi1 = _mm256_add_epi32(hi1, _mm256_madd_epi16(p1, wh));
    lo1 = _mm256_add_epi32(lo1, _mm256_madd_epi16(p1, wl));
    hi2 = _mm256_add_epi32(hi2, _mm256_madd_epi16(p2, wh));
    lo2 = _mm256_add_epi32(lo2, _mm256_madd_epi16(p2, wl));
    hi3 = _mm256_add_epi32(hi3, _mm256_madd_epi16(p3, wh));
    lo3 = _mm256_add_epi32(lo3, _mm256_madd_epi16(p3, wl));
  }
  // packs/packus work within 128-bit lanes, which the unpacks' order
  // matches: the 32 bytes come out in order.
  const __m256i s01 = _mm256_packs_epi32(Join(hi0, lo0), Join(hi1, lo1));
  const __m256i s23 = _mm256_packs_epi32(Join(hi2, lo2), Join(hi3, lo3));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x), _mm256_packus_epi16(s01, s23));
}

// The vertical pass over one output row, AVX2, with vpmaddwd on split
// weights (resample.h: the same sums as weight * byte per row): 32 bytes a
// step, the taps summed in registers; a row not a multiple of 32 ends with
// one step overlapping the previous one (the same bytes again), a row
// shorter than 32 is done byte by byte. Returns false (and writes nothing)
// for more than 2 * kMaxPairs taps.
constexpr int kMaxPairs = 128;
__attribute__((target("avx2"))) bool VerticalRowAvx2(const uint8_t* temp, size_t temp_stride,
                                                    int first, const int32_t* w, int n,
                                                    int bytes, uint8_t* out) {
  const uint8_t* base = temp + static_cast<size_t>(first) * temp_stride;
  int32_t whi[kMaxPairs], wlo[kMaxPairs];
  const int pairs = (n + 1) / 2;
  if (pairs > kMaxPairs) return false;  // a downscale by more than 127
  for (int j = 0; j < pairs; ++j) {
    SplitPair(w[2 * j], 2 * j + 1 < n ? w[2 * j + 1] : 0, &whi[j], &wlo[j]);
  }
  if (bytes >= 32) {
    for (int x = 0; x + 32 <= bytes; x += 32) {
      VerticalStep32(base, temp_stride, whi, wlo, n, x, out);
    }
    if (bytes % 32) VerticalStep32(base, temp_stride, whi, wlo, n, bytes - 32, out);
    return true;
  }
  for (int x = 0; x < bytes; ++x) {
    int32_t acc = 1 << (kPrecisionBits - 1);
    for (int k = 0; k < n; ++k) acc += base[k * temp_stride + x] * w[k];
    out[x] = Clip8(acc);
  }
  return true;
}

using RowFn = void (*)(const uint8_t*, int, const AxisCoeffs&, uint8_t*);

RowFn FixedTapKernel(int taps) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (!avx2) return nullptr;
  switch (taps) {
    case 3: return &HorizontalRowSplitAvx2<3>;
    case 5: return &HorizontalRowSplitAvx2<5>;
    case 7: return &HorizontalRowSplitAvx2<7>;
    case 9: return &HorizontalRowSplitAvx2<9>;
    default: return nullptr;
  }
}

void HorizontalRow(const uint8_t* src, int origin_x, const AxisCoeffs& h, uint8_t* out) {
  HorizontalRowImpl<false>(src, origin_x, h, out);
}

void HorizontalRowSafe(const uint8_t* src, int origin_x, const AxisCoeffs& h, uint8_t* out) {
  HorizontalRowImpl<true>(src, origin_x, h, out);
}

void VerticalRow(const uint8_t* temp, size_t temp_stride, int first, const int32_t* w, int n,
                 int bytes, int32_t* acc, uint8_t* out) {
  for (int x = 0; x < bytes; ++x) acc[x] = 1 << (kPrecisionBits - 1);
  for (int k = 0; k < n; ++k) {
    const uint8_t* row = temp + (first + k) * temp_stride;
    const int32_t wk = w[k];
    for (int x = 0; x < bytes; ++x) acc[x] += row[x] * wk;
  }
  if (n == 0) {
    for (int x = 0; x < bytes; ++x) out[x] = 0;
    return;
  }
  for (int x = 0; x < bytes; ++x) out[x] = Clip8(acc[x]);
}

}  // namespace

void HorizontalRowReferenceForTesting(const uint8_t* src, int origin_x, const AxisCoeffs& h,
                                      uint8_t* out) {
  HorizontalRowSafe(src, origin_x, h, out);
}

bool HorizontalRowVectorForTesting(const uint8_t* src, int origin_x, const AxisCoeffs& h,
                                   uint8_t* out) {
  const RowFn fixed = h.fixed_taps ? FixedTapKernel(h.taps) : nullptr;
  if (!fixed) return false;
  fixed(src, origin_x, h, out);
  return true;
}

void VerticalRowReferenceForTesting(const uint8_t* temp, size_t stride, int first,
                                    const int32_t* w, int n, int bytes, uint8_t* out) {
  std::vector<int32_t> acc(bytes);
  VerticalRow(temp, stride, first, w, n, bytes, acc.data(), out);
}

bool VerticalRowVectorForTesting(const uint8_t* temp, size_t stride, int first, const int32_t* w,
                                 int n, int bytes, uint8_t* out) {
  if (!__builtin_cpu_supports("avx2") || n <= 0) return false;
  return VerticalRowAvx2(temp, stride, first, w, n, bytes, out);
}

void Resampler::Begin(const AxisCoeffs& h, const AxisCoeffs& v) {
  h_ = &h;
  v_ = &v;
  const int bytes = h.length * 3;
  rows_ = std::max(v.max_input - v.min_input, 0);
  pushed_ = 0;
  // 4 bytes of slack: the kernels write up to 4 bytes past the last output
  // pixel (the next row's bytes, written later, for the other rows).
  const size_t need = static_cast<size_t>(rows_) * bytes + 4;
  if (temp_.size() < need) temp_.resize(need);
  if (acc_.size() < static_cast<size_t>(bytes)) acc_.resize(bytes);
  if (row_.size() < static_cast<size_t>(bytes)) row_.resize(bytes);
}

void Resampler::PushRow(const uint8_t* row, int origin_x, bool padded) {
  if (pushed_ >= rows_) return;
  const AxisCoeffs& h = *h_;
  // The fast loads read up to 16 bytes from a pixel: fine when more pixels
  // (a next row) or the owner's padding follow.
  const RowFn fixed = h.fixed_taps ? FixedTapKernel(h.taps) : nullptr;
  RowFn row_fn = &HorizontalRowSafe;
  if (padded) row_fn = fixed ? fixed : &HorizontalRow;
  row_fn(row, origin_x, h, temp_.data() + static_cast<size_t>(pushed_) * h.length * 3);
  ++pushed_;
}

void Resampler::PushRows(const RgbView& src, int origin_x, int origin_y, bool tail_padding) {
  while (pushed_ < rows_) {
    const int sy = v_->min_input + pushed_ - origin_y;
    PushRow(src.row(sy), origin_x, sy + 1 < src.height || tail_padding);
  }
}

bool Resampler::Finish(RowSink sink, void* ctx) {
  if (pushed_ != rows_) return false;
  const AxisCoeffs& v = *v_;
  const int out_w = h_->length;
  const int bytes = out_w * 3;
  static const bool avx2 = __builtin_cpu_supports("avx2");
  // Paints the padding outputs of row i with the fill colour.
  auto fill = [&](int i) {
    if (!has_fill_) return;
    const bool whole = i < v.inside_begin || i >= v.inside_end;
    uint8_t* row = row_.data();
    for (int x = 0; x < out_w; ++x) {
      if (whole || x < h_->inside_begin || x >= h_->inside_end) {
        row[3 * x] = fill_[0];
        row[3 * x + 1] = fill_[1];
        row[3 * x + 2] = fill_[2];
      }
    }
  };
  for (int i = 0; i < v.length; ++i) {
    if (avx2 && v.count[i] > 0 &&
        VerticalRowAvx2(temp_.data(), bytes, v.start[i] - v.min_input,
                        &v.weights[static_cast<size_t>(i) * v.taps], v.count[i], bytes,
                        row_.data())) {
      fill(i);
      sink(ctx, i, row_.data(), out_w);
      continue;
    }
    VerticalRow(temp_.data(), bytes, v.start[i] - v.min_input,
                &v.weights[static_cast<size_t>(i) * v.taps], v.count[i], bytes, acc_.data(),
                row_.data());
    fill(i);
    sink(ctx, i, row_.data(), out_w);
  }
  has_fill_ = false;
  h_ = v_ = nullptr;
  rows_ = pushed_ = 0;
  return true;
}

void Resampler::Run(const RgbView& src, int origin_x, int origin_y, const AxisCoeffs& h,
                    const AxisCoeffs& v, RowSink sink, void* ctx, bool tail_padding) {
  Begin(h, v);
  PushRows(src, origin_x, origin_y, tail_padding);
  Finish(sink, ctx);
}

void Resampler::RunToImage(const RgbView& src, int origin_x, int origin_y,
                           const AxisCoeffs& horizontal, const AxisCoeffs& vertical,
                           RgbImage* out) {
  out->Resize(horizontal.length, vertical.length);
  Run(src, origin_x, origin_y, horizontal, vertical,
      [](void* ctx, int y, const uint8_t* rgb, int width) {
        auto* img = static_cast<RgbImage*>(ctx);
        std::copy(rgb, rgb + width * 3, img->row(y));
      },
      out);
}

}  // namespace stoker
