// Copyright 2026 The stoker Authors.
//
// Test helpers shared by the WebP, TIFF, BMP and PNM decoder tests: decode
// through ImageDecoder into packed RGB, and check that every truncation of a
// valid file fails with an error instead of crashing. Header-only, tests only.
#ifndef STOKER_CODEC_FORMATS_TEST_UTIL_H_
#define STOKER_CODEC_FORMATS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/decoder.h"

namespace stoker::format_test {

using Bytes = std::vector<uint8_t>;

// Decodes `bytes` whole (or `region` of it) into packed RGB (stride 3 * width).
inline Status DecodeTo(const Bytes& bytes, Bytes* rgb, int* w, int* h, Rect region = {},
                       int64_t max_pixels = int64_t{1} << 28) {
  ImageDecoder dec(DecoderOptions{max_pixels});
  ImageHeader header;
  STOKER_RETURN_IF_ERROR(dec.Open(bytes.data(), bytes.size(), &header));
  DecodedRegion r;
  STOKER_RETURN_IF_ERROR(dec.Decode(DecodeRequest{region, 1}, &r));
  *w = r.pixels.width;
  *h = r.pixels.height;
  rgb->resize(static_cast<size_t>(*w) * *h * 3);
  for (int y = 0; y < *h; ++y) {
    std::memcpy(rgb->data() + static_cast<size_t>(y) * *w * 3, r.pixels.row(y),
                static_cast<size_t>(*w) * 3);
  }
  return Status::OK();
}

// Decodes and expects exactly `want` (packed RGB, width x height).
inline void ExpectDecodesTo(const Bytes& bytes, const Bytes& want, int width, int height) {
  Bytes got;
  int w = 0, h = 0;
  Status s = DecodeTo(bytes, &got, &w, &h);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(w, width);
  ASSERT_EQ(h, height);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "byte " << i << " (pixel " << i / 3 << ")";
  }
}

// A region decode is the same pixels as the crop of the whole decode.
inline void ExpectRegionIsCrop(const Bytes& bytes, Rect region) {
  Bytes all, part;
  int w = 0, h = 0, pw = 0, ph = 0;
  ASSERT_TRUE(DecodeTo(bytes, &all, &w, &h).ok());
  Status s = DecodeTo(bytes, &part, &pw, &ph, region);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(pw, region.width);
  ASSERT_EQ(ph, region.height);
  for (int y = 0; y < ph; ++y) {
    ASSERT_EQ(0, std::memcmp(part.data() + static_cast<size_t>(y) * pw * 3,
                             all.data() + (static_cast<size_t>(y + region.y) * w + region.x) * 3,
                             static_cast<size_t>(pw) * 3))
        << "row " << y;
  }
}

// Every strict prefix of `bytes` (step `step`) fails to decode with a
// non-OK status and without crashing; the prefixes that cut the pixel data
// give `code` with a message starting with `prefix`.
inline void ExpectTruncationsFail(const Bytes& bytes, size_t raster_start, const char* prefix,
                                  StatusCode code = StatusCode::kDataLoss, size_t step = 1) {
  for (size_t n = 0; n < bytes.size(); n += step) {
    Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    Bytes rgb;
    int w = 0, h = 0;
    Status s = DecodeTo(cut, &rgb, &w, &h);
    ASSERT_FALSE(s.ok()) << "prefix of " << n << " of " << bytes.size() << " bytes decoded";
    if (n > raster_start) {
      ASSERT_EQ(s.code(), code) << n << ": " << s.ToString();
      ASSERT_EQ(s.message().rfind(prefix, 0), 0u) << n << ": " << s.ToString();
    }
  }
}

}  // namespace stoker::format_test

#endif  // STOKER_CODEC_FORMATS_TEST_UTIL_H_
