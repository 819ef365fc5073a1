// Copyright 2026 The stoker Authors.
//
// Writes the seed corpus of decode_fuzz into DIR: small JPEGs (4:4:4, 4:2:2,
// 4:2:0, greyscale, CMYK with and without the Adobe marker, progressive,
// arithmetic-coded) and PNGs of every colour type and bit depth, interlaced
// or not, palette with and without tRNS.
#include <cstdio>
#include <string>

#include "testing/test_images.h"

int main(int argc, char** argv) {
  using namespace stoker::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
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
  return 0;
}
