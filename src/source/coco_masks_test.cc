// Copyright 2026 The stoker Authors.
#include "source/coco_masks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace stoker {
namespace {

// pycocotools' rleToString, written from the format (coco_masks.h): the
// encoder half of the round trip.
std::string EncodeRle(const std::vector<uint32_t>& counts) {
  std::string s;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t x = counts[i];
    if (i > 2) x -= counts[i - 2];
    bool more = true;
    while (more) {
      char c = static_cast<char>(x & 0x1f);
      x >>= 5;
      more = (c & 0x10) ? x != -1 : x != 0;
      if (more) c |= 0x20;
      s.push_back(static_cast<char>(c + 48));
    }
  }
  return s;
}

// A row-major 0/1 mask from RLE counts.
std::vector<uint8_t> Mask(const std::vector<uint32_t>& counts, int h, int w) {
  std::vector<uint8_t> m(static_cast<size_t>(h) * w, 0);
  EXPECT_TRUE(RleToMask(counts, h, w, m.data()).ok());
  return m;
}

// Rows of '#' (inside) and '.' (outside).
std::vector<uint8_t> Picture(const std::vector<std::string>& rows) {
  std::vector<uint8_t> m;
  for (const std::string& r : rows) {
    for (char c : r) m.push_back(c == '#' ? 1 : 0);
  }
  return m;
}

TEST(CocoRleTest, DecodesHandWorkedStrings) {
  // Small counts are one character each (48 + count).
  EXPECT_EQ(DecodeRleString("324").value(), (std::vector<uint32_t>{3, 2, 4}));
  // From the fourth count on, each is the difference from the count two before.
  EXPECT_EQ(DecodeRleString("1114").value(), (std::vector<uint32_t>{1, 1, 1, 5}));
  // A negative difference: 2 - 10 = -8 -> 5-bit group 24 with the sign bit (0x10): 'H'.
  EXPECT_EQ(DecodeRleString("1:1H").value(), (std::vector<uint32_t>{1, 10, 1, 2}));
  // 100 = 3 * 32 + 4: group 4 with the continuation bit (48 + 36 = 'T'), then '3'.
  EXPECT_EQ(DecodeRleString("T3").value(), (std::vector<uint32_t>{100}));
}

TEST(CocoRleTest, RoundTripsTheEncoder) {
  const std::vector<std::vector<uint32_t>> cases = {
      {0, 5, 3, 100, 2, 40000, 1, 1, 0},
      {7},
      {123456, 1, 987654, 3, 2, 1, 70000, 4},
      {0, 1, 0, 1, 0, 1},
  };
  for (const auto& c : cases) {
    const std::string s = EncodeRle(c);
    auto d = DecodeRleString(s);
    ASSERT_TRUE(d.ok()) << s << ": " << d.status().ToString();
    EXPECT_EQ(d.value(), c) << s;
  }
}

TEST(CocoRleTest, BadStringsAreErrors) {
  EXPECT_FALSE(DecodeRleString("T").ok());       // ends inside a count
  EXPECT_FALSE(DecodeRleString("1 2").ok());     // ' ' is below '0'
  EXPECT_FALSE(DecodeRleString("11H").ok());     // a negative count
}

TEST(CocoRleTest, CountsAreColumnMajor) {
  // 2 x 3: skip 1, set 3, skip 2 -> pixels 1, 2, 3 in column order:
  // (y1, x0), (y0, x1), (y1, x1).
  EXPECT_EQ(Mask({1, 3, 2}, 2, 3), Picture({".#.", "##."}));
  std::vector<uint8_t> m(6, 0);
  EXPECT_FALSE(RleToMask({1, 3}, 2, 3, m.data()).ok());  // sums to 4, not 6
}

TEST(CocoRleTest, ExtentIsTheRectangleOfTheSetPixels) {
  // 4 rows x 5 columns, column-major. A run inside one column: rows 1..2 of
  // column 0; a run over columns 1..3 (pixels 6..13): every row of them.
  RleExtent e = ExtentOfRle({1, 2, 17}, 4);
  EXPECT_EQ((std::vector<int>{e.x0, e.y0, e.x1, e.y1}), (std::vector<int>{0, 1, 1, 3}));
  e = ExtentOfRle({6, 8, 6}, 4);
  EXPECT_EQ((std::vector<int>{e.x0, e.y0, e.x1, e.y1}), (std::vector<int>{1, 0, 4, 4}));
  // Two runs in columns 2 and 4 (rows 3 and 0..1): their union.
  e = ExtentOfRle({11, 1, 4, 2, 2}, 4);
  EXPECT_EQ((std::vector<int>{e.x0, e.y0, e.x1, e.y1}), (std::vector<int>{2, 0, 5, 4}));
  EXPECT_TRUE(ExtentOfRle({20}, 4).empty());
  EXPECT_TRUE(ExtentOfRle({3, 0, 17}, 4).empty());  // an empty set run
  // A polygon's runs: the square of SquareCoversThePixelsWhoseCentresAreInside.
  e = ExtentOfRle(PolygonToRle({1, 1, 4, 1, 4, 4, 1, 4}, 6, 6), 6);
  EXPECT_EQ((std::vector<int>{e.x0, e.y0, e.x1, e.y1}), (std::vector<int>{1, 1, 4, 4}));
}

TEST(CocoPolygonTest, SquareCoversThePixelsWhoseCentresAreInside) {
  // Corners on pixel edges: centres x + 0.5 in [1, 4] -> columns 1..3.
  const auto m = Mask(PolygonToRle({1, 1, 4, 1, 4, 4, 1, 4}, 6, 6), 6, 6);
  EXPECT_EQ(m, Picture({"......",
                        ".###..",
                        ".###..",
                        ".###..",
                        "......",
                        "......"}));
}

TEST(CocoPolygonTest, FractionalRectangle) {
  // Centres x + 0.5 in [0.3, 2.6] -> 0..2; y + 0.5 in [0.3, 3.6] -> 0..3.
  const auto m = Mask(PolygonToRle({0.3, 0.3, 2.6, 0.3, 2.6, 3.6, 0.3, 3.6}, 5, 5), 5, 5);
  EXPECT_EQ(m, Picture({"###..",
                        "###..",
                        "###..",
                        "###..",
                        "....."}));
}

TEST(CocoPolygonTest, TriangleInteriorAndOutside) {
  const int n = 8;
  const auto m = Mask(PolygonToRle({0, 0, 8, 0, 0, 8}, n, n), n, n);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      const double s = (x + 0.5) + (y + 0.5);  // the hypotenuse is x + y = 8
      if (s < 7.9) {
        EXPECT_EQ(m[y * n + x], 1) << x << "," << y;
      } else if (s > 8.1) {
        EXPECT_EQ(m[y * n + x], 0) << x << "," << y;
      }
    }
  }
}

TEST(CocoPolygonTest, ClippedToTheImage) {
  // A square reaching past every side covers the whole 3 x 4 image.
  const auto m = Mask(PolygonToRle({-5, -5, 20, -5, 20, 20, -5, 20}, 3, 4), 3, 4);
  EXPECT_EQ(m, std::vector<uint8_t>(12, 1));
}

// pycocotools' rleFrPoly as it is written: every point of the dense walk
// kept, the marks sorted. The reference the rasteriser must match.
std::vector<uint32_t> DenseWalkReference(const std::vector<double>& xy, int h, int w) {
  const double scale = 5;
  const size_t k = xy.size() / 2;
  if (k == 0) return {static_cast<uint32_t>(h) * static_cast<uint32_t>(w)};
  // Upsampled vertices, the outline closed.
  std::vector<int> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = static_cast<int>(scale * xy[2 * j] + .5);
    y[j] = static_cast<int>(scale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  // Every point along each edge, one per step of its longer axis.
  std::vector<int> u, v;
  for (size_t j = 0; j < k; ++j) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    const double s = dx == 0 && dy == 0 ? 0  // pycocotools: 0 / 0; its y makes no mark
                   : dx >= dy ? static_cast<double>(ye - ys) / dx
                              : static_cast<double>(xe - xs) / dy;
    if (dx >= dy) {
      for (int d = 0; d <= dx; ++d) {
        const int t = flip ? dx - d : d;
        u.push_back(t + xs);
        v.push_back(static_cast<int>(ys + s * t + .5));
      }
    } else {
      for (int d = 0; d <= dy; ++d) {
        const int t = flip ? dy - d : d;
        v.push_back(t + ys);
        u.push_back(static_cast<int>(xs + s * t + .5));
      }
    }
  }
  // Where the outline changes column: the run boundaries, downsampled.
  std::vector<uint32_t> a;
  for (size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    double xd = u[j] < u[j - 1] ? u[j] : u[j] - 1;
    xd = (xd + .5) / scale - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > w - 1) continue;
    double yd = v[j] < v[j - 1] ? v[j] : v[j - 1];
    yd = (yd + .5) / scale - .5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > h) {
      yd = h;
    }
    yd = std::ceil(yd);
    a.push_back(static_cast<uint32_t>(static_cast<int>(xd) * h + static_cast<int>(yd)));
  }
  a.push_back(static_cast<uint32_t>(h) * static_cast<uint32_t>(w));
  std::sort(a.begin(), a.end());
  uint32_t prev = 0;
  for (uint32_t& t : a) {
    const uint32_t cur = t;
    t -= prev;
    prev = cur;
  }
  // Zero-length runs merge their neighbours.
  std::vector<uint32_t> b;
  size_t j = 0;
  b.push_back(a[j++]);
  while (j < a.size()) {
    if (a[j] > 0) {
      b.push_back(a[j++]);
    } else {
      ++j;
      if (j < a.size()) b.back() += a[j++];
    }
  }
  return b;
}

// Random polygons: inside, across and far outside the image, repeated
// vertices, long thin spikes; the rasteriser gives the reference's counts.
TEST(CocoPolygonTest, MatchesTheDenseWalkOnRandomPolygons) {
  std::mt19937 rng(7);
  int compared = 0;
  for (int round = 0; round < 3000; ++round) {
    const int h = 1 + static_cast<int>(rng() % 40), w = 1 + static_cast<int>(rng() % 40);
    const int points = 1 + static_cast<int>(rng() % 12);
    const double reach = (round % 3 == 0) ? 3.0 : (round % 3 == 1) ? 1.2 : 20.0;
    std::uniform_real_distribution<double> fx(-reach * w / 2, reach * w), fy(-reach * h / 2, reach * h);
    std::vector<double> xy;
    for (int p = 0; p < points; ++p) {
      if (p > 0 && rng() % 8 == 0) {  // a repeated vertex
        xy.push_back(xy[xy.size() - 2]);
        xy.push_back(xy[xy.size() - 2]);
        continue;
      }
      double x = fx(rng), y = fy(rng);
      if (rng() % 4 == 0) x = std::round(x * 2) / 2;  // on pixel edges and centres
      if (rng() % 4 == 0) y = std::round(y * 2) / 2;
      xy.push_back(x);
      xy.push_back(y);
    }
    ASSERT_EQ(PolygonToRle(xy, h, w), DenseWalkReference(xy, h, w))
        << "round " << round << ": " << h << "x" << w << ", " << points << " points";
    ++compared;
  }
  EXPECT_EQ(compared, 3000);
}

TEST(CocoPolygonTest, ManyCrossingsSwitchToTheDenseMarks) {
  // A zigzag across a 16-wide image, 400 times: more marks than a quarter of
  // the 8 x 16 pixels, so the byte-per-position path runs; same counts.
  std::vector<double> xy;
  for (int i = 0; i < 400; ++i) {
    xy.push_back(i % 2 == 0 ? -1.0 : 17.0);
    xy.push_back(0.01 * i);
  }
  xy.push_back(-1);
  xy.push_back(8);
  EXPECT_EQ(PolygonToRle(xy, 8, 16), DenseWalkReference(xy, 8, 16));
}

TEST(CocoPolygonTest, ALongEdgeCostsItsColumnsNotItsLength) {
  // A triangle reaching 10^7 pixels out: the dense walk would visit 5 x 10^7
  // points per edge; this one visits the 4 columns. The mask is what the
  // image shows of it: a wedge over the top-left corner.
  const std::vector<double> xy = {0, 0, 1e7, 1e7, 0, 1e7};
  const auto counts = PolygonToRle(xy, 4, 4);
  EXPECT_EQ(Mask(counts, 4, 4), Picture({"#...",
                                         "##..",
                                         "###.",
                                         "####"}));
}

}  // namespace
}  // namespace stoker
