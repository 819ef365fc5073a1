// Copyright 2026 The stoker Authors.
#include "ops/resample.h"

#include <algorithm>
#include <cmath>

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
                       int window_length, bool reverse, AxisCoeffs* c) {
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
  double k[64];
  for (int i = 0; i < window_length; ++i) {
    const int xx = window_start + i;
    const int slot = reverse ? window_length - 1 - i : i;
    if (xx < 0 || xx >= out_size) continue;  // padding: count 0
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
    c->start[slot] = lo + xmin;
    c->count[slot] = xmax;
    if (xmax > 0) {
      c->min_input = std::min(c->min_input, lo + xmin);
      c->max_input = std::max(c->max_input, lo + xmin + xmax);
    }
  }
  if (c->min_input >= c->max_input) c->min_input = c->max_input = lo;
}

namespace {

__attribute__((target_clones("avx2", "default")))
void HorizontalRow(const uint8_t* src, int origin_x, const AxisCoeffs& h, uint8_t* out) {
  const int taps = h.taps;
  for (int i = 0; i < h.length; ++i) {
    const uint8_t* p = src + (h.start[i] - origin_x) * 3;
    const int32_t* w = &h.weights[static_cast<size_t>(i) * taps];
    int32_t r = 1 << (kPrecisionBits - 1), g = r, b = r;
    const int n = h.count[i];
    for (int k = 0; k < n; ++k) {
      r += p[3 * k] * w[k];
      g += p[3 * k + 1] * w[k];
      b += p[3 * k + 2] * w[k];
    }
    if (n == 0) r = g = b = 0;
    out[3 * i] = Clip8(r);
    out[3 * i + 1] = Clip8(g);
    out[3 * i + 2] = Clip8(b);
  }
}

__attribute__((target_clones("avx2", "default")))
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

void Resampler::Run(const RgbView& src, int origin_x, int origin_y, const AxisCoeffs& h,
                    const AxisCoeffs& v, RowSink sink, void* ctx) {
  const int out_w = h.length;
  const int bytes = out_w * 3;
  const int rows = v.max_input - v.min_input;
  const size_t need = static_cast<size_t>(std::max(rows, 0)) * bytes;
  if (temp_.size() < need) temp_.resize(need);
  if (acc_.size() < static_cast<size_t>(bytes)) acc_.resize(bytes);
  if (row_.size() < static_cast<size_t>(bytes)) row_.resize(bytes);
  // The horizontal pass reads src columns relative to its origin.
  for (int y = 0; y < rows; ++y) {
    HorizontalRow(src.row(v.min_input + y - origin_y), origin_x, h,
                  temp_.data() + static_cast<size_t>(y) * bytes);
  }
  for (int i = 0; i < v.length; ++i) {
    VerticalRow(temp_.data(), bytes, v.start[i] - v.min_input,
                &v.weights[static_cast<size_t>(i) * v.taps], v.count[i], bytes, acc_.data(),
                row_.data());
    sink(ctx, i, row_.data(), out_w);
  }
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
