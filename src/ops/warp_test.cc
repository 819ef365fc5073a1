// Copyright 2026 The stoker Authors.
//
// The warps' own properties. Parity with torchvision on PIL, pixel for pixel,
// is checked by python/tests/test_geometry.py (it needs Pillow and torch).
#include "ops/warp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "ops/geometry.h"

namespace stoker {
namespace {

RgbImage Gradient(int w, int h) {
  RgbImage img;
  img.Resize(w, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = img.row(y) + x * 3;
      p[0] = static_cast<uint8_t>(40 + x * 3);
      p[1] = static_cast<uint8_t>(60 + y * 2);
      p[2] = static_cast<uint8_t>((x * 7 + y * 5) % 256);
    }
  }
  return img;
}

std::vector<uint8_t> Pixels(RgbImage& img) {
  return std::vector<uint8_t>(img.data(), img.data() + img.width() * img.height() * 3);
}

TEST(WarpTest, IdentityWarpsLeaveTheImage) {
  for (int interp : {kPilNearest, kPilBilinear}) {
    RgbImage ref = Gradient(23, 17), img = Gradient(23, 17), scratch;
    TorchvisionAffine(0, 0, 0, 1, 0, 0, false, 0, 0, interp, {9, 9, 9}, &img, &scratch);
    EXPECT_EQ(Pixels(ref), Pixels(img)) << interp;
    PilRotate(360.0, interp, false, 0, 0, {9, 9, 9}, &img, &scratch);
    EXPECT_EQ(Pixels(ref), Pixels(img)) << interp;
  }
}

TEST(WarpTest, Rotate90OnASquareIsATranspose) {
  RgbImage img = Gradient(11, 11), src = Gradient(11, 11), scratch;
  PilRotate(90.0, kPilBilinear, false, 0, 0, {0, 0, 0}, &img, &scratch);
  // ROTATE_90 (counter-clockwise): out[W-1-x][y] = in[y][x].
  for (int y = 0; y < 11; ++y) {
    for (int x = 0; x < 11; ++x) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(img.row(10 - x)[3 * y + c], src.row(y)[3 * x + c]);
    }
  }
}

TEST(WarpTest, TranslationShiftsAndFills) {
  RgbImage img = Gradient(20, 10), src = Gradient(20, 10), scratch;
  TorchvisionAffine(0, 3, 0, 1, 0, 0, false, 0, 0, kPilBilinear, {1, 2, 3}, &img, &scratch);
  for (int y = 0; y < 10; ++y) {
    EXPECT_EQ(img.row(y)[0], 1);
    EXPECT_EQ(img.row(y)[2 * 3 + 2], 3);
    for (int x = 3; x < 20; ++x) EXPECT_EQ(img.row(y)[3 * x], src.row(y)[3 * (x - 3)]);
  }
}

TEST(WarpTest, PerspectiveCoeffsOfTheSameCornersAreTheIdentity) {
  const double pts[8] = {0, 0, 63, 0, 63, 47, 0, 47};
  double c[8];
  PerspectiveCoeffs(pts, pts, c);
  const double id[8] = {1, 0, 0, 0, 1, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(c[i], id[i], 1e-12) << i;
  // A shifted quad: x_in = x_out + 2 exactly.
  const double end[8] = {-2, 0, 61, 0, 61, 47, -2, 47};
  PerspectiveCoeffs(pts, end, c);
  EXPECT_NEAR(c[2], 2.0, 1e-6);
  EXPECT_NEAR(c[0], 1.0, 1e-6);
}

TEST(WarpTest, DrawnParametersStayInTheirRanges) {
  Transform r = Transform::RandomAffine({-10, 20}, {0.1, 0.2}, {0.5, 2.0}, {-5, 5, -1, 1});
  Transform p = Transform::RandomPerspective(0.5, 1.0);
  Rng rng(7);
  double v[9];
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(DrawWarpParams(WarpKind::kAffine, r, 50, 40, &rng, v), 6);
    EXPECT_TRUE(v[0] >= -10 && v[0] <= 20);
    EXPECT_TRUE(std::fabs(v[1]) <= 5 && std::fabs(v[2]) <= 8);
    EXPECT_EQ(v[1], std::round(v[1]));
    EXPECT_TRUE(v[3] >= 0.5 && v[3] <= 2.0);
    EXPECT_TRUE(std::fabs(v[4]) <= 5 && std::fabs(v[5]) <= 1);
    ASSERT_EQ(DrawWarpParams(WarpKind::kPerspective, p, 50, 40, &rng, v), 9);
    EXPECT_EQ(v[0], 1.0);
    EXPECT_TRUE(v[1] >= 0 && v[1] <= 12 && v[3] >= 37 && v[3] <= 49);  // int(0.5 * 25) = 12
    EXPECT_TRUE(v[6] >= 29 && v[6] <= 39 && v[2] >= 0 && v[2] <= 10);   // int(0.5 * 20) = 10
  }
}

TEST(WarpTest, FoldCoordIsNumpyPad) {
  // np.pad(np.arange(4), 6, mode)
  const int reflect[16] = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3};
  const int symmetric[16] = {2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1};
  for (int v = -6; v < 10; ++v) {
    EXPECT_EQ(FoldCoord(v, 4, kPadReflect), reflect[v + 6]) << v;
    EXPECT_EQ(FoldCoord(v, 4, kPadSymmetric), symmetric[v + 6]) << v;
    EXPECT_EQ(FoldCoord(v, 4, kPadEdge), v < 0 ? 0 : v > 3 ? 3 : v) << v;
  }
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Issue 32, item 22: degrees (-1e308, 1e308) drew an infinite angle (the
// span overflowed, and float32 cannot hold 1e308) and every image was
// black. The angle is now reduced modulo 360 before float32 rounding when
// float32 cannot hold it, as Image.rotate reduces every angle.
TEST(WarpTest, HugeRotationAnglesAreReducedModulo360) {
  Rng rng(4);
  std::set<double> angles;
  for (int i = 0; i < 200; ++i) {
    double p[9];
    ASSERT_EQ(DrawWarpParams(WarpKind::kRotation, Transform::RandomRotation({-1e308, 1e308}), 20, 20, &rng, p), 1);
    EXPECT_TRUE(std::isfinite(p[0]) && std::fabs(p[0]) < 360) << p[0];
    angles.insert(p[0]);
  }
  // Drawn, not a constant fallback (doubles near 1e308 are multiples of 2^970,
  // whose remainders modulo 360 are multiples of 8: about 90 values).
  EXPECT_GT(angles.size(), 40u);
  // A fixed huge angle: the image is rotated by its remainder, not blacked out.
  const double a = 1e308;
  const Transform t = Transform::RandomRotation({a, a});
  double p[9];
  Rng r1(1);
  DrawWarpParams(WarpKind::kRotation, t, 23, 17, &r1, p);
  EXPECT_EQ(p[0], static_cast<double>(static_cast<float>(std::fmod(a, 360.0))));
  RgbImage img = Gradient(23, 17), want = Gradient(23, 17), scratch;
  Rng r2(1);
  ApplyRandomRotation(t, &r2, &img, &scratch);
  PilRotate(p[0], kPilNearest, false, 0, 0, {0, 0, 0}, &want, &scratch);
  EXPECT_EQ(Pixels(img), Pixels(want));
  size_t lit = 0;
  for (uint8_t v : Pixels(img)) lit += v != 0;
  EXPECT_GT(lit, Pixels(img).size() / 2);
  // Within float32's range nothing changes: float32 first, then Pillow's %.
  Rng r3(1);
  DrawWarpParams(WarpKind::kRotation, Transform::RandomRotation({1e30, 1e30}), 23, 17, &r3, p);
  EXPECT_EQ(p[0], static_cast<double>(static_cast<float>(1e30)));
  // Infinite bounds (refused when declared) rotate by 0.
  const double inf = std::numeric_limits<double>::infinity();
  Rng r4(1);
  DrawWarpParams(WarpKind::kRotation, Transform::RandomRotation({-inf, inf}), 23, 17, &r4, p);
  EXPECT_EQ(p[0], 0.0);
}

}  // namespace
}  // namespace stoker
