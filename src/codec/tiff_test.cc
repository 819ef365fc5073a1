// Copyright 2026 The stoker Authors.
// TIFF decoding (codec/tiff.cc) on files written here with libtiff, including
// layouts Pillow cannot write (tiles, separate planes); parity with Pillow on
// Pillow-written files is in python/tests/test_formats.py.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/formats_test_util.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using format_test::Bytes;

struct Layout {
  int bits = 8;               // 8 or 16
  bool tiled = false;         // 16 x 16 tiles
  bool separate = false;      // PLANARCONFIG_SEPARATE
  uint16_t photometric = PHOTOMETRIC_RGB;  // RGB, MINISBLACK or MINISWHITE
  uint16_t compression = COMPRESSION_NONE;
};

// Writes `rgb` (w x h; for grey layouts the first channel) with libtiff and
// returns the file's bytes.
Bytes WriteTiff(const Bytes& rgb, int w, int h, const Layout& l) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/t.tif";
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  EXPECT_NE(tif, nullptr);
  if (tif == nullptr) return {};
  const int spp = l.photometric == PHOTOMETRIC_RGB ? 3 : 1;
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, l.bits);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, l.photometric);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, l.compression);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, l.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  const int bps = l.bits / 8;
  // Sample s of pixel (x, y) in the file's units.
  auto value = [&](int x, int y, int s) -> uint32_t {
    const uint8_t v = rgb[(static_cast<size_t>(y) * w + x) * 3 + s];
    return l.bits == 16 ? (uint32_t{v} << 8) | (v ^ 0x5A) : v;  // low byte: noise
  };
  auto put = [&](uint8_t* dst, size_t i, uint32_t v) {
    if (bps == 2) {
      const uint16_t v16 = static_cast<uint16_t>(v);
      std::memcpy(dst + 2 * i, &v16, 2);
    } else {
      dst[i] = static_cast<uint8_t>(v);
    }
  };
  const int planes = l.separate ? spp : 1;
  const int per_pixel = l.separate ? 1 : spp;
  if (l.tiled) {
    const int t = 16;
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, t);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, t);
    std::vector<uint8_t> tile(static_cast<size_t>(t) * t * per_pixel * bps);
    for (int p = 0; p < planes; ++p) {
      for (int ty = 0; ty < h; ty += t) {
        for (int tx = 0; tx < w; tx += t) {
          std::fill(tile.begin(), tile.end(), 0);
          for (int y = 0; y < t && ty + y < h; ++y) {
            for (int x = 0; x < t && tx + x < w; ++x) {
              for (int s = 0; s < per_pixel; ++s) {
                put(tile.data(), (static_cast<size_t>(y) * t + x) * per_pixel + s,
                    value(tx + x, ty + y, l.separate ? p : s));
              }
            }
          }
          EXPECT_GE(TIFFWriteTile(tif, tile.data(), tx, ty, 0, static_cast<uint16_t>(p)), 0);
        }
      }
    }
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 5);
    std::vector<uint8_t> row(static_cast<size_t>(w) * per_pixel * bps);
    for (int p = 0; p < planes; ++p) {
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          for (int s = 0; s < per_pixel; ++s) {
            put(row.data(), static_cast<size_t>(x) * per_pixel + s, value(x, y, l.separate ? p : s));
          }
        }
        EXPECT_EQ(TIFFWriteScanline(tif, row.data(), y, static_cast<uint16_t>(p)), 1);
      }
    }
  }
  TIFFClose(tif);
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

class TiffLayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(TiffLayoutTest, DecodesExactly) {
  const Layout l = GetParam();
  const int w = 37, h = 21;  // not a multiple of the tile or strip size
  const Bytes px = testing::MakePixels(w, h, 9);
  Bytes want = px;
  if (l.photometric != PHOTOMETRIC_RGB) {
    for (size_t i = 0; i < want.size(); i += 3) {
      const uint8_t v = l.photometric == PHOTOMETRIC_MINISWHITE ? 255 - px[i] : px[i];
      want[i] = want[i + 1] = want[i + 2] = v;
    }
  }
  const Bytes file = WriteTiff(px, w, h, l);
  format_test::ExpectDecodesTo(file, want, w, h);
  format_test::ExpectRegionIsCrop(file, Rect{5, 3, 20, 10});
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, TiffLayoutTest,
    ::testing::Values(Layout{}, Layout{8, true}, Layout{8, false, true},
                      Layout{8, true, true}, Layout{16}, Layout{16, true, true},
                      Layout{8, false, false, PHOTOMETRIC_MINISBLACK},
                      Layout{8, true, false, PHOTOMETRIC_MINISWHITE},
                      Layout{8, false, false, PHOTOMETRIC_RGB, COMPRESSION_LZW},
                      Layout{8, true, false, PHOTOMETRIC_RGB, COMPRESSION_ADOBE_DEFLATE}));

TEST(TiffDecodeTest, BadFilesGiveNamedErrors) {
  const int w = 16, h = 12;
  const Bytes px = testing::MakePixels(w, h, 4);
  for (const Layout& l : {Layout{}, Layout{8, true, false, PHOTOMETRIC_RGB, COMPRESSION_LZW}}) {
    const Bytes file = WriteTiff(px, w, h, l);
    format_test::ExpectTruncationsFail(file, 8, "TIFF: ");
  }
  // A first IFD past the end of the file.
  Bytes bad = WriteTiff(px, w, h, Layout{});
  bad[4] = 0xFF;
  bad[5] = 0xFF;
  Bytes rgb;
  int ow = 0, oh = 0;
  Status s = format_test::DecodeTo(bad, &rgb, &ow, &oh);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_EQ(s.message().rfind("TIFF: cannot read the header", 0), 0u) << s.ToString();
  // Above the pixel limit: refused at Open().
  const Bytes file = WriteTiff(px, w, h, Layout{});
  ImageDecoder dec(DecoderOptions{100});
  ImageHeader hd;
  s = dec.Open(file.data(), file.size(), &hd);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
}

}  // namespace
}  // namespace stoker
