// Copyright 2026 The stoker Authors.
// WebP decoding (codec/webp.cc) on files encoded here with libwebp; parity
// with Pillow (lossy, alpha, animated) is in python/tests/test_formats.py.
#include <gtest/gtest.h>
#include <webp/encode.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "codec/decoder.h"
#include "codec/formats_test_util.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using format_test::Bytes;

Bytes EncodeWebp(const Bytes& rgb, int w, int h, bool lossless) {
  uint8_t* out = nullptr;
  const size_t n = lossless ? WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &out)
                            : WebPEncodeRGB(rgb.data(), w, h, w * 3, 75.0f, &out);
  Bytes b(out, out + n);
  WebPFree(out);
  return b;
}

TEST(WebpDecodeTest, LosslessIsExact) {
  const int w = 45, h = 31;
  const Bytes px = testing::MakePixels(w, h, 3);
  const Bytes file = EncodeWebp(px, w, h, /*lossless=*/true);
  ASSERT_FALSE(file.empty());
  format_test::ExpectDecodesTo(file, px, w, h);
  format_test::ExpectRegionIsCrop(file, Rect{4, 6, 30, 20});
}

TEST(WebpDecodeTest, LossyIsCloseToTheSource) {
  const int w = 64, h = 40;
  const Bytes px = testing::MakePixels(w, h, 8);
  const Bytes file = EncodeWebp(px, w, h, /*lossless=*/false);
  Bytes got;
  int gw = 0, gh = 0;
  ASSERT_TRUE(format_test::DecodeTo(file, &got, &gw, &gh).ok());
  ASSERT_EQ(gw, w);
  ASSERT_EQ(gh, h);
  double err = 0;
  for (size_t i = 0; i < px.size(); ++i) err += std::abs(int{got[i]} - int{px[i]});
  EXPECT_LT(err / px.size(), 12.0);
}

TEST(WebpDecodeTest, BadFilesGiveNamedErrors) {
  const int w = 32, h = 24;
  const Bytes px = testing::MakePixels(w, h, 1);
  for (bool lossless : {true, false}) {
    const Bytes file = EncodeWebp(px, w, h, lossless);
    // From 30 bytes on, the headers with the size are present: what is cut is
    // the bitstream.
    format_test::ExpectTruncationsFail(file, 30, "WebP: ");
  }
  Bytes rgb;
  int ow = 0, oh = 0;
  Bytes riff = {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'X', 'Y', 'Z', ' '};
  Status s = format_test::DecodeTo(riff, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(s.message().rfind("WebP: cannot read the headers", 0), 0u) << s.ToString();
  const Bytes file = EncodeWebp(px, w, h, true);
  ImageDecoder dec(DecoderOptions{100});
  ImageHeader hd;
  s = dec.Open(file.data(), file.size(), &hd);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
}

}  // namespace
}  // namespace stoker
