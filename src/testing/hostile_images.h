// Copyright 2026 The stoker Authors.
//
// Hand-built image files for the decoders' hostile-input tests and the
// fuzzers' seeds: the layouts whose headers can declare far more than the
// file holds (TIFF strips and tiles, animated WebP canvases, BMP RLE, plain
// PNM, PNG IDAT, JPEG scans). Every maker writes bytes in memory from the
// format's specification, no codec library involved, so a test can declare
// any size. Thread-safety: pure functions.
#ifndef STOKER_TESTING_HOSTILE_IMAGES_H_
#define STOKER_TESTING_HOSTILE_IMAGES_H_

#include <cstdint>
#include <vector>

namespace stoker::testing {

using Bytes = std::vector<uint8_t>;

// A little-endian baseline TIFF of one image: `spp` samples of `bits` bits,
// `photometric` (1 grey, 2 RGB), `compression` (1 none, 5 LZW, 8 Deflate,
// 32773 PackBits, ...), `data` as its only strip (rows_per_strip 0: the
// height) or, when tile_width > 0, its only tile. With rows_per_strip set,
// every one of the ceil(height / rows_per_strip) strips points at `data`.
struct TiffSpec {
  uint32_t width = 16, height = 16;
  int bits = 8, spp = 3, photometric = 2, compression = 1;
  uint32_t tile_width = 0, tile_height = 0;
  uint32_t rows_per_strip = 0;
};
Bytes MakeTiff(const TiffSpec& spec, const Bytes& data);

// zlib's deflate of `raw` at level 9 (for Deflate TIFFs and PNG IDAT).
Bytes Deflate(const Bytes& raw);

// An animated WebP (VP8X + ANIM + ANMF chunks) of a canvas_w x canvas_h
// canvas whose frames are the bitstreams of still WebP files (`stills`,
// simple or extended format; their ALPH/VP8/VP8L chunks are copied), placed
// at (x[i], y[i]) (even numbers).
Bytes MakeAnimatedWebp(int canvas_w, int canvas_h, const std::vector<Bytes>& stills,
                       const std::vector<int>& x, const std::vector<int>& y);

// A lossy still WebP with its VP8 frame header's size rewritten to w x h
// (the bitstream is left as it is: a size bomb when larger).
Bytes WithVp8Size(const Bytes& lossy_webp, int w, int h);

// An 8-bit (RLE8) BMP of w x h with a 256-grey palette and `rle` as its data.
Bytes MakeRle8Bmp(int w, int h, const Bytes& rle);

// A PNG of w x h, RGB 8-bit (colour type 2), whose IDAT holds `idat` as it is
// (CRCs correct), then IEND.
Bytes MakePng(uint32_t w, uint32_t h, const Bytes& idat, bool interlaced = false);

// A JPEG with its SOF's size rewritten to w x h (the scan data is left as it
// is). Returns the bytes unchanged when no SOF0/1/2 marker is found.
Bytes WithJpegSize(const Bytes& jpeg, int w, int h);

}  // namespace stoker::testing

#endif  // STOKER_TESTING_HOSTILE_IMAGES_H_
