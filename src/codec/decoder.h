// Copyright 2026 The stoker Authors.
//
// ImageDecoder: JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp), TIFF
// (libtiff), BMP and PNM (stoker's own parsers) into 8-bit RGB, decoding only
// the region a crop keeps where the format allows it (JPEG).
//
// Usage, per sample:
//   ImageHeader h;
//   STOKER_RETURN_IF_ERROR(decoder.Open(bytes, size, &h));        // parses headers only
//   DecodedRegion r;
//   STOKER_RETURN_IF_ERROR(decoder.Decode({wanted_rect, max_denom}, &r));
//
// The format is detected from the content, never from the file name.
// JPEG: greyscale, YCbCr, RGB, CMYK and YCCK (Adobe inverted or not) become
// RGB; only the MCU columns and the rows of the wanted rectangle are decoded
// (`jpeg_crop_scanline`, `jpeg_skip_scanlines`, early stop), and DCT-domain
// scaling by 1/2, 1/4 or 1/8 is used when the caller allows it. The pixels in
// the returned region are bit-identical to the same pixels of a full decode at
// the same scale. Corrupt-data warnings from libjpeg (truncation, bad Huffman
// codes) are errors, so damage that libjpeg detects never yields made-up
// pixels (damage inside entropy-coded data that still parses cannot be
// detected by any decoder and decodes to wrong pixels).
// PNG: every colour type and bit depth, palette with or without tRNS, and
// interlaced images; 16-bit samples keep their most significant byte and
// alpha is dropped. PNG has no region decode: Decode() decodes the whole
// image and the region is a view into it. DecodeRows() streams the rows of a
// JPEG region or of a non-interlaced PNG instead (the sample processor feeds
// them to the resampler, so a large image never exists whole in memory). Every
// chunk's declared length is checked against the bytes present before
// libpng allocates for it.
// WebP, TIFF, BMP, PNM (P1-P6): whole-image decode like PNG, with the pixels
// Pillow's convert("RGB") gives (grey to RGB, alpha dropped, 16-bit samples
// as Pillow reduces them); the rules per format are in codec/formats.h and
// the .cc files it names.
//
// Thread-safety: an ImageDecoder is NOT thread-safe; keep one per thread. It
// owns scratch memory that is reused, so a steady state allocates nothing.
// Views returned by Decode() stay valid until the next Open() or Decode(), and
// at least 16 readable bytes follow their last row.
// Errors: Open/Decode return DataLoss for corrupt data, Unimplemented for
// valid but unsupported input (e.g. 12-bit JPEG), ResourceExhausted when the
// image has more pixels than `max_pixels`, InvalidArgument for non-images.
#ifndef STOKER_CODEC_DECODER_H_
#define STOKER_CODEC_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "codec/image.h"
#include "stoker/status.h"

namespace stoker {

enum class ImageFormat { kUnknown, kJpeg, kPng, kWebp, kTiff, kBmp, kPnm };

// Detects the format from the first bytes.
ImageFormat SniffImageFormat(const uint8_t* data, size_t size);

// The file extension for the detected format ("jpg", "png", "webp", "tif",
// "bmp", and "pbm", "pgm" or "ppm" for PNM), or nullptr when unknown.
const char* ImageFileExtension(const uint8_t* data, size_t size);

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  int width = 0;
  int height = 0;
};

struct DecodeRequest {
  // Pixels wanted, in full-resolution coordinates. Clipped to the image; an
  // empty rectangle means the whole image.
  Rect region;
  // DCT-domain downscale denominator (1, 2, 4 or 8) for JPEG; the decoded
  // image is then ceil(width / d) x ceil(height / d) and `region` is mapped
  // onto it (rounded outwards). Ignored for PNG, which always decodes at full
  // size (check DecodedRegion::scale_denom).
  int scale_denom = 1;
};

struct DecodedRegion {
  // Pixels covering `region` of the scaled image.
  RgbView pixels;
  Rect region;
  // The whole image is decoded at 1/scale_denom: scaled_width =
  // ceil(width / scale_denom) (libjpeg's rule), likewise for height.
  int scale_denom = 1;
  int scaled_width = 0;
  int scaled_height = 0;
};

struct DecoderOptions {
  // Images with more pixels than this are refused before any pixel memory is
  // allocated (decompression bombs). 0 means no limit.
  int64_t max_pixels = int64_t{1} << 28;
  // Progressive JPEGs with more scans are refused (ResourceExhausted) while
  // they are read, as `djpeg -maxscans` does: thousands of tiny scans cost
  // CPU-seconds per image. Real encoders write about 10. 0 means no limit.
  int max_scans = 256;
};

class ImageDecoder {
 public:
  explicit ImageDecoder(const DecoderOptions& options = {});
  ~ImageDecoder();
  ImageDecoder(const ImageDecoder&) = delete;
  ImageDecoder& operator=(const ImageDecoder&) = delete;

  // Parses the headers of the encoded image in [data, data + size). The bytes
  // must stay alive and unchanged until Decode() returns.
  Status Open(const uint8_t* data, size_t size, ImageHeader* header);

  // Decodes the region of the image last opened. Call at most once per Open().
  Status Decode(const DecodeRequest& request, DecodedRegion* out);

  // Row-streamed decoding, instead of Decode() (at most one of them per
  // Open()), so that a large image is never held: true when the image last
  // opened allows it (JPEG; PNG when not interlaced: an Adam7 image needs
  // every pass, so it takes Decode()'s whole-image path).
  bool CanDecodeRows() const;
  // Called once per row of the region, in order, with the row's y in the
  // scaled image: `rgb` holds 8-bit RGB pixels from column region.x on (as
  // Decode() gives them), followed by at least 16 readable bytes after the
  // region's last column, and is valid only during the call.
  using RowFn = void (*)(void* ctx, int y, const uint8_t* rgb);
  // Decodes `request` as Decode() does (same region rounding, DCT scale,
  // pixels, errors), but hands the region's rows to `fn` one at a time
  // through a one-row buffer; `out` gets the region and scale (its `pixels`
  // view is empty). JPEG stops after the region's last row, as Decode()
  // does; PNG decodes every row and drops those outside the region, so
  // damage anywhere in the pixel data is an error exactly as in Decode().
  // Pixel memory held: one row (in scratch_bytes()) plus the libraries' own
  // row buffers. `fn` may have been called before an error.
  Status DecodeRows(const DecodeRequest& request, RowFn fn, void* ctx, DecodedRegion* out);

  // Decodes the whole image at full size (convenience for tests and tools).
  Status DecodeAll(const uint8_t* data, size_t size, DecodedRegion* out);

  // Native mode (record fields other than the primary image): the whole
  // image as the file stores it, into `out` (its memory reused), with the
  // real libraries' own output modes:
  //  - PNG: grey 1, grey + alpha 2, RGB 3, RGBA 4 channels, 8 or 16 bits
  //    (16: uint16 in host byte order); palette -> RGB, or RGBA with tRNS;
  //    1/2/4-bit grey -> 8 bits (libpng's expansion);
  //  - JPEG: greyscale -> 1 channel (JCS_GRAYSCALE); others -> RGB (as Decode);
  //  - WebP: with alpha -> RGBA (WebPDecodeRGBAInto), else RGB;
  //  - TIFF: 8/16-bit MinIsBlack grey (+ an extra sample) and RGB (+ one),
  //    contiguous, strips or tiles, as stored; other layouts -> Decode's RGB;
  //  - BMP, PNM: Decode's 8-bit RGB.
  // The same limits as Open/Decode apply (max_pixels, the allocation rules)
  // before `out` grows. Errors as Open/Decode. With `palette_indices` (label
  // maps: mask fields), a palette PNG gives its indices, one channel of
  // uint8 (1/2/4-bit indices unpacked), instead of the colours.
  // With `rows` (label maps cropped by their first step): a non-interlaced
  // PNG gives only the rows [rows->begin, rows->end) (clipped to the image),
  // its inflate stopped after the last of them, so damage below them is not
  // seen (as a JPEG region's); `out` holds those rows, and `rows` says which
  // (first, image_height, rows_read: the rows decoded). Any other image is
  // decoded whole (first 0, rows_read its height). An 8-bit non-interlaced
  // PNG of one byte per pixel (grey, or indices) is inflated and unfiltered
  // by codec/png_rows.h, the others by libpng.
  Status DecodeNative(const uint8_t* data, size_t size, NativeImage* out,
                      bool palette_indices = false, NativeRows* rows = nullptr);
  // The whole image as Decode gives it (8-bit RGB, Pillow's convert("RGB")),
  // into `out` (3 channels).
  Status DecodeRgb(const uint8_t* data, size_t size, NativeImage* out);

  // Pixel memory held between images (for accounting), and a way to free it
  // (after an oversized image; invalidates the last DecodedRegion).
  size_t scratch_bytes() const;
  void ReleaseScratch();

 private:
  class Jpeg;
  class Png;
  // WebP, TIFF, BMP and PNM: whole-image decoders (codec/formats.h).
  Status OpenWhole(const uint8_t* data, size_t size, ImageHeader* header);
  Status DecodeWhole(const DecodeRequest& request, DecodedRegion* out);
  // Decode() of the image opened, whole, copied into `out` (3 channels).
  Status DecodeRgbInto(NativeImage* out);

  DecoderOptions options_;
  std::unique_ptr<Jpeg> jpeg_;
  std::unique_ptr<Png> png_;
  ImageFormat current_ = ImageFormat::kUnknown;
  const uint8_t* data_ = nullptr;  // the image opened by OpenWhole()
  size_t size_ = 0;
  RgbImage whole_;
};

}  // namespace stoker

#endif  // STOKER_CODEC_DECODER_H_
