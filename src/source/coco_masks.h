// Copyright 2026 The stoker Authors.
//
// COCO segmentations as pixel masks: the run-length encoding (RLE) of
// pycocotools (cocoapi's maskApi.c) and its polygon rasteriser, written from
// its documented algorithm.
//
// An RLE mask of height h and width w is a list of run lengths over the
// pixels in column-major (Fortran) order, starting with a run of 0s (which
// may be empty): counts c0, c1, c2, ... cover c0 zeros, c1 ones, c2 zeros ...
// and sum to h * w. COCO stores it uncompressed ({"counts": [int, ...]}) or
// compressed ({"counts": "string"}): each count, from the fourth on, as the
// difference from the count two before it, written as a signed LEB128-like
// number of 5-bit groups, low group first, one character per group:
// character = 48 + (group | 0x20 when more groups follow); the last group's
// bit 0x10 is the sign (the number is sign-extended from it).
//
// Polygons (pycocotools' rleFrPoly): the vertices are scaled by 5 and
// rounded ((int)(5 * v + 0.5)), the closed outline is walked densely along
// each edge (one point per step of the edge's longer axis), and each point
// where the walk changes x column marks, in its column, the y where the
// region starts or ends: xd = (min or max - 1 of the two x) scaled back
// ((xd + 0.5) / 5 - 0.5) must be a whole pixel column in [0, w - 1], and
// yd = ceil(clamp((min of the two y + 0.5) / 5 - 0.5, 0, h)). The marks,
// sorted in column-major order, are the boundaries of the runs: pycocotools'
// mask, which is close to "a pixel is inside when its centre is" but differs
// from it by up to a pixel along slanted edges. Several polygons of one
// annotation are merged (union).
//
// Thread-safety: pure functions. Errors: InvalidArgument naming what is
// wrong (the caller adds the annotation).
#ifndef STOKER_SOURCE_COCO_MASKS_H_
#define STOKER_SOURCE_COCO_MASKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/status.h"

namespace stoker {

// Decodes a compressed RLE string into its counts (no check of their sum).
StatusOr<std::vector<uint32_t>> DecodeRleString(std::string_view s);

// The largest |coordinate| a polygon may have (pixels; CocoSource::Open
// refuses others): far outside any image, and small enough that upsampled
// vertices and their differences stay exact.
inline constexpr double kMaxPolygonCoordinate = 1e9;

// The RLE counts of `polygon` (x0, y0, x1, y1, ...: an even number of
// coordinates, each finite with |v| <= kMaxPolygonCoordinate) in an h x w
// image (h * w < 2^32), as pycocotools' rleFrPoly gives them. Time: the
// image's pixels at most, plus per edge the pixel columns it crosses (not
// its length); memory: the image's pixels at most.
std::vector<uint32_t> PolygonToRle(const std::vector<double>& polygon, int h, int w);

// Sets mask[y * w + x] = value (a row-major h x w mask of uint8 or uint16,
// `T`) for each pixel inside the RLE `counts`; checks that the counts sum to
// h * w. Returns the number of pixels set.
template <typename T>
StatusOr<int64_t> PaintRle(const std::vector<uint32_t>& counts, int h, int w, T value, T* mask);

// The same over a 0/1 byte mask, OR-ing (union of several polygons).
Status RleToMask(const std::vector<uint32_t>& counts, int h, int w, uint8_t* mask);

// The smallest rectangle [x0, x1) x [y0, y1) holding every pixel the RLE
// `counts` (column-major, h rows) sets; empty (x0 >= x1) when it sets none.
// Counts are not checked (RleToMask does).
struct RleExtent {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x0 >= x1 || y0 >= y1; }
  void Merge(const RleExtent& e);
};
RleExtent ExtentOfRle(const std::vector<uint32_t>& counts, int h);

}  // namespace stoker

#endif  // STOKER_SOURCE_COCO_MASKS_H_
