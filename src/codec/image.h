// Copyright 2026 The stoker Authors.
//
// Plain pixel containers shared by the codecs and the ops.
#ifndef STOKER_CODEC_IMAGE_H_
#define STOKER_CODEC_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace stoker {

// An axis-aligned integer rectangle, [x, x + width) x [y, y + height).
struct Rect {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;

  int right() const { return x + width; }
  int bottom() const { return y + height; }
  bool operator==(const Rect&) const = default;
};

// A read-only view of 8-bit interleaved RGB pixels. Does not own the memory.
struct RgbView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;  // bytes between rows

  const uint8_t* row(int y) const { return data + y * stride; }
};

// An owned, growable 8-bit RGB image. Reallocates only when it must grow, so a
// per-thread instance reaches a steady state with no allocation per sample.
// At least 16 bytes of slack follow the last row (for vector loads).
class RgbImage {
 public:
  void Resize(int width, int height) {
    width_ = width;
    height_ = height;
    const size_t need = static_cast<size_t>(width) * height * 3 + 16;
    if (pixels_.size() < need) pixels_.resize(need);
  }
  int width() const { return width_; }
  int height() const { return height_; }
  std::ptrdiff_t stride() const { return static_cast<std::ptrdiff_t>(width_) * 3; }
  uint8_t* row(int y) { return pixels_.data() + y * stride(); }
  uint8_t* data() { return pixels_.data(); }
  RgbView view() const { return RgbView{pixels_.data(), width_, height_, stride()}; }
  size_t capacity_bytes() const { return pixels_.capacity(); }
  // Frees the pixel memory (the next Resize allocates again).
  void Release() {
    std::vector<uint8_t>().swap(pixels_);
    width_ = height_ = 0;
  }

 private:
  std::vector<uint8_t> pixels_;
  int width_ = 0;
  int height_ = 0;
};

// A band of rows asked of ImageDecoder::DecodeNative, and what it gave.
struct NativeRows {
  int begin = 0;                             // in: the first row wanted
  int end = std::numeric_limits<int>::max(); // in: one past the last row wanted
  int first = 0;         // out: the image's row that the output's row 0 is
  int image_height = 0;  // out: the image's height
  int rows_read = 0;     // out: rows decoded (a PNG band: `end`, clipped)
};

// An owned image as the file stores it (ImageDecoder::DecodeNative): HWC,
// `channels` interleaved samples per pixel (1 grey, 2 grey + alpha, 3 RGB,
// 4 RGBA) of `bytes_per_sample` bytes (1: uint8; 2: uint16 in the host's byte
// order), rows packed (no padding). Its memory grows only when it must, so a
// per-thread instance reaches a steady state with no allocation per image.
struct NativeImage {
  int width = 0;
  int height = 0;
  int channels = 0;
  int bytes_per_sample = 1;
  std::vector<uint8_t> pixels;  // at least bytes() long

  size_t row_bytes() const {
    return static_cast<size_t>(width) * channels * bytes_per_sample;
  }
  size_t bytes() const { return row_bytes() * static_cast<size_t>(height); }
  uint8_t* row(int y) { return pixels.data() + row_bytes() * static_cast<size_t>(y); }
  // Sets the geometry and grows `pixels` to hold it.
  void Resize(int w, int h, int c, int bps) {
    width = w;
    height = h;
    channels = c;
    bytes_per_sample = bps;
    if (pixels.size() < bytes()) pixels.resize(bytes());
  }
  void Release() {
    std::vector<uint8_t>().swap(pixels);
    width = height = channels = 0;
  }
};

}  // namespace stoker

#endif  // STOKER_CODEC_IMAGE_H_
