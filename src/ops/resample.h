// Copyright 2026 The stoker Authors.
//
// Separable resampling with Pillow's antialiased bilinear ("triangle")
// filter, reproducing Pillow's coefficients, its 22-bit fixed-point
// arithmetic and its horizontal-then-vertical order with 8-bit rounding in
// between. Because every output pixel depends only on its own coefficients,
// resampling just a window of the output (the part a later crop keeps) gives
// exactly the pixels of a full resize followed by that crop.
//
// Thread-safety: AxisCoeffs is a value. A Resampler owns scratch memory and
// is NOT thread-safe; keep one per thread (it then allocates nothing once
// warmed up).
#ifndef STOKER_OPS_RESAMPLE_H_
#define STOKER_OPS_RESAMPLE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "codec/image.h"

namespace stoker {

// Filter taps for one axis: output i reads inputs [start[i], start[i] +
// count[i]) with weights[i * taps + k]. Indices are absolute in the input
// grid. An output with count 0 is zero (padding).
struct AxisCoeffs {
  int taps = 0;
  int length = 0;                 // number of outputs
  std::vector<int32_t> start;
  std::vector<int32_t> count;
  std::vector<int32_t> weights;   // fixed point, sum 1 << kPrecisionBits
  int min_input = 0;              // inputs used: [min_input, max_input)
  int max_input = 0;
  // The outputs (in stored order) inside [0, out_size): [inside_begin,
  // inside_end); the others are padding.
  int inside_begin = 0;
  int inside_end = 0;
  // Every output reads exactly `taps` inputs (zero weights pad the real
  // ones), which lets the horizontal pass use unrolled vector kernels.
  bool fixed_taps = false;
  // With fixed_taps: the weights of output pairs, split into int16 halves
  // and laid out for the horizontal pass's vector kernels (see resample.cc).
  std::vector<int32_t> split;
};

constexpr int kPrecisionBits = 22;  // Pillow's 32 - 8 - 2

// Why the AVX2 kernels' split is exact. Every weight w is in [0, 2^22]: the
// triangle filter is never negative and each normalised tap is at most 1,
// so w = (int)(0.5 + v * 2^22) <= 2^22 (padding taps are 0). The kernels
// write w = hi * 2^11 + lo with hi = w >> 11 in [0, 2048] and lo = w & 2047,
// both int16, pair the taps, and sum pixel * hi and pixel * lo with
// vpmaddwd (int16 x int16, the two products of a pair added into int32; its
// one wrapping case, all four operands -32768, cannot occur). Then
//   2^21 + sum(px * w) = (sum(px * hi) << 11) + (2^21 + sum(px * lo))
// as integers, and no term wraps int32: one output's weights sum to at most
// 2^22 + taps / 2 (each rounded up by at most 1/2), so for up to the 256
// taps the vertical kernel takes, 2^21 + sum(px * w) <= 2^21 + 255 * (2^22 +
// 128) < 1.08e9 < 2^31; sum(px * hi) << 11 <= sum(px * w); and sum(px * lo)
// <= 255 * 2047 * 256 < 2^27. So the kernels get the very int32 sums of the
// scalar passes (which cannot wrap either), hence the same bytes after the
// shift and clamp. (A filter with negative weights, |w| < 2^23, would still
// split into int16 halves: hi in [-4096, 4095].)

// Coefficients for resampling the input span [in0, in1) (a real interval;
// integer for an exact crop) to `out_size` outputs, with input pixels
// clamped to [lo, hi) (the crop's pixels), as Pillow's precompute_coeffs
// does for an image of hi - lo pixels. Only outputs [window_start,
// window_start + window_length) are produced; outputs outside [0, out_size)
// are padding. With `reverse`, outputs are stored in reverse order (a
// horizontal flip for free). With `fixed_taps` (and at least `taps` inputs
// in [lo, hi)), every output gets exactly `taps` inputs: the same sums, in a
// shape the vector kernels of the horizontal pass want.
void ComputeAxisCoeffs(double in0, double in1, int lo, int hi, int out_size, int window_start,
                       int window_length, bool reverse, AxisCoeffs* coeffs,
                       bool fixed_taps = false);

class Resampler {
 public:
  // Called once per output row, in order, with `width` RGB pixels.
  using RowSink = void (*)(void* ctx, int y, const uint8_t* rgb, int width);

  // Resamples `src`, whose pixel (0, 0) sits at (origin_x, origin_y) of the
  // input grid. The source must cover the coefficients' input spans.
  // `tail_padding`: at least 16 readable bytes follow the view's last row
  // (lets the last row use the fast loads too).
  void Run(const RgbView& src, int origin_x, int origin_y, const AxisCoeffs& horizontal,
           const AxisCoeffs& vertical, RowSink sink, void* ctx, bool tail_padding = false);

  // The same pass for a source that arrives row by row (a PNG being decoded,
  // so the whole image never exists): Begin(), then PushRow() once for each
  // input row vertical.min_input .. vertical.max_input - 1, in order, then
  // Finish(). The coefficients must stay alive and unchanged until Finish().
  // Run() is exactly Begin + PushRows + Finish, so both give the same pixels.
  void Begin(const AxisCoeffs& horizontal, const AxisCoeffs& vertical);
  // Input rows still expected before Finish().
  int rows_wanted() const { return rows_ - pushed_; }
  // The horizontal pass of the next input row. `row` holds the pixels of
  // its columns from origin_x on, covering horizontal's input span;
  // `padded`: at least 16 readable bytes follow the span's last pixel (lets
  // the vector kernels read past it). Extra rows are ignored.
  void PushRow(const uint8_t* row, int origin_x, bool padded);
  // PushRow for every row Begin() asked for, from a view whose pixel (0, 0)
  // sits at (origin_x, origin_y) (`tail_padding` as in Run()).
  void PushRows(const RgbView& src, int origin_x, int origin_y, bool tail_padding);
  // The vertical pass: `sink` gets the output rows in order. Returns false
  // (and writes nothing) unless every wanted row was pushed.
  bool Finish(RowSink sink, void* ctx);

  // The colour of the padding outputs (those outside [0, out_size) on either
  // axis) of the next Finish() (Run, RunToImage); null: zero. Reset by
  // Finish(). The letterbox's and a constant-fill pad's border.
  void SetPadFill(const std::array<uint8_t, 3>* fill) {
    has_fill_ = fill != nullptr;
    if (has_fill_) fill_ = *fill;
  }

  // Convenience: resample into an owned image.
  void RunToImage(const RgbView& src, int origin_x, int origin_y, const AxisCoeffs& horizontal,
                  const AxisCoeffs& vertical, RgbImage* out);

  size_t scratch_bytes() const { return temp_.capacity() + acc_.capacity() * 4 + row_.capacity(); }
  // Frees the scratch rows (the next Run allocates again).
  void ReleaseScratch() {
    std::vector<uint8_t>().swap(temp_);
    std::vector<int32_t>().swap(acc_);
    std::vector<uint8_t>().swap(row_);
  }

 private:
  const AxisCoeffs* h_ = nullptr;  // between Begin() and Finish()
  const AxisCoeffs* v_ = nullptr;
  int rows_ = 0;    // input rows the vertical taps read
  int pushed_ = 0;  // of them, horizontally resampled so far
  std::vector<uint8_t> temp_;   // horizontally resampled rows
  std::vector<int32_t> acc_;
  std::vector<uint8_t> row_;
  bool has_fill_ = false;
  std::array<uint8_t, 3> fill_{0, 0, 0};
};

// Test seams: one row of each pass by the scalar reference and by the AVX2
// kernel the Resampler would pick. The vector functions return false (and
// write nothing) where that kernel does not run: no AVX2, coefficients
// without fixed_taps or with a tap count that has no kernel, more than 256
// vertical taps. Horizontal: `src` holds the pixels from origin_x on and 16
// readable bytes after the span; `out` has room for h.length * 3 + 4 bytes.
// Vertical: output bytes [0, bytes) from rows first .. first + n - 1 of
// `temp` (rows `stride` bytes apart), weights w[0 .. n).
void HorizontalRowReferenceForTesting(const uint8_t* src, int origin_x, const AxisCoeffs& h,
                                      uint8_t* out);
bool HorizontalRowVectorForTesting(const uint8_t* src, int origin_x, const AxisCoeffs& h,
                                   uint8_t* out);
void VerticalRowReferenceForTesting(const uint8_t* temp, size_t stride, int first,
                                    const int32_t* w, int n, int bytes, uint8_t* out);
bool VerticalRowVectorForTesting(const uint8_t* temp, size_t stride, int first, const int32_t* w,
                                 int n, int bytes, uint8_t* out);

}  // namespace stoker

#endif  // STOKER_OPS_RESAMPLE_H_
