// Copyright 2026 The stoker Authors.
// BMP decoding (codec/bmp.cc) on files built here byte by byte; parity with
// Pillow on Pillow-written files is in python/tests/test_formats.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "codec/decoder.h"
#include "codec/formats_test_util.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using format_test::Bytes;

void Put16(Bytes* b, size_t at, uint32_t v) {
  (*b)[at] = v & 0xFF;
  (*b)[at + 1] = (v >> 8) & 0xFF;
}
void Put32(Bytes* b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*b)[at + i] = (v >> (8 * i)) & 0xFF;
}

// A Windows v3 BMP (40-byte header) of `bits` per pixel with `palette`
// (BGRX entries) and raster rows given top row first; written bottom-up
// unless `top_down`.
Bytes MakeBmp(int w, int h, int bits, const Bytes& palette, const std::vector<Bytes>& rows,
              bool top_down = false, uint32_t compression = 0) {
  const size_t stride = ((static_cast<size_t>(w) * bits + 31) / 32) * 4;
  const size_t offset = 14 + 40 + palette.size();
  Bytes b(offset + stride * h, 0);
  b[0] = 'B';
  b[1] = 'M';
  Put32(&b, 2, static_cast<uint32_t>(b.size()));
  Put32(&b, 10, static_cast<uint32_t>(offset));
  Put32(&b, 14, 40);
  Put32(&b, 18, static_cast<uint32_t>(w));
  Put32(&b, 22, top_down ? static_cast<uint32_t>(-h) : static_cast<uint32_t>(h));
  Put16(&b, 26, 1);
  Put16(&b, 28, static_cast<uint32_t>(bits));
  Put32(&b, 30, compression);
  Put32(&b, 46, static_cast<uint32_t>(palette.size() / 4));
  std::copy(palette.begin(), palette.end(), b.begin() + 54);
  for (int r = 0; r < h; ++r) {
    const int file_row = top_down ? r : h - 1 - r;
    std::copy(rows[r].begin(), rows[r].end(), b.begin() + offset + file_row * stride);
  }
  return b;
}

TEST(BmpDecodeTest, TwentyFourBitBottomUpAndTopDownAreExact) {
  const int w = 13, h = 7;  // 39 bytes per row: padded to 40
  const Bytes px = testing::MakePixels(w, h, 5);
  std::vector<Bytes> rows(h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &px[(static_cast<size_t>(y) * w + x) * 3];
      rows[y].insert(rows[y].end(), {p[2], p[1], p[0]});  // BGR
    }
  }
  format_test::ExpectDecodesTo(MakeBmp(w, h, 24, {}, rows), px, w, h);
  format_test::ExpectDecodesTo(MakeBmp(w, h, 24, {}, rows, /*top_down=*/true), px, w, h);
  format_test::ExpectRegionIsCrop(MakeBmp(w, h, 24, {}, rows), Rect{3, 2, 5, 4});
}

TEST(BmpDecodeTest, PalettedDepthsGoThroughThePalette) {
  const int w = 11, h = 3;
  Bytes palette;
  for (int i = 0; i < 16; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(2 * i), uint8_t(3 * i), 0});
  for (int bits : {1, 4, 8}) {
    std::vector<Bytes> rows(h);
    Bytes want;
    const int colours = bits == 1 ? 2 : 16;
    for (int y = 0; y < h; ++y) {
      rows[y].assign((w * bits + 7) / 8, 0);
      for (int x = 0; x < w; ++x) {
        const int i = (x * 7 + y * 3) % colours;
        const int bit = x * bits;
        rows[y][bit / 8] |= static_cast<uint8_t>(i << (8 - bits - bit % 8));
        // Palette entries are BGRX: R is the third byte.
        want.insert(want.end(), {uint8_t(3 * i), uint8_t(2 * i), uint8_t(i)});
      }
    }
    Bytes pal(palette.begin(), palette.begin() + 4 * colours);
    SCOPED_TRACE(bits);
    format_test::ExpectDecodesTo(MakeBmp(w, h, bits, pal, rows), want, w, h);
  }
}

TEST(BmpDecodeTest, SixteenBitScalesFiveBitChannelsAsPillow) {
  const int w = 3, h = 1;
  // 5-5-5: R = 31, G = 1, B = 16 -> 255, 1 * 255 / 31 = 8, 16 * 255 / 31 = 131.
  const uint32_t v = (31u << 10) | (1u << 5) | 16u;
  std::vector<Bytes> rows = {Bytes{uint8_t(v), uint8_t(v >> 8), 0, 0, 0xFF, 0x7F}};
  format_test::ExpectDecodesTo(MakeBmp(w, h, 16, {}, rows), Bytes{255, 8, 131, 0, 0, 0, 255, 255, 255}, w, h);
}

TEST(BmpDecodeTest, BadFilesGiveNamedErrors) {
  const int w = 16, h = 8;
  std::vector<Bytes> rows(h, Bytes(w * 3, 0x40));
  const Bytes good = MakeBmp(w, h, 24, {}, rows);
  format_test::ExpectTruncationsFail(good, 54, "BMP: ");

  Bytes bits = good;
  Put16(&bits, 28, 7);
  Bytes rgb;
  int ow = 0, oh = 0;
  Status s = format_test::DecodeTo(bits, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_EQ(s.message(), "BMP: unsupported pixel depth 7");

  Bytes header = good;
  Put32(&header, 14, 41);
  s = format_test::DecodeTo(header, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();

  Bytes jpeg = good;
  Put32(&jpeg, 30, 4);  // BI_JPEG
  s = format_test::DecodeTo(jpeg, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();

  Bytes zero = good;
  Put32(&zero, 18, 0);
  s = format_test::DecodeTo(zero, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();

  // A huge declared size is refused at Open(), before any pixel memory.
  Bytes huge = good;
  Put32(&huge, 18, 100000);
  Put32(&huge, 22, 100000);
  ImageDecoder dec(DecoderOptions{int64_t{1} << 24});
  ImageHeader hd;
  s = dec.Open(huge.data(), huge.size(), &hd);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
}

TEST(BmpDecodeTest, RleStreamEndingEarlyIsDataLoss) {
  const int w = 4, h = 2;
  Bytes palette(16 * 4, 0);
  std::vector<Bytes> rows(h);
  Bytes b = MakeBmp(w, h, 8, palette, rows, false, /*compression=*/1);
  // Replace the raster by an RLE8 stream giving one row, then end of bitmap.
  const size_t offset = 14 + 40 + palette.size();
  b.resize(offset);
  b.insert(b.end(), {4, 1, 0, 0, 0, 1});
  Bytes rgb;
  int ow = 0, oh = 0;
  Status s = format_test::DecodeTo(b, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(s.message(), "BMP: RLE data gives 4 of 8 pixels");
}

}  // namespace
}  // namespace stoker
