// Copyright 2026 The stoker Authors.
//
// Writes the seed corpora of decode_fuzz: into DIR small JPEGs (4:4:4,
// 4:2:2, 4:2:0, greyscale, CMYK with and without the Adobe marker,
// progressive, arithmetic-coded) and PNGs of every colour type and bit
// depth, interlaced or not, palette with and without tRNS; into FORMATS_DIR
// (the run with fuzz/formats.dict) TIFFs (strips and tiles, contiguous and
// separate planes, 8 and 16 bits, grey, RGB, RGBA, palette, CMYK, bilevel;
// none, LZW, Deflate, PackBits, Group 4), WebPs (lossy, lossless, alpha,
// animated with frames at offsets), RLE BMPs and plain PNMs, plus the
// allocation-bomb shapes of issue 32 at sizes within the fuzzer's max_pixels.
#include <tiffio.h>
#include <webp/encode.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "testing/hostile_images.h"
#include "testing/test_images.h"

namespace {

using stoker::testing::Bytes;

struct TiffSeed {
  uint16_t photometric, bits, spp, compression;
  bool tiled, separate;
  uint16_t extra = 0;  // an ExtraSamples value for spp above the colour's
};

// A small TIFF written by libtiff through a temporary file.
Bytes WriteTiff(const TiffSeed& t, const Bytes& rgb, int w, int h) {
  stoker::testing::TempDir dir;
  const std::string path = dir.path() + "/s.tif";
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  if (tif == nullptr) return {};
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, t.bits);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, t.spp);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, t.photometric);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, t.compression);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, t.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
  if (t.extra != 0) {
    uint16_t extra[1] = {t.extra};
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
  }
  if (t.photometric == PHOTOMETRIC_PALETTE) {
    static uint16_t map[3][256];
    for (int i = 0; i < 256; ++i) {
      map[0][i] = static_cast<uint16_t>(i * 257);
      map[1][i] = static_cast<uint16_t>((255 - i) * 257);
      map[2][i] = static_cast<uint16_t>((i * 7 % 256) * 257);
    }
    TIFFSetField(tif, TIFFTAG_COLORMAP, map[0], map[1], map[2]);
  }
  const int planes = t.separate ? t.spp : 1, per_pixel = t.separate ? 1 : t.spp;
  const size_t row = (static_cast<size_t>(w) * per_pixel * t.bits + 7) / 8;
  auto fill = [&](uint8_t* dst, size_t n, int y, int p) {
    for (size_t i = 0; i < n; ++i) {
      dst[i] = rgb[(static_cast<size_t>(y) * w * 3 + i * 5 + p) % rgb.size()];
    }
  };
  if (t.tiled) {
    const int ts = 16;
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, ts);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, ts);
    Bytes tile(static_cast<size_t>(TIFFTileSize(tif)));
    for (int p = 0; p < planes; ++p) {
      for (int ty = 0; ty < h; ty += ts) {
        for (int tx = 0; tx < w; tx += ts) {
          fill(tile.data(), tile.size(), ty + tx, p);
          TIFFWriteTile(tif, tile.data(), tx, ty, 0, static_cast<uint16_t>(p));
        }
      }
    }
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3);
    Bytes line(row);
    for (int p = 0; p < planes; ++p) {
      for (int y = 0; y < h; ++y) {
        fill(line.data(), line.size(), y, p);
        TIFFWriteScanline(tif, line.data(), y, static_cast<uint16_t>(p));
      }
    }
  }
  TIFFClose(tif);
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

int WriteFormatSeeds(const std::string& dir) {
  using namespace stoker::testing;
  int n = 0;
  auto put = [&](const std::string& name, const Bytes& b) {
    if (!b.empty()) WriteFile(dir + "/" + name + "_" + std::to_string(n++), b);
  };
  const int w = 21, h = 13;
  const Bytes px = MakePixels(w, h, 9);
  // TIFF: libtiff-written layouts.
  const TiffSeed tiffs[] = {
      {PHOTOMETRIC_RGB, 8, 3, COMPRESSION_NONE, false, false},
      {PHOTOMETRIC_RGB, 8, 3, COMPRESSION_LZW, true, false},
      {PHOTOMETRIC_RGB, 16, 3, COMPRESSION_ADOBE_DEFLATE, false, true},
      {PHOTOMETRIC_RGB, 8, 4, COMPRESSION_PACKBITS, false, false, EXTRASAMPLE_ASSOCALPHA},
      {PHOTOMETRIC_RGB, 8, 4, COMPRESSION_NONE, true, true, EXTRASAMPLE_UNASSALPHA},
      {PHOTOMETRIC_MINISBLACK, 16, 1, COMPRESSION_LZW, false, false},
      {PHOTOMETRIC_MINISBLACK, 8, 2, COMPRESSION_NONE, false, true, EXTRASAMPLE_UNASSALPHA},
      {PHOTOMETRIC_MINISWHITE, 1, 1, COMPRESSION_CCITTFAX4, false, false},
      {PHOTOMETRIC_MINISBLACK, 4, 1, COMPRESSION_PACKBITS, false, false},
      {PHOTOMETRIC_PALETTE, 8, 1, COMPRESSION_LZW, true, false},
      {PHOTOMETRIC_SEPARATED, 8, 4, COMPRESSION_NONE, false, true},
  };
  for (const TiffSeed& t : tiffs) put("tiff", WriteTiff(t, px, w, h));
  // WebP: stills and animations.
  uint8_t* out = nullptr;
  auto take = [&](size_t size) {
    Bytes b(out, out + size);
    WebPFree(out);
    return b;
  };
  Bytes rgba;
  for (size_t i = 0; i < px.size() / 3; ++i) {
    rgba.insert(rgba.end(), px.begin() + static_cast<std::ptrdiff_t>(3 * i),
                px.begin() + static_cast<std::ptrdiff_t>(3 * i + 3));
    rgba.push_back(static_cast<uint8_t>(i * 29));
  }
  const Bytes lossy = take(WebPEncodeRGB(px.data(), w, h, w * 3, 60.0f, &out));
  const Bytes lossless = take(WebPEncodeLosslessRGB(px.data(), w, h, w * 3, &out));
  const Bytes alpha = take(WebPEncodeRGBA(rgba.data(), w, h, w * 4, 60.0f, &out));
  put("webp", lossy);
  put("webp", lossless);
  put("webp", alpha);
  put("webp_anim", MakeAnimatedWebp(40, 30, {alpha, lossless}, {8, 0}, {4, 2}));
  put("webp_anim", MakeAnimatedWebp(w, h, {lossy, lossy}, {0, 0}, {0, 0}));
  // BMP RLE8: runs, an absolute run, end of line, a delta, end of bitmap.
  put("bmp_rle", MakeRle8Bmp(9, 4, {4, 1, 0, 4, 5, 6, 7, 8, 0, 0, 0, 2, 3, 1, 2, 9, 0, 0, 9, 3,
                                    0, 1}));
  // Plain PNM.
  put("pnm", Text("P1\n# c\n3 2\n1 0 1\n0 1 0\n"));
  put("pnm", Text("P2 3 2 300\n0 150 300 7 8 9\n"));
  put("pnm", Text("P3\n2 1\n255\n1 2 3 4 5 6"));
  // The allocation-bomb shapes (issue 32), 2048 x 2048 (the fuzzer's
  // max_pixels is 2^22): each must be refused before its allocation.
  const int big = 2048;
  TiffSpec strip;
  strip.width = strip.height = big;
  put("bomb_tiff_strip", MakeTiff(strip, Bytes(100, 7)));
  strip.compression = 8;
  put("bomb_tiff_deflate", MakeTiff(strip, Deflate(Bytes(1000, 0))));
  TiffSpec tile;
  tile.spp = 1;
  tile.photometric = 1;
  tile.tile_width = tile.tile_height = big;
  put("bomb_tiff_tile", MakeTiff(tile, Bytes(256, 0)));
  put("bomb_webp_lossy", WithVp8Size(lossy, big, big));
  // Valid files coding a large area in a few bytes (decoded: kept at 300 x
  // 300, so that the fuzzer's executions stay fast).
  const int valid = 300;
  const Bytes one = take(WebPEncodeLosslessRGB(px.data(), 1, 1, 3, &out));
  put("dense_webp_canvas", MakeAnimatedWebp(valid, valid, {one}, {0}, {0}));
  Bytes rle;
  for (int y = 0; y < valid; y += 255) rle.insert(rle.end(), {0, 2, 7, 255});
  put("dense_bmp_rle", MakeRle8Bmp(valid, valid, rle));
  put("bomb_bmp_rle", MakeRle8Bmp(big, big, {0, 2, 0, 255, 0, 2, 0, 255}));
  put("bomb_pnm", Text("P3 2048 2048 255\n1 2 3\n"));
  put("bomb_png", MakePng(big, big, Deflate(Bytes(100, 0))));
  JpegSpec prog;
  prog.progressive = true;
  put("bomb_jpeg", WithJpegSize(EncodeJpeg(MakePixels(32, 24, 1), 32, 24, prog), big, big));
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stoker::testing;
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DIR [FORMATS_DIR]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  MakeDirs(dir);
  int n = 0;
  auto px = MakePixels(37, 23, 7);
  for (int sub : {444, 422, 420}) {
    for (bool prog : {false, true}) {
      for (bool arith : {false, true}) {
        JpegSpec s;
        s.subsampling = sub;
        s.progressive = prog;
        s.arithmetic = arith;
        s.quality = 75;
        WriteFile(dir + "/jpeg_" + std::to_string(n++) + ".jpg", EncodeJpeg(px, 37, 23, s));
      }
    }
  }
  for (auto color : {JpegSpec::kGray, JpegSpec::kCmyk}) {
    for (bool adobe : {true, false}) {
      JpegSpec s;
      s.color = color;
      s.adobe_marker = adobe;
      WriteFile(dir + "/jpeg_" + std::to_string(n++) + ".jpg", EncodeJpeg(px, 37, 23, s));
    }
  }
  const int types[][2] = {{0, 1}, {0, 2}, {0, 4}, {0, 8}, {0, 16}, {2, 8}, {2, 16}, {3, 1},
                          {3, 2}, {3, 4}, {3, 8}, {4, 8}, {4, 16}, {6, 8}, {6, 16}};
  for (const auto& t : types) {
    for (bool interlaced : {false, true}) {
      PngSpec s;
      s.color_type = t[0];
      s.bit_depth = t[1];
      s.interlaced = interlaced;
      s.trns = t[0] == 3 && interlaced;
      std::vector<uint8_t> expected;
      WriteFile(dir + "/png_" + std::to_string(n++) + ".png", EncodePng(px, 37, 23, s, &expected));
    }
  }
  std::printf("%d seeds in %s\n", n, dir.c_str());
  if (argc == 3) {
    MakeDirs(argv[2]);
    std::printf("%d seeds in %s\n", WriteFormatSeeds(argv[2]), argv[2]);
  }
  return 0;
}
