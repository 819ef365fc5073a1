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
  // Pairs of outputs, each tap's weight repeated over 4 lanes:
  // wide[((i / 2) * taps + k) * 8 + (i % 2) * 4 + lane] = weight(i, k).
  c->wide.clear();
  if (c->fixed_taps) {
    const int pairs = window_length / 2;
    c->wide.resize(static_cast<size_t>(pairs) * taps * 8);
    for (int q = 0; q < pairs; ++q) {
      for (int k = 0; k < taps; ++k) {
        for (int j = 0; j < 2; ++j) {
          const int32_t w = c->weights[static_cast<size_t>(2 * q + j) * taps + k];
          for (int lane = 0; lane < 4; ++lane) {
            c->wide[(static_cast<size_t>(q) * taps + k) * 8 + j * 4 + lane] = w;
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

// The horizontal pass with a compile-time tap count (coefficients computed
// with fixed_taps): no per-pixel loop, independent products, AVX2.
template <int T>
__attribute__((target("avx2"))) void HorizontalRowFixedAvx2(const uint8_t* src, int origin_x,
                                                           const AxisCoeffs& h, uint8_t* out) {
  const int32_t* start = h.start.data();
  const int32_t* weights = h.weights.data();
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  int i = 0;
  // Two output pixels per 256-bit vector: lanes 0-3 pixel i, 4-7 pixel i+1.
  for (; i + 1 < h.length; i += 2) {
    const uint8_t* p0 = src + (start[i] - origin_x) * 3;
    const uint8_t* p1 = src + (start[i + 1] - origin_x) * 3;
    const int32_t* w0 = weights + static_cast<size_t>(i) * T;
    const int32_t* w1 = w0 + T;
    __m256i prod[T];
    for (int k = 0; k < T; ++k) {
      int32_t a, b;
      std::memcpy(&a, p0 + 3 * k, 4);
      std::memcpy(&b, p1 + 3 * k, 4);
      const __m256i px = _mm256_cvtepu8_epi32(_mm_unpacklo_epi32(_mm_cvtsi32_si128(a),
                                                                 _mm_cvtsi32_si128(b)));
      const __m256i wk = _mm256_setr_m128i(_mm_set1_epi32(w0[k]), _mm_set1_epi32(w1[k]));
      prod[k] = _mm256_mullo_epi32(px, wk);
    }
    __m256i acc = half;
    for (int k = 0; k < T; ++k) acc = _mm256_add_epi32(acc, prod[k]);
    acc = _mm256_srai_epi32(acc, kPrecisionBits);
    const __m128i lo = _mm256_castsi256_si128(acc), hi = _mm256_extracti128_si256(acc, 1);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(lo, hi), lo);  // 8 bytes: p0, p1
    const int32_t o0 = _mm_cvtsi128_si32(bytes), o1 = _mm_extract_epi32(bytes, 1);
    std::memcpy(out + 3 * i, &o0, 4);
    std::memcpy(out + 3 * i + 3, &o1, 4);
  }
  for (; i < h.length; ++i) {
    const uint8_t* p = src + (start[i] - origin_x) * 3;
    const int32_t* w = weights + static_cast<size_t>(i) * T;
    __m128i acc = _mm256_castsi256_si128(half);
    for (int k = 0; k < T; ++k) {
      int32_t word;
      std::memcpy(&word, p + 3 * k, 4);
      const __m128i px = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(word));
      acc = _mm_add_epi32(acc, _mm_mullo_epi32(px, _mm_set1_epi32(w[k])));
    }
    acc = _mm_srai_epi32(acc, kPrecisionBits);
    const int32_t o = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(acc, acc), acc));
    std::memcpy(out + 3 * i, &o, 4);
  }
}

// Taps 3 and 5 (all bilinear resizes that shrink by 2x or less): the taps of
// one pixel span at most 15 bytes, so one 16-byte load per pixel plus a
// byte shuffle per tap spreads them into int32 lanes; two pixels share a
// 256-bit vector, and the weights come pre-broadcast (AxisCoeffs::wide).
template <int T>
__attribute__((target("avx2"))) void HorizontalRowShuffleAvx2(const uint8_t* src, int origin_x,
                                                             const AxisCoeffs& h, uint8_t* out) {
  static_assert(T <= 5, "the taps of a pixel must fit in 16 bytes");
  const int32_t* start = h.start.data();
  const int32_t* wide = h.wide.data();
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  __m256i spread[T];
  for (int k = 0; k < T; ++k) {
    const int8_t b = static_cast<int8_t>(3 * k);
    spread[k] = _mm256_setr_epi8(b, -1, -1, -1, b + 1, -1, -1, -1, b + 2, -1, -1, -1, -1, -1, -1,
                                 -1, b, -1, -1, -1, b + 1, -1, -1, -1, b + 2, -1, -1, -1, -1, -1,
                                 -1, -1);
  }
  const int pairs = h.length / 2;
  for (int q = 0; q < pairs; ++q) {
    const int i = 2 * q;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (start[i] - origin_x) * 3));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (start[i + 1] - origin_x) * 3));
    const __m256i px = _mm256_setr_m128i(a, b);
    const int32_t* w = wide + static_cast<size_t>(q) * T * 8;
    __m256i acc = half;
    for (int k = 0; k < T; ++k) {
      const __m256i wk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8 * k));
      acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_shuffle_epi8(px, spread[k]), wk));
    }
    acc = _mm256_srai_epi32(acc, kPrecisionBits);
    const __m128i lo = _mm256_castsi256_si128(acc), hi = _mm256_extracti128_si256(acc, 1);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(lo, hi), lo);
    const int32_t o0 = _mm_cvtsi128_si32(bytes), o1 = _mm_extract_epi32(bytes, 1);
    std::memcpy(out + 3 * i, &o0, 4);
    std::memcpy(out + 3 * i + 3, &o1, 4);
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

// The vertical pass over one output row: for each group of 16 bytes, the
// taps are summed in registers (no accumulator round trips to memory).
__attribute__((target("avx2"))) void VerticalRowAvx2(const uint8_t* temp, size_t temp_stride,
                                                    int first, const int32_t* w, int n,
                                                    int bytes, uint8_t* out) {
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const uint8_t* base = temp + static_cast<size_t>(first) * temp_stride;
  int x = 0;
  for (; x + 16 <= bytes; x += 16) {
    __m256i a0 = half, a1 = half;
    for (int k = 0; k < n; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + k * temp_stride + x));
      const __m256i wk = _mm256_set1_epi32(w[k]);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(v), wk));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), wk));
    }
    a0 = _mm256_srai_epi32(a0, kPrecisionBits);
    a1 = _mm256_srai_epi32(a1, kPrecisionBits);
    // packs/packus work within 128-bit lanes: fix the order with a permute.
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(a0, a1), 0xD8);
    const __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), b);
  }
  for (; x < bytes; ++x) {
    int32_t acc = 1 << (kPrecisionBits - 1);
    for (int k = 0; k < n; ++k) acc += base[k * temp_stride + x] * w[k];
    out[x] = Clip8(acc);
  }
}

using RowFn = void (*)(const uint8_t*, int, const AxisCoeffs&, uint8_t*);

RowFn FixedTapKernel(int taps) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (!avx2) return nullptr;
  switch (taps) {
    case 3: return &HorizontalRowShuffleAvx2<3>;
    case 5: return &HorizontalRowShuffleAvx2<5>;
    case 7: return &HorizontalRowFixedAvx2<7>;
    case 9: return &HorizontalRowFixedAvx2<9>;
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

void Resampler::Begin(const AxisCoeffs& h, const AxisCoeffs& v) {
  h_ = &h;
  v_ = &v;
  const int bytes = h.length * 3;
  rows_ = std::max(v.max_input - v.min_input, 0);
  pushed_ = 0;
  // 4 bytes of slack: the kernels write one byte past each output pixel.
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
    if (avx2 && v.count[i] > 0) {
      VerticalRowAvx2(temp_.data(), bytes, v.start[i] - v.min_input,
                      &v.weights[static_cast<size_t>(i) * v.taps], v.count[i], bytes, row_.data());
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
