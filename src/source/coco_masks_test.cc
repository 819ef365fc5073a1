// Copyright 2026 The stoker Authors.
#include "source/coco_masks.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace stoker
