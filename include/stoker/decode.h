// Copyright 2026 The stoker Authors.
//
// Decoder: one encoded image (JPEG via libjpeg-turbo, PNG via libpng; the
// format is sniffed from the bytes) decoded whole, at full size, into 8-bit
// RGB. The Loader does not need this (it decodes only the region a crop
// keeps); it is for tools and benchmarks (`stoker decode`, the full-decode
// ceiling) and for checking pixels.
//
//   Decoder d;
//   DecodedImage img;
//   STOKER_RETURN_IF_ERROR(d.Decode(bytes, size, &img));
//   const uint8_t* row = img.pixels + y * img.stride;   // width * 3 bytes
//
// Ownership: the decoder owns the pixels; the view stays valid until the next
// Decode() or the decoder's destruction. Scratch memory is reused, so a
// steady state allocates nothing.
// Thread-safety: a Decoder is NOT thread-safe; keep one per thread.
// Errors: DataLoss for corrupt data (libjpeg's corrupt-data warnings count),
// Unimplemented for valid but unsupported input (e.g. 12-bit JPEG),
// ResourceExhausted when the image has more pixels than `max_pixels`,
// InvalidArgument for bytes that are not a JPEG or PNG.
#ifndef STOKER_DECODE_H_
#define STOKER_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "stoker/status.h"

namespace stoker {

class ImageDecoder;  // the engine's decoder (internal)

struct DecodedImage {
  int width = 0;
  int height = 0;
  const uint8_t* pixels = nullptr;  // RGB, interleaved
  ptrdiff_t stride = 0;             // bytes between rows
};

class Decoder {
 public:
  // Images with more than `max_pixels` pixels are refused before any pixel
  // memory is allocated (0: no limit).
  explicit Decoder(int64_t max_pixels = int64_t{1} << 28);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Decodes the image in [data, data + size).
  Status Decode(const uint8_t* data, size_t size, DecodedImage* out);

 private:
  std::unique_ptr<ImageDecoder> impl_;
};

}  // namespace stoker

#endif  // STOKER_DECODE_H_
