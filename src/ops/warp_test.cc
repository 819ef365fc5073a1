// Copyright 2026 The stoker Authors.
//
// The warps' own properties. Parity with torchvision on PIL, pixel for pixel,
// is checked by python/tests/test_geometry.py (it needs Pillow and torch).
#include "ops/warp.h"

#include <gtest/gtest.h>

#include <cmath>
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
