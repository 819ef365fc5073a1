// Copyright 2026 The stoker Authors.
#include "ops/autoaugment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/color.h"

namespace stoker {
namespace {

// CPython's math.radians / math.degrees constants.
constexpr double kDegToRad = M_PI / 180.0;
constexpr double kRadToDeg = 180.0 / M_PI;

// Pillow's COORD / FLOOR macros (Geometry.c).
inline int Coord(double v) { return v < 0.0 ? -1 : static_cast<int>(v); }
inline int Floor(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

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

// torch.linspace(start, end, steps)[i] in float32 (ATen's CPU kernel: the
// first half counts up from start, the second half down from end).
float LinspaceF(double start_d, double end_d, int steps, int i) {
  const float start = static_cast<float>(start_d), end = static_cast<float>(end_d);
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  return i < halfway ? start + step * static_cast<float>(i)
                     : end - step * static_cast<float>(steps - i - 1);
}

inline void Put(uint8_t* out, const uint8_t* in) {
  out[0] = in[0];
  out[1] = in[1];
  out[2] = in[2];
}

void FillImage(RgbImage* img, const std::array<uint8_t, 3>& fill) {
  for (int y = 0; y < img->height(); ++y) {
    uint8_t* o = img->row(y);
    for (int x = 0; x < img->width(); ++x) Put(o + 3 * x, fill.data());
  }
}

// ImagingTransformAffine with NEAREST: `src` -> `dst` (same size, already
// filled), a = the inverse matrix (output -> input).
void AffineNearest(const RgbImage& src_img, const double a[6], RgbImage* dst) {
  RgbImage& src = const_cast<RgbImage&>(src_img);
  const int w = dst->width(), h = dst->height();
  const int xsize = src.width(), ysize = src.height();
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
        const uint8_t* in = src.row(yi);
        uint8_t* out = dst->row(y);
        for (int x = xmin; x < xmax; ++x) Put(out + 3 * x, in + 3 * xintab[x]);
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
      uint8_t* out = dst->row(y);
      for (int x = 0; x < w; ++x) {
        const int xin = xx >> 16;
        if (xin >= 0 && xin < xsize) {
          const int yin = yy >> 16;
          if (yin >= 0 && yin < ysize) Put(out + 3 * x, src.row(yin) + 3 * xin);
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
    uint8_t* out = dst->row(y);
    for (int x = 0; x < w; ++x) {
      const int xin = Coord(xx);
      if (xin >= 0 && xin < xsize) {
        const int yin = Coord(yy);
        if (yin >= 0 && yin < ysize) Put(out + 3 * x, src.row(yin) + 3 * xin);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// Copies `img` to `scratch`, then `img` = fill + the affine transform of it.
void AffineInPlace(const double a[6], const std::array<uint8_t, 3>& fill, RgbImage* img,
                   RgbImage* scratch) {
  scratch->Resize(img->width(), img->height());
  std::memcpy(scratch->data(), img->data(), static_cast<size_t>(img->stride()) * img->height());
  FillImage(img, fill);
  AffineNearest(*scratch, a, img);
}

// F.affine on a PIL image: torchvision's _get_inverse_affine_matrix.
void TorchvisionAffine(double angle, double tx, double ty, double scale, double shear_x,
                       double shear_y, double cx, double cy, const std::array<uint8_t, 3>& fill,
                       RgbImage* img, RgbImage* scratch) {
  const double rot = angle * kDegToRad;
  const double sx = shear_x * kDegToRad;
  const double sy = shear_y * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  double m[6] = {d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  AffineInPlace(m, fill, img, scratch);
}

}  // namespace

const char* AugOpName(AugOp op) {
  static const char* const kNames[kNumAugOpsAll] = {
      "Identity",  "ShearX",  "ShearY",   "TranslateX", "TranslateY",   "Rotate",  "Brightness",
      "Color",     "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize",
      "Invert"};
  return kNames[static_cast<int>(op)];
}

double AugMagnitude(AugOp op, int bin, int num_bins, bool wide, int width, int height,
                    bool* has_magnitude, bool* is_signed) {
  *has_magnitude = true;
  *is_signed = true;
  switch (op) {
    case AugOp::kShearX:
    case AugOp::kShearY:
      return LinspaceF(0.0, wide ? 0.99 : 0.3, num_bins, bin);
    case AugOp::kTranslateX:
      return LinspaceF(0.0, wide ? 32.0 : 150.0 / 331.0 * width, num_bins, bin);
    case AugOp::kTranslateY:
      return LinspaceF(0.0, wide ? 32.0 : 150.0 / 331.0 * height, num_bins, bin);
    case AugOp::kRotate:
      return LinspaceF(0.0, wide ? 135.0 : 30.0, num_bins, bin);
    case AugOp::kBrightness:
    case AugOp::kColor:
    case AugOp::kContrast:
    case AugOp::kSharpness:
      return LinspaceF(0.0, wide ? 0.99 : 0.9, num_bins, bin);
    case AugOp::kPosterize: {
      *is_signed = false;
      // 8 - (arange(num_bins) / ((num_bins - 1) / k)).round().int(), in float32.
      const float div = static_cast<float>((num_bins - 1) / (wide ? 6.0 : 4.0));
      return 8 - static_cast<int>(std::nearbyint(static_cast<float>(bin) / div));
    }
    case AugOp::kSolarize:
      *is_signed = false;
      return LinspaceF(255.0, 0.0, num_bins, bin);
    default:
      *has_magnitude = false;
      *is_signed = false;
      return 0.0;
  }
}

void RotateNearest(double angle, const std::array<uint8_t, 3>& fill, RgbImage* img,
                   RgbImage* scratch) {
  const int w = img->width(), h = img->height();
  angle = PyMod(angle, 360.0);
  if (angle == 0) return;
  if (angle == 180 || ((angle == 90 || angle == 270) && w == h)) {
    scratch->Resize(w, h);
    std::memcpy(scratch->data(), img->data(), static_cast<size_t>(img->stride()) * h);
    for (int r = 0; r < h; ++r) {
      uint8_t* out = img->row(r);
      for (int c = 0; c < w; ++c) {
        int sr, sc;
        if (angle == 180) {
          sr = h - 1 - r, sc = w - 1 - c;
        } else if (angle == 90) {  // ROTATE_90: out[W-1-x][y] = in[y][x]
          sr = c, sc = w - 1 - r;
        } else {  // ROTATE_270: out[x][H-1-y] = in[y][x]
          sr = h - 1 - c, sc = r;
        }
        Put(out + 3 * c, scratch->row(sr) + 3 * sc);
      }
    }
    return;
  }
  const double t = -(angle * kDegToRad);
  double m[6] = {Round15(std::cos(t)), Round15(std::sin(t)), 0.0,
                 Round15(-std::sin(t)), Round15(std::cos(t)), 0.0};
  const double cx = w / 2.0, cy = h / 2.0;
  const double x = -cx - 0, y = -cy - 0;
  const double m2 = m[0] * x + m[1] * y + m[2];
  const double m5 = m[3] * x + m[4] * y + m[5];
  m[2] = m2 + cx;
  m[5] = m5 + cy;
  AffineInPlace(m, fill, img, scratch);
}

void ApplyAugOp(AugOp op, double magnitude, const std::array<uint8_t, 3>& fill, RgbImage* img,
                RgbImage* scratch) {
  const int w = img->width(), h = img->height();
  switch (op) {
    case AugOp::kIdentity: break;
    case AugOp::kShearX:
      TorchvisionAffine(0.0, 0, 0, 1.0, std::atan(magnitude) * kRadToDeg, 0.0, 0, 0, fill, img,
                        scratch);
      break;
    case AugOp::kShearY:
      TorchvisionAffine(0.0, 0, 0, 1.0, 0.0, std::atan(magnitude) * kRadToDeg, 0, 0, fill, img,
                        scratch);
      break;
    case AugOp::kTranslateX:
      TorchvisionAffine(0.0, static_cast<int>(magnitude), 0, 1.0, 0.0, 0.0, w * 0.5, h * 0.5,
                        fill, img, scratch);
      break;
    case AugOp::kTranslateY:
      TorchvisionAffine(0.0, 0, static_cast<int>(magnitude), 1.0, 0.0, 0.0, w * 0.5, h * 0.5,
                        fill, img, scratch);
      break;
    case AugOp::kRotate: RotateNearest(magnitude, fill, img, scratch); break;
    case AugOp::kBrightness: AdjustBrightness(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kColor: AdjustSaturation(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kContrast: AdjustContrast(img, static_cast<float>(1.0 + magnitude)); break;
    case AugOp::kSharpness:
      AdjustSharpness(img, static_cast<float>(1.0 + magnitude), scratch);
      break;
    case AugOp::kPosterize: Posterize(img, static_cast<int>(magnitude)); break;
    case AugOp::kSolarize: Solarize(img, magnitude); break;
    case AugOp::kAutoContrast: Autocontrast(img); break;
    case AugOp::kEqualize: Equalize(img); break;
    case AugOp::kInvert:
      for (int y = 0; y < img->height(); ++y) {
        uint8_t* row = img->row(y);
        for (int i = 0; i < img->width() * 3; ++i) row[i] = static_cast<uint8_t>(255 - row[i]);
      }
      break;
  }
}

namespace {

struct SubPolicyOp {
  AugOp op;
  double p;
  int magnitude_id;  // -1: None
};
// torchvision's AutoAugmentPolicy.IMAGENET.
constexpr SubPolicyOp kImageNetPolicy[25][2] = {
    {{AugOp::kPosterize, 0.4, 8}, {AugOp::kRotate, 0.6, 9}},
    {{AugOp::kSolarize, 0.6, 5}, {AugOp::kAutoContrast, 0.6, -1}},
    {{AugOp::kEqualize, 0.8, -1}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kPosterize, 0.6, 7}, {AugOp::kPosterize, 0.6, 6}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kSolarize, 0.2, 4}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kRotate, 0.8, 8}},
    {{AugOp::kSolarize, 0.6, 3}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kPosterize, 0.8, 5}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kRotate, 0.2, 3}, {AugOp::kSolarize, 0.6, 8}},
    {{AugOp::kEqualize, 0.6, -1}, {AugOp::kPosterize, 0.4, 6}},
    {{AugOp::kRotate, 0.8, 8}, {AugOp::kColor, 0.4, 0}},
    {{AugOp::kRotate, 0.4, 9}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kEqualize, 0.0, -1}, {AugOp::kEqualize, 0.8, -1}},
    {{AugOp::kInvert, 0.6, -1}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.6, 4}, {AugOp::kContrast, 1.0, 8}},
    {{AugOp::kRotate, 0.8, 8}, {AugOp::kColor, 1.0, 2}},
    {{AugOp::kColor, 0.8, 8}, {AugOp::kSolarize, 0.8, 7}},
    {{AugOp::kSharpness, 0.4, 7}, {AugOp::kInvert, 0.6, -1}},
    {{AugOp::kShearX, 0.6, 5}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.4, 0}, {AugOp::kEqualize, 0.6, -1}},
    {{AugOp::kEqualize, 0.4, -1}, {AugOp::kSolarize, 0.2, 4}},
    {{AugOp::kSolarize, 0.6, 5}, {AugOp::kAutoContrast, 0.6, -1}},
    {{AugOp::kInvert, 0.6, -1}, {AugOp::kEqualize, 1.0, -1}},
    {{AugOp::kColor, 0.6, 4}, {AugOp::kContrast, 1.0, 8}},
    {{AugOp::kEqualize, 0.8, -1}, {AugOp::kEqualize, 0.6, -1}},
};

int DrawAutoAugment(int width, int height, Rng* rng, AugDraw* out, int max_out) {
  const auto& sub = kImageNetPolicy[rng->Below(25)];
  const double probs[2] = {rng->Uniform(), rng->Uniform()};
  const uint64_t signs[2] = {rng->Below(2), rng->Below(2)};
  int n = 0;
  for (int i = 0; i < 2 && n < max_out; ++i) {
    if (!(probs[i] <= sub[i].p)) continue;
    double m = 0.0;
    if (sub[i].magnitude_id >= 0) {
      bool has, is_signed;
      m = AugMagnitude(sub[i].op, sub[i].magnitude_id, 10, false, width, height, &has,
                       &is_signed);
      if (is_signed && signs[i] == 0) m = -m;
    }
    out[n++] = AugDraw{sub[i].op, m};
  }
  return n;
}

}  // namespace

int DrawAugPolicy(const Transform& t, int width, int height, Rng* rng, AugDraw* out,
                  int max_out) {
  if (t.kind == Transform::Kind::kAutoAugment) {
    return DrawAutoAugment(width, height, rng, out, max_out);
  }
  const bool wide = t.kind == Transform::Kind::kTrivialAugmentWide;
  const int n = std::min(wide ? 1 : t.num_ops, max_out);
  for (int i = 0; i < n; ++i) {
    const AugOp op = static_cast<AugOp>(rng->Below(kNumAugOps));
    bool has, is_signed;
    // The bin: TrivialAugmentWide draws it (only for ops with a magnitude),
    // RandAugment uses t.magnitude.
    AugMagnitude(op, 0, t.num_magnitude_bins, wide, width, height, &has, &is_signed);
    int bin = t.magnitude;
    if (wide) bin = has ? static_cast<int>(rng->Below(t.num_magnitude_bins)) : 0;
    double m = has ? AugMagnitude(op, bin, t.num_magnitude_bins, wide, width, height, &has,
                                  &is_signed)
                   : 0.0;
    if (is_signed && rng->Below(2) == 1) m = -m;
    out[i] = AugDraw{op, m};
  }
  return n;
}

void ApplyAugPolicy(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) {
  constexpr int kMaxOps = 16;
  AugDraw draws[kMaxOps];
  const int n = DrawAugPolicy(t, img->width(), img->height(), rng, draws, kMaxOps);
  const std::array<uint8_t, 3> fill = {static_cast<uint8_t>(t.fill[0]),
                                       static_cast<uint8_t>(t.fill[1]),
                                       static_cast<uint8_t>(t.fill[2])};
  for (int i = 0; i < n; ++i) ApplyAugOp(draws[i].op, draws[i].magnitude, fill, img, scratch);
}

}  // namespace stoker
