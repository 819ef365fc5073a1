// Copyright 2026 The stoker Authors.
#include "ops/resample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/rng.h"

namespace stoker {
namespace {

constexpr int32_t kOne = 1 << 22;

// -------------------------------------------------- reference (Pillow) ----
//
// A direct transcription of Pillow's Resample.c for the bilinear filter,
// written independently of ops/resample.cc: double coefficients from
// precompute_coeffs, normalize_coeffs_8bpc's rounding, then the 8-bit
// horizontal pass followed by the vertical pass.

struct RefAxis {
  int ksize = 0;
  std::vector<int> xmin;   // first input of each output
  std::vector<int> xcnt;   // number of inputs
  std::vector<int32_t> k;  // out_size * ksize fixed-point weights
};

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs(in_size, in0, in1, out_size) with the bilinear
// filter (support 1), then normalize_coeffs_8bpc.
RefAxis RefCoeffs(int in_size, double in0, double in1, int out_size) {
  RefAxis a;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  a.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  a.xmin.resize(out_size);
  a.xcnt.resize(out_size);
  a.k.assign(static_cast<size_t>(out_size) * a.ksize, 0);
  std::vector<double> kk(a.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int lo = static_cast<int>(center - support + 0.5);
    if (lo < 0) lo = 0;
    int hi = static_cast<int>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int n = hi - lo;
    double total = 0.0;
    for (int x = 0; x < n; ++x) {
      kk[x] = Triangle((x + lo - center + 0.5) * ss);
      total += kk[x];
    }
    for (int x = 0; x < n; ++x) {
      const double w = total != 0.0 ? kk[x] / total : kk[x];
      a.k[static_cast<size_t>(xx) * a.ksize + x] =
          w < 0 ? static_cast<int32_t>(-0.5 + w * kOne) : static_cast<int32_t>(0.5 + w * kOne);
    }
    a.xmin[xx] = lo;
    a.xcnt[xx] = n;
  }
  return a;
}

uint8_t RefClip8(int64_t v) {
  if (v >= (int64_t{1} << 30)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> 22);
}

struct Img {
  int w = 0, h = 0;
  std::vector<uint8_t> px;  // packed RGB
  uint8_t* at(int x, int y) { return &px[(static_cast<size_t>(y) * w + x) * 3]; }
  const uint8_t* at(int x, int y) const { return &px[(static_cast<size_t>(y) * w + x) * 3]; }
  RgbView view() const { return RgbView{px.data(), w, h, static_cast<std::ptrdiff_t>(w) * 3}; }
};

Img RandomImage(int w, int h, uint64_t seed) {
  Img im;
  im.w = w;
  im.h = h;
  im.px.resize(static_cast<size_t>(w) * h * 3);
  Rng rng(seed);
  for (auto& v : im.px) v = static_cast<uint8_t>(rng.Next() >> 56);
  return im;
}

// Pillow's resize(size, BILINEAR, box) on an RGB image.
Img RefResize(const Img& in, int out_w, int out_h, double bx0, double by0, double bx1,
              double by1) {
  const RefAxis hx = RefCoeffs(in.w, bx0, bx1, out_w);
  const RefAxis vy = RefCoeffs(in.h, by0, by1, out_h);
  // Horizontal pass over every input row (Pillow restricts it to the rows
  // the vertical pass reads; the kept rows are the same).
  Img tmp;
  tmp.w = out_w;
  tmp.h = in.h;
  tmp.px.resize(static_cast<size_t>(out_w) * in.h * 3);
  for (int y = 0; y < in.h; ++y) {
    for (int xx = 0; xx < out_w; ++xx) {
      for (int c = 0; c < 3; ++c) {
        int64_t ss = 1 << 21;
        for (int x = 0; x < hx.xcnt[xx]; ++x) {
          ss += static_cast<int64_t>(in.at(hx.xmin[xx] + x, y)[c]) *
                hx.k[static_cast<size_t>(xx) * hx.ksize + x];
        }
        tmp.at(xx, y)[c] = RefClip8(ss);
      }
    }
  }
  Img out;
  out.w = out_w;
  out.h = out_h;
  out.px.resize(static_cast<size_t>(out_w) * out_h * 3);
  for (int yy = 0; yy < out_h; ++yy) {
    for (int xx = 0; xx < out_w; ++xx) {
      for (int c = 0; c < 3; ++c) {
        int64_t ss = 1 << 21;
        for (int y = 0; y < vy.xcnt[yy]; ++y) {
          ss += static_cast<int64_t>(tmp.at(xx, vy.xmin[yy] + y)[c]) *
                vy.k[static_cast<size_t>(yy) * vy.ksize + y];
        }
        out.at(xx, yy)[c] = RefClip8(ss);
      }
    }
  }
  return out;
}

Img RefResize(const Img& in, int out_w, int out_h) {
  return RefResize(in, out_w, out_h, 0, 0, in.w, in.h);
}

Img Crop(const Img& in, int x0, int y0, int w, int h) {
  Img out;
  out.w = w;
  out.h = h;
  out.px.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) std::memcpy(out.at(0, y), in.at(x0, y0 + y), size_t(w) * 3);
  return out;
}

Img FromRgbImage(RgbImage& im) {
  Img out;
  out.w = im.width();
  out.h = im.height();
  out.px.resize(static_cast<size_t>(out.w) * out.h * 3);
  for (int y = 0; y < out.h; ++y) std::memcpy(out.at(0, y), im.row(y), size_t(out.w) * 3);
  return out;
}

// Resamples [x0, x1) x [y0, y1) of `in` (a crop: lo/hi are the same span) to
// out_w x out_h with stoker's Resampler. `fixed_taps` selects the vector
// kernels' coefficient shape for the horizontal pass, as the loader does.
Img StokerResize(const Img& in, int x0, int y0, int x1, int y1, int out_w, int out_h,
                 bool fixed_taps = false) {
  AxisCoeffs h, v;
  ComputeAxisCoeffs(x0, x1, x0, x1, out_w, 0, out_w, false, &h, fixed_taps);
  ComputeAxisCoeffs(y0, y1, y0, y1, out_h, 0, out_h, false, &v);
  Resampler r;
  RgbImage out;
  r.RunToImage(in.view(), 0, 0, h, v, &out);
  return FromRgbImage(out);
}

std::string FirstDiff(const Img& a, const Img& b) {
  if (a.w != b.w || a.h != b.h) {
    return "size " + std::to_string(a.w) + "x" + std::to_string(a.h) + " vs " +
           std::to_string(b.w) + "x" + std::to_string(b.h);
  }
  for (int y = 0; y < a.h; ++y)
    for (int x = 0; x < a.w; ++x)
      for (int c = 0; c < 3; ++c)
        if (a.at(x, y)[c] != b.at(x, y)[c]) {
          return "pixel (" + std::to_string(x) + ", " + std::to_string(y) + ") channel " +
                 std::to_string(c) + ": " + std::to_string(a.at(x, y)[c]) + " vs " +
                 std::to_string(b.at(x, y)[c]);
        }
  return "";
}

// ---------------------------------------------------- ComputeAxisCoeffs ----

struct SizePair {
  int in, out;
};
// Downscale factors up to 31 (at most 63 taps); larger ones are below.
const SizePair kPairs[] = {{500, 224}, {1000, 100}, {200, 256}, {375, 256}, {7, 3},
                           {3, 7},     {1, 5},      {31, 1},    {224, 224}, {333, 100},
                           {64, 63},   {63, 64},    {2, 1},     {1000, 33}};

void CheckInvariants(const AxisCoeffs& c, int lo, int hi, const std::string& what) {
  ASSERT_EQ(static_cast<int>(c.start.size()), c.length) << what;
  ASSERT_EQ(static_cast<int>(c.count.size()), c.length) << what;
  ASSERT_EQ(c.weights.size(), static_cast<size_t>(c.length) * c.taps) << what;
  int mn = 1 << 30, mx = -(1 << 30);
  for (int i = 0; i < c.length; ++i) {
    const int n = c.count[i];
    if (n == 0) continue;
    ASSERT_GE(n, 1) << what;
    ASSERT_LE(n, c.taps) << what;
    ASSERT_GE(c.start[i], lo) << what << " output " << i;
    ASSERT_LE(c.start[i] + n, hi) << what << " output " << i;
    int64_t sum = 0;
    for (int k = 0; k < c.taps; ++k) {
      const int32_t w = c.weights[static_cast<size_t>(i) * c.taps + k];
      if (k < n) {
        EXPECT_GE(w, 0) << what;  // the triangle is never negative
        sum += w;
      } else {
        EXPECT_EQ(w, 0) << what << " output " << i << " tap " << k;
      }
    }
    EXPECT_LE(std::llabs(sum - kOne), c.taps) << what << " output " << i;
    mn = std::min(mn, c.start[i]);
    mx = std::max(mx, c.start[i] + n);
  }
  if (mn <= mx) {
    EXPECT_EQ(c.min_input, mn) << what;
    EXPECT_EQ(c.max_input, mx) << what;
  }
}

TEST(ComputeAxisCoeffsTest, WeightsSumToOneAndInputsAreCovered) {
  for (const SizePair& p : kPairs) {
    const std::string what = std::to_string(p.in) + " -> " + std::to_string(p.out);
    AxisCoeffs c;
    ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, 0, p.out, false, &c);
    EXPECT_EQ(c.length, p.out) << what;
    const double scale = static_cast<double>(p.in) / p.out;
    EXPECT_EQ(c.taps, static_cast<int>(std::ceil(std::max(scale, 1.0))) * 2 + 1) << what;
    CheckInvariants(c, 0, p.in, what);
    for (int i = 0; i < c.length; ++i) EXPECT_GT(c.count[i], 0) << what;
    EXPECT_EQ(c.min_input, 0) << what;
    EXPECT_EQ(c.max_input, p.in) << what;
    // Offset crop inside a larger grid: indices are absolute.
    AxisCoeffs d;
    ComputeAxisCoeffs(40, 40 + p.in, 40, 40 + p.in, p.out, 0, p.out, false, &d);
    CheckInvariants(d, 40, 40 + p.in, what + " offset");
    for (int i = 0; i < c.length; ++i) {
      EXPECT_EQ(d.start[i], c.start[i] + 40);
      EXPECT_EQ(d.count[i], c.count[i]);
    }
    EXPECT_EQ(d.weights, c.weights) << what;
  }
}

TEST(ComputeAxisCoeffsTest, MatchesPillowCoefficients) {
  for (const SizePair& p : kPairs) {
    const std::string what = std::to_string(p.in) + " -> " + std::to_string(p.out);
    AxisCoeffs c;
    ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, 0, p.out, false, &c);
    const RefAxis r = RefCoeffs(p.in, 0, p.in, p.out);
    ASSERT_EQ(c.taps, r.ksize) << what;
    for (int i = 0; i < p.out; ++i) {
      ASSERT_EQ(c.start[i], r.xmin[i]) << what << " output " << i;
      ASSERT_EQ(c.count[i], r.xcnt[i]) << what << " output " << i;
      for (int k = 0; k < r.ksize; ++k) {
        ASSERT_EQ(c.weights[static_cast<size_t>(i) * c.taps + k],
                  r.k[static_cast<size_t>(i) * r.ksize + k])
            << what << " output " << i << " tap " << k;
      }
    }
  }
}

TEST(ComputeAxisCoeffsTest, IdentityIsOneFullWeightTap) {
  for (int n : {1, 2, 5, 224, 1000}) {
    AxisCoeffs c;
    ComputeAxisCoeffs(0, n, 0, n, n, 0, n, false, &c);
    ASSERT_EQ(c.length, n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(c.start[i], i) << n;
      ASSERT_GE(c.count[i], 1);
      EXPECT_EQ(c.weights[static_cast<size_t>(i) * c.taps], kOne) << n << " output " << i;
      for (int k = 1; k < c.taps; ++k) EXPECT_EQ(c.weights[static_cast<size_t>(i) * c.taps + k], 0);
    }
  }
}

TEST(ComputeAxisCoeffsTest, ReverseReversesOutputs) {
  for (const SizePair& p : kPairs) {
    for (int ws : {0, -3, p.out / 3}) {
      const int wl = std::max(1, p.out - ws + (ws < 0 ? 3 : 0));
      AxisCoeffs f, r;
      ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, ws, wl, false, &f);
      ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, ws, wl, true, &r);
      ASSERT_EQ(f.length, wl);
      ASSERT_EQ(r.length, wl);
      ASSERT_EQ(f.taps, r.taps);
      for (int i = 0; i < wl; ++i) {
        const int j = wl - 1 - i;
        EXPECT_EQ(r.count[i], f.count[j]) << p.in << "->" << p.out << " slot " << i;
        if (f.count[j] == 0) continue;
        EXPECT_EQ(r.start[i], f.start[j]);
        for (int k = 0; k < f.taps; ++k) {
          EXPECT_EQ(r.weights[static_cast<size_t>(i) * r.taps + k],
                    f.weights[static_cast<size_t>(j) * f.taps + k]);
        }
      }
      EXPECT_EQ(r.min_input, f.min_input);
      EXPECT_EQ(r.max_input, f.max_input);
    }
  }
}

TEST(ComputeAxisCoeffsTest, WindowAndPadding) {
  for (const SizePair& p : kPairs) {
    const std::string what = std::to_string(p.in) + " -> " + std::to_string(p.out);
    AxisCoeffs full;
    ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, 0, p.out, false, &full);
    // A window that starts 5 before the output and ends 4 after it.
    const int ws = -5, wl = p.out + 9;
    AxisCoeffs w;
    ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, ws, wl, false, &w);
    ASSERT_EQ(w.length, wl);
    CheckInvariants(w, 0, p.in, what);
    for (int i = 0; i < wl; ++i) {
      const int xx = ws + i;
      if (xx < 0 || xx >= p.out) {
        EXPECT_EQ(w.count[i], 0) << what << " padding slot " << i;
        continue;
      }
      EXPECT_EQ(w.start[i], full.start[xx]);
      EXPECT_EQ(w.count[i], full.count[xx]);
      for (int k = 0; k < w.taps; ++k)
        EXPECT_EQ(w.weights[static_cast<size_t>(i) * w.taps + k],
                  full.weights[static_cast<size_t>(xx) * full.taps + k]);
    }
    EXPECT_EQ(w.min_input, full.min_input);
    EXPECT_EQ(w.max_input, full.max_input);
    // An inner window reads only the inputs its taps need.
    if (p.out >= 4) {
      AxisCoeffs inner;
      ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, p.out / 2, 1, false, &inner);
      EXPECT_EQ(inner.min_input, full.start[p.out / 2]) << what;
      EXPECT_EQ(inner.max_input, full.start[p.out / 2] + full.count[p.out / 2]) << what;
    }
  }
  // All padding: nothing is read.
  AxisCoeffs pad;
  ComputeAxisCoeffs(0, 50, 0, 50, 20, 30, 5, false, &pad);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(pad.count[i], 0);
  EXPECT_EQ(pad.min_input, pad.max_input);
}

// Weight of absolute input j for slot i (0 when j is not among its taps).
int32_t WeightOf(const AxisCoeffs& c, int i, int j) {
  if (j < c.start[i] || j >= c.start[i] + c.count[i]) return 0;
  return c.weights[static_cast<size_t>(i) * c.taps + (j - c.start[i])];
}

TEST(ComputeAxisCoeffsTest, FixedTapsKeepTheSameSums) {
  for (const SizePair& p : kPairs) {
    for (int lo : {0, 13}) {
      for (bool reverse : {false, true}) {
        const int hi = lo + p.in;
        const std::string what = std::to_string(p.in) + " -> " + std::to_string(p.out) +
                                 " lo " + std::to_string(lo) + " reverse " +
                                 std::to_string(reverse);
        const int ws = -2, wl = p.out + 3;  // with padding on both sides
        AxisCoeffs plain, fixed;
        ComputeAxisCoeffs(lo, hi, lo, hi, p.out, ws, wl, reverse, &plain, false);
        ComputeAxisCoeffs(lo, hi, lo, hi, p.out, ws, wl, reverse, &fixed, true);
        ASSERT_EQ(fixed.taps, plain.taps) << what;
        ASSERT_EQ(fixed.length, wl) << what;
        if (p.in < plain.taps) {
          // Too few inputs for fixed taps: the plain shape.
          EXPECT_FALSE(fixed.fixed_taps) << what;
          EXPECT_EQ(fixed.start, plain.start) << what;
          EXPECT_EQ(fixed.count, plain.count) << what;
          EXPECT_EQ(fixed.weights, plain.weights) << what;
          continue;
        }
        ASSERT_TRUE(fixed.fixed_taps) << what;
        for (int i = 0; i < wl; ++i) {
          ASSERT_EQ(fixed.count[i], fixed.taps) << what << " slot " << i;
          ASSERT_GE(fixed.start[i], lo) << what << " slot " << i;
          ASSERT_LE(fixed.start[i] + fixed.taps, hi) << what << " slot " << i;
          for (int j = lo; j < hi; ++j) {
            ASSERT_EQ(WeightOf(fixed, i, j), WeightOf(plain, i, j))
                << what << " slot " << i << " input " << j;
          }
        }
        EXPECT_GE(fixed.min_input, lo) << what;
        EXPECT_LE(fixed.max_input, hi) << what;
        for (int i = 0; i < wl; ++i) {
          EXPECT_GE(fixed.start[i], fixed.min_input);
          EXPECT_LE(fixed.start[i] + fixed.count[i], fixed.max_input);
        }
        // The split copy for the vector kernels: per output pair and tap pair, 8 words of
        // high halves then 8 of low halves, four per output; each word the int16 pair
        // (tap 2j, tap 2j + 1), the first in the low 16 bits.
        const int pairs = wl / 2, tap_pairs = (fixed.taps + 1) / 2;
        ASSERT_EQ(fixed.split.size(), static_cast<size_t>(pairs) * tap_pairs * 16) << what;
        for (int i = 0; i < 2 * pairs; ++i)
          for (int k = 0; k < 2 * tap_pairs; ++k)
            for (int lane = 0; lane < 4; ++lane) {
              const size_t at =
                  (static_cast<size_t>(i / 2) * tap_pairs + k / 2) * 16 + (i % 2) * 4 + lane;
              const int shift = 16 * (k % 2);
              const int16_t high = static_cast<int16_t>(fixed.split[at] >> shift);
              const int16_t low = static_cast<int16_t>(fixed.split[at + 8] >> shift);
              const int32_t want =
                  k < fixed.taps ? fixed.weights[static_cast<size_t>(i) * fixed.taps + k] : 0;
              ASSERT_GE(low, 0) << what;
              ASSERT_LT(low, 2048) << what;
              ASSERT_EQ(high * 2048 + low, want) << what;
            }
      }
    }
  }
}

// Pillow's coefficient table for downscaling by more than 31.5 has more than
// 64 taps per output (ksize = ceil(scale) * 2 + 1), e.g. Resize(32) of a
// 1024-pixel side, or a 4000-pixel photo to 50. Run in a child process so
// that memory corruption in the code under test fails this test only.
bool LargeDownscaleMatchesPillow(std::string* why) {
  const SizePair pairs[] = {{1024, 32}, {2048, 32}, {4000, 50}, {3000, 7}, {100, 1}};
  for (const SizePair& p : pairs) {
    const std::string what = std::to_string(p.in) + " -> " + std::to_string(p.out);
    AxisCoeffs c;
    ComputeAxisCoeffs(0, p.in, 0, p.in, p.out, 0, p.out, false, &c);
    const RefAxis r = RefCoeffs(p.in, 0, p.in, p.out);
    if (c.taps != r.ksize || c.length != p.out) {
      *why = what + ": taps " + std::to_string(c.taps) + " vs " + std::to_string(r.ksize);
      return false;
    }
    for (int i = 0; i < p.out; ++i) {
      if (c.start[i] != r.xmin[i] || c.count[i] != r.xcnt[i]) {
        *why = what + ": bounds of output " + std::to_string(i);
        return false;
      }
      for (int k = 0; k < r.ksize; ++k) {
        if (c.weights[static_cast<size_t>(i) * c.taps + k] !=
            r.k[static_cast<size_t>(i) * r.ksize + k]) {
          *why = what + ": weight " + std::to_string(k) + " of output " + std::to_string(i);
          return false;
        }
      }
    }
  }
  // And the resampler on such coefficients.
  const Img in = RandomImage(2048, 40, 5);
  const Img want = RefResize(in, 32, 40);
  const Img got = StokerResize(in, 0, 0, 2048, 40, 32, 40);
  *why = FirstDiff(got, want);
  return why->empty();
}

TEST(ComputeAxisCoeffsTest, LargeDownscaleFactorsMatchPillow) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::string why;
        const bool ok = LargeDownscaleMatchesPillow(&why);
        if (!ok) std::fprintf(stderr, "mismatch: %s\n", why.c_str());
        std::fflush(stderr);
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "")
      << "ComputeAxisCoeffs with more than 64 taps (downscale factor > 31.5) crashed or "
         "disagreed with Pillow";
}

// ------------------------------------------------------------ Resampler ----

TEST(ResamplerTest, ConstantImageStaysConstant) {
  const SizePair sizes[][2] = {{{123, 50}, {77, 61}}, {{30, 200}, {20, 90}}, {{1, 9}, {1, 9}},
                               {{640, 21}, {480, 16}}};
  for (const auto& s : sizes) {
    Img in;
    in.w = s[0].in;
    in.h = s[1].in;
    in.px.resize(static_cast<size_t>(in.w) * in.h * 3);
    for (int i = 0; i < in.w * in.h; ++i) {
      in.px[3 * i] = 37;
      in.px[3 * i + 1] = 255;
      in.px[3 * i + 2] = 0;
    }
    for (bool fixed : {false, true}) {
      const Img out = StokerResize(in, 0, 0, in.w, in.h, s[0].out, s[1].out, fixed);
      ASSERT_EQ(out.w, s[0].out);
      ASSERT_EQ(out.h, s[1].out);
      for (int y = 0; y < out.h; ++y)
        for (int x = 0; x < out.w; ++x) {
          ASSERT_EQ(out.at(x, y)[0], 37) << x << "," << y << " fixed_taps " << fixed;
          ASSERT_EQ(out.at(x, y)[1], 255) << x << "," << y << " fixed_taps " << fixed;
          ASSERT_EQ(out.at(x, y)[2], 0) << x << "," << y << " fixed_taps " << fixed;
        }
    }
  }
}

TEST(ResamplerTest, HalvingStripesGivesFlatGrey) {
  // Vertical stripes of period 2 (0, 255, 0, ...), halved horizontally: the
  // triangle of support 2 weighs each output's four inputs 1/8, 3/8, 3/8,
  // 1/8, so inner outputs are exactly (255 * 4/8 * 2^22 + 2^21) >> 22 = 128.
  const int w = 64, h = 10;
  Img in;
  in.w = w;
  in.h = h;
  in.px.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) in.at(x, y)[c] = (x % 2) ? 255 : 0;
  for (bool fixed : {false, true}) {
    const Img out = StokerResize(in, 0, 0, w, h, w / 2, h, fixed);
    ASSERT_EQ(out.w, w / 2);
    for (int y = 0; y < h; ++y)
      for (int x = 1; x < w / 2 - 1; ++x)
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(out.at(x, y)[c], 128) << x << "," << y << " fixed_taps " << fixed;
  }
  // Same for horizontal stripes halved vertically.
  Img t;
  t.w = h;
  t.h = w;
  t.px.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < w; ++y)
    for (int x = 0; x < h; ++x)
      for (int c = 0; c < 3; ++c) t.at(x, y)[c] = (y % 2) ? 255 : 0;
  const Img o2 = StokerResize(t, 0, 0, h, w, h, w / 2);
  for (int y = 1; y < w / 2 - 1; ++y)
    for (int x = 0; x < h; ++x)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(o2.at(x, y)[c], 128) << x << "," << y;
  // Without antialiasing (point sampling) the output would be 0 or 255.
}

TEST(ResamplerTest, MatchesPillowReferenceBitExactly) {
  struct Case {
    int iw, ih, ow, oh;
  };
  const Case cases[] = {
      {200, 150, 256, 192},  // upscaling
      {200, 200, 256, 256},
      {500, 375, 224, 224},  // downscaling
      {1000, 120, 100, 40},  // 10x and 3x
      {333, 251, 224, 224},
      {500, 375, 341, 256},  // Resize(256)
      {64, 48, 64, 48},      // identity
      {7, 5, 3, 11},         // mixed
      {1, 1, 5, 5},
      {300, 2, 10, 1},
      {17, 300, 1, 17},
      {97, 89, 96, 90},      // nearly identity
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const Img in = RandomImage(c.iw, c.ih, seed++);
    const Img want = RefResize(in, c.ow, c.oh);
    for (bool fixed : {false, true}) {
      const Img got = StokerResize(in, 0, 0, c.iw, c.ih, c.ow, c.oh, fixed);
      EXPECT_EQ(FirstDiff(got, want), "")
          << c.iw << "x" << c.ih << " -> " << c.ow << "x" << c.oh << " fixed_taps " << fixed;
    }
  }
}

TEST(ResamplerTest, CropThenResizeMatchesPillowOnTheCrop) {
  // RandomResizedCrop-like: crop [x0, x1) x [y0, y1) of a larger image, then
  // resize; equals Pillow resizing a copy of the crop.
  const Img in = RandomImage(400, 300, 77);
  struct Case {
    int x0, y0, w, h, ow, oh;
  };
  const Case cases[] = {{37, 11, 200, 100, 224, 224}, {0, 0, 400, 300, 128, 96},
                        {399, 299, 1, 1, 3, 3},       {100, 50, 31, 250, 224, 224},
                        {5, 5, 390, 290, 40, 30}};
  for (const Case& c : cases) {
    const Img want = RefResize(Crop(in, c.x0, c.y0, c.w, c.h), c.ow, c.oh);
    for (bool fixed : {false, true}) {
      const Img got = StokerResize(in, c.x0, c.y0, c.x0 + c.w, c.y0 + c.h, c.ow, c.oh, fixed);
      EXPECT_EQ(FirstDiff(got, want), "")
          << c.x0 << "," << c.y0 << " " << c.w << "x" << c.h << " fixed_taps " << fixed;
    }
  }
}

TEST(ResamplerTest, FractionalBoxMatchesPillowBox) {
  // Pillow's resize(box=...) with a fractional box, which ComputeAxisCoeffs
  // takes as the real span [in0, in1) clamped to [lo, hi).
  const Img in = RandomImage(120, 90, 78);
  const Img want = RefResize(in, 50, 40, 2.5, 1.25, 100.25, 80.5);
  for (bool fixed : {false, true}) {
    AxisCoeffs h, v;
    ComputeAxisCoeffs(2.5, 100.25, 0, 120, 50, 0, 50, false, &h, fixed);
    ComputeAxisCoeffs(1.25, 80.5, 0, 90, 40, 0, 40, false, &v);
    Resampler r;
    RgbImage out;
    r.RunToImage(in.view(), 0, 0, h, v, &out);
    EXPECT_EQ(FirstDiff(FromRgbImage(out), want), "") << "fixed_taps " << fixed;
  }
}

TEST(ResamplerTest, WindowEqualsCutOfFullOutputAndFlipMirrors) {
  const Img in = RandomImage(333, 251, 90);
  const int ow = 297, oh = 224;
  const Img full = StokerResize(in, 0, 0, in.w, in.h, ow, oh);
  ASSERT_EQ(FirstDiff(full, RefResize(in, ow, oh)), "");
  struct Win {
    int x, y, w, h;
  };
  const Win wins[] = {{36, 0, 224, 224}, {0, 0, ow, oh},  {ow - 1, oh - 1, 1, 1},
                      {10, 20, 1, 100},  {-8, -5, 40, 30}, {ow - 20, oh - 10, 50, 40},
                      {-3, 0, ow + 6, oh}};
  Resampler r;  // reused across windows
  for (const Win& w : wins) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool flip = mode & 1, fixed = mode & 2;
      AxisCoeffs h, v;
      ComputeAxisCoeffs(0, in.w, 0, in.w, ow, w.x, w.w, flip, &h, fixed);
      ComputeAxisCoeffs(0, in.h, 0, in.h, oh, w.y, w.h, false, &v);
      RgbImage out;
      r.RunToImage(in.view(), 0, 0, h, v, &out);
      ASSERT_EQ(out.width(), w.w);
      ASSERT_EQ(out.height(), w.h);
      for (int y = 0; y < w.h; ++y) {
        for (int x = 0; x < w.w; ++x) {
          const int fx = flip ? w.x + w.w - 1 - x : w.x + x;
          const int fy = w.y + y;
          uint8_t want[3] = {0, 0, 0};  // padding outside the output
          if (fx >= 0 && fx < ow && fy >= 0 && fy < oh) std::memcpy(want, full.at(fx, fy), 3);
          ASSERT_EQ(0, std::memcmp(out.row(y) + 3 * x, want, 3))
              << "window " << w.x << "," << w.y << " " << w.w << "x" << w.h << " flip " << flip
              << " fixed_taps " << fixed << " at " << x << "," << y;
        }
      }
    }
  }
}

TEST(ResamplerTest, OriginOffsetSubViewGivesSameResult) {
  const Img in = RandomImage(300, 200, 91);
  const int lo_x = 37, hi_x = 237, lo_y = 11, hi_y = 151;
  for (int mode = 0; mode < 4; ++mode) {
    const bool flip = mode & 1, fixed = mode & 2;
    AxisCoeffs h, v;
    ComputeAxisCoeffs(lo_x, hi_x, lo_x, hi_x, 150, 10, 100, flip, &h, fixed);
    ComputeAxisCoeffs(lo_y, hi_y, lo_y, hi_y, 100, 5, 80, false, &v);
    Resampler r;
    RgbImage a, b, c;
    r.RunToImage(in.view(), 0, 0, h, v, &a);
    // A view that starts at the first input the coefficients read.
    const int ox = h.min_input, oy = v.min_input;
    ASSERT_GE(ox, lo_x);
    ASSERT_GE(oy, lo_y);
    const RgbView sub{in.at(ox, oy), h.max_input - ox, v.max_input - oy, in.view().stride};
    r.RunToImage(sub, ox, oy, h, v, &b);
    // A copy of just the crop, with its own stride.
    const Img crop = Crop(in, lo_x, lo_y, hi_x - lo_x, hi_y - lo_y);
    r.RunToImage(crop.view(), lo_x, lo_y, h, v, &c);
    const Img ia = FromRgbImage(a), ib = FromRgbImage(b), ic = FromRgbImage(c);
    EXPECT_EQ(FirstDiff(ia, ib), "") << "flip " << flip << " fixed_taps " << fixed;
    EXPECT_EQ(FirstDiff(ia, ic), "") << "flip " << flip << " fixed_taps " << fixed;
    // And the result is that window of Pillow's resize of the crop.
    const Img ref = RefResize(crop, 150, 100);
    for (int y = 0; y < 80; ++y)
      for (int x = 0; x < 100; ++x) {
        const int fx = flip ? 10 + 99 - x : 10 + x;
        ASSERT_EQ(0, std::memcmp(ia.at(x, y), ref.at(fx, 5 + y), 3))
            << x << "," << y << " flip " << flip << " fixed_taps " << fixed;
      }
  }
}

TEST(ResamplerTest, RowSinkSeesRowsInOrder) {
  const Img in = RandomImage(50, 40, 92);
  AxisCoeffs h, v;
  ComputeAxisCoeffs(0, 50, 0, 50, 20, 0, 20, false, &h);
  ComputeAxisCoeffs(0, 40, 0, 40, 15, 0, 15, false, &v);
  struct Ctx {
    std::vector<int> ys;
    std::vector<uint8_t> px;
    int width = -1;
  } ctx;
  Resampler r;
  r.Run(in.view(), 0, 0, h, v,
        [](void* p, int y, const uint8_t* rgb, int width) {
          auto* c = static_cast<Ctx*>(p);
          c->ys.push_back(y);
          c->width = width;
          c->px.insert(c->px.end(), rgb, rgb + width * 3);
        },
        &ctx);
  ASSERT_EQ(ctx.ys.size(), 15u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(ctx.ys[i], i);
  EXPECT_EQ(ctx.width, 20);
  EXPECT_EQ(ctx.px, RefResize(in, 20, 15).px);
}

// One case per horizontal kernel: fixed taps 3 and 5 (shuffle), 7 and 9
// (AVX2 fixed), larger (generic), each with even and odd output widths (the
// pair loops have an odd last pixel) and narrow sources.
TEST(ResamplerTest, EveryKernelMatchesPillow) {
  struct Case {
    int iw, ow;
  };
  const Case cases[] = {{200, 256}, {200, 257}, {100, 100}, {5, 3},    {3, 9},
                        {500, 341}, {500, 340}, {301, 151}, {500, 224}, {501, 223},
                        {100, 34},  {1000, 300}, {999, 301}, {100, 25}, {1000, 100},
                        {1000, 101}, {31, 1},   {9, 1},     {9, 2},    {7, 3}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    for (int ih : {1, 2, 9}) {
      const Img in = RandomImage(c.iw, ih, seed++);
      const int oh = ih == 9 ? 4 : ih;
      const Img want = RefResize(in, c.ow, oh);
      for (bool fixed : {false, true}) {
        const Img got = StokerResize(in, 0, 0, c.iw, ih, c.ow, oh, fixed);
        EXPECT_EQ(FirstDiff(got, want), "") << c.iw << "x" << ih << " -> " << c.ow << "x" << oh
                                            << " fixed_taps " << fixed;
      }
    }
  }
}

// Every source row is followed by exactly nothing (the vector holds only the
// pixels) unless the caller promises padding: the fast loads must not read
// past the view then; with tail_padding they may, and the result is the same.
TEST(ResamplerTest, TailPaddingDoesNotChangeResults) {
  for (int iw : {12, 200, 333}) {
    for (int ow : {12, 100, 224, 225}) {
      const int ih = 6, oh = 5;
      std::vector<uint8_t> exact(static_cast<size_t>(iw) * ih * 3);
      Rng rng(static_cast<uint64_t>(iw * 1000 + ow));
      for (auto& b : exact) b = static_cast<uint8_t>(rng.Next() >> 56);
      std::vector<uint8_t> padded(exact);
      padded.resize(exact.size() + 16, 0xEE);
      Img in;
      in.w = iw;
      in.h = ih;
      in.px = exact;
      const Img want = RefResize(in, ow, oh);
      for (bool fixed : {false, true}) {
        AxisCoeffs h, v;
        ComputeAxisCoeffs(0, iw, 0, iw, ow, 0, ow, false, &h, fixed);
        ComputeAxisCoeffs(0, ih, 0, ih, oh, 0, oh, false, &v);
        Resampler r;
        for (bool tail : {false, true}) {
          const RgbView view{tail ? padded.data() : exact.data(), iw, ih,
                             static_cast<std::ptrdiff_t>(iw) * 3};
          Img got;
          got.w = ow;
          got.h = oh;
          got.px.assign(static_cast<size_t>(ow) * oh * 3, 0);
          struct Ctx {
            Img* img;
          } ctx{&got};
          r.Run(view, 0, 0, h, v,
                [](void* p, int y, const uint8_t* rgb, int width) {
                  std::memcpy(static_cast<Ctx*>(p)->img->at(0, y), rgb, size_t(width) * 3);
                },
                &ctx, tail);
          EXPECT_EQ(FirstDiff(got, want), "")
              << iw << " -> " << ow << " fixed_taps " << fixed << " tail_padding " << tail;
        }
      }
    }
  }
}

TEST(ResamplerTest, ReusedResamplerAcrossShapes) {
  Resampler r;
  Rng rng(55);
  for (int i = 0; i < 40; ++i) {
    const int iw = 1 + static_cast<int>(rng.Below(300)), ih = 1 + static_cast<int>(rng.Below(60));
    const int ow = 1 + static_cast<int>(rng.Below(260)), oh = 1 + static_cast<int>(rng.Below(60));
    if (iw > 31 * ow || ih > 31 * oh) continue;  // see LargeDownscaleFactorsMatchPillow
    const bool fixed = rng.Below(2);
    const Img in = RandomImage(iw, ih, 1000 + i);
    AxisCoeffs h, v;
    ComputeAxisCoeffs(0, iw, 0, iw, ow, 0, ow, false, &h, fixed);
    ComputeAxisCoeffs(0, ih, 0, ih, oh, 0, oh, false, &v);
    RgbImage out;
    r.RunToImage(in.view(), 0, 0, h, v, &out);
    EXPECT_EQ(FirstDiff(FromRgbImage(out), RefResize(in, ow, oh)), "")
        << iw << "x" << ih << " -> " << ow << "x" << oh << " fixed_taps " << fixed;
  }
}


// ------------------------------------------- vector kernels vs scalar ----

// Random bytes, with runs of 0 and 255 (the clamps' and the sums' extremes).
std::vector<uint8_t> KernelTestBytes(size_t n, Rng* rng) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng->Next();
    const int mode = static_cast<int>((i / 16 + (r >> 60)) % 4);
    b[i] = mode == 0 ? 255 : mode == 1 ? 0 : static_cast<uint8_t>(r >> 32);
  }
  return b;
}

// The horizontal AVX2 kernels (taps 3, 5, 7, 9: upscales and downscales up
// to 4x) against the scalar pass, byte for byte, on random rows: integer and
// fractional spans (many distinct weights, and the identity's single 2^22
// weight), crops not at 0, padding outputs, flips, odd and even lengths.
TEST(ResampleKernelTest, HorizontalVectorKernelsMatchScalar) {
  Rng rng(2026);
  struct Case {
    double in;  // input span length
    int out;
  };
  const Case cases[] = {{37, 37},   {10, 37},    {100, 199}, {37, 36},   {64, 43},
                        {60, 30},   {61, 30},    {75, 30},   {90, 30},   {91, 29},
                        {105, 30},  {120, 30},   {119, 31},  {1280, 640}, {2048, 512},
                        {41.5, 17}, {33.25, 11}, {9, 3},     {12.75, 5},  {5, 5}};
  int checked[10] = {0};
  for (const Case& c : cases) {
    for (int variant = 0; variant < 6; ++variant) {
      const int lo = variant % 2 ? 7 : 0;
      const double in0 = lo + (variant >= 4 ? 0.375 : 0.0);
      const double in1 = std::min(in0 + c.in, lo + std::ceil(c.in));
      const int hi = lo + static_cast<int>(std::ceil(c.in));
      const bool reverse = variant == 2 || variant == 5;
      const int ws = variant >= 2 ? -3 : 0;
      const int wl = c.out - ws + (variant >= 2 ? 2 : 0) - (variant == 3 ? 1 : 0);
      AxisCoeffs h;
      ComputeAxisCoeffs(in0, in1, lo, hi, c.out, ws, wl, reverse, &h, /*fixed_taps=*/true);
      const std::string what = std::to_string(c.in) + " -> " + std::to_string(c.out) +
                               " variant " + std::to_string(variant) + " taps " +
                               std::to_string(h.taps);
      ASSERT_TRUE(h.fixed_taps) << what;
      for (int trial = 0; trial < 8; ++trial) {
        // The row holds pixels from `origin` on, then 16 bytes of slack.
        const int origin = lo - static_cast<int>(rng.Below(3));
        const size_t row_bytes = static_cast<size_t>(hi - origin) * 3;
        std::vector<uint8_t> row = KernelTestBytes(row_bytes + 16, &rng);
        if (trial == 0) std::fill(row.begin(), row.end(), 255);
        std::vector<uint8_t> want(static_cast<size_t>(wl) * 3 + 4, 0xAB), got(want);
        HorizontalRowReferenceForTesting(row.data(), origin, h, want.data());
        if (!HorizontalRowVectorForTesting(row.data(), origin, h, got.data())) {
          GTEST_SKIP() << "no AVX2 kernel on this CPU";
        }
        for (int x = 0; x < wl * 3; ++x) {
          ASSERT_EQ(got[x], want[x]) << what << " trial " << trial << " byte " << x;
        }
        ++checked[h.taps];
      }
    }
  }
  for (int taps : {3, 5, 7, 9}) EXPECT_GT(checked[taps], 0) << "taps " << taps;
}

// The vertical AVX2 kernel against the scalar pass: tap counts 1 to 20 and
// large ones (odd counts pair the last row with nothing), widths that
// exercise the 32-byte steps, the overlapping last step and rows shorter
// than 32 (byte by byte), the coefficients of
// real scales and hand-made extreme weights (2^22 alone; halves at the
// split's edges: 2047, 2048, 2^22 - 1).
TEST(ResampleKernelTest, VerticalVectorKernelMatchesScalar) {
  Rng rng(77);
  std::vector<std::vector<int32_t>> weight_sets;
  for (const SizePair& p : {SizePair{20, 20}, SizePair{50, 20}, SizePair{90, 20},
                            SizePair{200, 20}, SizePair{7, 20}, SizePair{41, 3}}) {
    AxisCoeffs v;
    ComputeAxisCoeffs(0.25, p.in, 0, p.in, p.out, 0, p.out, false, &v);
    for (int i = 0; i < v.length; ++i) {
      weight_sets.emplace_back(&v.weights[static_cast<size_t>(i) * v.taps],
                               &v.weights[static_cast<size_t>(i) * v.taps] + v.count[i]);
    }
  }
  weight_sets.push_back({kOne});
  weight_sets.push_back({0, kOne});
  weight_sets.push_back({kOne - 1, 1});
  weight_sets.push_back({2047, 2048, kOne - 4095});
  weight_sets.push_back({kOne / 2 + 1, kOne / 2 - 2047, 2047, 1});
  weight_sets.push_back({kOne / 4, kOne / 4, kOne / 4, kOne / 4 - 2048, 2047, 1});
  for (int n : {63, 255, 256}) {  // many taps, the sum still 2^22
    std::vector<int32_t> w(n, kOne / n);
    w[0] += kOne - (kOne / n) * n;
    weight_sets.push_back(w);
  }
  int checked = 0;
  for (const auto& w : weight_sets) {
    const int n = static_cast<int>(w.size());
    for (int bytes : {1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 75, 96, 127, 1920}) {
      const int first = static_cast<int>(rng.Below(3));
      const size_t stride = bytes + static_cast<size_t>(rng.Below(2)) * 5;
      std::vector<uint8_t> temp = KernelTestBytes(stride * (first + n), &rng);
      if (checked % 7 == 0) std::fill(temp.begin(), temp.end(), 255);
      std::vector<uint8_t> want(bytes, 0xAB), got(want);
      VerticalRowReferenceForTesting(temp.data(), stride, first, w.data(), n, bytes, want.data());
      if (!VerticalRowVectorForTesting(temp.data(), stride, first, w.data(), n, bytes,
                                       got.data())) {
        GTEST_SKIP() << "no AVX2 kernel on this CPU";
      }
      ASSERT_EQ(got, want) << "taps " << n << " bytes " << bytes << " first weight " << w[0];
      ++checked;
    }
  }
  // Beyond 256 taps the scalar pass does it (Finish falls back).
  std::vector<int32_t> many(257, kOne / 257);
  std::vector<uint8_t> temp(257 * 32, 9), out(32);
  EXPECT_FALSE(VerticalRowVectorForTesting(temp.data(), 32, 0, many.data(), 257, 32, out.data()));
}

TEST(ResamplerPadFillTest, PaintsOnlyThePaddingOutputs) {
  // A 6 x 4 grey image resampled to 6 x 4 (identity) inside a window reaching 2 beyond on
  // the left and 1 above: the outside gets the fill colour, the inside the image.
  RgbImage src;
  src.Resize(6, 4);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 18; ++x) src.row(y)[x] = static_cast<uint8_t>(10 + y);
  }
  for (bool reverse : {false, true}) {
    AxisCoeffs h, v;
    ComputeAxisCoeffs(0, 6, 0, 6, 6, -2, 9, reverse, &h, /*fixed_taps=*/true);
    ComputeAxisCoeffs(0, 4, 0, 4, 4, -1, 5, false, &v);
    EXPECT_EQ(h.inside_begin, reverse ? 1 : 2);
    EXPECT_EQ(h.inside_end, reverse ? 7 : 8);
    Resampler r;
    const std::array<uint8_t, 3> fill{200, 1, 2};
    r.SetPadFill(&fill);
    RgbImage out;
    r.RunToImage(src.view(), 0, 0, h, v, &out);
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 9; ++x) {
        const bool in = y >= 1 && x >= h.inside_begin && x < h.inside_end;
        const uint8_t* p = out.row(y) + 3 * x;
        if (in) {
          EXPECT_EQ(p[0], 10 + y - 1) << x << "," << y;
        } else {
          EXPECT_EQ(p[0], 200) << x << "," << y;
          EXPECT_EQ(p[1], 1);
          EXPECT_EQ(p[2], 2);
        }
      }
    }
    // Reset by Finish: the next run pads with zeros.
    r.RunToImage(src.view(), 0, 0, h, v, &out);
    EXPECT_EQ(out.row(0)[0], 0);
  }
}

}  // namespace
}  // namespace stoker
