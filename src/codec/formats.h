// Copyright 2026 The stoker Authors.
//
// Whole-image decoders for the formats without region decode: WebP
// (libwebp), TIFF (libtiff), PNM (P1-P6) and BMP (stoker's own strict
// parsers). Internal to src/codec; ImageDecoder (decoder.h) dispatches to them.
//
// Every decoder gives 8-bit RGB with the pixels Pillow's
// Image.open(f).convert("RGB") gives for the same file (the per-format rules
// are in each .cc), and checks the declared size against `max_pixels` before
// it allocates pixel memory.
//
// Info() parses the headers only. Decode() decodes the whole image into
// `out` (resized; its memory is reused from call to call).
// Thread-safety: the functions share no state; call them from any thread.
// Errors: DataLoss for corrupt or truncated data (the message says why),
// Unimplemented for valid files using a feature stoker does not decode,
// ResourceExhausted above `max_pixels`.
#ifndef STOKER_CODEC_FORMATS_H_
#define STOKER_CODEC_FORMATS_H_

#include <cstddef>
#include <cstdint>

#include "codec/image.h"
#include "stoker/status.h"

namespace stoker::codec_internal {

// DataLoss for a non-positive size, ResourceExhausted above max_pixels (0:
// no limit).
Status CheckPixelLimit(int64_t w, int64_t h, int64_t max_pixels);

// The allocation rule's second half (docs/reliability.md, "Allocations"):
// `need` is the fewest bytes of `what` that can encode the declared w x h
// image at the format's densest coding, `have` what the file holds for it.
// DataLoss "<format>: WxH needs at least <need> bytes of <what>, the file has
// <have> (truncated or corrupt)" when need > have; call it before allocating
// anything sized by the header.
Status CheckFileCanHold(const char* format, int64_t w, int64_t h, uint64_t need, uint64_t have,
                        const char* what);

// Pillow's CMYK -> RGB channel: (255 - k) - c * (255 - k) / 255, rounded.
inline uint8_t CmykChannel(int c, int k) {
  const int nk = 255 - k;
  int tmp = c * nk + 128;
  const int prod = ((tmp >> 8) + tmp) >> 8;
  const int v = nk - prod;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

bool IsWebp(const uint8_t* data, size_t size);
Status WebpInfo(const uint8_t* data, size_t size, int* width, int* height);
Status DecodeWebp(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out);
// Native mode (ImageDecoder::DecodeNative): a still image with alpha as 8-bit
// RGBA (libwebp's WebPDecodeRGBAInto). `*handled` false (nothing decoded) for
// the others, whose native form is DecodeWebp's RGB.
Status DecodeWebpNative(const uint8_t* data, size_t size, int64_t max_pixels, NativeImage* out,
                        bool* handled);

bool IsTiff(const uint8_t* data, size_t size);
Status TiffInfo(const uint8_t* data, size_t size, int* width, int* height);
Status DecodeTiff(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out);
// Native mode: MinIsBlack grey (1 sample, or 2 with an extra sample) and RGB
// (3, or 4 with an extra sample), 8 or 16 bits, contiguous samples, strips or
// tiles, as stored (uint16 in host order; an extra sample is kept as it is,
// associated alpha included). `*handled` false (nothing decoded) for layouts
// whose samples are not plain intensities (bilevel and 2/4-bit grey,
// MinIsWhite, palette, CMYK, YCbCr): their native form is DecodeTiff's RGB.
// 8/16-bit grey or RGB in separate planes is Unimplemented.
Status DecodeTiffNative(const uint8_t* data, size_t size, int64_t max_pixels, NativeImage* out,
                        bool* handled);

// 'P' '1'..'6' then whitespace. `kind` (optional) gets the digit.
bool IsPnm(const uint8_t* data, size_t size, int* kind = nullptr);
Status PnmInfo(const uint8_t* data, size_t size, int* width, int* height);
Status DecodePnm(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out);

bool IsBmp(const uint8_t* data, size_t size);
Status BmpInfo(const uint8_t* data, size_t size, int* width, int* height);
Status DecodeBmp(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out);

}  // namespace stoker::codec_internal

#endif  // STOKER_CODEC_FORMATS_H_
