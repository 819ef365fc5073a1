// Copyright 2026 The stoker Authors.
#include "ops/warp.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "ops/geometry.h"

namespace stoker {
namespace {

// CPython's math.radians constant.
constexpr double kDegToRad = M_PI / 180.0;

// Pillow's COORD / FLOOR macros (Geometry.c), defined for every double: a
// coordinate no int holds (an extreme RandomAffine scale maps pixels to
// +-1e300, or inf - inf = NaN) becomes INT_MIN or INT_MAX, outside every
// image, where the C cast is undefined.
constexpr double kIntMaxD = static_cast<double>(std::numeric_limits<int>::max());
constexpr double kIntMinD = static_cast<double>(std::numeric_limits<int>::min());
inline int Coord(double v) {
  if (v < 0.0) return -1;
  return v < kIntMaxD ? static_cast<int>(v) : std::numeric_limits<int>::max();
}
inline int Floor(double v) {
  if (v < 0.0) {
    return v > kIntMinD ? static_cast<int>(std::floor(v)) : std::numeric_limits<int>::min();
  }
  return v < kIntMaxD ? static_cast<int>(v) : std::numeric_limits<int>::max();
}

// Python's float % (result has the divisor's sign).
double PyMod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0.0) {
    if ((m < 0) != (r < 0)) r += m;
  } else {
    r = std::copysign(0.0, m);
  }
  return r;
}

// Python's round(x, 15): the double nearest the correctly rounded decimal.
double Round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15f", x);
  return std::strtod(buf, nullptr);
}

template <int B>
inline void Put(uint8_t* out, const uint8_t* in) {
  std::memcpy(out, in, B);
}

inline uint8_t* RowOf(const PixelPlane& p, int y) { return p.data + y * p.stride; }

void FillPlane(const PixelPlane& img, const uint8_t* fill) {
  for (int y = 0; y < img.height; ++y) {
    uint8_t* o = RowOf(img, y);
    for (int x = 0; x < img.width; ++x) std::memcpy(o + img.bpp * x, fill, img.bpp);
  }
}

// Copies `img` to `scratch` (same size and bpp) and fills `img`:
// Image.transform's new(mode, size, fillcolor) before the transform writes
// the pixels it maps.
void Prepare(const uint8_t* fill, const PixelPlane& img, const PixelPlane& scratch) {
  const size_t row = static_cast<size_t>(img.width) * img.bpp;
  for (int y = 0; y < img.height; ++y) std::memcpy(RowOf(scratch, y), RowOf(img, y), row);
  FillPlane(img, fill);
}

// ImagingTransformAffine with NEAREST: `src` -> `dst` (same size, already
// filled), a = the inverse matrix (output -> input).
template <int B>
void AffineNearest(const PixelPlane& src, const double a[6], const PixelPlane& dst) {
  const int w = dst.width, h = dst.height;
  const int xsize = src.width, ysize = src.height;
  if (a[1] == 0 && a[3] == 0) {  // ImagingScaleAffine
    std::vector<int> xintab(static_cast<size_t>(w), 0);
    double xo = a[2] + a[0] * 0.5;
    double yo = a[5] + a[4] * 0.5;
    int xmin = w, xmax = 0;
    for (int x = 0; x < w; ++x) {
      const int xin = Coord(xo);
      if (xin >= 0 && xin < xsize) {
        xmax = x + 1;
        if (x < xmin) xmin = x;
        xintab[x] = xin;
      }
      xo += a[0];
    }
    for (int y = 0; y < h; ++y) {
      const int yi = Coord(yo);
      if (yi >= 0 && yi < ysize) {
        const uint8_t* in = RowOf(src, yi);
        uint8_t* out = RowOf(dst, y);
        for (int x = xmin; x < xmax; ++x) Put<B>(out + B * x, in + B * xintab[x]);
      }
      yo += a[4];
    }
    return;
  }
  auto check_fixed = [&](int x, int y) {
    return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
           std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
  };
  if (check_fixed(0, 0) && check_fixed(w, h) && check_fixed(0, h) && check_fixed(w, 0)) {
    auto fix = [](double v) { return Floor(v * 65536.0 + 0.5); };
    const int a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
    int a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
    int a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int y = 0; y < h; ++y) {
      int xx = a2, yy = a5;
      uint8_t* out = RowOf(dst, y);
      for (int x = 0; x < w; ++x) {
        const int xin = xx >> 16;
        if (xin >= 0 && xin < xsize) {
          const int yin = yy >> 16;
          if (yin >= 0 && yin < ysize) Put<B>(out + B * x, RowOf(src, yin) + B * xin);
        }
        xx += a0;
        yy += a3;
      }
      a2 += a1;
      a5 += a4;
    }
    return;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < h; ++y) {
    double xx = xo, yy = yo;
    uint8_t* out = RowOf(dst, y);
    for (int x = 0; x < w; ++x) {
      const int xin = Coord(xx);
      if (xin >= 0 && xin < xsize) {
        const int yin = Coord(yy);
        if (yin >= 0 && yin < ysize) Put<B>(out + B * x, RowOf(src, yin) + B * xin);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// Geometry.c nearest_filter32 / bilinear_filter32RGB at (xin, yin); false
// when the point is outside the source (the pixel keeps its fill).
template <int B>
inline bool NearestAt(const PixelPlane& src, double xin, double yin, uint8_t* out) {
  const int x = Coord(xin), y = Coord(yin);
  if (x < 0 || x >= src.width || y < 0 || y >= src.height) return false;
  Put<B>(out, RowOf(src, y) + B * x);
  return true;
}

inline bool BilinearAt(const PixelPlane& src, double xin, double yin, uint8_t* out) {
  const int xsize = src.width, ysize = src.height;
  if (!(xin >= 0.0 && xin < xsize && yin >= 0.0 && yin < ysize)) return false;  // NaN too
  xin -= 0.5;
  yin -= 0.5;
  const int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  auto xclip = [&](int v) { return v < 0 ? 0 : v < xsize ? v : xsize - 1; };
  auto yclip = [&](int v) { return v < 0 ? 0 : v < ysize ? v : ysize - 1; };
  const int x0 = xclip(x) * 3, x1 = xclip(x + 1) * 3;
  const uint8_t* r0 = RowOf(src, yclip(y));
  const bool has_r1 = y + 1 >= 0 && y + 1 < ysize;
  const uint8_t* r1 = has_r1 ? RowOf(src, y + 1) : nullptr;
  for (int b = 0; b < 3; ++b) {
    double v1 = r0[x0 + b] + (static_cast<int>(r0[x1 + b]) - r0[x0 + b]) * dx;
    double v2 = v1;
    if (has_r1) v2 = r1[x0 + b] + (static_cast<int>(r1[x1 + b]) - r1[x0 + b]) * dx;
    v1 = v1 + (v2 - v1) * dy;
    out[b] = static_cast<uint8_t>(v1);
  }
  return true;
}

// Geometry.c bicubic_filter32RGB.
inline double Bicubic(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

inline bool BicubicAt(const PixelPlane& src, double xin, double yin, uint8_t* out) {
  const int xsize = src.width, ysize = src.height;
  if (!(xin >= 0.0 && xin < xsize && yin >= 0.0 && yin < ysize)) return false;  // NaN too
  xin -= 0.5;
  yin -= 0.5;
  int x = Floor(xin), y = Floor(yin);
  const double dx = xin - x, dy = yin - y;
  --x;
  --y;
  auto xclip = [&](int v) { return v < 0 ? 0 : v < xsize ? v : xsize - 1; };
  auto yclip = [&](int v) { return v < 0 ? 0 : v < ysize ? v : ysize - 1; };
  const int xs[4] = {xclip(x) * 3, xclip(x + 1) * 3, xclip(x + 2) * 3, xclip(x + 3) * 3};
  for (int b = 0; b < 3; ++b) {
    auto row = [&](const uint8_t* in) {
      return Bicubic(in[xs[0] + b], in[xs[1] + b], in[xs[2] + b], in[xs[3] + b], dx);
    };
    double v[4];
    v[0] = row(RowOf(src, yclip(y)));
    for (int k = 1; k < 4; ++k) {
      v[k] = (y + k >= 0 && y + k < ysize) ? row(RowOf(src, y + k)) : v[k - 1];
    }
    const double r = Bicubic(v[0], v[1], v[2], v[3], dy);
    out[b] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : static_cast<uint8_t>(r);
  }
  return true;
}

// ImagingGenericTransform: `map(x, y, &xin, &yin)` per output pixel.
// BILINEAR and BICUBIC: RGB planes only (bpp 3).
template <int B, typename Map>
void GenericTransform(const PixelPlane& src, int interpolation, Map map, const PixelPlane& dst) {
  const bool bilinear = B == 3 && interpolation == kPilBilinear;
  const bool bicubic = B == 3 && interpolation == kPilBicubic;
  for (int y = 0; y < dst.height; ++y) {
    uint8_t* out = RowOf(dst, y);
    for (int x = 0; x < dst.width; ++x) {
      double xx, yy;
      map(x, y, &xx, &yy);
      if (bicubic) {
        BicubicAt(src, xx, yy, out + B * x);
      } else if (bilinear) {
        BilinearAt(src, xx, yy, out + B * x);
      } else {
        NearestAt<B>(src, xx, yy, out + B * x);
      }
    }
  }
}

template <int B>
void TransposeRotate(WarpStep::Kind kind, const PixelPlane& src, const PixelPlane& dst) {
  const int w = dst.width, h = dst.height;
  for (int r = 0; r < h; ++r) {
    uint8_t* out = RowOf(dst, r);
    for (int c = 0; c < w; ++c) {
      int sr, sc;
      if (kind == WarpStep::kRotate180) {
        sr = h - 1 - r, sc = w - 1 - c;
      } else if (kind == WarpStep::kRotate90) {  // ROTATE_90: out[W-1-x][y] = in[y][x]
        sr = c, sc = w - 1 - r;
      } else {  // ROTATE_270: out[x][H-1-y] = in[y][x]
        sr = h - 1 - c, sc = r;
      }
      Put<B>(out + B * c, RowOf(src, sr) + B * sc);
    }
  }
}

template <int B>
void ApplyWarpT(const WarpStep& step, int interpolation, const uint8_t* fill,
                const PixelPlane& img, const PixelPlane& scratch) {
  if (step.kind == WarpStep::kIdentity) return;
  if (step.kind == WarpStep::kRotate90 || step.kind == WarpStep::kRotate180 ||
      step.kind == WarpStep::kRotate270) {
    const size_t row = static_cast<size_t>(img.width) * B;
    for (int y = 0; y < img.height; ++y) std::memcpy(RowOf(scratch, y), RowOf(img, y), row);
    TransposeRotate<B>(step.kind, scratch, img);
    return;
  }
  Prepare(fill, img, scratch);
  const double* a = step.m;
  if (step.kind == WarpStep::kAffine) {
    if (interpolation == kPilNearest || B != 3) {
      AffineNearest<B>(scratch, a, img);
      return;
    }
    GenericTransform<B>(scratch, interpolation,
                        [a](int x, int y, double* xo, double* yo) {
                          const double xin = x + 0.5, yin = y + 0.5;
                          *xo = a[0] * xin + a[1] * yin + a[2];
                          *yo = a[3] * xin + a[4] * yin + a[5];
                        },
                        img);
    return;
  }
  GenericTransform<B>(scratch, interpolation,
                      [a](int x, int y, double* xo, double* yo) {
                        const double xin = x + 0.5, yin = y + 0.5;
                        *xo = (a[0] * xin + a[1] * yin + a[2]) / (a[6] * xin + a[7] * yin + 1);
                        *yo = (a[3] * xin + a[4] * yin + a[5]) / (a[6] * xin + a[7] * yin + 1);
                      },
                      img);
}

PixelPlane PlaneOf(RgbImage* img) {
  return PixelPlane{img->data(), img->width(), img->height(), img->stride(), 3};
}

// Runs `step` on the RGB image (scratch resized to it).
void ApplyToRgb(const WarpStep& step, int interpolation, const std::array<uint8_t, 3>& fill,
                RgbImage* img, RgbImage* scratch) {
  scratch->Resize(img->width(), img->height());
  ApplyWarpStep(step, interpolation, fill.data(), PlaneOf(img), PlaneOf(scratch));
}

}  // namespace

WarpKind WarpKindOf(const Transform& t) {
  if (t.name() == "RandomRotation") return WarpKind::kRotation;
  if (t.name() == "RandomAffine") return WarpKind::kAffine;
  return WarpKind::kPerspective;
}

void ApplyWarpStep(const WarpStep& step, int interpolation, const uint8_t* fill,
                   const PixelPlane& img, const PixelPlane& scratch) {
  switch (img.bpp) {
    case 1:
      ApplyWarpT<1>(step, interpolation, fill, img, scratch);
      break;
    case 2:
      ApplyWarpT<2>(step, interpolation, fill, img, scratch);
      break;
    default:
      ApplyWarpT<3>(step, interpolation, fill, img, scratch);
      break;
  }
}

void ResizeNearest(const PixelPlane& src, const PixelPlane& dst) {
  // Image.resize(size, NEAREST): ImagingTransform(AFFINE) with the scale
  // matrix, i.e. ImagingScaleAffine; the same size is a copy.
  if (src.width == dst.width && src.height == dst.height) {
    const size_t row = static_cast<size_t>(src.width) * src.bpp;
    for (int y = 0; y < src.height; ++y) std::memcpy(RowOf(dst, y), RowOf(src, y), row);
    return;
  }
  const double a[6] = {static_cast<double>(src.width) / dst.width, 0, 0, 0,
                       static_cast<double>(src.height) / dst.height, 0};
  switch (src.bpp) {
    case 1:
      AffineNearest<1>(src, a, dst);
      break;
    case 2:
      AffineNearest<2>(src, a, dst);
      break;
    default:
      AffineNearest<3>(src, a, dst);
      break;
  }
}

void PilAffine(const double a[6], int interpolation, const std::array<uint8_t, 3>& fill,
               RgbImage* img, RgbImage* scratch) {
  WarpStep step;
  step.kind = WarpStep::kAffine;
  std::copy(a, a + 6, step.m);
  ApplyToRgb(step, interpolation, fill, img, scratch);
}

void PilPerspective(const double a[8], int interpolation, const std::array<uint8_t, 3>& fill,
                    RgbImage* img, RgbImage* scratch) {
  WarpStep step;
  step.kind = WarpStep::kPerspective;
  std::copy(a, a + 8, step.m);
  ApplyToRgb(step, interpolation, fill, img, scratch);
}

WarpStep RotateStep(double angle, bool has_center, double cx, double cy, int w, int h) {
  WarpStep step;
  angle = PyMod(angle, 360.0);
  if (!has_center) {
    if (angle == 0) return step;
    if (angle == 180) {
      step.kind = WarpStep::kRotate180;
      return step;
    }
    if ((angle == 90 || angle == 270) && w == h) {
      step.kind = angle == 90 ? WarpStep::kRotate90 : WarpStep::kRotate270;
      return step;
    }
    cx = w / 2.0;
    cy = h / 2.0;
  }
  const double t = -(angle * kDegToRad);
  double* m = step.m;
  m[0] = Round15(std::cos(t));
  m[1] = Round15(std::sin(t));
  m[2] = 0.0;
  m[3] = Round15(-std::sin(t));
  m[4] = Round15(std::cos(t));
  m[5] = 0.0;
  const double x = -cx - 0, y = -cy - 0;
  const double m2 = m[0] * x + m[1] * y + m[2];
  const double m5 = m[3] * x + m[4] * y + m[5];
  m[2] = m2 + cx;
  m[5] = m5 + cy;
  step.kind = WarpStep::kAffine;
  return step;
}

void PilRotate(double angle, int interpolation, bool has_center, double cx, double cy,
               const std::array<uint8_t, 3>& fill, RgbImage* img, RgbImage* scratch) {
  ApplyToRgb(RotateStep(angle, has_center, cx, cy, img->width(), img->height()), interpolation,
             fill, img, scratch);
}

WarpStep AffineStep(double angle, double tx, double ty, double scale, double shear_x,
                    double shear_y, bool has_center, double cx, double cy, int w, int h) {
  if (!has_center) {
    cx = w * 0.5;
    cy = h * 0.5;
  }
  const double rot = angle * kDegToRad;
  const double sx = shear_x * kDegToRad;
  const double sy = shear_y * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  WarpStep step;
  step.kind = WarpStep::kAffine;
  double* m = step.m;
  const double init[6] = {d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  std::copy(init, init + 6, m);
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return step;
}

void TorchvisionAffine(double angle, double tx, double ty, double scale, double shear_x,
                       double shear_y, bool has_center, double cx, double cy, int interpolation,
                       const std::array<uint8_t, 3>& fill, RgbImage* img, RgbImage* scratch) {
  ApplyToRgb(AffineStep(angle, tx, ty, scale, shear_x, shear_y, has_center, cx, cy,
                        img->width(), img->height()),
             interpolation, fill, img, scratch);
}

bool WarpPoint(const WarpStep& step, int w, int h, double* x, double* y) {
  const double px = *x, py = *y;
  const double* m = step.m;
  switch (step.kind) {
    case WarpStep::kIdentity:
      return true;
    case WarpStep::kRotate180:
      *x = w - px;
      *y = h - py;
      return true;
    case WarpStep::kRotate90:  // counter-clockwise about the centre of a square
      *x = py;
      *y = w - px;
      return true;
    case WarpStep::kRotate270:
      *x = h - py;
      *y = px;
      return true;
    case WarpStep::kAffine: {
      // The inverse of the output -> input matrix.
      const double det = m[0] * m[4] - m[1] * m[3];
      if (det == 0.0 || !std::isfinite(det)) return false;
      const double u = px - m[2], v = py - m[5];
      *x = (m[4] * u - m[1] * v) / det;
      *y = (-m[3] * u + m[0] * v) / det;
      return std::isfinite(*x) && std::isfinite(*y);
    }
    case WarpStep::kPerspective: {
      // torchvision v2's perspective_bounding_boxes: the inverse coefficients.
      const double denom = m[0] * m[4] - m[1] * m[3];
      if (denom == 0.0) return false;
      const double i0 = (m[4] - m[5] * m[7]) / denom;
      const double i1 = (-m[1] + m[2] * m[7]) / denom;
      const double i2 = (m[1] * m[5] - m[2] * m[4]) / denom;
      const double i3 = (-m[3] + m[5] * m[6]) / denom;
      const double i4 = (m[0] - m[2] * m[6]) / denom;
      const double i5 = (-m[0] * m[5] + m[2] * m[3]) / denom;
      const double i6 = (-m[4] * m[6] + m[3] * m[7]) / denom;
      const double i7 = (-m[0] * m[7] + m[1] * m[6]) / denom;
      const double q = i6 * px + i7 * py + 1.0;
      *x = (i0 * px + i1 * py + i2) / q;
      *y = (i3 * px + i4 * py + i5) / q;
      return std::isfinite(*x) && std::isfinite(*y);
    }
  }
  return false;
}

void PerspectiveCoeffs(const double start[8], const double end[8], double coeffs[8]) {
  // Rows as torchvision builds them (p1 = endpoint, p2 = startpoint); the
  // right-hand side is the startpoints.
  double m[8][9];
  for (int i = 0; i < 4; ++i) {
    const double x1 = end[2 * i], y1 = end[2 * i + 1];
    const double x2 = start[2 * i], y2 = start[2 * i + 1];
    const double r0[9] = {x1, y1, 1, 0, 0, 0, -x2 * x1, -x2 * y1, x2};
    const double r1[9] = {0, 0, 0, x1, y1, 1, -y2 * x1, -y2 * y1, y2};
    std::memcpy(m[2 * i], r0, sizeof r0);
    std::memcpy(m[2 * i + 1], r1, sizeof r1);
  }
  // Gaussian elimination with partial pivoting.
  for (int col = 0; col < 8; ++col) {
    int piv = col;
    for (int r = col + 1; r < 8; ++r) {
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
    }
    if (piv != col) {
      for (int k = 0; k < 9; ++k) std::swap(m[piv][k], m[col][k]);
    }
    const double p = m[col][col];
    if (p == 0.0) continue;  // degenerate quad: left as torchvision's lstsq would not be
    for (int r = col + 1; r < 8; ++r) {
      const double f = m[r][col] / p;
      if (f == 0.0) continue;
      for (int k = col; k < 9; ++k) m[r][k] -= f * m[col][k];
    }
  }
  double x[8];
  for (int r = 7; r >= 0; --r) {
    double s = m[r][8];
    for (int k = r + 1; k < 8; ++k) s -= m[r][k] * x[k];
    x[r] = m[r][r] != 0.0 ? s / m[r][r] : 0.0;
  }
  for (int i = 0; i < 8; ++i) coeffs[i] = static_cast<float>(x[i]);
}

int DrawWarpParams(WarpKind kind, const Transform& t, int width, int height, Rng* rng,
                   double* out) {
  // torch.empty(1).uniform_(lo, hi) is float32.
  auto uniform = [rng](double lo, double hi) {
    return static_cast<double>(static_cast<float>(UniformBetween(rng, lo, hi)));
  };
  // An angle, drawn as uniform() draws; one that float32 cannot hold (bounds
  // like +-1e308, which torch refuses) is first reduced modulo 360, exactly,
  // as Image.rotate reduces every angle, instead of becoming infinite (every
  // image black); a non-finite one (infinite bounds) is 0.
  auto angle = [rng](double lo, double hi) {
    const double a = UniformBetween(rng, lo, hi);
    if (!std::isfinite(a)) return 0.0;
    float f = static_cast<float>(a);
    if (std::isinf(f)) f = static_cast<float>(std::fmod(a, 360.0));
    return static_cast<double>(f);
  };
  if (kind == WarpKind::kRotation) {
    out[0] = angle(t.degrees[0], t.degrees[1]);
    return 1;
  }
  if (kind == WarpKind::kAffine) {
    // RandomAffine.get_params(degrees, translate, scale, shear, [width, height]).
    out[0] = angle(t.degrees[0], t.degrees[1]);
    const double max_dx = t.translate[0] * width, max_dy = t.translate[1] * height;
    out[1] = std::nearbyint(uniform(-max_dx, max_dx));  // int(round(.)), half to even
    out[2] = std::nearbyint(uniform(-max_dy, max_dy));
    out[3] = uniform(t.affine_scale[0], t.affine_scale[1]);
    out[4] = uniform(t.shear[0], t.shear[1]);
    out[5] = uniform(t.shear[2], t.shear[3]);
    return 6;
  }
  // RandomPerspective.forward: torch.rand(1) < p, then get_params.
  for (int i = 0; i < 9; ++i) out[i] = 0.0;
  if (!(static_cast<float>(rng->Uniform()) < t.p)) return 9;
  out[0] = 1.0;
  const int hw = width / 2, hh = height / 2;
  const int dx = static_cast<int>(t.distortion_scale * hw);
  const int dy = static_cast<int>(t.distortion_scale * hh);
  // torch.randint(lo, hi): uniform over [lo, hi).
  auto randint = [rng](int lo, int hi) {
    return static_cast<double>(lo + static_cast<int>(rng->Below(static_cast<uint64_t>(hi - lo))));
  };
  out[1] = randint(0, dx + 1);  // top-left
  out[2] = randint(0, dy + 1);
  out[3] = randint(width - dx - 1, width);  // top-right
  out[4] = randint(0, dy + 1);
  out[5] = randint(width - dx - 1, width);  // bottom-right
  out[6] = randint(height - dy - 1, height);
  out[7] = randint(0, dx + 1);  // bottom-left
  out[8] = randint(height - dy - 1, height);
  return 9;
}

void DrawWarp(const Transform& t, Rng* rng, int width, int height, WarpStep* step) {
  const WarpKind kind = WarpKindOf(t);
  double p[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  DrawWarpParams(kind, t, width, height, rng, p);
  *step = WarpStep();
  if (kind == WarpKind::kRotation) {
    *step = RotateStep(p[0], t.has_center, t.center[0], t.center[1], width, height);
  } else if (kind == WarpKind::kAffine) {
    *step = AffineStep(p[0], p[1], p[2], p[3], p[4], p[5], t.has_center, t.center[0],
                       t.center[1], width, height);
  } else if (p[0] != 0.0) {
    const double w1 = width - 1, h1 = height - 1;
    const double start[8] = {0, 0, w1, 0, w1, h1, 0, h1};
    step->kind = WarpStep::kPerspective;
    PerspectiveCoeffs(start, p + 1, step->m);
  }
  std::copy(p, p + 9, step->params);
}

void ApplyDrawnWarp(const Transform& t, const WarpStep& step, RgbImage* img, RgbImage* scratch) {
  const std::array<uint8_t, 3> fill = {static_cast<uint8_t>(t.fill[0]),
                                       static_cast<uint8_t>(t.fill[1]),
                                       static_cast<uint8_t>(t.fill[2])};
  ApplyToRgb(step, t.interpolation, fill, img, scratch);
}

namespace {

void ApplyWarp(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  WarpStep step;
  DrawWarp(t, rng, img->width(), img->height(), &step);
  ApplyDrawnWarp(t, step, img, scratch);
}

}  // namespace

void ApplyRandomRotation(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyWarp(t, rng, img, scratch);
}
void ApplyRandomAffine(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyWarp(t, rng, img, scratch);
}
void ApplyRandomPerspective(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  ApplyWarp(t, rng, img, scratch);
}

}  // namespace stoker
