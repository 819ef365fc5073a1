// Copyright 2026 The stoker Authors.
// WebP decoding (codec/webp.cc) on files encoded here with libwebp; parity
// with Pillow (lossy, alpha, animated) is in python/tests/test_formats.py.
#include <gtest/gtest.h>
#include <webp/demux.h>
#include <webp/encode.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/decoder.h"
#include "codec/formats_test_util.h"
#include "testing/hostile_images.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using format_test::Bytes;

// `px`: RGB, or RGBA when `channels` is 4.
Bytes EncodeWebp(const Bytes& px, int w, int h, bool lossless, int channels = 3) {
  uint8_t* out = nullptr;
  const int stride = w * channels;
  size_t n = 0;
  if (channels == 4) {
    n = lossless ? WebPEncodeLosslessRGBA(px.data(), w, h, stride, &out)
                 : WebPEncodeRGBA(px.data(), w, h, stride, 75.0f, &out);
  } else {
    n = lossless ? WebPEncodeLosslessRGB(px.data(), w, h, stride, &out)
                 : WebPEncodeRGB(px.data(), w, h, stride, 75.0f, &out);
  }
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

// The first frame as libwebpdemux's WebPAnimDecoder composes it (what Pillow
// shows), alpha dropped.
Bytes AnimDecoderFirstFrame(const Bytes& file, int* w, int* h) {
  WebPAnimDecoderOptions options;
  WebPAnimDecoderOptionsInit(&options);
  options.color_mode = MODE_RGBA;
  WebPData data{file.data(), file.size()};
  WebPAnimDecoder* dec = WebPAnimDecoderNew(&data, &options);
  if (dec == nullptr) return {};
  WebPAnimInfo info;
  WebPAnimDecoderGetInfo(dec, &info);
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  Bytes rgb;
  if (WebPAnimDecoderGetNext(dec, &rgba, &timestamp)) {
    *w = static_cast<int>(info.canvas_width);
    *h = static_cast<int>(info.canvas_height);
    for (size_t i = 0; i < static_cast<size_t>(*w) * *h; ++i) {
      rgb.insert(rgb.end(), rgba + 4 * i, rgba + 4 * i + 3);
    }
  }
  WebPAnimDecoderDelete(dec);
  return rgb;
}

TEST(WebpDecodeTest, AnimatedFirstFrameIsWhatWebPAnimDecoderComposes) {
  // The first frame is decoded straight into the image:
  // the same pixels as WebPAnimDecoder's canvas, for frames smaller than
  // the canvas at an offset, lossy frames with alpha, lossless frames.
  const int fw = 30, fh = 18;
  const Bytes px = testing::MakePixels(fw, fh, 11);
  Bytes rgba;
  for (size_t i = 0; i < px.size() / 3; ++i) {
    rgba.insert(rgba.end(), px.begin() + static_cast<std::ptrdiff_t>(3 * i),
                px.begin() + static_cast<std::ptrdiff_t>(3 * i + 3));
    rgba.push_back(static_cast<uint8_t>(i * 37));  // alpha: every value, 0 included
  }
  const Bytes second = EncodeWebp(testing::MakePixels(40, 30, 12), 40, 30, true);
  struct Case {
    const char* name;
    Bytes file;
  };
  const std::vector<Case> cases = {
      {"lossless at (8, 4)",
       testing::MakeAnimatedWebp(40, 30, {EncodeWebp(rgba, fw, fh, true, 4), second}, {8, 0},
                                 {4, 0})},
      {"lossy with alpha at (10, 12)",
       testing::MakeAnimatedWebp(40, 30, {EncodeWebp(rgba, fw, fh, false, 4), second}, {10, 0},
                                 {12, 0})},
      {"lossy RGB filling the canvas",
       testing::MakeAnimatedWebp(30, 18, {EncodeWebp(px, fw, fh, false)}, {0}, {0})},
  };
  ImageDecoder dec;
  // A larger image first: the canvas outside the frame must not keep its
  // pixels (the decoder reuses its buffer).
  const Bytes noise = EncodeWebp(testing::MakePixels(64, 64, 13), 64, 64, true);
  DecodedRegion first;
  ASSERT_TRUE(dec.DecodeAll(noise.data(), noise.size(), &first).ok());
  for (const Case& c : cases) {
    ASSERT_FALSE(c.file.empty()) << c.name;
    int w = 0, h = 0;
    const Bytes want = AnimDecoderFirstFrame(c.file, &w, &h);
    ASSERT_FALSE(want.empty()) << c.name;
    DecodedRegion r;
    const Status s = dec.DecodeAll(c.file.data(), c.file.size(), &r);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.ToString();
    ASSERT_EQ(r.pixels.width, w) << c.name;
    ASSERT_EQ(r.pixels.height, h) << c.name;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        ASSERT_EQ(0, std::memcmp(r.pixels.row(y) + 3 * x, want.data() + (y * w + x) * 3, 3))
            << c.name << ": pixel (" << x << ", " << y << ")";
      }
    }
  }
  // Damage to the first frame's bitstream is an error naming the frame.
  Bytes bad = cases[0].file;
  const size_t at = bad.size() / 3;
  for (size_t i = at; i < at + 40 && i < bad.size(); ++i) bad[i] ^= 0x5A;
  DecodedRegion r;
  const Status s = dec.DecodeAll(bad.data(), bad.size(), &r);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("WebP: ", 0), 0u) << s.ToString();
}

}  // namespace
}  // namespace stoker
