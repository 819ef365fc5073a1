// Copyright 2026 The stoker Authors.
//
// The rows of a non-interlaced PNG whose pixels are one byte each (8-bit grey,
// or 8-bit palette indices: the label maps of segmentation datasets),
// inflated with zlib and unfiltered here.
//
// Why not libpng for these: libpng still parses such a file's header
// (ImageDecoder's Png::Open), but its row filters for one-byte pixels are
// plain byte loops: Up one byte at a time, Paeth with a data-dependent branch
// per byte. On the segmentation recipe's 2048 x 1024 label maps (Pillow's
// adaptive filters: ~70% Up rows, ~28% Paeth) libpng's unfilter cost more
// than zlib's inflate; docs/performance.md has the before/after. The other
// PNG kinds (RGB, 16-bit, interlaced, sub-byte, palette to RGB) stay
// libpng's, whose SIMD filters cover 3- and 4-byte pixels.
//
// What is checked, as libpng checks it: each IDAT chunk's CRC before any of
// its bytes is inflated (a band that stops early never reads, nor checks,
// the chunks after it); zlib's errors; a filter type above 4; image data that
// ends before the last row wanted. When every row is wanted the stream is
// read on to its end, so a wrong Adler-32 is an error too; compressed data
// left over after the last row is not (libpng warns).
//
// Thread-safety: pure functions of their arguments; the scratch vector is the
// caller's. Errors: DataLoss, with "PNG: " and what is wrong.
#ifndef STOKER_CODEC_PNG_ROWS_H_
#define STOKER_CODEC_PNG_ROWS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stoker/status.h"

namespace stoker {

// Undoes one row's PNG filter (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth) for
// one-byte pixels: `in` the filtered bytes, `prev` the previous row's
// unfiltered bytes (zeros above the first row), `out` this row's; `n` bytes.
// `out` may not alias `in` or `prev`. `filter` must be 0..4.
void UnfilterBytePixelRow(int filter, const uint8_t* in, const uint8_t* prev, uint8_t* out,
                          size_t n);

// Decodes rows [0, end) of the PNG in data[0, size), a `width` x `height`
// image, non-interlaced, 8-bit, one channel (colour type 0, or 3 read as
// indices), and writes rows [begin, end) to `out`, row y at
// out + (y - begin) * stride. 0 <= begin <= end <= height. The chunk lengths
// must have been checked against `size` (ImageDecoder::Open does).
// `scratch` grows to about three rows.
Status DecodeBytePixelPngRows(const uint8_t* data, size_t size, int width, int height, int begin,
                              int end, uint8_t* out, size_t stride,
                              std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_CODEC_PNG_ROWS_H_
