// Copyright 2026 The stoker Authors.
// PNM decoding (codec/pnm.cc) on files built here; parity with Pillow on
// Pillow-written and hand-written files is in python/tests/test_formats.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/formats_test_util.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using format_test::Bytes;

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes Cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PnmDecodeTest, RawPpmIsExactWithCommentsInTheHeader) {
  const int w = 9, h = 5;
  const Bytes px = testing::MakePixels(w, h, 2);
  const Bytes file = Cat(Text("P6\n# made by hand\n9 # width\n5\n255\n"), px);
  format_test::ExpectDecodesTo(file, px, w, h);
  format_test::ExpectRegionIsCrop(file, Rect{2, 1, 4, 3});
}

TEST(PnmDecodeTest, GreyAndBitmapAndPlainVariants) {
  // P5, maxval 255: grey copied to three channels.
  format_test::ExpectDecodesTo(Cat(Text("P5 3 1 255\n"), Bytes{0, 128, 255}),
                               Bytes{0, 0, 0, 128, 128, 128, 255, 255, 255}, 3, 1);
  // P4: 1 is black; rows padded to a byte (width 3: top 3 bits of each byte).
  format_test::ExpectDecodesTo(Cat(Text("P4\n3 2\n"), Bytes{0xA0, 0x40}),
                               Bytes{0, 0, 0, 255, 255, 255, 0, 0, 0,
                                     255, 255, 255, 0, 0, 0, 255, 255, 255}, 3, 2);
  // P1 with a comment between samples and no separators between digits.
  format_test::ExpectDecodesTo(Text("P1\n2 1\n1# c\n0\n"), Bytes{0, 0, 0, 255, 255, 255}, 2, 1);
  // P2 with maxval 100: round(v / 100 * 255), halves to even (50 -> 127.5 -> 128).
  format_test::ExpectDecodesTo(Text("P2 3 1 100\n0 50 100\n"),
                               Bytes{0, 0, 0, 128, 128, 128, 255, 255, 255}, 3, 1);
  // P3.
  format_test::ExpectDecodesTo(Text("P3 1 1 255 10 20 30"), Bytes{10, 20, 30}, 1, 1);
}

TEST(PnmDecodeTest, SixteenBitSamples) {
  // 16-bit PGM: Pillow keeps mode I and convert("RGB") clips: min(v, 255).
  format_test::ExpectDecodesTo(Cat(Text("P5 3 1 65535\n"), Bytes{0, 7, 0x01, 0x00, 0xFF, 0xFF}),
                               Bytes{7, 7, 7, 255, 255, 255, 255, 255, 255}, 3, 1);
  // 16-bit PPM: scaled to 0..255.
  format_test::ExpectDecodesTo(Cat(Text("P6 1 1 1000\n"), Bytes{0x03, 0xE8, 0x01, 0xF4, 0, 0}),
                               Bytes{255, 128, 0}, 1, 1);
}

TEST(PnmDecodeTest, BadFilesGiveNamedErrors) {
  const Bytes good = Cat(Text("P6\n8 8\n255\n"), testing::MakePixels(8, 8, 1));
  format_test::ExpectTruncationsFail(good, 11, "PNM: ");
  // Ends with a one-digit sample: every cut loses a sample.
  const Bytes plain = Text("P3\n2 2\n255\n1 2 3 4 5 6 7 8 9 10 11 9");
  format_test::ExpectTruncationsFail(plain, 11, "PNM: ");

  struct Case {
    std::string file;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"P5\n4 4\n0\n", StatusCode::kDataLoss, "PNM: maxval 0 is outside 1..65535"},
      {"P5\n4 4\n70000\n", StatusCode::kDataLoss, "PNM: maxval 70000 is outside 1..65535"},
      {"P6\nx4 4\n255\n", StatusCode::kDataLoss, "PNM: width 'x4' is not a number"},
      {"P6\n12345678901 4\n255\n", StatusCode::kDataLoss,
       "PNM: width token is longer than 10 characters"},
      {"P2\n2 1\n255\n1 300\n", StatusCode::kDataLoss, "PNM: sample 300 is above maxval 255"},
      {"P1\n2 1\n1 2\n", StatusCode::kDataLoss, "PNM: plain PBM holds a byte that is not 0 or 1"},
      {"P5\n0 4\n255\n", StatusCode::kDataLoss, "image declares size 0x4"},
  };
  for (const Case& c : cases) {
    Bytes rgb;
    int w = 0, h = 0;
    Status s = format_test::DecodeTo(Text(c.file), &rgb, &w, &h);
    EXPECT_EQ(s.code(), c.code) << c.file << ": " << s.ToString();
    EXPECT_EQ(s.message(), c.message) << c.file;
  }
  // A huge declared size is refused at Open(), before any pixel memory.
  const Bytes huge = Text("P6\n100000 100000\n255\n");
  ImageDecoder dec(DecoderOptions{int64_t{1} << 24});
  ImageHeader hd;
  Status s = dec.Open(huge.data(), huge.size(), &hd);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
}

}  // namespace
}  // namespace stoker
