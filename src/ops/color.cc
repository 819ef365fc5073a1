// Copyright 2026 The stoker Authors.
//
// Built with -ffp-contract=off (src/CMakeLists.txt): Pillow's float32 blends
// are separate multiply and add, and a fused multiply-add would round
// differently.
#include "ops/color.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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
  uint8_t lut[3][256];
  const bool ex = Extrapolates(factor);
  for (int v = 0; v < 256; ++v) lut[0][v] = lut[1][v] = lut[2][v] = Blend(0, v, factor, ex);
  ApplyLut(img, lut);
}

void AdjustContrast(RgbImage* img, float factor) {
  // ImageStat mean of convert("L"), rounded as int(mean + 0.5).
  int64_t sum = 0;
  for (int y = 0; y < img->height(); ++y) {
    const uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) sum += Luma(p);
  }
  const double n = static_cast<double>(img->width()) * img->height();
  const int mean = static_cast<int>(static_cast<double>(sum) / n + 0.5);
  uint8_t lut[3][256];
  const bool ex = Extrapolates(factor);
  for (int v = 0; v < 256; ++v) lut[0][v] = lut[1][v] = lut[2][v] = Blend(mean, v, factor, ex);
  ApplyLut(img, lut);
}

void AdjustSaturation(RgbImage* img, float factor) {
  const bool ex = Extrapolates(factor);
  const int64_t pixels = static_cast<int64_t>(img->width()) * img->height();
  if (pixels < 65536) {  // a small image: fewer blends than a table has entries
    for (int y = 0; y < img->height(); ++y) {
      uint8_t* p = img->row(y);
      for (int x = 0; x < img->width(); ++x, p += 3) {
        const int l = Luma(p);
        p[0] = Blend(l, p[0], factor, ex);
        p[1] = Blend(l, p[1], factor, ex);
        p[2] = Blend(l, p[2], factor, ex);
      }
    }
    return;
  }
  // The blend of every (luma, value) pair once, then a lookup per sample:
  // the same Blend, so the same bytes (256 x 256, 64 KiB per thread).
  thread_local std::vector<uint8_t> table(256 * 256);
  for (int l = 0; l < 256; ++l) {
    uint8_t* t = table.data() + l * 256;
    for (int v = 0; v < 256; ++v) t[v] = Blend(l, v, factor, ex);
  }
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* p = img->row(y);
    for (int x = 0; x < img->width(); ++x, p += 3) {
      const uint8_t* t = table.data() + Luma(p) * 256;
      p[0] = t[p[0]];
      p[1] = t[p[1]];
      p[2] = t[p[2]];
    }
  }
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
  uint8_t lut[3][256];
  for (int v = 0; v < 256; ++v) lut[0][v] = lut[1][v] = lut[2][v] = static_cast<uint8_t>(v & mask);
  ApplyLut(img, lut);
}

void Solarize(RgbImage* img, double threshold) {
  uint8_t lut[3][256];
  for (int v = 0; v < 256; ++v) {
    lut[0][v] = lut[1][v] = lut[2][v] = static_cast<uint8_t>(v < threshold ? v : 255 - v);
  }
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
  const ColorJitterParams p = DrawColorJitter(t, rng);
  for (int k : p.order) {
    if (!p.enabled[k]) continue;
    switch (k) {
      case 0: AdjustBrightness(img, static_cast<float>(p.factor[0])); break;
      case 1: AdjustContrast(img, static_cast<float>(p.factor[1])); break;
      case 2: AdjustSaturation(img, static_cast<float>(p.factor[2])); break;
      default: AdjustHue(img, p.factor[3]); break;
    }
  }
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
