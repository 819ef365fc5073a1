// Copyright 2026 The stoker Authors.
//
// Test-data makers: images encoded in memory and temporary directories. The
// tests make all their data with these; nothing outside the repository is
// read. Thread-safety: pure functions (TempDir is a value owning a path).
#ifndef STOKER_TESTING_TEST_IMAGES_H_
#define STOKER_TESTING_TEST_IMAGES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::testing {

// Smooth, textured RGB pixels (HWC) that depend on `seed`.
std::vector<uint8_t> MakePixels(int width, int height, uint64_t seed);

struct JpegSpec {
  int quality = 90;
  int subsampling = 444;  // 444, 422 or 420
  bool progressive = false;
  // Progressive with one scan per AC coefficient and component (1 + 63 x
  // components scans): a scan-count bomb in small form.
  bool one_coefficient_per_scan = false;
  bool arithmetic = false;
  enum Color { kRgb, kGray, kCmyk } color = kRgb;
  bool adobe_marker = true;  // CMYK: write the Adobe APP14 marker (inverted CMYK)
};
// Encodes width x height pixels (RGB HWC; for kGray the first channel; for
// kCmyk, C = 255 - R, M = 255 - G, Y = 255 - B, K = seed-derived).
std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                const JpegSpec& spec = {});

struct PngSpec {
  int color_type = 2;     // PNG colour type: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA
  int bit_depth = 8;      // 1, 2, 4, 8, 16 as the colour type allows
  bool interlaced = false;
  bool trns = false;      // palette: add a tRNS chunk
};
// Encodes pixels derived from `rgb` into the requested PNG flavour. The
// expected 8-bit RGB decode of the result is written to `expected_rgb`.
std::vector<uint8_t> EncodePng(const std::vector<uint8_t>& rgb, int width, int height,
                               const PngSpec& spec, std::vector<uint8_t>* expected_rgb);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes);
void MakeDirs(const std::string& path);

}  // namespace stoker::testing

#endif  // STOKER_TESTING_TEST_IMAGES_H_
