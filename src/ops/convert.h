// Copyright 2026 The stoker Authors.
//
// PixelWriter: the last pass of every sample. Takes 8-bit RGB rows and writes
// them, normalised and converted to the output dtype and layout, straight
// into the sample's slot of a batch buffer. Normalisation and dtype
// conversion are one table lookup per byte: the table holds, per channel and
// value, exactly what torchvision computes in float32 (ToTensor's v / 255,
// then (x - mean) / std), rounded to nearest-even for float16/bfloat16.
//
// Thread-safety: immutable after construction; share freely.
#ifndef STOKER_OPS_CONVERT_H_
#define STOKER_OPS_CONVERT_H_

#include <array>
#include <cstdint>

#include "stoker/types.h"

namespace stoker {

uint16_t FloatToHalf(float f);
uint16_t FloatToBFloat16(float f);
float HalfToFloat(uint16_t h);
float BFloat16ToFloat(uint16_t b);

class PixelWriter {
 public:
  // `normalize` false: float outputs are v / 255 (ToTensor); uint8 is raw.
  PixelWriter(DType dtype, Layout layout, int height, int width, bool normalize,
              const std::array<float, 3>& mean, const std::array<float, 3>& std);

  // Writes `width` RGB pixels as row `y` of the sample starting at `slot`.
  // NCHW rows use AVX2 where the CPU has it: byte shuffles for uint8, and for
  // the float types the tables' own float32 operations on 8 lanes at once
  // (bit-identical to the tables, which the tests check).
  void WriteRow(const uint8_t* rgb, int y, uint8_t* slot) const {
    WriteRow(rgb, y, height_, width_, slot);
  }
  // The same for a sample of its own size (variable-size batches): `width`
  // pixels as row `y` of a height x width sample at `slot`.
  void WriteRow(const uint8_t* rgb, int y, int height, int width, uint8_t* slot) const;
  // Bytes per sample.
  size_t sample_bytes() const { return sample_bytes_; }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  int height() const { return height_; }
  int width() const { return width_; }
  // The converted value of channel c at byte value v, as float.
  float Value(int c, int v) const;
  // True when the AVX2 float rows divide by multiplying with reciprocals and
  // an FMA correction: chosen when the CPU has FMA and that gives the
  // tables' values for every byte value of every channel (it does for
  // ImageNet's mean and std; for others it may not, and the rows divide).
  bool divides_by_reciprocal() const { return fma_; }

 private:
  DType dtype_;
  Layout layout_;
  int height_, width_;
  size_t sample_bytes_;
  std::array<std::array<float, 256>, 3> f32_;
  std::array<std::array<uint16_t, 256>, 3> u16_;
  bool avx2_ = false;
  bool fma_ = false;
  bool normalize_ = false;
  std::array<float, 3> mean_{}, std_{};
  std::array<float, 3> rcp_std_{};
  float rcp255_ = 0.f;
};

}  // namespace stoker

#endif  // STOKER_OPS_CONVERT_H_
