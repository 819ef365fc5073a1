// Copyright 2026 The stoker Authors.
//
// Built with -ffp-contract=off (src/CMakeLists.txt): Pillow's float32 blends
// are separate multiply and add, and a fused multiply-add would round
// differently.
#include "ops/color.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/geometry.h"

namespace stoker {
namespace {

inline int Luma(const uint8_t* p) {  // Pillow's rgb2l (L24 >> 16)
  return (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16;
}

// Pillow's ImagingBlend for one byte: in1 + alpha * (in2 - in1), float32,
// truncated; clipped when extrapolating.
inline uint8_t Blend(int in1, int in2, float alpha, bool extrapolate) {
  const float d = alpha * static_cast<float>(in2 - in1);
  const float v = static_cast<float>(in1) + d;
  if (!extrapolate) return static_cast<uint8_t>(v);
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

inline bool Extrapolates(float alpha) { return !(alpha >= 0 && alpha <= 1.0); }

// Applies a 256-entry table per channel.
void ApplyLut(RgbImage* img, const uint8_t lut[3][256]) {
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) {
      p[0] = lut[0][p[0]];
      p[1] = lut[1][p[1]];
      p[2] = lut[2][p[2]];
    }
  }
}

// One 256-entry table for all three channels (brightness and contrast are
// the same blend on each channel). Rows are packed (RgbImage), so the image
// is one run of width * height * 3 bytes.
using Lut = std::array<uint8_t, 256>;

Lut IdentityLut() {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v);
  return lut;
}

bool IsIdentity(const Lut& lut) { return lut == IdentityLut(); }

// `lut` followed by Image.blend(grey `base`, ., factor): brightness with base
// 0, contrast with base the rounded mean.
void ThenBlend(Lut* lut, int base, float factor) {
  const bool ex = Extrapolates(factor);
  for (uint8_t& v : *lut) v = Blend(base, v, factor, ex);
}

int64_t Samples(RgbImage* img) { return static_cast<int64_t>(img->width()) * img->height() * 3; }

// Four pixels at a time, all lookups before the stores: a store through
// uint8_t* may alias the table, so a lookup after it could not be moved up
// (and GCC's own vectorisation of the plain loop, assembling vectors from
// scalar lookups, ran at half this speed).
void ApplyLut(RgbImage* img, const Lut& lut) {
  if (IsIdentity(lut)) return;
  uint8_t* p = img->data();
  const int64_t n = Samples(img);
  int64_t i = 0;
  for (; i + 12 <= n; i += 12) {
    uint8_t q[12];
    for (int k = 0; k < 12; ++k) q[k] = lut[p[i + k]];
    std::memcpy(p + i, q, 12);
  }
  for (; i < n; ++i) p[i] = lut[p[i]];
}

// The sum of Pillow's luma over `pixels` packed RGB pixels: a plain loop
// with 32-bit lanes the compiler vectorises; chunks keep a lane's sum under
// 2^32 (255 * 2^20). Built twice: the stride-3 byte loads vectorise only with
// byte shuffles (SSSE3 and up), so an AVX2 copy runs where the CPU has it.
__attribute__((always_inline)) inline int64_t LumaSumLoop(const uint8_t* p, int64_t pixels) {
  int64_t sum = 0;
  for (int64_t begin = 0; begin < pixels; begin += int64_t{1} << 20) {
    const int n = static_cast<int>(std::min<int64_t>(pixels - begin, int64_t{1} << 20));
    const uint8_t* q = p + begin * 3;
    uint32_t s = 0;
    for (int x = 0; x < n; ++x) {
      s += (q[3 * x] * 19595u + q[3 * x + 1] * 38470u + q[3 * x + 2] * 7471u + 0x8000u) >> 16;
    }
    sum += s;
  }
  return sum;
}

__attribute__((target("avx2"))) int64_t LumaSumAvx2(const uint8_t* p, int64_t pixels) {
  return LumaSumLoop(p, pixels);
}

int64_t LumaSum(const uint8_t* p, int64_t pixels) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? LumaSumAvx2(p, pixels) : LumaSumLoop(p, pixels);
}

// The luma sum of the image mapped through `lut`, without writing it.
int64_t LumaSum(RgbImage* img, const Lut& lut) {
  const int64_t pixels = static_cast<int64_t>(img->width()) * img->height();
  if (IsIdentity(lut)) return LumaSum(img->data(), pixels);
  const uint8_t* p = img->data();
  int64_t sum = 0;
  for (int64_t i = 0; i < pixels; ++i, p += 3) {
    const uint8_t q[3] = {lut[p[0]], lut[p[1]], lut[p[2]]};
    sum += Luma(q);
  }
  return sum;
}

// ImageStat's mean of convert("L"), rounded as int(mean + 0.5).
int RoundedMean(int64_t luma_sum, RgbImage* img) {
  const double n = static_cast<double>(img->width()) * img->height();
  return static_cast<int>(static_cast<double>(luma_sum) / n + 0.5);
}

// One row of saturation through its (luma, value) table, the samples first
// mapped through `pre` when kPre. A pixel's lookups all come before its
// stores (see ApplyLut).
template <bool kPre>
void SaturateRow(uint8_t* p, int w, const uint8_t* table, const Lut& pre) {
  for (int x = 0; x < w; ++x, p += 3) {
    const uint8_t q[3] = {kPre ? pre[p[0]] : p[0], kPre ? pre[p[1]] : p[1],
                          kPre ? pre[p[2]] : p[2]};
    const uint8_t* t = table + Luma(q) * 256;
    const uint8_t r = t[q[0]], g = t[q[1]], b = t[q[2]];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
}

// Saturation between two per-value tables: each pixel p becomes
// post[Blend(L(q), q_c)] with q = pre[p], what pre, AdjustSaturation, post
// give one after the other. With `luma_sum`, adds the luma of the written
// pixels to it (a contrast that follows needs their mean).
void SaturateBetween(RgbImage* img, const Lut& pre, float factor, const Lut& post,
                     int64_t* luma_sum) {
  const bool ex = Extrapolates(factor);
  const bool map_pre = !IsIdentity(pre), map_post = !IsIdentity(post);
  const int w = img->width();
  const int64_t pixels = static_cast<int64_t>(w) * img->height();
  // A small image blends each sample: fewer blends than the table has
  // entries. A large one blends each (luma, value) pair once into a table,
  // post included, and looks the samples up: the same Blend, so the same
  // bytes (256 x 256, 64 KiB per thread).
  const bool small = pixels < 65536;
  uint8_t* table = nullptr;
  if (!small) {
    thread_local std::vector<uint8_t> table_storage(256 * 256);
    // A local pointer: the byte stores below may alias the vector's own
    // fields, which the loop would otherwise reload for every pixel.
    table = table_storage.data();
    for (int l = 0; l < 256; ++l) {
      uint8_t* t = table + l * 256;
      for (int v = 0; v < 256; ++v) t[v] = Blend(l, v, factor, ex);
      if (map_post) {
        for (int v = 0; v < 256; ++v) t[v] = post[t[v]];
      }
    }
  }
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* p = img->row(y);
    if (small) {
      for (int x = 0; x < w; ++x, p += 3) {
        const uint8_t q[3] = {pre[p[0]], pre[p[1]], pre[p[2]]};
        const int l = Luma(q);
        p[0] = post[Blend(l, q[0], factor, ex)];
        p[1] = post[Blend(l, q[1], factor, ex)];
        p[2] = post[Blend(l, q[2], factor, ex)];
      }
    } else if (map_pre) {
      SaturateRow<true>(p, w, table, pre);
    } else {
      SaturateRow<false>(p, w, table, pre);
    }
    if (luma_sum != nullptr) *luma_sum += LumaSum(img->row(y), w);  // the row, still in cache
  }
}

// ColorJitter's brightness (0), contrast (1) and saturation (2), `n` of them
// in the order `ops`, fused: the same bytes as applying them one after the
// other, in at most two passes over the image. Per-value steps compose into
// one table; saturation takes the tables before it (mapping each pixel before
// its luma) and after it (in its (luma, value) table). Contrast needs the mean
// luma of the image as it stands at contrast's place: before saturation, a
// read-only pass over the pixels mapped through the tables before contrast;
// after saturation, the sum of the luma saturation's pass wrote, then one
// table pass for contrast and what follows it.
void FusedBrightnessContrastSaturation(RgbImage* img, const int* ops, int n,
                                       const double* factor) {
  if (n == 0) return;
  Lut lut = IdentityLut();  // the per-value steps since the last pass
  int i = 0;
  for (; i < n && ops[i] != 2; ++i) {
    const int base = ops[i] == 0 ? 0 : RoundedMean(LumaSum(img, lut), img);
    ThenBlend(&lut, base, static_cast<float>(factor[ops[i]]));
  }
  if (i == n) {  // no saturation
    ApplyLut(img, lut);
    return;
  }
  const Lut pre = lut;
  lut = IdentityLut();
  for (++i; i < n && ops[i] == 0; ++i) ThenBlend(&lut, 0, static_cast<float>(factor[0]));
  if (i == n) {  // no contrast after saturation: one pass
    SaturateBetween(img, pre, static_cast<float>(factor[2]), lut, nullptr);
    return;
  }
  int64_t sum = 0;  // ops[i] is contrast: the mean of what saturation's pass writes
  SaturateBetween(img, pre, static_cast<float>(factor[2]), lut, &sum);
  lut = IdentityLut();
  ThenBlend(&lut, RoundedMean(sum, img), static_cast<float>(factor[1]));
  for (++i; i < n; ++i) ThenBlend(&lut, 0, static_cast<float>(factor[0]));
  ApplyLut(img, lut);
}

void Histogram(RgbImage* img, int64_t hist[3][256]) {
  for (int c = 0; c < 3; ++c) std::fill(hist[c], hist[c] + 256, 0);
  for (int y = 0; y < img->height(); ++y) {
    const uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) {
      ++hist[0][p[0]];
      ++hist[1][p[1]];
      ++hist[2][p[2]];
    }
  }
}

// Pillow's rgb2hsv_row (following colorsys.py), float/double as there.
inline void RgbToHsv(const uint8_t* in, uint8_t* out) {
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b));
  const uint8_t minc = std::min(r, std::min(g, b));
  uint8_t uh = 0, us = 0;
  if (minc != maxc) {
    const float cr = static_cast<float>(maxc - minc);
    const float s = cr / static_cast<float>(maxc);
    const float rc = static_cast<float>(maxc - r) / cr;
    const float gc = static_cast<float>(maxc - g) / cr;
    const float bc = static_cast<float>(maxc - b) / cr;
    float h;
    if (r == maxc) {
      h = bc - gc;
    } else if (g == maxc) {
      h = static_cast<float>(2.0 + rc - bc);
    } else {
      h = static_cast<float>(4.0 + gc - rc);
    }
    h = static_cast<float>(std::fmod(h / 6.0 + 1.0, 1.0));
    uh = static_cast<uint8_t>(std::clamp(static_cast<int>(h * 255.0), 0, 255));
    us = static_cast<uint8_t>(std::clamp(static_cast<int>(s * 255.0), 0, 255));
  }
  out[0] = uh;
  out[1] = us;
  out[2] = maxc;
}

// Pillow's hsv2rgb.
inline void HsvToRgb(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = static_cast<int>(std::floor(static_cast<float>(h) * 6.0 / 255.0));
  const float f = static_cast<float>(static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i));
  const float fs = static_cast<float>(static_cast<float>(s) / 255.0);
  const int p = static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs)));
  const int q = static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * f)));
  const int t = static_cast<int>(std::round(static_cast<float>(v) * (1.0 - fs * (1.0 - f))));
  const uint8_t up = static_cast<uint8_t>(std::clamp(p, 0, 255));
  const uint8_t uq = static_cast<uint8_t>(std::clamp(q, 0, 255));
  const uint8_t ut = static_cast<uint8_t>(std::clamp(t, 0, 255));
  switch (i % 6) {
    case 0: out[0] = v; out[1] = ut; out[2] = up; break;
    case 1: out[0] = uq; out[1] = v; out[2] = up; break;
    case 2: out[0] = up; out[1] = v; out[2] = ut; break;
    case 3: out[0] = up; out[1] = uq; out[2] = v; break;
    case 4: out[0] = ut; out[1] = up; out[2] = v; break;
    default: out[0] = v; out[1] = up; out[2] = uq; break;
  }
}

}  // namespace

void AdjustBrightness(RgbImage* img, float factor) {
  Lut lut = IdentityLut();
  ThenBlend(&lut, 0, factor);
  ApplyLut(img, lut);
}

void AdjustContrast(RgbImage* img, float factor) {
  Lut lut = IdentityLut();
  ThenBlend(&lut, RoundedMean(LumaSum(img, lut), img), factor);
  ApplyLut(img, lut);
}

void AdjustSaturation(RgbImage* img, float factor) {
  SaturateBetween(img, IdentityLut(), factor, IdentityLut(), nullptr);
}

void AdjustHue(RgbImage* img, double hue_factor) {
  // numpy's uint8(hue_factor * 255): truncation, then modulo 256.
  const int shift = static_cast<int>(std::trunc(hue_factor * 255)) & 255;
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) {
      uint8_t hsv[3];
      RgbToHsv(p, hsv);
      hsv[0] = static_cast<uint8_t>(hsv[0] + shift);
      HsvToRgb(hsv, p);
    }
  }
}

void ToGrayscale(RgbImage* img) {
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) {
      p[0] = p[1] = p[2] = static_cast<uint8_t>(Luma(p));
    }
  }
}

void Autocontrast(RgbImage* img) {
  int64_t hist[3][256];
  Histogram(img, hist);
  uint8_t lut[3][256];
  for (int c = 0; c < 3; ++c) {
    int lo = 0, hi = 255;
    while (lo < 256 && hist[c][lo] == 0) ++lo;
    while (hi >= 0 && hist[c][hi] == 0) --hi;
    if (hi <= lo) {
      for (int v = 0; v < 256; ++v) lut[c][v] = static_cast<uint8_t>(v);
      continue;
    }
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int v = 0; v < 256; ++v) {
      const int ix = static_cast<int>(v * scale + offset);  // Python int(): truncation
      lut[c][v] = static_cast<uint8_t>(std::clamp(ix, 0, 255));
    }
  }
  ApplyLut(img, lut);
}

void Equalize(RgbImage* img) {
  int64_t hist[3][256];
  Histogram(img, hist);
  uint8_t lut[3][256];
  for (int c = 0; c < 3; ++c) {
    int64_t total = 0, last = 0, nonzero = 0;
    for (int v = 0; v < 256; ++v) {
      if (hist[c][v] != 0) {
        total += hist[c][v];
        last = hist[c][v];
        ++nonzero;
      }
    }
    const int64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      for (int v = 0; v < 256; ++v) lut[c][v] = static_cast<uint8_t>(v);
      continue;
    }
    int64_t n = step / 2;
    for (int v = 0; v < 256; ++v) {
      lut[c][v] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
      n += hist[c][v];
    }
  }
  ApplyLut(img, lut);
}

void Posterize(RgbImage* img, int bits) {
  const int mask = ~((1 << (8 - bits)) - 1) & 255;
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v & mask);
  ApplyLut(img, lut);
}

void Solarize(RgbImage* img, double threshold) {
  Lut lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v < threshold ? v : 255 - v);
  ApplyLut(img, lut);
}

void AdjustSharpness(RgbImage* img, float factor, RgbImage* scratch) {
  const int w = img->width(), h = img->height();
  if (w < 3 || h < 3) return;  // SMOOTH keeps images this small unchanged: blend is the identity
  // Pillow's ImagingFilter3x3 with SMOOTH (1 1 1 / 1 5 1 / 1 1 1, scale 13):
  // float32 kernel k / 13, offset 0.5, row y+1 first, truncation, borders
  // copied from the input.
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  scratch->Resize(w, h);
  for (int y = 0; y < h; ++y) {
    std::copy(img->row(y), img->row(y) + static_cast<size_t>(w) * 3, scratch->row(y));
  }
  for (int y = 1; y < h - 1; ++y) {
    const uint8_t* up = img->row(y - 1);
    const uint8_t* mid = img->row(y);
    const uint8_t* down = img->row(y + 1);
    uint8_t* out = scratch->row(y);
    for (int x = 1; x < w - 1; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int i = x * 3 + c;
        float ss = 0.5f;
        ss += static_cast<float>(down[i - 3]) * k1 + static_cast<float>(down[i]) * k1 +
              static_cast<float>(down[i + 3]) * k1;
        ss += static_cast<float>(mid[i - 3]) * k1 + static_cast<float>(mid[i]) * k5 +
              static_cast<float>(mid[i + 3]) * k1;
        ss += static_cast<float>(up[i - 3]) * k1 + static_cast<float>(up[i]) * k1 +
              static_cast<float>(up[i + 3]) * k1;
        out[i] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<uint8_t>(ss);
      }
    }
  }
  const bool ex = Extrapolates(factor);
  for (int y = 0; y < h; ++y) {
    uint8_t* p = img->row(y);
    const uint8_t* d = scratch->row(y);
    for (int i = 0; i < w * 3; ++i) p[i] = Blend(d[i], p[i], factor, ex);
  }
}

void JitterColors(const ColorJitterParams& p, RgbImage* img) {
  // The runs of brightness, contrast and saturation between hue's place
  // (hue is not a per-value or (luma, value) map) go fused.
  int run[3] = {0, 0, 0};
  int n = 0;
  for (int k : p.order) {
    if (!p.enabled[k]) continue;
    if (k != 3) {
      run[n++] = k;
      continue;
    }
    FusedBrightnessContrastSaturation(img, run, n, p.factor);
    n = 0;
    AdjustHue(img, p.factor[3]);
  }
  FusedBrightnessContrastSaturation(img, run, n, p.factor);
}

ColorJitterParams DrawColorJitter(const Transform& t, Rng* rng) {
  ColorJitterParams p;
  // torch.randperm(4): a uniform permutation (Fisher-Yates on our stream).
  for (int i = 3; i > 0; --i) {
    const int j = static_cast<int>(rng->Below(static_cast<uint64_t>(i + 1)));
    std::swap(p.order[i], p.order[j]);
  }
  const std::array<double, 2>* ranges[4] = {&t.brightness, &t.contrast, &t.saturation, &t.hue};
  const double identity[4] = {1.0, 1.0, 1.0, 0.0};
  for (int k = 0; k < 4; ++k) {
    const auto& r = *ranges[k];
    if (r[0] == identity[k] && r[1] == identity[k]) continue;  // torchvision's None
    p.enabled[k] = true;
    p.factor[k] = rng->Uniform(r[0], r[1]);
  }
  return p;
}

namespace {

std::vector<float> GaussianKernel1d(int k, double sigma) {
  const float half = static_cast<float>((k - 1) * 0.5);
  std::vector<float> w(static_cast<size_t>(k));
  const float step = k > 1 ? (half - -half) / static_cast<float>(k - 1) : 0.f;
  float sum = 0.f;
  for (int i = 0; i < k; ++i) {
    const float x = i < k / 2 ? -half + step * static_cast<float>(i)
                              : half - step * static_cast<float>(k - i - 1);
    // x / sigma as torch computes it, except 0 / 0: a sigma too small for
    // float32 (1e-320) is 0 there, and the limit of the kernel is the
    // identity, not NaN (which made every image black). sigma = inf gives
    // z = 0 everywhere: the box blur, as in torch.
    const float z = x == 0.f ? 0.f : x / static_cast<float>(sigma);
    w[i] = std::exp(-0.5f * (z * z));
    sum += w[i];
  }
  if (!(sum > 0.f && std::isfinite(sum))) {  // NaN sigma (or an even k at sigma 0): identity
    std::fill(w.begin(), w.end(), 0.f);
    w[static_cast<size_t>(k / 2)] = 1.f;
    return w;
  }
  for (float& v : w) v /= sum;
  return w;
}

// torch's 'reflect' padding index (repeated for tiny images).
inline int Reflect(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

}  // namespace

void GaussianBlur(RgbImage* img, int kx, int ky, double sigma_x, double sigma_y,
                  RgbImage* /*scratch*/) {
  const int w = img->width(), h = img->height();
  const std::vector<float> wx = GaussianKernel1d(kx, sigma_x), wy = GaussianKernel1d(ky, sigma_y);
  const int rx = kx / 2, ry = ky / 2;
  std::vector<float> tmp(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    const uint8_t* in = img->row(y);
    float* out = tmp.data() + static_cast<size_t>(y) * w * 3;
    for (int x = 0; x < w; ++x) {
      float acc[3] = {0.f, 0.f, 0.f};
      for (int j = 0; j < kx; ++j) {
        const uint8_t* p = in + 3 * Reflect(x + j - rx, w);
        for (int c = 0; c < 3; ++c) acc[c] += wx[j] * static_cast<float>(p[c]);
      }
      for (int c = 0; c < 3; ++c) out[3 * x + c] = acc[c];
    }
  }
  for (int y = 0; y < h; ++y) {
    uint8_t* out = img->row(y);
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        float acc = 0.f;
        for (int i = 0; i < ky; ++i) {
          acc += wy[i] * tmp[(static_cast<size_t>(Reflect(y + i - ry, h)) * w + x) * 3 + c];
        }
        const float r = std::nearbyint(acc);
        out[3 * x + c] = static_cast<uint8_t>(r < 0.f ? 0.f : r > 255.f ? 255.f : r);
      }
    }
  }
}

void Invert(RgbImage* img) {
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* row = img->row(y);
    for (int i = 0; i < img->width() * 3; ++i) row[i] = static_cast<uint8_t>(255 - row[i]);
  }
}

// ------------------------------------------------------------- transforms --

void ApplyColorJitter(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  JitterColors(DrawColorJitter(t, rng), img);
}

void ApplyRandomGrayscale(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  if (rng->Uniform() < t.p) ToGrayscale(img);
}

void ApplyGrayscale(const Transform&, Rng* rng, RgbImage* img, RgbImage*) {
  // Draws one value, as RandomGrayscale(p=1) does (which Grayscale was made
  // as before it had a declaration of its own): later transforms' draws,
  // and so their pixels, stay as they were.
  (void)rng->Uniform();
  ToGrayscale(img);
}

void ApplyRandomAutocontrast(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  if (rng->Uniform() < t.p) Autocontrast(img);
}

void ApplyRandomEqualize(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  if (rng->Uniform() < t.p) Equalize(img);
}

void ApplyRandomPosterize(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  if (rng->Uniform() < t.p) Posterize(img, t.bits);
}

void ApplyRandomSolarize(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  if (rng->Uniform() < t.p) Solarize(img, t.threshold);
}

void ApplyRandomAdjustSharpness(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  if (rng->Uniform() < t.p) AdjustSharpness(img, static_cast<float>(t.sharpness_factor), scratch);
}

void ApplyRandomInvert(const Transform& t, Rng* rng, RgbImage* img, RgbImage*) {
  // RandomInvert.forward: torch.rand(1) < p.
  if (rng->Uniform() < t.p) Invert(img);
}

void ApplyGaussianBlur(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  // GaussianBlur.get_params: sigma uniform in [min, max] (float32 in torch).
  // UniformBetween: sigma = (inf, inf) gives inf (the box blur), not NaN.
  const double sigma = static_cast<float>(UniformBetween(rng, t.sigma[0], t.sigma[1]));
  GaussianBlur(img, t.kernel_size[1], t.kernel_size[0], sigma, sigma, scratch);
}

}  // namespace stoker
