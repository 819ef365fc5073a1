// Copyright 2026 The stoker Authors.
#include "synth/synth.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "codec/encoder.h"

namespace stoker {
namespace {

// Image seeds: bits [0, kClassShift) are the image's index within its class,
// bits [kClassShift, 64) the class key that selects the palette.
constexpr int kClassShift = 20;
constexpr int kMaxJpegSide = 65500;  // JPEG_MAX_DIMENSION

// ---------------------------------------------------------------------------
// Random numbers.

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

inline uint64_t Mix64(uint64_t z) {
  z += kGolden;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += kGolden;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [lo, hi] (inclusive); lo <= hi.
  int Uniform(int lo, int hi) {
    const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
    return lo + static_cast<int>(((Next() >> 32) * span) >> 32);
  }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------
// Colours.

struct Rgb {
  int r, g, b;
};

struct Hsv {
  int h, s, v;  // h in degrees (any integer), s and v in 0..255
};

inline int Clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

Rgb HsvToRgb(Hsv c) {
  const int h = ((c.h % 360) + 360) % 360;
  const int s = Clamp255(c.s);
  const int v = Clamp255(c.v);
  const int region = h / 60;
  const int rem = (h % 60) * 255 / 60;
  const int p = v * (255 - s) / 255;
  const int q = v * (255 * 255 - s * rem) / (255 * 255);
  const int t = v * (255 * 255 - s * (255 - rem)) / (255 * 255);
  switch (region) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

// The colours a class draws from. The base hue is a Weyl sequence in the class
// key, so classes with consecutive keys get hues a golden angle (~137.5
// degrees) apart; the rest of the palette comes from a hash of the key.
constexpr int kPaletteSize = 5;

struct Palette {
  Hsv colors[kPaletteSize];
};

Palette MakePalette(uint64_t class_key) {
  constexpr int kKeyBits = 64 - kClassShift;
  constexpr uint64_t kKeyMask = (uint64_t{1} << kKeyBits) - 1;
  const uint64_t frac = (class_key * (kGolden >> kClassShift)) & kKeyMask;
  const int base_hue = static_cast<int>((frac * 360) >> kKeyBits);

  Rng rng(Mix64(class_key ^ 0x70616c6574746531ULL));
  const int spread = rng.Uniform(15, 40);
  const int hue_offsets[kPaletteSize] = {0, spread, -spread, 180 + rng.Uniform(-30, 30), 0};
  Palette p;
  for (int k = 0; k < kPaletteSize; ++k) {
    p.colors[k] = {base_hue + hue_offsets[k], rng.Uniform(90, 230), rng.Uniform(70, 235)};
  }
  // One dark and one light entry so images have some tonal range.
  p.colors[kPaletteSize - 1].v = rng.Uniform(25, 70);
  p.colors[1].v = std::max(p.colors[1].v, 200);
  return p;
}

// A palette colour with per-image jitter. Entry 0 (the class hue) is drawn
// twice as often as the others.
Rgb PickColor(Rng& rng, const Palette& palette) {
  int k = rng.Uniform(0, kPaletteSize);
  if (k == kPaletteSize) k = 0;
  Hsv c = palette.colors[k];
  c.h += rng.Uniform(-12, 12);
  c.s += rng.Uniform(-40, 40);
  c.v += rng.Uniform(-45, 45);
  return HsvToRgb(c);
}

// ---------------------------------------------------------------------------
// Value noise: a lattice of random values in [-128, 127] every `cell` pixels
// (at a random phase), interpolated with smoothstep weights, evaluated at
// single points (the smooth-layer grid).

class ValueNoise {
 public:
  ValueNoise(Rng& rng, int width, int height, int cell)
      : cell_(cell), ox_(rng.Uniform(0, cell - 1)), oy_(rng.Uniform(0, cell - 1)) {
    lw_ = (width + ox_) / cell_ + 2;
    const int lh = (height + oy_) / cell_ + 2;
    lattice_.resize(static_cast<size_t>(lw_) * lh);
    for (size_t i = 0; i < lattice_.size(); i += 8) {
      uint64_t bits = rng.Next();
      for (size_t j = i; j < std::min(i + 8, lattice_.size()); ++j) {
        lattice_[j] = static_cast<int8_t>(bits & 0xff);
        bits >>= 8;
      }
    }
    weights_.resize(cell_);
    const int64_t c3 = int64_t{cell_} * cell_ * cell_;
    for (int f = 0; f < cell_; ++f) {
      // 256 * smoothstep(f / cell).
      const int64_t num = 3 * int64_t{f} * f * cell_ - 2 * int64_t{f} * f * f;
      weights_[f] = static_cast<int>(num * 256 / c3);
    }
  }

  // The noise at one point (0 <= x < width, 0 <= y < height), in [-128, 127].
  int At(int x, int y) const {
    const int ix = (x + ox_) / cell_, iy = (y + oy_) / cell_;
    const int wx = weights_[(x + ox_) % cell_], wy = weights_[(y + oy_) % cell_];
    const int8_t* a = &lattice_[static_cast<size_t>(iy) * lw_ + ix];
    const int8_t* b = a + lw_;
    const int top = a[0] * (256 - wx) + a[1] * wx;
    const int bottom = b[0] * (256 - wx) + b[1] * wx;
    return (top * (256 - wy) + bottom * wy) >> 16;
  }

 private:
  int cell_, ox_, oy_, lw_ = 0;
  std::vector<int8_t> lattice_;
  std::vector<int> weights_;
};

// Fine lattice noise: random values in [-128, 127] every 2^kShift pixels,
// interpolated linearly, produced a row at a time.
template <int kShift>
class LatticeNoise {
 public:
  static constexpr int kCell = 1 << kShift;

  LatticeNoise(Rng& rng, int width, int height)
      : width_(width), lw_((width >> kShift) + 2) {
    const int lh = (height >> kShift) + 2;
    lattice_.resize(static_cast<size_t>(lw_) * lh);
    for (size_t i = 0; i < lattice_.size(); i += 8) {
      uint64_t bits = rng.Next();
      for (size_t j = i; j < std::min(i + 8, lattice_.size()); ++j, bits >>= 8) {
        lattice_[j] = static_cast<int8_t>(bits & 0xff);
      }
    }
    row_.resize(lw_);
  }

  // Sets (kAdd: adds to) out[0..width) the noise of row y, scaled so that a
  // lattice value of +-128 gives +-`amplitude` (amplitude < 2^14).
  template <bool kAdd>
  void Row(int y, int amplitude, int* out) {
    const int fy = y & (kCell - 1);
    const int8_t* a = &lattice_[static_cast<size_t>(y >> kShift) * lw_];
    const int8_t* b = a + lw_;
    // row_ is in units of 1 / (kCell * kCell * 128) of `amplitude`.
    for (int i = 0; i < lw_; ++i) row_[i] = (a[i] * (kCell - fy) + b[i] * fy) * amplitude;
    constexpr int kOutShift = 2 * kShift + 7;
    const int* r = row_.data();
    const int full = width_ >> kShift;
    for (int i = 0; i < full; ++i) {
      const int base = r[i] << kShift;
      const int delta = r[i + 1] - r[i];
      int* o = out + (i << kShift);
      for (int k = 0; k < kCell; ++k) {
        const int v = (base + delta * k) >> kOutShift;
        o[k] = kAdd ? o[k] + v : v;
      }
    }
    for (int x = full << kShift; x < width_; ++x) {
      const int k = x & (kCell - 1);
      const int v = ((r[full] << kShift) + (r[full + 1] - r[full]) * k) >> kOutShift;
      out[x] = kAdd ? out[x] + v : v;
    }
  }

 private:
  int width_, lw_;
  std::vector<int8_t> lattice_;
  std::vector<int> row_;
};

// Per-pixel grain comes from tables of random values read at a random offset
// per row, which is much cheaper than a random number per pixel and looks the
// same. The tables hold at least this many values and twice the width.
constexpr int kMinGrainTableSize = 4096;

// Per-row buffers of SynthesizePixels.
struct RowBuffers {
  explicit RowBuffers(int width, int grid_values)
      : rr(width), gg(width), bb(width), noise(width), grid_row(grid_values) {}

  std::vector<int> rr, gg, bb;  // smooth layer and shapes, grey levels
  std::vector<int> noise;       // luminance texture: 1/kNoiseScale levels, then levels
  std::vector<int> grid_row;    // the smooth-layer grid, blended for this row
};

// ---------------------------------------------------------------------------
// Scene description.

struct Blob {
  int cx, cy;
  int64_t r2;    // radius squared
  int strength;  // 0..256
  Rgb color;
};

struct Shape {
  bool ellipse;
  int y0, y1;  // rows covered, clipped to the image
  int cx, cy, rx, ry;
  int alpha;        // 0..256
  Rgb top, bottom;  // vertical gradient inside the shape
};

// Texture amplitudes, peak grey levels. Tuned so that 500x375 images at
// quality 90, 4:4:4 come out at 90-130 KiB, like ImageNet photos (~110 KB).
// The detail, medium, fine and grain terms are further scaled by the
// per-image busyness (5/8..11/8) and a slowly varying gain (1/4..7/4).
constexpr int kMottleAmplitude = 14;       // value noise, cell ~min_side / 12
constexpr int kChromaAmplitude = 8;        // chroma value noise, cell ~min_side / 24
constexpr int kDetailAmplitude = 8;        // random per grid point (8 px; less when small)
constexpr int kMediumAmplitude = 10;       // lattice noise, 4 px cell
constexpr int kFineAmplitude = 20;         // lattice noise, 2 px cell
constexpr int kGrainAmplitude = 14;        // per-pixel noise (triangular)
constexpr int kChromaGrainAmplitude = 12;  // per-pixel chroma noise (uniform)

// Fine noise is accumulated in 1/kNoiseScale grey levels.
constexpr int kNoiseShift = 7;
constexpr int kNoiseScale = 1 << kNoiseShift;

inline int Blend(int dst, int src, int w16) { return dst + (((src - dst) * w16) >> 16); }

// Clamps v to 0..255 (compiles to min/max, which vectorizes; a lookup table
// would not).
inline uint8_t ClampPixel(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

constexpr int kGridChannels = 4;  // r, g, b, gain

// Writes one output row: the smooth layer, interpolated from b.grid_row (grid
// step 2^kStepShift), plus the luminance texture in b.noise scaled by the
// interpolated gain, plus grain (gl, gr, gb: the tables at this row's
// offset). For the shapes to be painted afterwards, leaves the smooth layer
// in b.rr/gg/bb and the scaled luminance noise in b.noise, but only for the
// grid cells that overlap [keep_begin, keep_end).
template <int kStepShift>
void ComposeRow(int width, const int16_t* gl, const int8_t* gr, const int8_t* gb, int keep_begin,
                int keep_end, RowBuffers& b, uint8_t* row) {
  constexpr int kStep = 1 << kStepShift;
  constexpr int kGridShift = 8 + 2 * kStepShift;
  constexpr int kRound = 1 << (kGridShift - 1);
  // Local pointers: stores through `row` may alias anything, so members
  // would be reloaded after each.
  int* const rr = b.rr.data();
  int* const gg = b.gg.data();
  int* const bb = b.bb.data();
  int* const noise = b.noise.data();
  const int* const grid_row = b.grid_row.data();
  const auto cell = [&](int x0, int n_pixels, auto keep) {
    const int* g = &grid_row[(x0 >> kStepShift) * kGridChannels];
    const int r0 = g[0] * kStep + kRound, g0 = g[1] * kStep + kRound;
    const int b0 = g[2] * kStep + kRound;
    const int dr = g[4] - g[0], dg = g[5] - g[1], db = g[6] - g[2];
    // The gain changes so slowly that it is constant over a grid cell.
    const int gain = g[3] >> (kGridShift - kStepShift);
    for (int j = 0; j < n_pixels; ++j) {
      const int x = x0 + j;
      const int n = ((noise[x] + gl[x]) * gain) >> (8 + kNoiseShift);
      const int r = (r0 + dr * j) >> kGridShift;
      const int g1 = (g0 + dg * j) >> kGridShift;
      const int b1 = (b0 + db * j) >> kGridShift;
      if constexpr (decltype(keep)::value) {
        rr[x] = r;
        gg[x] = g1;
        bb[x] = b1;
        noise[x] = n;
      }
      row[3 * x + 0] = ClampPixel(r + n + gr[x]);
      row[3 * x + 1] = ClampPixel(g1 + n - ((gr[x] + gb[x]) >> 1));
      row[3 * x + 2] = ClampPixel(b1 + n + gb[x]);
    }
  };
  const int full = width & ~(kStep - 1);
  for (int x0 = 0; x0 < full; x0 += kStep) {
    if (x0 + kStep > keep_begin && x0 < keep_end) {
      cell(x0, kStep, std::true_type());
    } else {
      cell(x0, kStep, std::false_type());
    }
  }
  if (full < width) cell(full, width - full, std::true_type());
}

}  // namespace

std::vector<uint8_t> SynthesizePixels(int width, int height, uint64_t seed) {
  if (width < 1 || height < 1 || width > kMaxJpegSide || height > kMaxJpegSide) return {};
  const Palette palette = MakePalette(seed >> kClassShift);
  Rng rng(Mix64(seed ^ 0x696d616765736565ULL));
  const int min_side = std::min(width, height);
  const int max_side = std::max(width, height);

  // Background: a linear gradient from colour a to colour b along (gx, gy),
  // t = (gx * x + gy * y - tmin) / (tmax - tmin).
  const Rgb grad_a = PickColor(rng, palette);
  const Rgb grad_b = PickColor(rng, palette);
  const int gx = rng.Uniform(-256, 256);
  const int gy = rng.Uniform(-256, 256);
  int64_t tmin = 0, tmax = 0;
  for (int corner = 0; corner < 4; ++corner) {
    const int64_t t = int64_t{gx} * ((corner & 1) ? width - 1 : 0) +
                      int64_t{gy} * ((corner & 2) ? height - 1 : 0);
    tmin = corner == 0 ? t : std::min(tmin, t);
    tmax = corner == 0 ? t : std::max(tmax, t);
  }
  const int64_t trange = std::max<int64_t>(1, tmax - tmin);

  // Soft blobs over it.
  std::vector<Blob> blobs(rng.Uniform(3, 6));
  for (Blob& b : blobs) {
    b.cx = rng.Uniform(-width / 4, width + width / 4);
    b.cy = rng.Uniform(-height / 4, height + height / 4);
    const int radius = rng.Uniform(std::max(2, min_side / 4), std::max(3, max_side * 4 / 5));
    b.r2 = int64_t{radius} * radius;
    b.strength = rng.Uniform(150, 256);
    b.color = PickColor(rng, palette);
  }

  // Hard-edged rectangles and ellipses, each with a vertical gradient.
  std::vector<Shape> shapes(rng.Uniform(3, 10));
  for (Shape& s : shapes) {
    s.ellipse = rng.Uniform(0, 1) == 1;
    s.rx = rng.Uniform(std::max(1, min_side / 24), std::max(1, min_side / 4));
    s.ry = rng.Uniform(std::max(1, min_side / 24), std::max(1, min_side / 4));
    s.cx = rng.Uniform(0, width - 1);
    s.cy = rng.Uniform(0, height - 1);
    s.y0 = std::max(0, s.cy - s.ry);
    s.y1 = std::min(height - 1, s.cy + s.ry);
    s.alpha = rng.Uniform(140, 256);
    s.top = PickColor(rng, palette);
    s.bottom = {Clamp255(s.top.r + rng.Uniform(-60, 60)), Clamp255(s.top.g + rng.Uniform(-60, 60)),
                Clamp255(s.top.b + rng.Uniform(-60, 60))};
  }

  // Everything smooth is evaluated on a grid every `step` pixels, in 1/256
  // grey levels, and interpolated bilinearly: indistinguishable at these
  // scales and much cheaper than evaluating it per pixel. That is the
  // gradient, the blobs, coarse mottling, chroma noise, detail noise (a random
  // value per grid point) and the gain that makes the texture strong in some
  // regions and faint in others.
  const int step_shift = min_side >= 256 ? 3 : (min_side >= 64 ? 2 : (min_side >= 16 ? 1 : 0));
  const int step = 1 << step_shift;
  const int grid_w = (width - 1) / step + 2;
  const int grid_h = (height - 1) / step + 2;
  ValueNoise mottle(rng, grid_w * step, grid_h * step, std::max(8, min_side / 12));
  ValueNoise mask(rng, grid_w * step, grid_h * step, std::max(16, min_side / 3));
  // How busy this image is overall, like real photos that range from plain
  // to cluttered: scales the texture by 5/8..11/8.
  const int busyness = rng.Uniform(160, 352);
  const int chroma_cell = std::max(2 * step, min_side / 24);
  ValueNoise chroma_u(rng, grid_w * step, grid_h * step, chroma_cell);
  ValueNoise chroma_v(rng, grid_w * step, grid_h * step, chroma_cell);
  std::vector<int> grid(static_cast<size_t>(grid_w) * grid_h * kGridChannels);
  for (int j = 0; j < grid_h; ++j) {
    for (int i = 0; i < grid_w; ++i) {
      const int px = i * step, py = j * step;
      const int64_t t = std::clamp<int64_t>(
          ((int64_t{gx} * px + int64_t{gy} * py - tmin) << 16) / trange, 0, 65536);
      int64_t c[3] = {(int64_t{grad_a.r} << 8) + (((grad_b.r - grad_a.r) * t) >> 8),
                      (int64_t{grad_a.g} << 8) + (((grad_b.g - grad_a.g) * t) >> 8),
                      (int64_t{grad_a.b} << 8) + (((grad_b.b - grad_a.b) * t) >> 8)};
      for (const Blob& b : blobs) {
        const int64_t dx = px - b.cx, dy = py - b.cy;
        const int64_t d2 = dx * dx + dy * dy;
        if (d2 >= b.r2) continue;
        const int64_t u = ((b.r2 - d2) << 16) / b.r2;           // 1 - d^2/r^2
        const int64_t w = (((u * u) >> 16) * b.strength) >> 8;  // 0..65536
        c[0] += (((int64_t{b.color.r} << 8) - c[0]) * w) >> 16;
        c[1] += (((int64_t{b.color.g} << 8) - c[1]) * w) >> 16;
        c[2] += (((int64_t{b.color.b} << 8) - c[2]) * w) >> 16;
      }
      // 1/4..7/4 of the image's busyness, in 1/256.
      const int gain = ((256 + mask.At(px, py) * 3 / 2) * busyness) >> 8;
      const int detail = static_cast<int>(rng.Next() >> 56) - 128;
      // Noise values are in [-128, 127]; *2 scales them to 1/256 levels.
      const int m = mottle.At(px, py) * 2 * kMottleAmplitude +
                    ((detail * 2 * kDetailAmplitude * gain) >> 8);
      const int u = chroma_u.At(px, py) * 2 * kChromaAmplitude;
      const int v = chroma_v.At(px, py) * 2 * kChromaAmplitude;
      int* g = &grid[(static_cast<size_t>(j) * grid_w + i) * kGridChannels];
      g[0] = static_cast<int>(c[0]) + m + v;
      g[1] = static_cast<int>(c[1]) + m - ((u + v) >> 1);
      g[2] = static_cast<int>(c[2]) + m + u;
      g[3] = gain << 8;  // interpolates back to gain in 1/256
    }
  }

  // Fine texture: lattice noise at 4 and 2 pixels, and grain.
  LatticeNoise<2> medium(rng, width, height);
  LatticeNoise<1> fine(rng, width, height);
  int grain_size = kMinGrainTableSize;
  while (grain_size < 2 * width) grain_size *= 2;
  std::vector<int16_t> grain_l(grain_size);  // luminance, 1/kNoiseScale levels
  std::vector<int8_t> grain_r(grain_size), grain_b(grain_size);  // chroma, levels
  for (int i = 0; i < grain_size; ++i) {
    const uint64_t bits = rng.Next();
    const int g1 = static_cast<int>(bits & 0xff), g2 = static_cast<int>((bits >> 8) & 0xff);
    grain_l[i] = static_cast<int16_t>((g1 + g2 - 255) * (kGrainAmplitude * kNoiseScale) / 256);
    grain_r[i] = static_cast<int8_t>(
        ((static_cast<int>((bits >> 16) & 0xff) - 128) * kChromaGrainAmplitude) >> 7);
    grain_b[i] = static_cast<int8_t>(
        ((static_cast<int>((bits >> 24) & 0xff) - 128) * kChromaGrainAmplitude) >> 7);
  }

  std::vector<uint8_t> out(static_cast<size_t>(width) * height * 3);
  RowBuffers buf(width, grid_w * kGridChannels);
  struct Span {
    const Shape* shape;
    int begin, last;  // pixels covered on the current row, inclusive
  };
  std::vector<Span> spans;
  spans.reserve(shapes.size());
  for (int y = 0; y < height; ++y) {
    // Luminance texture, in 1/kNoiseScale grey levels.
    medium.Row<false>(y, kMediumAmplitude * kNoiseScale, buf.noise.data());
    fine.Row<true>(y, kFineAmplitude * kNoiseScale, buf.noise.data());
    // The smooth layer's grid, blended between the two grid rows around y.
    const int fy = y & (step - 1);
    const int* g0 = &grid[static_cast<size_t>(y >> step_shift) * grid_w * kGridChannels];
    const int* g1 = g0 + grid_w * kGridChannels;
    for (int i = 0; i < grid_w * kGridChannels; ++i) {
      buf.grid_row[i] = g0[i] * (step - fy) + g1[i] * fy;
    }
    // The shapes' spans on this row.
    spans.clear();
    int keep_begin = width, keep_end = 0;
    for (const Shape& s : shapes) {
      if (y < s.y0 || y > s.y1) continue;
      int half = s.rx;
      if (s.ellipse) {
        const int64_t dy = y - s.cy;
        const int64_t ry2 = int64_t{s.ry} * s.ry;
        half = static_cast<int>(static_cast<double>(s.rx) *
                                std::sqrt(static_cast<double>(ry2 - dy * dy) /
                                          static_cast<double>(ry2)));
      }
      const Span span = {&s, std::max(0, s.cx - half), std::min(width - 1, s.cx + half)};
      spans.push_back(span);
      keep_begin = std::min(keep_begin, span.begin);
      keep_end = std::max(keep_end, span.last + 1);
    }
    uint8_t* row = &out[static_cast<size_t>(y) * width * 3];
    const int grain_offset = rng.Uniform(0, grain_size - width);
    const int16_t* gl = grain_l.data() + grain_offset;
    const int8_t* gr = grain_r.data() + grain_offset;
    const int8_t* gb = grain_b.data() + grain_offset;
    switch (step_shift) {
      case 0: ComposeRow<0>(width, gl, gr, gb, keep_begin, keep_end, buf, row); break;
      case 1: ComposeRow<1>(width, gl, gr, gb, keep_begin, keep_end, buf, row); break;
      case 2: ComposeRow<2>(width, gl, gr, gb, keep_begin, keep_end, buf, row); break;
      default: ComposeRow<3>(width, gl, gr, gb, keep_begin, keep_end, buf, row); break;
    }
    // Shapes, under the noise: repaint the pixels they cover.
    int* const rr = buf.rr.data();
    int* const gg = buf.gg.data();
    int* const bb = buf.bb.data();
    const int* const noise = buf.noise.data();
    for (const Span& span : spans) {
      const Shape& s = *span.shape;
      const int v = static_cast<int>(((int64_t{y} - (s.cy - s.ry)) << 16) / (2 * s.ry + 1));
      const Rgb c = {Blend(s.top.r, s.bottom.r, v), Blend(s.top.g, s.bottom.g, v),
                     Blend(s.top.b, s.bottom.b, v)};
      const int w = s.alpha << 8;
      for (int x = span.begin; x <= span.last; ++x) {
        rr[x] = Blend(rr[x], c.r, w);
        gg[x] = Blend(gg[x], c.g, w);
        bb[x] = Blend(bb[x], c.b, w);
        row[3 * x + 0] = ClampPixel(rr[x] + noise[x] + gr[x]);
        row[3 * x + 1] = ClampPixel(gg[x] + noise[x] - ((gr[x] + gb[x]) >> 1));
        row[3 * x + 2] = ClampPixel(bb[x] + noise[x] + gb[x]);
      }
    }
  }
  return out;
}

std::vector<uint8_t> SynthesizeJpeg(int width, int height, uint64_t seed, int quality,
                                    int subsampling) {
  if (quality < 1 || quality > 100) return {};
  if (subsampling != 444 && subsampling != 422 && subsampling != 420) return {};
  const std::vector<uint8_t> pixels = SynthesizePixels(width, height, seed);
  if (pixels.empty()) return {};
  std::vector<uint8_t> jpeg;
  const RgbView view{pixels.data(), width, height, static_cast<std::ptrdiff_t>(width) * 3};
  if (!EncodeJpeg(view, quality, subsampling, &jpeg).ok()) return {};
  return jpeg;
}

SynthImageSpec SynthImageSpecFor(const SynthOptions& options, int class_index,
                                 int image_index) {
  const uint64_t class_key =
      Mix64(options.seed ^ 0x636c617373657321ULL) + static_cast<uint64_t>(class_index);
  SynthImageSpec spec;
  spec.seed = (class_key << kClassShift) |
              (static_cast<uint64_t>(image_index) & ((uint64_t{1} << kClassShift) - 1));
  Rng rng(Mix64(spec.seed ^ 0x73697a6573697a65ULL));
  const auto scaled = [&rng](int side) {
    const int64_t permille = rng.Uniform(800, 1200);
    return static_cast<int>(std::clamp<int64_t>((side * permille + 500) / 1000, 1, kMaxJpegSide));
  };
  spec.width = scaled(options.width);
  spec.height = scaled(options.height);
  if (rng.Uniform(0, 5) == 0) std::swap(spec.width, spec.height);
  spec.subsampling = rng.Uniform(0, 3) == 0 ? 420 : 444;
  return spec;
}

namespace {

Status WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return IoError("cannot open " + path + " for writing: " + std::strerror(errno));
  }
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int write_errno = errno;
  if (written != bytes.size()) {
    std::fclose(f);
    return IoError("cannot write " + path + ": " + std::strerror(write_errno));
  }
  if (std::fclose(f) != 0) {
    return IoError("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::OK();
}

Status CreateDirectories(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return IoError("cannot create directory " + path.string() + ": " + ec.message());
  if (!std::filesystem::is_directory(path, ec)) {
    return IoError("cannot create directory " + path.string() + ": not a directory");
  }
  return Status::OK();
}

std::string Numbered(const char* prefix, int width, int64_t n, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s%0*lld%s", prefix, width, static_cast<long long>(n),  // NOLINT
                suffix);
  return buf;
}

}  // namespace

StatusOr<int64_t> WriteSyntheticImageFolder(const std::string& dir,
                                            const SynthOptions& options) {
  if (dir.empty()) return InvalidArgumentError("synthetic image folder: empty directory name");
  if (options.classes < 0 || options.images_per_class < 0 ||
      options.images_per_class > kSynthMaxImagesPerClass) {
    return InvalidArgumentError("synthetic image folder: need 0 <= classes and 0 <= "
                                "images_per_class <= " +
                                std::to_string(kSynthMaxImagesPerClass) + ", got " +
                                std::to_string(options.classes) + " and " +
                                std::to_string(options.images_per_class));
  }
  if (options.width < 1 || options.height < 1 || options.width > kSynthMaxSide ||
      options.height > kSynthMaxSide) {
    return InvalidArgumentError("synthetic image folder: width and height must be in 1.." +
                                std::to_string(kSynthMaxSide) + ", got " +
                                std::to_string(options.width) + "x" +
                                std::to_string(options.height));
  }
  if (options.quality < 1 || options.quality > 100) {
    return InvalidArgumentError("synthetic image folder: quality must be in 1..100, got " +
                                std::to_string(options.quality));
  }

  const std::filesystem::path root(dir);
  STOKER_RETURN_IF_ERROR(CreateDirectories(root));
  const int64_t total = int64_t{options.classes} * options.images_per_class;
  const bool show_progress = options.progress && isatty(STDERR_FILENO) == 1;
  int64_t written = 0;
  int last_percent = -1;
  for (int c = 0; c < options.classes; ++c) {
    const std::filesystem::path class_dir = root / Numbered("class_", 3, c, "");
    STOKER_RETURN_IF_ERROR(CreateDirectories(class_dir));
    for (int i = 0; i < options.images_per_class; ++i) {
      const SynthImageSpec spec = SynthImageSpecFor(options, c, i);
      const std::vector<uint8_t> jpeg =
          SynthesizeJpeg(spec.width, spec.height, spec.seed, options.quality, spec.subsampling);
      const std::string path =
          (class_dir / Numbered("img_", 6, int64_t{c} * options.images_per_class + i, ".jpg"))
              .string();
      if (jpeg.empty()) return InternalError("cannot encode synthetic image " + path);
      STOKER_RETURN_IF_ERROR(WriteFile(path, jpeg));
      ++written;
      if (show_progress) {
        const int percent = static_cast<int>(written * 100 / total);
        if (percent != last_percent || written == total) {
          last_percent = percent;
          std::fprintf(stderr, "\rsynthesizing images: %lld/%lld (%d%%)",  // NOLINT
                       static_cast<long long>(written), static_cast<long long>(total), percent);
          std::fflush(stderr);
        }
      }
    }
  }
  if (show_progress && total > 0) std::fprintf(stderr, "\n");
  return written;
}

}  // namespace stoker
