// Copyright 2026 The stoker Authors.
#include "codec/decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

// After <cstdio>: jpeglib.h uses FILE.
#include <jpeglib.h>

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using Bytes = std::vector<uint8_t>;
using stoker::testing::EncodeJpeg;
using stoker::testing::EncodePng;
using stoker::testing::JpegSpec;
using stoker::testing::MakePixels;
using stoker::testing::PngSpec;

// A decoded image copied out of a view, packed (stride = 3 * width).
struct Packed {
  int width = 0;
  int height = 0;
  Bytes rgb;
  const uint8_t* at(int x, int y) const {
    return &rgb[(static_cast<size_t>(y) * width + x) * 3];
  }
};

Packed Pack(const RgbView& v) {
  Packed p;
  p.width = v.width;
  p.height = v.height;
  p.rgb.resize(static_cast<size_t>(v.width) * v.height * 3);
  for (int y = 0; y < v.height; ++y) {
    std::memcpy(&p.rgb[static_cast<size_t>(y) * v.width * 3], v.row(y),
                static_cast<size_t>(v.width) * 3);
  }
  return p;
}

// Opens and decodes the whole image at 1/d with `dec`; fails the test on error.
Packed DecodeWhole(ImageDecoder* dec, const Bytes& bytes, int d = 1,
                   DecodedRegion* region_out = nullptr) {
  ImageHeader h;
  Status st = dec->Open(bytes.data(), bytes.size(), &h);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  DecodedRegion r;
  st = dec->Decode(DecodeRequest{Rect{}, d}, &r);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  if (region_out != nullptr) *region_out = r;
  return Pack(r.pixels);
}

// Opens and decodes (or fails), returning the first non-OK status.
Status OpenAndDecode(ImageDecoder* dec, const Bytes& bytes, DecodeRequest req = {},
                     DecodedRegion* out = nullptr) {
  ImageHeader h;
  Status st = dec->Open(bytes.data(), bytes.size(), &h);
  if (!st.ok()) return st;
  DecodedRegion r;
  st = dec->Decode(req, &r);
  if (st.ok() && out != nullptr) *out = r;
  return st;
}

double MeanAbsDiff(const Bytes& a, const Bytes& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size() || a.empty()) return 1e9;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(int(a[i]) - int(b[i]));
  return s / a.size();
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Byte offset of the first occurrence of marker 0xFF `code`, or npos.
size_t FindMarker(const Bytes& b, uint8_t code, size_t from = 2) {
  for (size_t i = from; i + 1 < b.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == code) return i;
  }
  return std::string::npos;
}

// Offset of the first byte of entropy-coded data (after the first SOS header).
size_t ScanDataStart(const Bytes& b) {
  const size_t sos = FindMarker(b, 0xDA);
  if (sos == std::string::npos) return sos;
  const size_t len = (static_cast<size_t>(b[sos + 2]) << 8) | b[sos + 3];
  return sos + 2 + len;
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

void PutBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// Offset of the data of the first chunk of `type` in a PNG, or npos.
size_t FindPngChunkData(const Bytes& b, const char* type, uint32_t* length) {
  size_t pos = 8;
  while (pos + 8 <= b.size()) {
    const uint32_t len = (uint32_t(b[pos]) << 24) | (uint32_t(b[pos + 1]) << 16) |
                         (uint32_t(b[pos + 2]) << 8) | uint32_t(b[pos + 3]);
    if (std::memcmp(&b[pos + 4], type, 4) == 0) {
      *length = len;
      return pos + 8;
    }
    pos += 12 + len;
  }
  return std::string::npos;
}

// ------------------------------------------------------------- sniffing ----

TEST(SniffImageFormatTest, DetectsByContent) {
  const Bytes px = MakePixels(16, 16, 1);
  const Bytes jpeg = EncodeJpeg(px, 16, 16);
  Bytes expected;
  const Bytes png = EncodePng(px, 16, 16, PngSpec{}, &expected);
  EXPECT_EQ(SniffImageFormat(jpeg.data(), jpeg.size()), ImageFormat::kJpeg);
  EXPECT_EQ(SniffImageFormat(png.data(), png.size()), ImageFormat::kPng);
  // Only the leading bytes matter.
  EXPECT_EQ(SniffImageFormat(jpeg.data(), 3), ImageFormat::kJpeg);
  EXPECT_EQ(SniffImageFormat(png.data(), 8), ImageFormat::kPng);
  // Too short to tell.
  EXPECT_EQ(SniffImageFormat(jpeg.data(), 2), ImageFormat::kUnknown);
  EXPECT_EQ(SniffImageFormat(png.data(), 7), ImageFormat::kUnknown);
  const char text[] = "hello, this is not an image";
  EXPECT_EQ(SniffImageFormat(reinterpret_cast<const uint8_t*>(text), sizeof text),
            ImageFormat::kUnknown);
  const uint8_t garbage[] = {0x00, 0xD8, 0xFF, 0xE0, 0x89, 'P', 'N', 'G', 1, 2};
  EXPECT_EQ(SniffImageFormat(garbage, sizeof garbage), ImageFormat::kUnknown);
  Bytes bad_png = png;
  bad_png[1] = 'Q';
  EXPECT_EQ(SniffImageFormat(bad_png.data(), bad_png.size()), ImageFormat::kUnknown);
  EXPECT_EQ(SniffImageFormat(nullptr, 0), ImageFormat::kUnknown);
  EXPECT_EQ(SniffImageFormat(jpeg.data(), 0), ImageFormat::kUnknown);
}

// ------------------------------------------------------------ full JPEG ----

TEST(JpegDecodeTest, Full444Quality100IsCloseToSource) {
  const int w = 333, h = 251;
  const Bytes px = MakePixels(w, h, 5);
  JpegSpec spec;
  spec.quality = 100;
  spec.subsampling = 444;
  const Bytes jpeg = EncodeJpeg(px, w, h, spec);
  ImageDecoder dec;
  ImageHeader hdr;
  ASSERT_TRUE(dec.Open(jpeg.data(), jpeg.size(), &hdr).ok());
  EXPECT_EQ(hdr.format, ImageFormat::kJpeg);
  EXPECT_EQ(hdr.width, w);
  EXPECT_EQ(hdr.height, h);
  DecodedRegion r;
  ASSERT_TRUE(dec.Decode({}, &r).ok());
  EXPECT_EQ(r.pixels.width, w);
  EXPECT_EQ(r.pixels.height, h);
  EXPECT_EQ(r.region, (Rect{0, 0, w, h}));
  EXPECT_EQ(r.scale_denom, 1);
  EXPECT_EQ(r.scaled_width, w);
  EXPECT_EQ(r.scaled_height, h);
  const Packed p = Pack(r.pixels);
  EXPECT_LT(MeanAbsDiff(p.rgb, px), 1.5);
  // Channel order: a swapped R/B would be far off.
  int max_diff = 0;
  for (size_t i = 0; i < px.size(); ++i) max_diff = std::max(max_diff, std::abs(p.rgb[i] - px[i]));
  EXPECT_LT(max_diff, 16);
}

TEST(JpegDecodeTest, DecodeAllMatchesOpenDecode) {
  const Bytes px = MakePixels(70, 50, 9);
  const Bytes jpeg = EncodeJpeg(px, 70, 50);
  ImageDecoder a, b;
  DecodedRegion r;
  ASSERT_TRUE(a.DecodeAll(jpeg.data(), jpeg.size(), &r).ok());
  const Packed pa = Pack(r.pixels);
  const Packed pb = DecodeWhole(&b, jpeg);
  EXPECT_EQ(pa.width, 70);
  EXPECT_EQ(pa.height, 50);
  EXPECT_EQ(pa.rgb, pb.rgb);
}

TEST(JpegDecodeTest, GreyscaleGivesEqualChannels) {
  const int w = 97, h = 61;
  const Bytes px = MakePixels(w, h, 6);
  JpegSpec spec;
  spec.color = JpegSpec::kGray;
  spec.quality = 95;
  const Bytes jpeg = EncodeJpeg(px, w, h, spec);
  ImageDecoder dec;
  const Packed p = DecodeWhole(&dec, jpeg);
  ASSERT_EQ(p.width, w);
  ASSERT_EQ(p.height, h);
  double diff = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* q = p.at(x, y);
      ASSERT_EQ(q[0], q[1]) << x << "," << y;
      ASSERT_EQ(q[0], q[2]) << x << "," << y;
      diff += std::abs(q[0] - px[(static_cast<size_t>(y) * w + x) * 3]);
    }
  }
  // The grey is the source's first channel.
  EXPECT_LT(diff / (w * h), 3.0);
}

// Pillow's CMYK -> RGB for one channel, as an independent formula.
uint8_t PillowCmyk(int c, int k) {
  const int nk = 255 - k;
  const int t = c * nk + 128;
  const int v = nk - ((t + (t >> 8)) >> 8);
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

// Decodes a CMYK JPEG with libjpeg directly, returning the stored samples
// and whether an Adobe marker was seen.
Bytes LibjpegRawCmyk(const Bytes& jpeg, int* w, int* h, bool* adobe) {
  jpeg_decompress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&c, TRUE);
  c.out_color_space = JCS_CMYK;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  *w = static_cast<int>(c.output_width);
  *h = static_cast<int>(c.output_height);
  *adobe = c.saw_Adobe_marker;
  Bytes out(static_cast<size_t>(*w) * *h * 4);
  while (c.output_scanline < c.output_height) {
    JSAMPROW row = &out[static_cast<size_t>(c.output_scanline) * *w * 4];
    jpeg_read_scanlines(&c, &row, 1);
  }
  jpeg_finish_decompress(&c);
  jpeg_destroy_decompress(&c);
  return out;
}

class CmykTest : public ::testing::TestWithParam<bool> {};

TEST_P(CmykTest, MatchesPillowFormulaOnRealCmyk) {
  const bool adobe_marker = GetParam();
  const int w = 83, h = 57;
  const Bytes px = MakePixels(w, h, 12);
  JpegSpec spec;
  spec.color = JpegSpec::kCmyk;
  spec.adobe_marker = adobe_marker;
  spec.quality = 95;
  const Bytes jpeg = EncodeJpeg(px, w, h, spec);

  int rw, rh;
  bool saw_adobe;
  const Bytes stored = LibjpegRawCmyk(jpeg, &rw, &rh, &saw_adobe);
  ASSERT_EQ(rw, w);
  ASSERT_EQ(rh, h);
  ASSERT_EQ(saw_adobe, adobe_marker);

  ImageDecoder dec;
  const Packed p = DecodeWhole(&dec, jpeg);
  ASSERT_EQ(p.width, w);
  ASSERT_EQ(p.height, h);

  // Real CMYK: Adobe files store it inverted.
  double real_err = 0, formula_err = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* s = &stored[(static_cast<size_t>(y) * w + x) * 4];
      int cmyk[4];
      for (int k = 0; k < 4; ++k) cmyk[k] = adobe_marker ? 255 - s[k] : s[k];
      // What the encoder meant to write (EncodeJpeg's convention).
      const uint8_t* src = &px[(static_cast<size_t>(y) * w + x) * 3];
      const int want[4] = {255 - src[0], 255 - src[1], 255 - src[2], (x * 7 + y * 3) % 64};
      for (int k = 0; k < 4; ++k) real_err += std::abs(cmyk[k] - want[k]);
      const uint8_t* q = p.at(x, y);
      for (int ch = 0; ch < 3; ++ch) {
        ASSERT_EQ(q[ch], PillowCmyk(cmyk[ch], cmyk[3]))
            << "pixel " << x << "," << y << " channel " << ch;
        formula_err += std::abs(q[ch] - PillowCmyk(want[ch], want[3]));
      }
    }
  }
  // Sanity: the stored samples are the intended CMYK (so the exact check
  // above is against the right convention), and the RGB is near Pillow's
  // RGB of the source CMYK.
  EXPECT_LT(real_err / (w * h * 4), 3.0);
  EXPECT_LT(formula_err / (w * h * 3), 3.0);
}

INSTANTIATE_TEST_SUITE_P(AdobeMarker, CmykTest, ::testing::Bool());

TEST(JpegDecodeTest, CmykRegionMatchesFull) {
  const int w = 150, h = 101;
  const Bytes px = MakePixels(w, h, 13);
  for (bool adobe : {false, true}) {
    JpegSpec spec;
    spec.color = JpegSpec::kCmyk;
    spec.adobe_marker = adobe;
    const Bytes jpeg = EncodeJpeg(px, w, h, spec);
    ImageDecoder dec;
    for (int d : {1, 2}) {
      const Packed full = DecodeWhole(&dec, jpeg, d);
      DecodedRegion r;
      ASSERT_TRUE(OpenAndDecode(&dec, jpeg, {Rect{37, 21, 61, 45}, d}, &r).ok());
      const Packed sub = Pack(r.pixels);
      for (int y = 0; y < sub.height; ++y) {
        for (int x = 0; x < sub.width; ++x) {
          ASSERT_EQ(0, std::memcmp(sub.at(x, y), full.at(r.region.x + x, r.region.y + y), 3))
              << "adobe " << adobe << " d " << d << " at " << x << "," << y;
        }
      }
    }
  }
}

// ---------------------------------------------------------- JPEG regions ----

struct RegionCase {
  int width, height;
  int subsampling;
  bool progressive;
  bool arithmetic;
  JpegSpec::Color color;
};

std::string RegionCaseString(const RegionCase& c) {
  std::string s = std::to_string(c.width) + "x" + std::to_string(c.height) + "_";
  if (c.color == JpegSpec::kGray) s += "grey";
  else s += 's' + std::to_string(c.subsampling);
  if (c.progressive) s += "_progressive";
  if (c.arithmetic) s += "_arith";
  return s;
}
std::string CaseName(const ::testing::TestParamInfo<RegionCase>& info) {
  return RegionCaseString(info.param);
}
void PrintTo(const RegionCase& c, std::ostream* os) { *os << RegionCaseString(c); }

class JpegRegionTest : public ::testing::TestWithParam<RegionCase> {
 protected:
  void SetUp() override {
    const RegionCase& c = GetParam();
    W = c.width;
    H = c.height;
    const Bytes px = MakePixels(W, H, static_cast<uint64_t>(W * 31 + H));
    JpegSpec spec;
    spec.quality = 85;
    spec.subsampling = c.subsampling;
    spec.progressive = c.progressive;
    spec.arithmetic = c.arithmetic;
    spec.color = c.color;
    jpeg = EncodeJpeg(px, W, H, spec);
  }

  // Decodes each of `rects` at 1/d and compares with the full decode at 1/d.
  void CheckRegions(int d, const std::vector<Rect>& rects) {
    SCOPED_TRACE("scale_denom " + std::to_string(d));
    DecodedRegion whole;
    const Packed full = DecodeWhole(&dec, jpeg, d, &whole);
    const int sw = CeilDiv(W, d), sh = CeilDiv(H, d);
    ASSERT_EQ(full.width, sw);
    ASSERT_EQ(full.height, sh);
    EXPECT_EQ(whole.scaled_width, sw);
    EXPECT_EQ(whole.scaled_height, sh);
    EXPECT_EQ(whole.scale_denom, d);
    EXPECT_EQ(whole.region, (Rect{0, 0, sw, sh}));
    for (const Rect& want : rects) {
      if (want.width <= 0 || want.height <= 0 || want.x < 0 || want.y < 0) continue;
      if (want.x >= W || want.y >= H) continue;
      const std::string where = "region (" + std::to_string(want.x) + ", " +
                                std::to_string(want.y) + ") " + std::to_string(want.width) +
                                "x" + std::to_string(want.height) + " at 1/" + std::to_string(d);
      DecodedRegion r;
      const Status st = OpenAndDecode(&dec, jpeg, DecodeRequest{want, d}, &r);
      ASSERT_TRUE(st.ok()) << where << ": " << st.ToString();
      const int x0 = want.x / d, y0 = want.y / d;
      const int x1 = std::min(sw, CeilDiv(std::min(want.right(), W), d));
      const int y1 = std::min(sh, CeilDiv(std::min(want.bottom(), H), d));
      ASSERT_EQ(r.region, (Rect{x0, y0, x1 - x0, y1 - y0})) << where;
      EXPECT_EQ(r.scale_denom, d);
      EXPECT_EQ(r.scaled_width, sw);
      EXPECT_EQ(r.scaled_height, sh);
      ASSERT_EQ(r.pixels.width, x1 - x0) << where;
      ASSERT_EQ(r.pixels.height, y1 - y0) << where;
      int mismatches = 0;
      std::string first;
      for (int y = 0; y < r.pixels.height; ++y) {
        const uint8_t* row = r.pixels.row(y);
        for (int x = 0; x < r.pixels.width; ++x) {
          const uint8_t* f = full.at(x0 + x, y0 + y);
          if (std::memcmp(row + 3 * x, f, 3) != 0 && mismatches++ == 0) {
            first = "first mismatch at scaled pixel (" + std::to_string(x0 + x) + ", " +
                    std::to_string(y0 + y) + "): region decode " +
                    std::to_string(row[3 * x]) + "," + std::to_string(row[3 * x + 1]) + "," +
                    std::to_string(row[3 * x + 2]) + " vs full decode " +
                    std::to_string(f[0]) + "," + std::to_string(f[1]) + "," +
                    std::to_string(f[2]);
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << where << ": " << first;
    }
  }

  int W = 0, H = 0;
  Bytes jpeg;
  ImageDecoder dec;
};

TEST_P(JpegRegionTest, RegionIsBitIdenticalToFullDecode) {
  const RegionCase& c = GetParam();
  Rng rng(static_cast<uint64_t>(W) * 1000 + H + c.subsampling + c.progressive);
  for (int d : {1, 2, 4, 8}) {
    std::vector<Rect> rects = {
        Rect{0, 0, W, H},                     // everything
        Rect{0, H / 3, W, H / 4 + 1},         // full width
        Rect{W / 2, 0, W - W / 2, H},         // right half, full height
        Rect{W - 1, H - 1, 1, 1},             // bottom-right pixel
        Rect{W - 17, H - 9, 17, 9},           // bottom-right corner
        Rect{W / 3, H / 5, 1, H / 2},         // one column
        Rect{0, H / 2, 9, 1},                 // left edge, one row
        Rect{W / 4, H / 4, W / 2, 1},         // one row
        Rect{W - 5, 3, 5, H - 3},             // right edge
        Rect{W - 1, 0, 1, H},                 // last column
        Rect{8, 8, 8, 8},                     // MCU-aligned
        Rect{15, 15, 2, 2},                   // straddles MCU boundaries
        Rect{W - 40, H - 30, 100, 100},       // extends past the image: clipped
    };
    for (int i = 0; i < 40; ++i) {
      const int rw = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(W)));
      const int rh = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(H)));
      const int rx = static_cast<int>(rng.Below(static_cast<uint64_t>(W - rw + 1)));
      const int ry = static_cast<int>(rng.Below(static_cast<uint64_t>(H - rh + 1)));
      rects.push_back(Rect{rx, ry, rw, rh});
    }
    for (int i = 0; i < 20; ++i) {  // small ones
      const int rw = 1 + static_cast<int>(rng.Below(24));
      const int rh = 1 + static_cast<int>(rng.Below(24));
      rects.push_back(Rect{static_cast<int>(rng.Below(static_cast<uint64_t>(W))),
                           static_cast<int>(rng.Below(static_cast<uint64_t>(H))), rw, rh});
    }
    CheckRegions(d, rects);
  }
}

// Regions whose decoded span (widened by one column each side, then aligned
// down to the iMCU) is only a few pixels wide: x in {0, 1} or one past an
// iMCU boundary, 1 to 3 pixels wide.
TEST_P(JpegRegionTest, NarrowRegionNearMcuStartIsBitIdenticalToFullDecode) {
  for (int d : {1, 2, 4, 8}) {
    std::vector<Rect> rects;
    for (int x : {0, 1, 2, 17, 33, 49}) {
      for (int w : {1, 2, 3}) {
        rects.push_back(Rect{x * d, (H / 2) / d * d, w * d, 1});
        rects.push_back(Rect{x * d, 0, w * d, 5 * d});
      }
    }
    CheckRegions(d, rects);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, JpegRegionTest,
    ::testing::Values(RegionCase{333, 251, 444, false, false, JpegSpec::kRgb},
                      RegionCase{333, 251, 422, false, false, JpegSpec::kRgb},
                      RegionCase{333, 251, 420, false, false, JpegSpec::kRgb},
                      RegionCase{333, 251, 420, true, false, JpegSpec::kRgb},
                      RegionCase{500, 375, 444, false, false, JpegSpec::kRgb},
                      RegionCase{500, 375, 422, false, false, JpegSpec::kRgb},
                      RegionCase{500, 375, 420, false, false, JpegSpec::kRgb},
                      RegionCase{500, 375, 444, true, false, JpegSpec::kRgb},
                      RegionCase{500, 375, 420, true, false, JpegSpec::kRgb},
                      RegionCase{64, 48, 444, false, false, JpegSpec::kRgb},
                      RegionCase{64, 48, 422, false, false, JpegSpec::kRgb},
                      RegionCase{64, 48, 420, false, false, JpegSpec::kRgb},
                      RegionCase{64, 48, 420, true, false, JpegSpec::kRgb},
                      RegionCase{257, 131, 420, false, true, JpegSpec::kRgb},
                      RegionCase{201, 99, 444, false, false, JpegSpec::kGray}),
    CaseName);

TEST(JpegDecodeTest, RejectsBadScaleDenomAndEmptyRegion) {
  const Bytes px = MakePixels(40, 30, 2);
  const Bytes jpeg = EncodeJpeg(px, 40, 30);
  ImageDecoder dec;
  for (int d : {0, 3, 16, -1}) {
    const Status st = OpenAndDecode(&dec, jpeg, DecodeRequest{Rect{}, d});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << d << " " << st.ToString();
  }
  // Entirely outside the image.
  Status st = OpenAndDecode(&dec, jpeg, DecodeRequest{Rect{50, 0, 10, 10}, 1});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  st = OpenAndDecode(&dec, jpeg, DecodeRequest{Rect{0, 40, 10, 10}, 2});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  // Still usable afterwards.
  const Packed p = DecodeWhole(&dec, jpeg);
  EXPECT_EQ(p.width, 40);
  EXPECT_EQ(p.height, 30);
}

TEST(JpegDecodeTest, NegativeOriginIsClipped) {
  const Bytes px = MakePixels(48, 40, 3);
  const Bytes jpeg = EncodeJpeg(px, 48, 40, JpegSpec{90, 420});
  ImageDecoder dec;
  const Packed full = DecodeWhole(&dec, jpeg);
  DecodedRegion r;
  ASSERT_TRUE(OpenAndDecode(&dec, jpeg, DecodeRequest{Rect{-5, -7, 20, 20}, 1}, &r).ok());
  EXPECT_EQ(r.region, (Rect{0, 0, 15, 13}));
  const Packed sub = Pack(r.pixels);
  for (int y = 0; y < sub.height; ++y)
    for (int x = 0; x < sub.width; ++x) ASSERT_EQ(0, std::memcmp(sub.at(x, y), full.at(x, y), 3));
}

// decoder.h promises at least 16 readable bytes after a view's last row (the
// resampler's vector loads use them). Reading them is only checked for real
// under AddressSanitizer; the sum keeps the reads from being optimised away.
TEST(DecoderTailPaddingTest, SixteenReadableBytesFollowTheLastRow) {
  const Bytes px = MakePixels(101, 67, 50);
  std::vector<Bytes> images;
  images.push_back(EncodeJpeg(px, 101, 67, JpegSpec{90, 444}));
  images.push_back(EncodeJpeg(px, 101, 67, JpegSpec{90, 420}));
  JpegSpec cmyk;
  cmyk.color = JpegSpec::kCmyk;
  images.push_back(EncodeJpeg(px, 101, 67, cmyk));
  Bytes expected;
  images.push_back(EncodePng(px, 101, 67, PngSpec{}, &expected));
  const Rect rects[] = {Rect{}, Rect{0, 0, 101, 67}, Rect{90, 60, 11, 7}, Rect{3, 5, 1, 1},
                        Rect{50, 66, 51, 1}};
  ImageDecoder dec;
  uint64_t sum = 0;
  for (const Bytes& img : images) {
    for (const Rect& r : rects) {
      for (int d : {1, 2, 8}) {
        DecodedRegion out;
        ASSERT_TRUE(OpenAndDecode(&dec, img, DecodeRequest{r, d}, &out).ok());
        const uint8_t* end = out.pixels.row(out.pixels.height - 1) + 3 * out.pixels.width;
        for (int i = 0; i < 16; ++i) sum += end[i];
      }
    }
  }
  EXPECT_GE(sum, 0u);
}

// ------------------------------------------------------------------ PNG ----

struct PngCase {
  int color_type;
  int bit_depth;
  bool trns;
};

void PrintTo(const PngCase& c, std::ostream* os) {
  *os << "colour type " << c.color_type << ", " << c.bit_depth << " bits"
      << (c.trns ? ", tRNS" : "");
}

std::vector<PngCase> AllPngCases() {
  std::vector<PngCase> v;
  for (int d : {1, 2, 4, 8, 16}) v.push_back({0, d, false});
  for (int d : {8, 16}) v.push_back({2, d, false});
  for (int d : {1, 2, 4, 8}) {
    v.push_back({3, d, false});
    v.push_back({3, d, true});
  }
  for (int d : {8, 16}) v.push_back({4, d, false});
  for (int d : {8, 16}) v.push_back({6, d, false});
  return v;
}

class PngDecodeTest : public ::testing::TestWithParam<std::tuple<PngCase, bool>> {};

TEST_P(PngDecodeTest, DecodesExactlyAndRegionIsAView) {
  const PngCase c = std::get<0>(GetParam());
  const bool interlaced = std::get<1>(GetParam());
  const int w = 61, h = 43;  // odd sizes exercise partial bytes and Adam7 passes
  const Bytes px = MakePixels(w, h, static_cast<uint64_t>(c.color_type * 100 + c.bit_depth));
  PngSpec spec;
  spec.color_type = c.color_type;
  spec.bit_depth = c.bit_depth;
  spec.interlaced = interlaced;
  spec.trns = c.trns;
  Bytes expected;
  const Bytes png = EncodePng(px, w, h, spec, &expected);

  ImageDecoder dec;
  ImageHeader hdr;
  Status st = dec.Open(png.data(), png.size(), &hdr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(hdr.format, ImageFormat::kPng);
  EXPECT_EQ(hdr.width, w);
  EXPECT_EQ(hdr.height, h);
  DecodedRegion r;
  st = dec.Decode({}, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.region, (Rect{0, 0, w, h}));
  EXPECT_EQ(r.scale_denom, 1);
  EXPECT_EQ(r.scaled_width, w);
  EXPECT_EQ(r.scaled_height, h);
  const Packed p = Pack(r.pixels);
  ASSERT_EQ(p.width, w);
  ASSERT_EQ(p.height, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* e = &expected[(static_cast<size_t>(y) * w + x) * 3];
      ASSERT_EQ(0, std::memcmp(p.at(x, y), e, 3))
          << "pixel " << x << "," << y << " got " << int(p.at(x, y)[0]) << ","
          << int(p.at(x, y)[1]) << "," << int(p.at(x, y)[2]) << " want " << int(e[0]) << ","
          << int(e[1]) << "," << int(e[2]);
    }
  }

  // A region (scale_denom is ignored for PNG) is a view of those pixels.
  const Rect want{7, 5, 23, 17};
  st = OpenAndDecode(&dec, png, DecodeRequest{want, 4}, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.region, want);
  EXPECT_EQ(r.scale_denom, 1);
  EXPECT_EQ(r.scaled_width, w);
  EXPECT_EQ(r.scaled_height, h);
  ASSERT_EQ(r.pixels.width, want.width);
  ASSERT_EQ(r.pixels.height, want.height);
  for (int y = 0; y < want.height; ++y) {
    for (int x = 0; x < want.width; ++x) {
      const uint8_t* e = &expected[(static_cast<size_t>(want.y + y) * w + want.x + x) * 3];
      ASSERT_EQ(0, std::memcmp(r.pixels.row(y) + 3 * x, e, 3)) << x << "," << y;
    }
  }
  // Clipped at the bottom-right.
  st = OpenAndDecode(&dec, png, DecodeRequest{Rect{w - 3, h - 2, 10, 10}, 1}, &r);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(r.region, (Rect{w - 3, h - 2, 3, 2}));
  EXPECT_EQ(0, std::memcmp(r.pixels.row(1) + 6,
                           &expected[(static_cast<size_t>(h - 1) * w + w - 1) * 3], 3));
}

// DecodeRows: the rows of a non-interlaced PNG, one at a
// time, are those of the whole decode; interlaced images cannot stream.
TEST_P(PngDecodeTest, RowsMatchTheWholeDecode) {
  const PngCase c = std::get<0>(GetParam());
  const bool interlaced = std::get<1>(GetParam());
  const int w = 67, h = 29;
  PngSpec spec;
  spec.color_type = c.color_type;
  spec.bit_depth = c.bit_depth;
  spec.interlaced = interlaced;
  spec.trns = c.trns;
  Bytes expected;
  const Bytes png = EncodePng(MakePixels(w, h, 77 + c.bit_depth), w, h, spec, &expected);
  ImageDecoder dec;
  ImageHeader hdr;
  ASSERT_TRUE(dec.Open(png.data(), png.size(), &hdr).ok());
  ASSERT_EQ(dec.CanDecodeRows(), !interlaced);
  if (interlaced) return;
  struct Seen {
    int w;  // pixels per row handed over
    std::vector<int> ys;
    Bytes rgb;
  } seen{40, {}, {}};
  const ImageDecoder::RowFn collect = [](void* ctx, int y, const uint8_t* rgb) {
    auto* s = static_cast<Seen*>(ctx);
    s->ys.push_back(y);
    s->rgb.insert(s->rgb.end(), rgb, rgb + s->w * 3);
  };
  DecodedRegion info;
  Status st = dec.DecodeRows(DecodeRequest{Rect{3, 5, 40, 16}, 1}, collect, &seen, &info);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(info.region, (Rect{3, 5, 40, 16}));
  EXPECT_EQ(info.scaled_width, w);
  ASSERT_EQ(seen.ys.size(), 16u);
  Bytes want;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(seen.ys[i], 5 + i);
    const auto row = expected.begin() + ((5 + i) * w + 3) * 3;
    want.insert(want.end(), row, row + 40 * 3);
  }
  EXPECT_EQ(seen.rgb, want);
  // One decode per Open(); a region outside the image is refused.
  EXPECT_FALSE(dec.CanDecodeRows());
  EXPECT_FALSE(dec.DecodeRows({}, collect, &seen, &info).ok());
  ASSERT_TRUE(dec.Open(png.data(), png.size(), &hdr).ok());
  EXPECT_EQ(dec.DecodeRows(DecodeRequest{Rect{0, h + 5, 10, 10}, 1}, collect, &seen, &info)
                .code(),
            StatusCode::kInvalidArgument);
  // The whole image; the decoder's pixel scratch is a row, not the image.
  seen = Seen{w, {}, {}};
  ASSERT_TRUE(dec.Open(png.data(), png.size(), &hdr).ok());
  ASSERT_TRUE(dec.DecodeRows({}, collect, &seen, &info).ok());
  EXPECT_EQ(seen.rgb, expected);
  EXPECT_LT(dec.scratch_bytes(), static_cast<size_t>(w) * 3 * 2 + 64);
}

// JPEG DecodeRows: the rows of Decode()'s region, for every colour model,
// region and DCT scale, through a one-row buffer.
TEST(JpegDecodeRowsTest, RowsMatchTheRegionDecode) {
  const int w = 203, h = 157;
  const Bytes px = MakePixels(w, h, 99);
  std::vector<JpegSpec> specs(6);
  specs[1].subsampling = 420;
  specs[2].subsampling = 422;
  specs[2].progressive = true;
  specs[3].color = JpegSpec::kGray;
  specs[4].color = JpegSpec::kCmyk;
  specs[5].color = JpegSpec::kCmyk;
  specs[5].adobe_marker = false;
  const Rect regions[] = {Rect{}, Rect{17, 9, 120, 77}, Rect{0, 100, 5, 57}, Rect{190, 3, 13, 1}};
  struct Seen {
    int w;
    int rows = 0;
    Bytes rgb;
  };
  const ImageDecoder::RowFn collect = [](void* ctx, int /*y*/, const uint8_t* rgb) {
    auto* s = static_cast<Seen*>(ctx);
    ++s->rows;
    s->rgb.insert(s->rgb.end(), rgb, rgb + s->w * 3);
  };
  for (size_t k = 0; k < specs.size(); ++k) {
    const Bytes jpeg = EncodeJpeg(px, w, h, specs[k]);
    for (const Rect& r : regions) {
      for (int d : {1, 2, 4, 8}) {
        ImageDecoder dec;
        ImageHeader hdr;
        DecodedRegion whole;
        ASSERT_TRUE(OpenAndDecode(&dec, jpeg, DecodeRequest{r, d}, &whole).ok());
        const Packed want = Pack(whole.pixels);
        ImageDecoder rows;  // fresh: its scratch is what DecodeRows needed
        ASSERT_TRUE(rows.Open(jpeg.data(), jpeg.size(), &hdr).ok());
        ASSERT_TRUE(rows.CanDecodeRows());
        Seen seen{want.width};
        DecodedRegion info;
        const Status st = rows.DecodeRows(DecodeRequest{r, d}, collect, &seen, &info);
        ASSERT_TRUE(st.ok()) << st.ToString();
        EXPECT_EQ(info.region, whole.region) << "spec " << k << " d " << d;
        EXPECT_EQ(info.scale_denom, d);
        EXPECT_EQ(seen.rows, want.height);
        EXPECT_EQ(seen.rgb, want.rgb) << "spec " << k << " region " << r.x << "," << r.y
                                      << " d " << d;
        // One row held, not the region.
        EXPECT_LE(rows.scratch_bytes(), static_cast<size_t>(w) * 4 + 64) << k << " " << d;
      }
    }
  }
}

std::string PngCaseName(const ::testing::TestParamInfo<std::tuple<PngCase, bool>>& info) {
  const PngCase c = std::get<0>(info.param);
  static const char* kNames[] = {"grey", "", "rgb", "palette", "greyalpha", "", "rgba"};
  std::string s = std::string(kNames[c.color_type]) + std::to_string(c.bit_depth);
  if (c.trns) s += "_trns";
  if (std::get<1>(info.param)) s += "_interlaced";
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllColourTypes, PngDecodeTest,
                         ::testing::Combine(::testing::ValuesIn(AllPngCases()),
                                            ::testing::Bool()),
                         PngCaseName);

// --------------------------------------------------------------- errors ----

TEST(DecoderErrorTest, TruncatedJpegIsDataLoss) {
  const int w = 200, h = 150;
  const Bytes px = MakePixels(w, h, 21);
  for (bool progressive : {false, true}) {
    for (int sub : {444, 420}) {
      JpegSpec spec;
      spec.subsampling = sub;
      spec.progressive = progressive;
      const Bytes jpeg = EncodeJpeg(px, w, h, spec);
      ImageDecoder dec;
      for (int pct = 7; pct < 100; pct += 7) {
        const size_t cut = jpeg.size() * pct / 100;
        const Bytes t(jpeg.begin(), jpeg.begin() + cut);
        const Status st = OpenAndDecode(&dec, t);
        EXPECT_EQ(st.code(), StatusCode::kDataLoss)
            << "progressive " << progressive << " " << sub << " cut at " << cut << " of "
            << jpeg.size() << ": " << st.ToString();
      }
      // The intact file still decodes with the same decoder.
      EXPECT_EQ(DecodeWhole(&dec, jpeg).width, w);
    }
  }
}

// A region above the cut of a truncated (sequential) JPEG decodes without
// libjpeg ever reaching the missing bytes. The file is still refused, as a
// full decode refuses it, so whether a file is bad does not depend on the
// crop drawn for it; a complete file with bytes after its end still decodes.
TEST(DecoderErrorTest, TruncatedJpegIsDataLossForARegionAboveTheCut) {
  const int w = 160, h = 480;
  const Bytes px = MakePixels(w, h, 23);
  for (int sub : {444, 420}) {
    JpegSpec spec;
    spec.subsampling = sub;
    const Bytes jpeg = EncodeJpeg(px, w, h, spec);
    ImageDecoder dec;
    for (int pct : {50, 75, 95}) {
      const Bytes t(jpeg.begin(), jpeg.begin() + jpeg.size() * pct / 100);
      for (int d : {1, 2}) {
        const Status st = OpenAndDecode(&dec, t, DecodeRequest{Rect{10, 0, 100, 40}, d});
        EXPECT_EQ(st.code(), StatusCode::kDataLoss)
            << sub << " cut at " << pct << "%, scale 1/" << d << ": " << st.ToString();
      }
      EXPECT_EQ(OpenAndDecode(&dec, t).code(), StatusCode::kDataLoss);
    }
    Bytes padded = jpeg;
    padded.insert(padded.end(), 300, 0);  // zeros after the end marker, as some cameras write
    DecodedRegion r;
    ASSERT_TRUE(OpenAndDecode(&dec, padded, DecodeRequest{Rect{10, 0, 100, 40}, 1}, &r).ok());
    EXPECT_EQ(r.region.height, 40);
    ASSERT_TRUE(OpenAndDecode(&dec, jpeg, DecodeRequest{Rect{0, 440, 160, 40}, 1}, &r).ok());
    EXPECT_EQ(r.region.y, 440);
  }
}

TEST(DecoderErrorTest, CorruptJpegScanDataNeverCrashes) {
  const int w = 160, h = 120;
  const Bytes px = MakePixels(w, h, 22);
  for (bool progressive : {false, true}) {
    JpegSpec spec;
    spec.subsampling = 420;
    spec.progressive = progressive;
    const Bytes jpeg = EncodeJpeg(px, w, h, spec);
    const size_t start = ScanDataStart(jpeg);
    ASSERT_NE(start, std::string::npos);
    ASSERT_LT(start + 100, jpeg.size());
    ImageDecoder dec;
    Rng rng(progressive ? 7 : 8);
    int failures = 0;
    for (int trial = 0; trial < 60; ++trial) {
      Bytes bad = jpeg;
      const int flips = 1 + static_cast<int>(rng.Below(8));
      for (int f = 0; f < flips; ++f) {
        const size_t pos = start + rng.Below(jpeg.size() - 2 - start);
        bad[pos] ^= static_cast<uint8_t>(1 + rng.Below(255));
      }
      DecodedRegion r;
      const Status st = OpenAndDecode(&dec, bad, {}, &r);
      if (st.ok()) {
        // libjpeg could not tell: the result must still be well formed.
        EXPECT_EQ(r.pixels.width, w);
        EXPECT_EQ(r.pixels.height, h);
        uint64_t sum = 0;
        for (int y = 0; y < h; ++y) sum += r.pixels.row(y)[3 * (w - 1)];
        (void)sum;
      } else {
        ++failures;
        EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
      }
    }
    // Heavy corruption is noticed at least sometimes.
    EXPECT_GT(failures, 0);
    EXPECT_EQ(DecodeWhole(&dec, jpeg).height, h);
  }
}

TEST(DecoderErrorTest, TwelveBitJpegIsUnimplemented) {
  const Bytes px = MakePixels(32, 32, 23);
  Bytes jpeg = EncodeJpeg(px, 32, 32);
  const size_t sof = FindMarker(jpeg, 0xC0);
  ASSERT_NE(sof, std::string::npos);
  ASSERT_EQ(jpeg[sof + 4], 8);  // precision
  jpeg[sof + 4] = 12;
  ImageDecoder dec;
  const Status st = OpenAndDecode(&dec, jpeg);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
  EXPECT_EQ(DecodeWhole(&dec, EncodeJpeg(px, 32, 32)).width, 32);
}

TEST(DecoderErrorTest, GarbageAfterJpegMagicIsDataLoss) {
  Rng rng(24);
  ImageDecoder dec;
  for (int trial = 0; trial < 20; ++trial) {
    Bytes b = {0xFF, 0xD8, 0xFF};
    const int n = 1 + static_cast<int>(rng.Below(300));
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(rng.Next()));
    const Status st = OpenAndDecode(&dec, b);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << trial << " " << st.ToString();
  }
  // Only a marker: nothing else.
  const Bytes soi = {0xFF, 0xD8, 0xFF, 0xD9};
  EXPECT_EQ(OpenAndDecode(&dec, soi).code(), StatusCode::kDataLoss);
}

TEST(DecoderErrorTest, GarbageAfterPngMagicIsDataLoss) {
  Rng rng(25);
  ImageDecoder dec;
  for (int trial = 0; trial < 20; ++trial) {
    Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    const int n = static_cast<int>(rng.Below(300));
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(rng.Next()));
    const Status st = OpenAndDecode(&dec, b);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << trial << " " << st.ToString();
  }
}

TEST(DecoderErrorTest, EmptyInputIsInvalidArgument) {
  ImageDecoder dec;
  ImageHeader h;
  Status st = dec.Open(nullptr, 0, &h);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty"), std::string::npos) << st.message();
  const uint8_t one = 0;
  st = dec.Open(&one, 0, &h);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty"), std::string::npos) << st.message();
  DecodedRegion r;
  EXPECT_FALSE(dec.DecodeAll(nullptr, 0, &r).ok());
}

TEST(DecoderErrorTest, TextIsInvalidArgument) {
  const std::string text = "This is a plain text file, not an image.\n";
  ImageDecoder dec;
  ImageHeader h;
  const Status st =
      dec.Open(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &h);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(st.message().empty());
  // Decode after a failed Open must not pretend to work.
  DecodedRegion r;
  EXPECT_FALSE(dec.Decode({}, &r).ok());
  const uint8_t short_bytes[] = {0xFF, 0xD8};
  EXPECT_EQ(dec.Open(short_bytes, 2, &h).code(), StatusCode::kInvalidArgument);
}

TEST(DecoderErrorTest, DecodeWithoutOpenFails) {
  ImageDecoder dec;
  DecodedRegion r;
  EXPECT_FALSE(dec.Decode({}, &r).ok());
}

TEST(DecoderErrorTest, TruncatedPngIsDataLoss) {
  const int w = 120, h = 90;
  const Bytes px = MakePixels(w, h, 26);
  for (bool interlaced : {false, true}) {
    for (int ct : {2, 3, 6}) {
      PngSpec spec;
      spec.color_type = ct;
      spec.interlaced = interlaced;
      Bytes expected;
      const Bytes png = EncodePng(px, w, h, spec, &expected);
      ImageDecoder dec;
      for (int pct = 7; pct < 100; pct += 7) {
        const size_t cut = png.size() * pct / 100;
        ASSERT_GE(cut, 8u);
        const Bytes t(png.begin(), png.begin() + cut);
        const Status st = OpenAndDecode(&dec, t);
        EXPECT_EQ(st.code(), StatusCode::kDataLoss)
            << "colour type " << ct << " interlaced " << interlaced << " cut at " << cut
            << " of " << png.size() << ": " << st.ToString();
      }
      // Cut inside the signature or the IHDR.
      for (size_t cut : {size_t{9}, size_t{20}, size_t{33}}) {
        const Bytes t(png.begin(), png.begin() + cut);
        EXPECT_EQ(OpenAndDecode(&dec, t).code(), StatusCode::kDataLoss) << cut;
      }
      const Packed p = DecodeWhole(&dec, png);
      EXPECT_EQ(p.rgb, expected);
    }
  }
}

TEST(DecoderErrorTest, PngWithCorruptIdatIsDataLoss) {
  const int w = 100, h = 80;
  const Bytes px = MakePixels(w, h, 27);
  Bytes expected;
  const Bytes png = EncodePng(px, w, h, PngSpec{}, &expected);
  uint32_t len = 0;
  const size_t data = FindPngChunkData(png, "IDAT", &len);
  ASSERT_NE(data, std::string::npos);
  ASSERT_GT(len, 100u);
  ImageDecoder dec;
  for (int frac = 1; frac < 10; ++frac) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      Bytes bad = png;
      bad[data + len * frac / 10] ^= mask;
      const Status st = OpenAndDecode(&dec, bad);
      EXPECT_EQ(st.code(), StatusCode::kDataLoss)
          << "byte " << data + len * frac / 10 << " mask " << int(mask) << ": " << st.ToString();
    }
  }
  // A damaged CRC alone (data intact) is caught too.
  Bytes bad_crc = png;
  bad_crc[data + len] ^= 0x10;
  EXPECT_EQ(OpenAndDecode(&dec, bad_crc).code(), StatusCode::kDataLoss);
  // A damaged IHDR CRC fails at Open.
  Bytes bad_ihdr = png;
  bad_ihdr[29] ^= 0x01;
  ImageHeader hdr;
  EXPECT_EQ(dec.Open(bad_ihdr.data(), bad_ihdr.size(), &hdr).code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeWhole(&dec, png).rgb, expected);
}

TEST(DecoderErrorTest, MaxPixelsRefusesLargeImages) {
  const int w = 64, h = 48;
  const Bytes px = MakePixels(w, h, 28);
  const Bytes jpeg = EncodeJpeg(px, w, h);
  Bytes expected;
  const Bytes png = EncodePng(px, w, h, PngSpec{}, &expected);
  for (const Bytes* img : {&jpeg, &png}) {
    {
      DecoderOptions opt;
      opt.max_pixels = w * h - 1;
      ImageDecoder dec(opt);
      ImageHeader hdr;
      const Status st = dec.Open(img->data(), img->size(), &hdr);
      EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
      EXPECT_NE(st.message().find(std::to_string(w * h - 1)), std::string::npos)
          << st.message();
      EXPECT_NE(st.message().find("64x48"), std::string::npos) << st.message();
    }
    {
      DecoderOptions opt;
      opt.max_pixels = w * h;  // exactly at the limit is fine
      ImageDecoder dec(opt);
      EXPECT_EQ(DecodeWhole(&dec, *img).width, w);
    }
    {
      DecoderOptions opt;
      opt.max_pixels = 0;  // no limit
      ImageDecoder dec(opt);
      EXPECT_EQ(DecodeWhole(&dec, *img).height, h);
    }
  }
}

TEST(DecoderErrorTest, ProgressiveScanCountIsLimited) {
  const int w = 64, h = 48;
  const Bytes px = MakePixels(w, h, 31);
  JpegSpec spec;
  spec.one_coefficient_per_scan = true;  // 1 + 3 x 63 = 190 scans
  const Bytes jpeg = EncodeJpeg(px, w, h, spec);
  {
    DecoderOptions opt;
    opt.max_scans = 100;
    ImageDecoder dec(opt);
    ImageHeader hdr;
    ASSERT_TRUE(dec.Open(jpeg.data(), jpeg.size(), &hdr).ok());
    DecodedRegion out;
    const Status st = dec.Decode(DecodeRequest{}, &out);
    EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
    EXPECT_NE(st.message().find("max_scans"), std::string::npos) << st.message();
    // The decoder stays usable: the next image decodes.
    const Bytes plain = EncodeJpeg(px, w, h);
    EXPECT_EQ(DecodeWhole(&dec, plain).width, w);
  }
  {
    ImageDecoder dec;  // the default (256) lets 190 scans through
    EXPECT_EQ(DecodeWhole(&dec, jpeg).width, w);
  }
}

TEST(DecoderErrorTest, HugePngHeaderIsRefusedAtOpen) {
  const Bytes px = MakePixels(16, 16, 29);
  Bytes expected;
  Bytes png = EncodePng(px, 16, 16, PngSpec{}, &expected);
  // IHDR: length(4) "IHDR"(4) at 8; width at 16, height at 20, CRC at 29.
  ASSERT_EQ(0, std::memcmp(&png[12], "IHDR", 4));
  PutBe32(&png[16], 100000);
  PutBe32(&png[20], 100000);
  PutBe32(&png[29], Crc32(&png[12], 17));
  ImageDecoder dec;  // default limit 2^28 < 10^10
  ImageHeader hdr;
  const Status st = dec.Open(png.data(), png.size(), &hdr);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("100000x100000"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(std::to_string(int64_t{1} << 28)), std::string::npos);

  // Sanity check of the crafted CRC: the same bytes with 17x16 are accepted.
  Bytes small = EncodePng(px, 16, 16, PngSpec{}, &expected);
  PutBe32(&small[16], 16);
  PutBe32(&small[29], Crc32(&small[12], 17));
  EXPECT_TRUE(dec.Open(small.data(), small.size(), &hdr).ok());
  EXPECT_EQ(hdr.width, 16);
}

TEST(DecoderErrorTest, HugeJpegHeaderIsRefusedAtOpen) {
  const Bytes px = MakePixels(16, 16, 30);
  Bytes jpeg = EncodeJpeg(px, 16, 16);
  const size_t sof = FindMarker(jpeg, 0xC0);
  ASSERT_NE(sof, std::string::npos);
  // FF C0 len(2) precision(1) height(2) width(2)
  jpeg[sof + 5] = 0xEA;  // 60000
  jpeg[sof + 6] = 0x60;
  jpeg[sof + 7] = 0xEA;
  jpeg[sof + 8] = 0x60;
  ImageDecoder dec;
  ImageHeader hdr;
  const Status st = dec.Open(jpeg.data(), jpeg.size(), &hdr);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find("60000x60000"), std::string::npos) << st.message();
}

// ----------------------------------------------------------------- reuse ----

TEST(DecoderReuseTest, ReusedDecoderKeepsGivingCorrectResults) {
  struct Item {
    Bytes bytes;
    Bytes expected;  // exact expected pixels (PNG), or empty
    bool corrupt = false;
    DecodeRequest req;
  };
  std::vector<Item> items;
  Rng rng(31);
  const int sizes[][2] = {{64, 48}, {333, 251}, {17, 9}, {120, 200}, {1, 1}, {250, 31}};
  for (int i = 0; i < 6; ++i) {
    const int w = sizes[i][0], h = sizes[i][1];
    const Bytes px = MakePixels(w, h, 100 + i);
    JpegSpec js;
    js.subsampling = i % 3 == 0 ? 444 : i % 3 == 1 ? 422 : 420;
    js.progressive = i % 2 == 1;
    js.color = i == 4 ? JpegSpec::kGray : i == 5 ? JpegSpec::kCmyk : JpegSpec::kRgb;
    Item j;
    j.bytes = EncodeJpeg(px, w, h, js);
    j.req = DecodeRequest{Rect{w / 3, h / 4, std::max(1, w / 2), std::max(1, h / 2)},
                          1 << (i % 4)};
    items.push_back(j);
    Item p;
    PngSpec ps;
    const int cts[] = {0, 2, 3, 4, 6, 3};
    ps.color_type = cts[i];
    ps.bit_depth = i % 2 ? 16 : 8;
    if (ps.color_type == 3) ps.bit_depth = i == 2 ? 4 : 8;
    ps.interlaced = i % 3 == 2;
    p.bytes = EncodePng(px, w, h, ps, &p.expected);
    items.push_back(p);
    Item bad;
    bad.bytes = (i % 2 ? j : p).bytes;
    bad.bytes.resize(bad.bytes.size() * 2 / 3);
    bad.corrupt = true;
    items.push_back(bad);
  }
  Item text;
  const std::string s = "not an image at all";
  text.bytes.assign(s.begin(), s.end());
  text.corrupt = true;
  items.push_back(text);

  // Reference results from fresh decoders.
  std::vector<Packed> want(items.size());
  std::vector<Rect> want_region(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].corrupt) continue;
    ImageDecoder fresh;
    DecodedRegion r;
    const Status st = OpenAndDecode(&fresh, items[i].bytes, items[i].req, &r);
    ASSERT_TRUE(st.ok()) << i << " " << st.ToString();
    want[i] = Pack(r.pixels);
    want_region[i] = r.region;
    if (!items[i].expected.empty()) {
      // PNG: check the fresh decode itself against the truth.
      const int w = r.scaled_width;
      for (int y = 0; y < r.region.height; ++y)
        for (int x = 0; x < r.region.width; ++x)
          ASSERT_EQ(0, std::memcmp(want[i].at(x, y),
                                   &items[i].expected[(static_cast<size_t>(r.region.y + y) * w +
                                                       r.region.x + x) * 3],
                                   3));
    }
  }

  ImageDecoder dec;
  for (int round = 0; round < 200; ++round) {
    const size_t i = rng.Below(items.size());
    DecodedRegion r;
    const Status st = OpenAndDecode(&dec, items[i].bytes, items[i].req, &r);
    if (items[i].corrupt) {
      EXPECT_FALSE(st.ok()) << "item " << i;
      continue;
    }
    ASSERT_TRUE(st.ok()) << "round " << round << " item " << i << ": " << st.ToString();
    EXPECT_EQ(r.region, want_region[i]) << "item " << i;
    const Packed got = Pack(r.pixels);
    ASSERT_EQ(got.width, want[i].width) << "item " << i;
    ASSERT_EQ(got.height, want[i].height) << "item " << i;
    ASSERT_EQ(got.rgb, want[i].rgb) << "round " << round << " item " << i;
  }
}

TEST(DecoderReuseTest, OpenWithoutDecodeThenOpenAgain) {
  const Bytes px = MakePixels(50, 40, 40);
  const Bytes jpeg = EncodeJpeg(px, 50, 40);
  Bytes expected;
  const Bytes png = EncodePng(px, 50, 40, PngSpec{}, &expected);
  ImageDecoder dec, fresh;
  const Packed want = DecodeWhole(&fresh, jpeg);
  ImageHeader h;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(dec.Open(jpeg.data(), jpeg.size(), &h).ok());
    ASSERT_TRUE(dec.Open(png.data(), png.size(), &h).ok());
  }
  EXPECT_EQ(DecodeWhole(&dec, jpeg).rgb, want.rgb);
  EXPECT_EQ(DecodeWhole(&dec, png).rgb, expected);
}

}  // namespace
}  // namespace stoker

// ------------------------------------------------ crafted damage (soak) ----

namespace stoker {
namespace {

// A PNG chunk: length, type, data, CRC over type + data.
Bytes PngChunk(const char* type, const Bytes& data) {
  Bytes c(8);
  PutBe32(&c[0], static_cast<uint32_t>(data.size()));
  std::memcpy(&c[4], type, 4);
  c.insert(c.end(), data.begin(), data.end());
  c.resize(c.size() + 4);
  PutBe32(&c[c.size() - 4], Crc32(&c[4], 4 + data.size()));
  return c;
}

// IHDR of `png` followed by a tEXt chunk header declaring `declared` bytes and a
// few bytes of its body: the file ends long before the declared length.
Bytes PngWithOversizedText(const Bytes& png, uint32_t declared) {
  Bytes bad(png.begin(), png.begin() + 33);  // signature + IHDR
  bad.resize(bad.size() + 4);
  PutBe32(&bad[33], declared);
  const char kText[] = "tEXtComment\0truncated";
  bad.insert(bad.end(), kText, kText + sizeof(kText) - 1);
  return bad;
}

TEST(DecoderDamageTest, PngAncillaryChunkDeclaringHugeLengthIsDataLoss) {
  // A tEXt chunk right after IHDR (which ends at byte 33) whose header declares
  // 100 MB while only a few bytes follow.
  const Bytes px = MakePixels(32, 24, 41);
  Bytes expected;
  const Bytes png = EncodePng(px, 32, 24, PngSpec{}, &expected);
  ASSERT_EQ(0, std::memcmp(&png[12], "IHDR", 4));
  Bytes bad = PngWithOversizedText(png, 100000000u);
  ImageDecoder dec;
  const Status st = OpenAndDecode(&dec, bad);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_NE(st.message().find("PNG"), std::string::npos) << st.message();
  EXPECT_EQ(DecodeWhole(&dec, png).rgb, expected);
  // A well-formed small tEXt chunk in the same place is fine (the crafting is sound).
  Bytes good(png.begin(), png.begin() + 33);
  const char kKv[] = "Comment\0hello";
  const Bytes chunk = PngChunk("tEXt", Bytes(kKv, kKv + sizeof(kKv) - 1));
  good.insert(good.end(), chunk.begin(), chunk.end());
  good.insert(good.end(), png.begin() + 33, png.end());
  EXPECT_EQ(DecodeWhole(&dec, good).rgb, expected);
}

// Regression: png_set_chunk_malloc_max(64 MiB) alone does not stop libpng
// 1.6.39 from allocating (and zeroing) a text chunk's declared length before
// reading it, so a 58-byte file declaring 0x7FFFFFFF bytes cost ~2 GiB of
// resident memory (per worker thread) before "file is truncated". The decoder
// now checks chunk lengths against the file first. Measured in a forked
// child: its peak RSS must stay within 32 MiB of our current RSS.
TEST(DecoderDamageTest, PngChunkLengthIsCheckedBeforeAllocating) {
  const Bytes px = MakePixels(32, 24, 41);
  Bytes expected;
  const Bytes png = EncodePng(px, 32, 24, PngSpec{}, &expected);
  for (uint32_t declared : {100000000u, 0x7FFFFFFFu}) {
    const Bytes bad = PngWithOversizedText(png, declared);
    // Our current (not peak) resident size, in KiB: the child starts from it.
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    const long self_kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ImageDecoder dec;
      _exit(OpenAndDecode(&dec, bad).code() == StatusCode::kDataLoss ? 0 : 1);
    }
    int wstatus = 0;
    rusage child{};
    ASSERT_EQ(wait4(pid, &wstatus, 0, &child), pid);
    ASSERT_TRUE(WIFEXITED(wstatus)) << declared;
    EXPECT_EQ(WEXITSTATUS(wstatus), 0) << declared << ": not DataLoss";
    EXPECT_LT(child.ru_maxrss - self_kib, 32 * 1024)
        << "declared " << declared << ": child peak RSS " << child.ru_maxrss
        << " KiB, parent " << self_kib << " KiB";
  }
}

// Rewrites the CRC of the chunk whose data starts at `data` with `len` bytes.
void FixPngCrc(Bytes* b, size_t data, uint32_t len) {
  PutBe32(&(*b)[data + len], Crc32(&(*b)[data - 4], 4 + len));
}

TEST(DecoderDamageTest, PngInvalidDeflateWithValidCrcIsDataLoss) {
  // Only zlib can notice: the chunk CRC is recomputed after the damage.
  const int w = 100, h = 80;
  const Bytes px = MakePixels(w, h, 42);
  Bytes expected;
  const Bytes png = EncodePng(px, w, h, PngSpec{}, &expected);
  uint32_t len = 0;
  const size_t data = FindPngChunkData(png, "IDAT", &len);
  ASSERT_NE(data, std::string::npos);
  ASSERT_GT(len, 100u);
  ImageDecoder dec;
  {
    // First deflate block header: BTYPE = 11 (reserved) -> "invalid block type".
    Bytes bad = png;
    bad[data + 2] |= 0x06;
    FixPngCrc(&bad, data, len);
    const Status st = OpenAndDecode(&dec, bad);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
    EXPECT_NE(st.message().find("PNG"), std::string::npos) << st.message();
  }
  {
    // The zlib header itself (FCHECK no longer a multiple of 31).
    Bytes bad = png;
    bad[data + 1] ^= 0x01;
    FixPngCrc(&bad, data, len);
    EXPECT_EQ(OpenAndDecode(&dec, bad).code(), StatusCode::kDataLoss);
  }
  {
    // A run of 0xFF bytes right after the zlib header.
    Bytes bad = png;
    for (size_t i = 2; i < 34; ++i) bad[data + i] = 0xFF;
    FixPngCrc(&bad, data, len);
    const Status st = OpenAndDecode(&dec, bad);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  }
  EXPECT_EQ(DecodeWhole(&dec, png).rgb, expected);
}

TEST(DecoderDamageTest, PngFlippedDeflateBytesWithValidCrcNeverCrash) {
  // Single flipped bytes anywhere after the zlib header, CRC recomputed. A flip
  // can leave a stream that still inflates (to wrong bytes); zlib's Adler-32
  // then only mismatches at the very end, after all rows are out, where libpng
  // reports a benign error. Either way: never a crash, and a failure is DataLoss.
  const int w = 100, h = 80;
  const Bytes px = MakePixels(w, h, 43);
  Bytes expected;
  const Bytes png = EncodePng(px, w, h, PngSpec{}, &expected);
  uint32_t len = 0;
  const size_t data = FindPngChunkData(png, "IDAT", &len);
  ASSERT_NE(data, std::string::npos);
  ImageDecoder dec;
  Rng rng(44);
  int failed = 0, silent_wrong = 0, trials = 0;
  for (int trial = 0; trial < 80; ++trial, ++trials) {
    Bytes bad = png;
    const size_t pos = data + 2 + rng.Below(len - 2);
    bad[pos] ^= static_cast<uint8_t>(1 + rng.Below(255));
    FixPngCrc(&bad, data, len);
    DecodedRegion r;
    const Status st = OpenAndDecode(&dec, bad, {}, &r);
    if (!st.ok()) {
      ++failed;
      EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
      continue;
    }
    ASSERT_EQ(r.pixels.width, w);
    ASSERT_EQ(r.pixels.height, h);
    if (Pack(r.pixels).rgb != expected) ++silent_wrong;
  }
  std::printf("[ info ] flipped deflate byte, valid CRC: %d of %d failed, %d decoded to "
              "different pixels without an error\n", failed, trials, silent_wrong);
  EXPECT_GT(failed, trials / 2);
  EXPECT_EQ(DecodeWhole(&dec, png).rgb, expected);
}

TEST(DecoderDamageTest, JpegBogusHuffmanTableIsDataLoss) {
  const int w = 64, h = 48;
  const Bytes px = MakePixels(w, h, 45);
  for (bool progressive : {false, true}) {
    JpegSpec spec;
    spec.progressive = progressive;
    const Bytes jpeg = EncodeJpeg(px, w, h, spec);
    const size_t dht = FindMarker(jpeg, 0xC4);
    ASSERT_NE(dht, std::string::npos);
    // FF C4 len(2) Tc/Th(1) counts[16] symbols[...]: counts summing past 256.
    Bytes bad = jpeg;
    for (int i = 0; i < 16; ++i) bad[dht + 5 + i] = 0xFF;
    ImageDecoder dec;
    const Status st = OpenAndDecode(&dec, bad);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << progressive << ": " << st.ToString();
    EXPECT_NE(st.message().find("JPEG"), std::string::npos) << st.message();
    // Table class/id out of range (Th = 15).
    Bytes bad_id = jpeg;
    bad_id[dht + 4] = static_cast<uint8_t>((bad_id[dht + 4] & 0xF0) | 0x0F);
    EXPECT_EQ(OpenAndDecode(&dec, bad_id).code(), StatusCode::kDataLoss) << progressive;
    EXPECT_EQ(DecodeWhole(&dec, jpeg).width, w);
  }
}

TEST(DecoderDamageTest, JpegFlippedHuffmanTableBytesNeverCrash) {
  const int w = 96, h = 64;
  const Bytes px = MakePixels(w, h, 46);
  for (bool progressive : {false, true}) {
    JpegSpec spec;
    spec.subsampling = 420;
    spec.progressive = progressive;
    const Bytes jpeg = EncodeJpeg(px, w, h, spec);
    // Every DHT segment's payload bytes.
    std::vector<size_t> table_bytes;
    for (size_t m = FindMarker(jpeg, 0xC4); m != std::string::npos;
         m = FindMarker(jpeg, 0xC4, m + 2)) {
      const size_t seg = (static_cast<size_t>(jpeg[m + 2]) << 8) | jpeg[m + 3];
      for (size_t i = m + 4; i < m + 2 + seg; ++i) table_bytes.push_back(i);
      if (m > ScanDataStart(jpeg)) break;
    }
    ASSERT_FALSE(table_bytes.empty());
    ImageDecoder dec;
    Rng rng(progressive ? 47 : 48);
    int failed = 0;
    for (int trial = 0; trial < 100; ++trial) {
      Bytes bad = jpeg;
      const int flips = 1 + static_cast<int>(rng.Below(3));
      for (int f = 0; f < flips; ++f) {
        bad[table_bytes[rng.Below(table_bytes.size())]] ^=
            static_cast<uint8_t>(1 + rng.Below(255));
      }
      DecodedRegion r;
      const Status st = OpenAndDecode(&dec, bad, {}, &r);
      if (st.ok()) {
        EXPECT_EQ(r.pixels.width, w);
        EXPECT_EQ(r.pixels.height, h);
      } else {
        ++failed;
        EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
      }
    }
    EXPECT_GT(failed, 0) << progressive;
    EXPECT_EQ(DecodeWhole(&dec, jpeg).height, h);
  }
}

}  // namespace
}  // namespace stoker
