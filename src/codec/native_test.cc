// Copyright 2026 The stoker Authors.
// Native-mode decoding (ImageDecoder::DecodeNative): the channels and bit
// depth the file holds, on files written here with libpng, libtiff, libjpeg
// and libwebp; parity with Pillow on Pillow-written files is in
// python/tests/test_shard_records.py.
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <tiffio.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using Bytes = std::vector<uint8_t>;

// Samples (x, y, c) of a test image with `max` as the largest value.
uint32_t Sample(int x, int y, int c, uint32_t max) {
  return static_cast<uint32_t>((x * 7919u + y * 104729u + c * 31u + x * y) % (max + 1));
}

void PngWrite(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
void PngFlush(png_structp) {}

// A PNG of `color_type` (0 grey, 2 RGB, 4 grey+alpha, 6 RGBA) at `depth` bits
// (8 or 16) holding Sample() values.
Bytes WritePng(int w, int h, int color_type, int depth) {
  const int channels = color_type == 0 ? 1 : color_type == 2 ? 3 : color_type == 4 ? 2 : 4;
  const uint32_t max = (1u << depth) - 1;
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("WritePng failed");
  }
  png_set_write_fn(png, &out, &PngWrite, &PngFlush);
  png_set_IHDR(png, info, w, h, depth, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  Bytes row(static_cast<size_t>(w) * channels * (depth / 8));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        const uint32_t v = Sample(x, y, c, max);
        const size_t i = static_cast<size_t>(x) * channels + c;
        if (depth == 16) {  // PNG is big-endian
          row[2 * i] = static_cast<uint8_t>(v >> 8);
          row[2 * i + 1] = static_cast<uint8_t>(v);
        } else {
          row[i] = static_cast<uint8_t>(v);
        }
      }
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// Expects `img` to be w x h x channels of Sample() values at `bytes` per sample.
void ExpectSamples(const NativeImage& img, int w, int h, int channels, int bytes) {
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  ASSERT_EQ(img.channels, channels);
  ASSERT_EQ(img.bytes_per_sample, bytes);
  const uint32_t max = bytes == 2 ? 65535 : 255;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        const size_t i = (static_cast<size_t>(y) * w + x) * channels + c;
        uint32_t got;
        if (bytes == 2) {
          uint16_t v;
          std::memcpy(&v, img.pixels.data() + 2 * i, 2);
          got = v;
        } else {
          got = img.pixels[i];
        }
        ASSERT_EQ(got, Sample(x, y, c, max)) << "x " << x << " y " << y << " c " << c;
      }
    }
  }
}

struct PngCase {
  int color_type;
  int depth;
  int channels;
};

class NativePngTest : public ::testing::TestWithParam<PngCase> {};

TEST_P(NativePngTest, KeepsChannelsAndDepth) {
  const PngCase c = GetParam();
  const int w = 37, h = 19;
  const Bytes png = WritePng(w, h, c.color_type, c.depth);
  ImageDecoder dec;
  NativeImage img;
  Status s = dec.DecodeNative(png.data(), png.size(), &img);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSamples(img, w, h, c.channels, c.depth / 8);
  // The same decoder, reused, gives the same again (and RGB mode 3 channels).
  NativeImage rgb;
  ASSERT_TRUE(dec.DecodeRgb(png.data(), png.size(), &rgb).ok());
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.bytes_per_sample, 1);
  ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &img).ok());
  ExpectSamples(img, w, h, c.channels, c.depth / 8);
}

INSTANTIATE_TEST_SUITE_P(Kinds, NativePngTest,
                         ::testing::Values(PngCase{0, 8, 1}, PngCase{0, 16, 1},
                                           PngCase{4, 8, 2}, PngCase{2, 8, 3},
                                           PngCase{2, 16, 3}, PngCase{6, 8, 4},
                                           PngCase{6, 16, 4}));

TEST(NativePngTest, PaletteWithTransparencyIsRgba) {
  testing::PngSpec spec;
  spec.color_type = 3;
  spec.trns = true;
  const int w = 16, h = 9;
  Bytes expected;
  const Bytes png = testing::EncodePng(testing::MakePixels(w, h, 3), w, h, spec, &expected);
  ImageDecoder dec;
  NativeImage img;
  ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &img).ok());
  ASSERT_EQ(img.channels, 4);
  ASSERT_EQ(img.bytes_per_sample, 1);
  for (int i = 0; i < w * h; ++i) {  // the colours are the RGB decode's
    for (int c = 0; c < 3; ++c) ASSERT_EQ(img.pixels[4 * i + c], expected[3 * i + c]) << i;
  }
}

// Label maps (mask fields): a palette PNG of 1, 2, 4 or 8 bits gives its
// indices, one byte each, whatever its palette and tRNS say.
TEST(NativePngTest, PaletteIndicesForLabelMaps) {
  for (int depth : {1, 2, 4, 8}) {
    for (bool trns : {false, true}) {
      testing::PngSpec spec;
      spec.color_type = 3;
      spec.bit_depth = depth;
      spec.trns = trns;
      const int w = 13, h = 5;
      const Bytes rgb = testing::MakePixels(w, h, 7);
      Bytes expected;
      const Bytes png = testing::EncodePng(rgb, w, h, spec, &expected);
      ImageDecoder dec;
      NativeImage img;
      ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &img, /*palette_indices=*/true).ok());
      ASSERT_EQ(img.channels, 1) << depth;
      ASSERT_EQ(img.bytes_per_sample, 1);
      const int entries = std::min(16, 1 << depth);
      for (int i = 0; i < w * h; ++i) {  // EncodePng's index: (r / 16) % entries
        ASSERT_EQ(img.pixels[i], (rgb[3 * i] / 16) % entries) << depth << " " << i;
      }
    }
  }
}

// A band of rows (mask fields cropped by their first step): the same bytes
// as those rows of the whole decode, and libpng stops after the band's last
// row; an interlaced PNG (Adam7) is decoded whole and says so.
TEST(NativePngTest, RowBandIsTheWholeDecodesRowsAndStopsAfterIt) {
  const int w = 257, h = 160;  // libpng reads the IDAT data 8 KiB at a time
  for (int ct : {0, 3}) {
    for (int depth : {4, 8, 16}) {
      if (ct == 3 && depth == 16) continue;
      for (bool interlaced : {false, true}) {
        testing::PngSpec spec;
        spec.color_type = ct;
        spec.bit_depth = depth;
        spec.interlaced = interlaced;
        Bytes expected;
        const Bytes png = testing::EncodePng(testing::MakePixels(w, h, 3), w, h, spec, &expected);
        ImageDecoder dec;
        NativeImage whole, band;
        ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &whole, true).ok());
        NativeRows rows;
        rows.begin = 6;
        rows.end = 17;
        ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &band, true, &rows).ok());
        const std::string what = std::to_string(ct) + "/" + std::to_string(depth) +
                                 (interlaced ? " interlaced" : "");
        EXPECT_EQ(rows.image_height, h) << what;
        EXPECT_EQ(band.width, w);
        EXPECT_EQ(band.bytes_per_sample, whole.bytes_per_sample);
        const int first = interlaced ? 0 : 6;
        EXPECT_EQ(rows.first, first) << what;
        EXPECT_EQ(rows.rows_read, interlaced ? h : 17) << what;
        ASSERT_EQ(band.height, interlaced ? h : 11) << what;
        ASSERT_EQ(band.row_bytes(), whole.row_bytes());
        for (int y = 0; y < band.height; ++y) {
          ASSERT_EQ(std::memcmp(band.row(y), whole.row(first + y), band.row_bytes()), 0)
              << what << " row " << y;
        }
        if (interlaced) continue;
        // libpng really stops: damage in the last image data (the 200 bytes
        // before the last IDAT's CRC and IEND) fails the whole decode, and the
        // band, which ends in the first half of the rows, is still given.
        Bytes cut = png;
        for (size_t i = cut.size() - 16 - 200; i < cut.size() - 16; ++i) cut[i] ^= 0xA5;
        EXPECT_FALSE(dec.DecodeNative(cut.data(), cut.size(), &whole, true).ok()) << what;
        NativeImage cut_band;
        const Status cs = dec.DecodeNative(cut.data(), cut.size(), &cut_band, true, &rows);
        ASSERT_TRUE(cs.ok()) << what << " " << cs.ToString();
        for (int y = 0; y < band.height; ++y) {
          ASSERT_EQ(std::memcmp(cut_band.row(y), band.row(y), band.row_bytes()), 0) << what;
        }
      }
    }
  }
}

TEST(NativePngTest, MaxPixelsRefusedBeforeAllocating) {
  const Bytes png = WritePng(40, 40, 0, 16);
  ImageDecoder dec(DecoderOptions{1000});
  NativeImage img;
  Status s = dec.DecodeNative(png.data(), png.size(), &img);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(img.pixels.capacity(), 0u);
}

// A libtiff file of `spp` samples (1 grey, 3 RGB) at `bits`, strips or tiles.
Bytes WriteTiff(int w, int h, int spp, int bits, bool tiled) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/t.tif";
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  EXPECT_NE(tif, nullptr);
  if (tif == nullptr) return {};
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, spp == 1 ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  const int bps = bits / 8;
  const uint32_t max = (1u << bits) - 1;
  auto put = [&](uint8_t* dst, size_t i, uint32_t v) {
    if (bps == 2) {
      const uint16_t v16 = static_cast<uint16_t>(v);
      std::memcpy(dst + 2 * i, &v16, 2);  // libtiff takes host order
    } else {
      dst[i] = static_cast<uint8_t>(v);
    }
  };
  if (tiled) {
    const int t = 16;
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, t);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, t);
    std::vector<uint8_t> tile(static_cast<size_t>(t) * t * spp * bps);
    for (int ty = 0; ty < h; ty += t) {
      for (int tx = 0; tx < w; tx += t) {
        std::fill(tile.begin(), tile.end(), 0);
        for (int y = 0; y < t && ty + y < h; ++y) {
          for (int x = 0; x < t && tx + x < w; ++x) {
            for (int s = 0; s < spp; ++s) {
              put(tile.data(), (static_cast<size_t>(y) * t + x) * spp + s,
                  Sample(tx + x, ty + y, s, max));
            }
          }
        }
        EXPECT_GE(TIFFWriteTile(tif, tile.data(), tx, ty, 0, 0), 0);
      }
    }
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 5);
    std::vector<uint8_t> row(static_cast<size_t>(w) * spp * bps);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        for (int s = 0; s < spp; ++s) put(row.data(), static_cast<size_t>(x) * spp + s, Sample(x, y, s, max));
      }
      EXPECT_EQ(TIFFWriteScanline(tif, row.data(), y, 0), 1);
    }
  }
  TIFFClose(tif);
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

TEST(NativeTiffTest, SixteenBitGreyAndRgbAsStored) {
  for (int spp : {1, 3}) {
    for (bool tiled : {false, true}) {
      SCOPED_TRACE(std::to_string(spp) + (tiled ? " tiled" : " strips"));
      const int w = 37, h = 21;
      const Bytes tif = WriteTiff(w, h, spp, 16, tiled);
      ImageDecoder dec;
      NativeImage img;
      Status s = dec.DecodeNative(tif.data(), tif.size(), &img);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ExpectSamples(img, w, h, spp, 2);
    }
  }
  const Bytes grey8 = WriteTiff(20, 10, 1, 8, false);
  ImageDecoder dec;
  NativeImage img;
  ASSERT_TRUE(dec.DecodeNative(grey8.data(), grey8.size(), &img).ok());
  ExpectSamples(img, 20, 10, 1, 1);
}

// A greyscale baseline JPEG of Sample() values (libjpeg, JCS_GRAYSCALE in).
Bytes WriteGreyJpeg(int w, int h) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = 1;
  cinfo.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  Bytes row(static_cast<size_t>(w));
  while (cinfo.next_scanline < cinfo.image_height) {
    const int y = static_cast<int>(cinfo.next_scanline);
    for (int x = 0; x < w; ++x) row[static_cast<size_t>(x)] = static_cast<uint8_t>(Sample(x, y, 0, 255));
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  Bytes out(buf, buf + size);
  jpeg_destroy_compress(&cinfo);
  free(buf);
  return out;
}

TEST(NativeJpegTest, GreyIsOneChannelColourIsRgb) {
  const int w = 45, h = 29;
  const Bytes jpg = WriteGreyJpeg(w, h);
  ImageDecoder dec;
  NativeImage grey, rgb;
  Status s = dec.DecodeNative(jpg.data(), jpg.size(), &grey);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(grey.channels, 1);
  ASSERT_EQ(grey.bytes_per_sample, 1);
  ASSERT_EQ(grey.width, w);
  ASSERT_EQ(grey.height, h);
  // libjpeg's grey -> RGB copies the one component: the RGB decode's red.
  ASSERT_TRUE(dec.DecodeRgb(jpg.data(), jpg.size(), &rgb).ok());
  for (int i = 0; i < w * h; ++i) ASSERT_EQ(grey.pixels[i], rgb.pixels[3 * i]) << i;

  // A colour JPEG stays RGB, the pixels of the RGB decode.
  const Bytes px = testing::MakePixels(w, h, 5);
  Bytes colour;
  ASSERT_TRUE(EncodeJpeg(RgbView{px.data(), w, h, w * 3}, 90, 420, &colour).ok());
  NativeImage native;
  ASSERT_TRUE(dec.DecodeNative(colour.data(), colour.size(), &native).ok());
  ASSERT_TRUE(dec.DecodeRgb(colour.data(), colour.size(), &rgb).ok());
  ASSERT_EQ(native.channels, 3);
  EXPECT_EQ(0, std::memcmp(native.pixels.data(), rgb.pixels.data(), native.bytes()));
}

TEST(NativeWebpTest, AlphaIsRgbaOpaqueIsRgb) {
  const int w = 23, h = 17;
  Bytes rgba(static_cast<size_t>(w) * h * 4);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 4; ++c) rgba[(static_cast<size_t>(y) * w + x) * 4 + c] =
          static_cast<uint8_t>(Sample(x, y, c, 255));
    }
  }
  // Lossless, keeping the colour under transparent pixels (exact).
  WebPConfig config;
  ASSERT_TRUE(WebPConfigInit(&config));
  config.lossless = 1;
  config.exact = 1;
  WebPPicture pic;
  ASSERT_TRUE(WebPPictureInit(&pic));
  pic.use_argb = 1;
  pic.width = w;
  pic.height = h;
  ASSERT_TRUE(WebPPictureImportRGBA(&pic, rgba.data(), w * 4));
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &writer;
  ASSERT_TRUE(WebPEncode(&config, &pic));
  WebPPictureFree(&pic);
  const Bytes webp(writer.mem, writer.mem + writer.size);
  WebPMemoryWriterClear(&writer);
  uint8_t* out = nullptr;
  ImageDecoder dec;
  NativeImage img;
  Status s = dec.DecodeNative(webp.data(), webp.size(), &img);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSamples(img, w, h, 4, 1);

  const Bytes rgb = testing::MakePixels(w, h, 8);
  const size_t m = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &out);
  ASSERT_GT(m, 0u);
  const Bytes opaque(out, out + m);
  WebPFree(out);
  ASSERT_TRUE(dec.DecodeNative(opaque.data(), opaque.size(), &img).ok());
  EXPECT_EQ(img.channels, 3);
}

}  // namespace
}  // namespace stoker
