// Copyright 2026 The stoker Authors.
#include "codec/decoder.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "codec/formats.h"
#include "codec/png_rows.h"

namespace stoker {
namespace {

constexpr size_t kTailPadding = 16;
// Sides beyond this are refused whatever max_pixels says (RgbImage strides are
// computed in int).
constexpr int64_t kMaxSide = (int64_t{1} << 29) - 1;

std::string Dims(int64_t w, int64_t h) {
  return std::to_string(w) + "x" + std::to_string(h);
}

}  // namespace

namespace codec_internal {

Status CheckPixelLimit(int64_t w, int64_t h, int64_t max_pixels) {
  if (w <= 0 || h <= 0) return DataLossError("image declares size " + Dims(w, h));
  if (w > kMaxSide || h > kMaxSide) {
    return ResourceExhaustedError("image declares size " + Dims(w, h) + ", a side above " +
                                  std::to_string(kMaxSide));
  }
  if (max_pixels > 0 && w * h > max_pixels) {
    return ResourceExhaustedError("image declares " + Dims(w, h) + " = " +
                                  std::to_string(w * h) + " pixels, above the limit of " +
                                  std::to_string(max_pixels) + " (max_pixels)");
  }
  return Status::OK();
}

Status CheckFileCanHold(const char* format, int64_t w, int64_t h, uint64_t need, uint64_t have,
                        const char* what) {
  if (need <= have) return Status::OK();
  return DataLossError(std::string(format) + ": " + Dims(w, h) + " needs at least " +
                       std::to_string(need) + " bytes of " + what + ", the file has " +
                       std::to_string(have) + " (truncated or corrupt)");
}

}  // namespace codec_internal

using codec_internal::CheckFileCanHold;
using codec_internal::CheckPixelLimit;
using codec_internal::CmykChannel;

ImageFormat SniffImageFormat(const uint8_t* data, size_t size) {
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    return ImageFormat::kJpeg;
  }
  static const uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (size >= 8 && std::memcmp(data, kPngMagic, 8) == 0) return ImageFormat::kPng;
  if (codec_internal::IsWebp(data, size)) return ImageFormat::kWebp;
  if (codec_internal::IsTiff(data, size)) return ImageFormat::kTiff;
  if (codec_internal::IsBmp(data, size)) return ImageFormat::kBmp;
  if (codec_internal::IsPnm(data, size)) return ImageFormat::kPnm;
  return ImageFormat::kUnknown;
}

const char* ImageFileExtension(const uint8_t* data, size_t size) {
  int kind = 0;
  switch (SniffImageFormat(data, size)) {
    case ImageFormat::kJpeg: return "jpg";
    case ImageFormat::kPng: return "png";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kTiff: return "tif";
    case ImageFormat::kBmp: return "bmp";
    case ImageFormat::kPnm:
      codec_internal::IsPnm(data, size, &kind);
      return kind == 1 || kind == 4 ? "pbm" : (kind == 2 || kind == 5 ? "pgm" : "ppm");
    case ImageFormat::kUnknown: break;
  }
  return nullptr;
}

// ---------------------------------------------------------------- JPEG ----

class ImageDecoder::Jpeg {
 public:
  explicit Jpeg(int max_scans) : max_scans_(max_scans) {
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = &ErrorExit;
    err_.pub.emit_message = &EmitMessage;
    jpeg_create_decompress(&cinfo_);
    progress_.pub.progress_monitor = &ProgressMonitor;
    progress_.self = this;
    cinfo_.progress = &progress_.pub;
  }
  ~Jpeg() { jpeg_destroy_decompress(&cinfo_); }

  Status Open(const uint8_t* data, size_t size, int64_t max_pixels, ImageHeader* h) {
    scan_limit_hit_ = false;
    if (setjmp(err_.jump)) return Fail();
    jpeg_abort_decompress(&cinfo_);
    jpeg_mem_src(&cinfo_, data, static_cast<unsigned long>(size));
    jpeg_read_header(&cinfo_, TRUE);
    STOKER_RETURN_IF_ERROR(CheckPixelLimit(cinfo_.image_width, cinfo_.image_height, max_pixels));
    STOKER_RETURN_IF_ERROR(CheckScanHolds(size));
    h->format = ImageFormat::kJpeg;
    h->width = static_cast<int>(cinfo_.image_width);
    h->height = static_cast<int>(cinfo_.image_height);
    return Status::OK();
  }

  Status Decode(const DecodeRequest& req, DecodedRegion* out) {
    return DecodeImpl(req, nullptr, nullptr, out);
  }

  // Whether the image last opened is greyscale (one component).
  bool Grey() const { return cinfo_.jpeg_color_space == JCS_GRAYSCALE; }

  // A greyscale image whole, as libjpeg's JCS_GRAYSCALE output (1 channel),
  // with Decode()'s settings (ISLOW DCT, full scale).
  Status DecodeGrey(NativeImage* out) {
    if (setjmp(err_.jump)) return Fail();
    cinfo_.scale_num = 1;
    cinfo_.scale_denom = 1;
    cinfo_.dct_method = JDCT_ISLOW;
    cinfo_.do_fancy_upsampling = TRUE;
    cinfo_.out_color_space = JCS_GRAYSCALE;
    jpeg_start_decompress(&cinfo_);
    const int w = static_cast<int>(cinfo_.output_width);
    const int h = static_cast<int>(cinfo_.output_height);
    out->Resize(w, h, 1, 1);
    for (int y = 0; y < h;) {
      JSAMPROW row = out->row(y);
      const JDIMENSION got = jpeg_read_scanlines(&cinfo_, &row, 1);
      if (got == 0) {
        jpeg_abort_decompress(&cinfo_);
        return DataLossError("JPEG data ended before row " + std::to_string(y));
      }
      y += static_cast<int>(got);
    }
    jpeg_abort_decompress(&cinfo_);
    return Status::OK();
  }

  // The region's rows one at a time through a one-row buffer, to `fn`
  // (ImageDecoder::DecodeRows); `out` gets the region, not pixels.
  Status DecodeRows(const DecodeRequest& req, ImageDecoder::RowFn fn, void* ctx,
                    DecodedRegion* out) {
    return DecodeImpl(req, fn, ctx, out);
  }

 private:
  // Converts one row of libjpeg's CMYK to RGB in place (writes trail reads).
  void CmykRowToRgb(uint8_t* row, int width) const {
    const bool inverted = cinfo_.saw_Adobe_marker;
    for (int x = 0; x < width; ++x) {
      int c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
      if (inverted) { c = 255 - c; m = 255 - m; yy = 255 - yy; k = 255 - k; }
      row[3 * x] = CmykChannel(c, k);
      row[3 * x + 1] = CmykChannel(m, k);
      row[3 * x + 2] = CmykChannel(yy, k);
    }
  }

  // Decode (fn null: the region's rows into pixels_) or DecodeRows (each row
  // through one row of pixels_ to fn, converted to RGB first).
  Status DecodeImpl(const DecodeRequest& req, ImageDecoder::RowFn fn, void* ctx,
                    DecodedRegion* out) {
    if (setjmp(err_.jump)) return Fail();
    const int d = req.scale_denom;
    if (d != 1 && d != 2 && d != 4 && d != 8) {
      jpeg_abort_decompress(&cinfo_);
      return InvalidArgumentError("scale_denom must be 1, 2, 4 or 8, got " + std::to_string(d));
    }
    cinfo_.scale_num = 1;
    cinfo_.scale_denom = static_cast<unsigned>(d);
    cinfo_.dct_method = JDCT_ISLOW;
    cinfo_.do_fancy_upsampling = TRUE;
    const bool cmyk = cinfo_.jpeg_color_space == JCS_CMYK || cinfo_.jpeg_color_space == JCS_YCCK;
    cinfo_.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo_);
    const int sw = static_cast<int>(cinfo_.output_width);
    const int sh = static_cast<int>(cinfo_.output_height);

    // The wanted region in scaled coordinates, rounded outwards.
    Rect r = req.region;
    if (r.width <= 0 || r.height <= 0) r = Rect{0, 0, static_cast<int>(cinfo_.image_width),
                                              static_cast<int>(cinfo_.image_height)};
    int x0 = std::max(0, r.x / d);
    int y0 = std::max(0, r.y / d);
    int x1 = std::min(sw, (r.right() + d - 1) / d);
    int y1 = std::min(sh, (r.bottom() + d - 1) / d);
    if (x1 <= x0 || y1 <= y0) {
      jpeg_abort_decompress(&cinfo_);
      return InvalidArgumentError("decode region is empty after clipping to the image");
    }

    // Horizontal crop. Widening by one column on each side keeps fancy
    // chroma upsampling from treating the span end as an image edge, which
    // makes the kept pixels identical to a full decode. Spans are at least
    // 16 columns: libjpeg upsamples a span of one chroma sample differently.
    JDIMENSION xoff = 0;
    if (x1 - x0 < sw) {
      const int cx0 = std::max(0, x0 - 1);
      const int cx1 = std::min(sw, std::max(x1 + 1, cx0 + 16));
      xoff = static_cast<JDIMENSION>(cx0);
      JDIMENSION cw = static_cast<JDIMENSION>(cx1 - cx0);
      if (cx1 - cx0 < sw) jpeg_crop_scanline(&cinfo_, &xoff, &cw);
      else xoff = 0;
    }
    const int ow = static_cast<int>(cinfo_.output_width);
    const int comps = cinfo_.output_components;  // 3, or 4 for CMYK
    const size_t row_bytes = static_cast<size_t>(ow) * comps;
    const int rows = y1 - y0;
    // Slack after the last row: the resampler's vector loads may read past it.
    const size_t need = row_bytes * (fn != nullptr ? 1 : rows) + kTailPadding;
    if (pixels_.size() < need) pixels_.resize(need);

    if (y0 > 0) jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(y0));
    for (int y = 0; y < rows;) {
      JSAMPROW row = pixels_.data() + (fn != nullptr ? 0 : y * row_bytes);
      const JDIMENSION got = jpeg_read_scanlines(&cinfo_, &row, 1);
      if (got == 0) {
        jpeg_abort_decompress(&cinfo_);
        return DataLossError("JPEG data ended before row " + std::to_string(y0 + y));
      }
      if (fn != nullptr) {
        if (cmyk) CmykRowToRgb(row, ow);
        fn(ctx, y0 + y, row + static_cast<size_t>(x0 - static_cast<int>(xoff)) * 3);
      }
      y += static_cast<int>(got);
    }
    // Stop early: rows below the region are never entropy-decoded. A
    // sequential file cut below the region would then pass unnoticed (a
    // progressive one is read whole by jpeg_start_decompress); refuse it as a
    // full decode does, so whether a file is bad does not depend on the crop.
    if (y1 < sh && !cinfo_.progressive_mode && !EndMarkerFollows()) {
      jpeg_abort_decompress(&cinfo_);
      return DataLossError("JPEG: Premature end of JPEG file (no end marker after the "
                           "region's rows)");
    }
    jpeg_abort_decompress(&cinfo_);

    uint8_t* base = pixels_.data();
    size_t stride = row_bytes;
    if (fn != nullptr) {
      base = nullptr;  // no pixels to view
    } else if (cmyk) {
      for (int y = 0; y < rows; ++y) CmykRowToRgb(base + y * row_bytes, ow);
    }
    out->pixels = base == nullptr
                      ? RgbView{}
                      : RgbView{base + static_cast<size_t>(x0 - static_cast<int>(xoff)) * 3,
                                x1 - x0, rows, static_cast<std::ptrdiff_t>(stride)};
    out->region = Rect{x0, y0, x1 - x0, rows};
    out->scale_denom = d;
    out->scaled_width = sw;
    out->scaled_height = sh;
    return Status::OK();
  }

 public:
  size_t scratch_bytes() const { return pixels_.capacity(); }
  void ReleaseScratch() { std::vector<uint8_t>().swap(pixels_); }

 private:
  // Whether the end-of-image marker (FF D9) comes after what libjpeg has read
  // so far (or libjpeg already met it). Inside entropy-coded data an FF byte
  // is followed by 00 or a restart marker, never D9, so an FF D9 found there
  // is the end of the image; a file cut short has none. One memchr pass over
  // the unread bytes.
  bool EndMarkerFollows() const {
    if (cinfo_.unread_marker == 0xD9) return true;
    const uint8_t* p = cinfo_.src->next_input_byte;
    const uint8_t* end = p + cinfo_.src->bytes_in_buffer;
    while (p < end) {
      p = static_cast<const uint8_t*>(std::memchr(p, 0xFF, static_cast<size_t>(end - p)));
      if (p == nullptr || p + 1 >= end) return false;
      if (p[1] == 0xD9) return true;
      ++p;
    }
    return false;
  }

  // The allocation rule for JPEG: with Huffman coding every 8x8 block of
  // the first scan costs at least 2 bits (a DC code and an end-of-block code;
  // 1 bit in a progressive DC scan, which codes no AC), and libjpeg fails
  // data that ends early, so the file must hold that many bytes. Arithmetic
  // coding can spend almost nothing on a flat block: no bound (max_pixels
  // alone). Call after jpeg_read_header (it stops at the first scan).
  Status CheckScanHolds(size_t size) const {
    if (cinfo_.arith_code) return Status::OK();
    const int bits = !cinfo_.progressive_mode ? 2 : (cinfo_.Ss == 0 ? 1 : 0);
    uint64_t blocks = 0;
    for (int i = 0; i < cinfo_.comps_in_scan; ++i) {
      const jpeg_component_info* c = cinfo_.cur_comp_info[i];
      if (c != nullptr) blocks += uint64_t{c->width_in_blocks} * c->height_in_blocks;
    }
    return CheckFileCanHold("JPEG", cinfo_.image_width, cinfo_.image_height,
                            (blocks * bits + 7) / 8, size,
                            "Huffman-coded data (2 bits per 8x8 block of the first scan, 1 if "
                            "progressive)");
  }

  struct ErrorMgr {
    jpeg_error_mgr pub;
    jmp_buf jump;
  };

  static void ErrorExit(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<ErrorMgr*>(cinfo->err);
    std::longjmp(err->jump, 1);
  }
  struct Progress {
    jpeg_progress_mgr pub;
    Jpeg* self;
  };
  // Called by libjpeg between passes and scans (djpeg's -maxscans check).
  static void ProgressMonitor(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    auto* p = reinterpret_cast<Progress*>(cinfo->progress);
    const int scans = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
    if (p->self->max_scans_ > 0 && scans > p->self->max_scans_) {
      p->self->scan_limit_hit_ = true;
      std::longjmp(p->self->err_.jump, 1);
    }
  }
  static void EmitMessage(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    // A warning means corrupt data (truncation, bad Huffman code, ...), and
    // libjpeg would go on with made-up pixels. Extraneous bytes between
    // markers are the one harmless warning.
    if (cinfo->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
    cinfo->err->error_exit(cinfo);
  }

  Status Fail() {
    if (scan_limit_hit_) {
      scan_limit_hit_ = false;
      jpeg_abort_decompress(&cinfo_);
      return ResourceExhaustedError("JPEG: more than " + std::to_string(max_scans_) +
                                    " progressive scans, above the limit (max_scans)");
    }
    char buf[JMSG_LENGTH_MAX];
    (*err_.pub.format_message)(reinterpret_cast<j_common_ptr>(&cinfo_), buf);
    const int code = err_.pub.msg_code;
    jpeg_abort_decompress(&cinfo_);
    std::string msg = std::string("JPEG: ") + buf;
    if (code == JERR_BAD_PRECISION) return UnimplementedError(msg);
    return DataLossError(msg);
  }

  jpeg_decompress_struct cinfo_{};
  ErrorMgr err_{};
  Progress progress_{};
  const int max_scans_;
  bool scan_limit_hit_ = false;
  std::vector<uint8_t> pixels_;
};

// ----------------------------------------------------------------- PNG ----

namespace {

// Walks the chunk list and checks every declared chunk length against the
// bytes that are really there, so libpng never allocates for a length the
// file cannot hold (it would allocate, and zero, up to 2 GiB before noticing
// the truncation).
// `idat` (optional) gets the IDAT chunks' total length.
Status CheckPngChunkLengths(const uint8_t* data, size_t size, uint64_t* idat = nullptr) {
  uint64_t idat_bytes = 0;
  size_t pos = 8;  // after the signature
  while (pos + 8 <= size) {
    const uint32_t len = (uint32_t{data[pos]} << 24) | (uint32_t{data[pos + 1]} << 16) |
                         (uint32_t{data[pos + 2]} << 8) | uint32_t{data[pos + 3]};
    const std::string type(reinterpret_cast<const char*>(data + pos + 4), 4);
    const size_t left = size - pos - 8;
    if (len > 0x7FFFFFFFu || len > left) {
      return DataLossError("PNG: chunk '" + type + "' declares " + std::to_string(len) +
                           " bytes but the file has " + std::to_string(left) +
                           " left (truncated or corrupt)");
    }
    if (type == "IDAT") idat_bytes += len;
    pos += 8 + static_cast<size_t>(len) + 4;  // header, data, CRC
    if (type == "IEND") break;
  }
  if (idat != nullptr) *idat = idat_bytes;
  return Status::OK();
}

// The allocation rule for PNG: the image's samples (w x h x bits per pixel,
// before filter bytes) come out of zlib, and deflate gives at most 1032 bytes
// per byte (a 258-byte match in two 1-bit codes), so the IDAT chunks must
// hold at least a 1032th of them.
Status CheckIdatHolds(int64_t w, int64_t h, int bits_per_pixel, uint64_t idat) {
  const uint64_t sample_bytes = static_cast<uint64_t>(w) * static_cast<uint64_t>(h) / 8 *
                                static_cast<uint64_t>(bits_per_pixel);
  return CheckFileCanHold("PNG", w, h, sample_bytes / 1032, idat,
                          "IDAT data (deflate expands at most 1032 times)");
}

}  // namespace

class ImageDecoder::Png {
 public:
  ~Png() { Reset(); }

  Status Open(const uint8_t* data, size_t size, int64_t max_pixels, ImageHeader* h) {
    Reset();
    uint64_t idat = 0;
    STOKER_RETURN_IF_ERROR(CheckPngChunkLengths(data, size, &idat));
    data_ = data;
    size_ = size;
    pos_ = 0;
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, this, &ErrorFn, &WarningFn);
    if (png_ == nullptr) return InternalError("png_create_read_struct failed");
    info_ = png_create_info_struct(png_);
    if (info_ == nullptr) return InternalError("png_create_info_struct failed");
    if (setjmp(png_jmpbuf(png_))) return Fail();
    png_set_read_fn(png_, this, &ReadFn);
    // Let libpng check dimensions against our limit instead of its own.
    png_set_user_limits(png_, 0x7fffffff, 0x7fffffff);
    png_set_chunk_malloc_max(png_, 64u << 20);
    png_read_info(png_, info_);
    const int64_t w = png_get_image_width(png_, info_);
    const int64_t hh = png_get_image_height(png_, info_);
    STOKER_RETURN_IF_ERROR(CheckPixelLimit(w, hh, max_pixels));
    STOKER_RETURN_IF_ERROR(CheckIdatHolds(
        w, hh, png_get_channels(png_, info_) * png_get_bit_depth(png_, info_), idat));
    h->format = ImageFormat::kPng;
    h->width = static_cast<int>(w);
    h->height = static_cast<int>(hh);
    return Status::OK();
  }

  // An index past a short PLTE (libpng's "badpal" files) would expand to
  // black; Pillow's palette starts as the grey ramp (i, i, i) under the
  // PLTE entries, so such pixels are grey there. Pads the palette the same
  // way. Call inside Decode's setjmp scope.
  void PadPalette(int depth) {
    png_colorp palette = nullptr;
    int n = 0;
    if (png_get_PLTE(png_, info_, &palette, &n) == 0 || palette == nullptr) return;
    const int full = 1 << std::min(depth, 8);
    if (n >= full) return;
    png_color padded[256];
    for (int i = 0; i < full; ++i) {
      padded[i] = i < n ? palette[i]
                        : png_color{static_cast<png_byte>(i), static_cast<png_byte>(i),
                                    static_cast<png_byte>(i)};
    }
    png_set_PLTE(png_, info_, padded, full);  // copied by libpng
  }

  // Sets libpng's transforms to 8-bit RGB (Pillow's convert("RGB")) and
  // checks the row size. Call inside a setjmp scope (libpng may longjmp).
  Status SetRgbTransforms(int* w, int* h) {
    const int color = png_get_color_type(png_, info_);
    const int depth = png_get_bit_depth(png_, info_);
    if (color == PNG_COLOR_TYPE_PALETTE) {
      PadPalette(depth);
      png_set_palette_to_rgb(png_);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png_);
    if (depth == 16) png_set_strip_16(png_);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
      png_set_gray_to_rgb(png_);
    }
    // tRNS and alpha are dropped, as Pillow's convert("RGB") does (palette
    // expansion turns tRNS into an alpha channel).
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png_, info_, PNG_INFO_tRNS)) {
      png_set_strip_alpha(png_);
    }
    png_set_interlace_handling(png_);
    png_read_update_info(png_, info_);
    *w = static_cast<int>(png_get_image_width(png_, info_));
    *h = static_cast<int>(png_get_image_height(png_, info_));
    const size_t rowbytes = png_get_rowbytes(png_, info_);
    if (rowbytes != static_cast<size_t>(*w) * 3) {
      Reset();
      return InternalError("PNG transform produced " + std::to_string(rowbytes) +
                           " bytes per row, expected " + std::to_string(*w * 3));
    }
    return Status::OK();
  }

  // The whole image as stored (ImageDecoder::DecodeNative): grey, grey +
  // alpha, RGB or RGBA at 8 or 16 bits (uint16 in the host's byte order:
  // png_set_swap on little-endian hosts); 1/2/4-bit grey expanded to 8 bits
  // (values kept: 0..1, 0..3, 0..15 scaled to 0..255 as libpng's expansion
  // does); palette expanded to RGB, or RGBA when it has tRNS. A tRNS chunk of
  // a grey or RGB image is not turned into a channel. With `palette_indices`
  // a palette image gives its indices instead (one channel, 1/2/4-bit indices
  // unpacked to a byte each; the palette and tRNS ignored): a label map.
  Status DecodeNative(NativeImage* out, bool palette_indices, NativeRows* rows) {
    if (png_ == nullptr) return InternalError("PNG DecodeNative() without Open()");
    if (setjmp(png_jmpbuf(png_))) return Fail();
    const int color = png_get_color_type(png_, info_);
    const int depth = png_get_bit_depth(png_, info_);
    const int w = static_cast<int>(png_get_image_width(png_, info_));
    const int h = static_cast<int>(png_get_image_height(png_, info_));
    // Rows [y0, y1): the band asked for, or every row of an interlaced image
    // (an Adam7 image's first row needs every pass). The rows above y0 are
    // inflated and unfiltered (the next row's filter needs them) and dropped,
    // and the inflate stops after y1 - 1.
    const bool interlaced = png_get_interlace_type(png_, info_) != PNG_INTERLACE_NONE;
    const bool band = rows != nullptr && !interlaced;
    const int y0 = band ? std::clamp(rows->begin, 0, h) : 0;
    const int y1 = band ? std::clamp(rows->end, y0, h) : h;
    if (rows != nullptr) {
      rows->first = y0;
      rows->image_height = h;
      rows->rows_read = y1;
    }
    if (depth == 8 && !interlaced &&
        (color == PNG_COLOR_TYPE_GRAY || (color == PNG_COLOR_TYPE_PALETTE && palette_indices))) {
      // One byte per pixel, stored as given: our unfilter (codec/png_rows.h).
      Reset();
      out->Resize(w, y1 - y0, 1, 1);
      return DecodeBytePixelPngRows(data_, size_, w, h, y0, y1, out->pixels.data(),
                                    out->row_bytes(), &row_);
    }
#ifdef PNG_IGNORE_ADLER32
    // A band that stops before the last row never reaches the zlib stream's
    // Adler-32 (after the last row's data), so it is not computed either
    // (set before png_read_update_info, which starts the inflate). The
    // chunks' CRCs are still checked as they are read.
    if (y1 < h) png_set_option(png_, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
    if (color == PNG_COLOR_TYPE_PALETTE && palette_indices) {
      if (depth < 8) png_set_packing(png_);
    } else if (color == PNG_COLOR_TYPE_PALETTE) {
      PadPalette(depth);
      png_set_palette_to_rgb(png_);
      if (png_get_valid(png_, info_, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png_);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png_);
    if (depth == 16) {
      const uint16_t probe = 1;
      uint8_t first = 0;
      std::memcpy(&first, &probe, 1);
      if (first == 1) png_set_swap(png_);  // little-endian host
    }
    png_set_interlace_handling(png_);
    png_read_update_info(png_, info_);
    const int channels = png_get_channels(png_, info_);
    const int bytes = png_get_bit_depth(png_, info_) / 8;
    out->Resize(w, y1 - y0, channels, bytes);
    if (png_get_rowbytes(png_, info_) != out->row_bytes() || channels < 1 || channels > 4 ||
        (bytes != 1 && bytes != 2)) {
      Reset();
      return InternalError("PNG native transform produced " +
                           std::to_string(png_get_rowbytes(png_, info_)) + " bytes per row");
    }
    if (band) {  // one scratch row for the rows above the band
      const size_t row_bytes = out->row_bytes();
      if (row_.size() < row_bytes) row_.resize(row_bytes);
      for (int y = 0; y < y1; ++y) {
        png_read_row(png_, y < y0 ? row_.data() : out->row(y - y0), nullptr);
      }
    } else {
      rows_.resize(static_cast<size_t>(h));
      for (int y = 0; y < h; ++y) rows_[static_cast<size_t>(y)] = out->row(y);
      png_read_image(png_, rows_.data());
    }
    Reset();
    return Status::OK();
  }

  // True when the image last opened can be decoded row by row (DecodeRows):
  // not interlaced (an Adam7 image's first row needs every pass, i.e. the
  // whole file, in memory).
  bool CanDecodeRows() const {
    return png_ != nullptr && png_get_interlace_type(png_, info_) == PNG_INTERLACE_NONE;
  }

  // Decodes every row, one at a time into one reused row buffer (w * 3 + 16
  // bytes), and hands the rows of req.region to `fn`; the others are decoded
  // and dropped (so damage anywhere in the image data is an error, as in
  // Decode()). Peak pixel memory: one row.
  Status DecodeRows(const DecodeRequest& req, ImageDecoder::RowFn fn, void* ctx,
                    DecodedRegion* out) {
    if (png_ == nullptr) return InternalError("PNG DecodeRows() without Open()");
    if (!CanDecodeRows()) {
      Reset();
      return InternalError("PNG DecodeRows() on an interlaced image");
    }
    if (setjmp(png_jmpbuf(png_))) return Fail();
    int w = 0, h = 0;
    STOKER_RETURN_IF_ERROR(SetRgbTransforms(&w, &h));
    Rect r = req.region;
    if (r.width <= 0 || r.height <= 0) r = Rect{0, 0, w, h};
    const int x0 = std::max(0, r.x), y0 = std::max(0, r.y);
    const int x1 = std::min(w, r.right()), y1 = std::min(h, r.bottom());
    if (x1 <= x0 || y1 <= y0) {
      Reset();
      return InvalidArgumentError("decode region is empty after clipping to the image");
    }
    const size_t need = static_cast<size_t>(w) * 3 + kTailPadding;
    if (row_.size() < need) row_.resize(need);
    for (int y = 0; y < h; ++y) {
      png_read_row(png_, row_.data(), nullptr);
      if (y >= y0 && y < y1) fn(ctx, y, row_.data() + static_cast<size_t>(x0) * 3);
    }
    Reset();
    out->pixels = RgbView{};
    out->region = Rect{x0, y0, x1 - x0, y1 - y0};
    out->scale_denom = 1;
    out->scaled_width = w;
    out->scaled_height = h;
    return Status::OK();
  }

  Status Decode(const DecodeRequest& req, DecodedRegion* out) {
    if (png_ == nullptr) return InternalError("PNG Decode() without Open()");
    if (setjmp(png_jmpbuf(png_))) return Fail();
    int w = 0, h = 0;
    STOKER_RETURN_IF_ERROR(SetRgbTransforms(&w, &h));
    image_.Resize(w, h);
    rows_.resize(h);
    for (int y = 0; y < h; ++y) rows_[y] = image_.row(y);
    png_read_image(png_, rows_.data());
    Reset();

    Rect r = req.region;
    if (r.width <= 0 || r.height <= 0) r = Rect{0, 0, w, h};
    const int x0 = std::max(0, r.x), y0 = std::max(0, r.y);
    const int x1 = std::min(w, r.right()), y1 = std::min(h, r.bottom());
    if (x1 <= x0 || y1 <= y0) {
      return InvalidArgumentError("decode region is empty after clipping to the image");
    }
    out->pixels = RgbView{image_.row(y0) + x0 * 3, x1 - x0, y1 - y0, image_.stride()};
    out->region = Rect{x0, y0, x1 - x0, y1 - y0};
    out->scale_denom = 1;
    out->scaled_width = w;
    out->scaled_height = h;
    return Status::OK();
  }

 private:
  static void ErrorFn(png_structp png, png_const_charp msg) {
    auto* self = static_cast<Png*>(png_get_error_ptr(png));
    self->message_ = msg ? msg : "unknown error";
    png_longjmp(png, 1);
  }
  static void WarningFn(png_structp, png_const_charp) {}
  static void ReadFn(png_structp png, png_bytep out, png_size_t n) {
    auto* self = static_cast<Png*>(png_get_io_ptr(png));
    if (self->size_ - self->pos_ < n) {
      png_error(png, "file is truncated");
    }
    std::memcpy(out, self->data_ + self->pos_, n);
    self->pos_ += n;
  }

  Status Fail() {
    std::string msg = "PNG: " + message_;
    Reset();
    return DataLossError(msg);
  }

  void Reset() {
    if (png_ != nullptr) png_destroy_read_struct(&png_, info_ ? &info_ : nullptr, nullptr);
    png_ = nullptr;
    info_ = nullptr;
  }


 public:
  size_t scratch_bytes() const {
    return image_.capacity_bytes() + rows_.capacity() * sizeof(png_bytep) + row_.capacity();
  }
  void ReleaseScratch() {
    image_.Release();
    std::vector<png_bytep>().swap(rows_);
    std::vector<uint8_t>().swap(row_);
  }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;
  std::string message_;
  RgbImage image_;
  std::vector<png_bytep> rows_;
  std::vector<uint8_t> row_;  // DecodeRows' one row
};

// ------------------------------------------------------------- dispatch ----

ImageDecoder::ImageDecoder(const DecoderOptions& options)
    : options_(options), jpeg_(std::make_unique<Jpeg>(options.max_scans)), png_(std::make_unique<Png>()) {}

ImageDecoder::~ImageDecoder() = default;

Status ImageDecoder::Open(const uint8_t* data, size_t size, ImageHeader* header) {
  current_ = SniffImageFormat(data, size);
  switch (current_) {
    case ImageFormat::kJpeg:
      return jpeg_->Open(data, size, options_.max_pixels, header);
    case ImageFormat::kPng:
      return png_->Open(data, size, options_.max_pixels, header);
    case ImageFormat::kWebp:
    case ImageFormat::kTiff:
    case ImageFormat::kBmp:
    case ImageFormat::kPnm:
      return OpenWhole(data, size, header);
    case ImageFormat::kUnknown:
      break;
  }
  if (size == 0) return InvalidArgumentError("file is empty");
  return InvalidArgumentError(
      "not a JPEG, PNG, WebP, TIFF, BMP or PNM image (unrecognised leading bytes)");
}

Status ImageDecoder::Decode(const DecodeRequest& request, DecodedRegion* out) {
  switch (current_) {
    case ImageFormat::kJpeg: return jpeg_->Decode(request, out);
    case ImageFormat::kPng: return png_->Decode(request, out);
    case ImageFormat::kWebp:
    case ImageFormat::kTiff:
    case ImageFormat::kBmp:
    case ImageFormat::kPnm: return DecodeWhole(request, out);
    case ImageFormat::kUnknown: break;
  }
  return InternalError("Decode() without a successful Open()");
}

bool ImageDecoder::CanDecodeRows() const {
  return current_ == ImageFormat::kJpeg ||
         (current_ == ImageFormat::kPng && png_->CanDecodeRows());
}

Status ImageDecoder::DecodeRows(const DecodeRequest& request, RowFn fn, void* ctx,
                                DecodedRegion* out) {
  const ImageFormat f = current_;
  current_ = ImageFormat::kUnknown;  // one decode per Open()
  if (f == ImageFormat::kJpeg) return jpeg_->DecodeRows(request, fn, ctx, out);
  if (f == ImageFormat::kPng) return png_->DecodeRows(request, fn, ctx, out);
  return InternalError("DecodeRows() needs an opened JPEG or PNG (see CanDecodeRows())");
}

size_t ImageDecoder::scratch_bytes() const {
  return jpeg_->scratch_bytes() + png_->scratch_bytes() + whole_.capacity_bytes();
}

void ImageDecoder::ReleaseScratch() {
  jpeg_->ReleaseScratch();
  png_->ReleaseScratch();
  whole_.Release();
}

Status ImageDecoder::OpenWhole(const uint8_t* data, size_t size, ImageHeader* header) {
  int w = 0, h = 0;
  Status s;
  switch (current_) {
    case ImageFormat::kWebp: s = codec_internal::WebpInfo(data, size, &w, &h); break;
    case ImageFormat::kTiff: s = codec_internal::TiffInfo(data, size, &w, &h); break;
    case ImageFormat::kBmp: s = codec_internal::BmpInfo(data, size, &w, &h); break;
    case ImageFormat::kPnm: s = codec_internal::PnmInfo(data, size, &w, &h); break;
    default: s = InternalError("OpenWhole() on a format with its own decoder");
  }
  if (s.ok()) s = CheckPixelLimit(w, h, options_.max_pixels);
  if (!s.ok()) {
    current_ = ImageFormat::kUnknown;
    return s;
  }
  data_ = data;
  size_ = size;
  header->format = current_;
  header->width = w;
  header->height = h;
  return Status::OK();
}

Status ImageDecoder::DecodeWhole(const DecodeRequest& req, DecodedRegion* out) {
  const ImageFormat f = current_;
  current_ = ImageFormat::kUnknown;  // one Decode() per Open()
  Status s;
  switch (f) {
    case ImageFormat::kWebp: s = codec_internal::DecodeWebp(data_, size_, options_.max_pixels, &whole_); break;
    case ImageFormat::kTiff: s = codec_internal::DecodeTiff(data_, size_, options_.max_pixels, &whole_); break;
    case ImageFormat::kBmp: s = codec_internal::DecodeBmp(data_, size_, options_.max_pixels, &whole_); break;
    case ImageFormat::kPnm: s = codec_internal::DecodePnm(data_, size_, options_.max_pixels, &whole_); break;
    default: s = InternalError("DecodeWhole() on a format with its own decoder");
  }
  STOKER_RETURN_IF_ERROR(s);
  const int w = whole_.width(), h = whole_.height();
  Rect r = req.region;
  if (r.width <= 0 || r.height <= 0) r = Rect{0, 0, w, h};
  const int x0 = std::max(0, r.x), y0 = std::max(0, r.y);
  const int x1 = std::min(w, r.right()), y1 = std::min(h, r.bottom());
  if (x1 <= x0 || y1 <= y0) {
    return InvalidArgumentError("decode region is empty after clipping to the image");
  }
  out->pixels = RgbView{whole_.row(y0) + x0 * 3, x1 - x0, y1 - y0, whole_.stride()};
  out->region = Rect{x0, y0, x1 - x0, y1 - y0};
  out->scale_denom = 1;
  out->scaled_width = w;
  out->scaled_height = h;
  return Status::OK();
}

Status ImageDecoder::DecodeNative(const uint8_t* data, size_t size, NativeImage* out,
                                  bool palette_indices, NativeRows* rows) {
  ImageHeader h;
  STOKER_RETURN_IF_ERROR(Open(data, size, &h));
  if (rows != nullptr) {  // the whole image unless a PNG says otherwise below
    *rows = NativeRows{rows->begin, rows->end, 0, h.height, h.height};
  }
  bool handled = false;
  switch (current_) {
    case ImageFormat::kJpeg:
      if (!jpeg_->Grey()) break;
      current_ = ImageFormat::kUnknown;
      return jpeg_->DecodeGrey(out);
    case ImageFormat::kPng:
      current_ = ImageFormat::kUnknown;
      return png_->DecodeNative(out, palette_indices, rows);
    case ImageFormat::kWebp:
      STOKER_RETURN_IF_ERROR(codec_internal::DecodeWebpNative(data, size, options_.max_pixels,
                                                              out, &handled));
      break;
    case ImageFormat::kTiff:
      STOKER_RETURN_IF_ERROR(codec_internal::DecodeTiffNative(data, size, options_.max_pixels,
                                                              out, &handled));
      break;
    default:
      break;
  }
  if (handled) {
    current_ = ImageFormat::kUnknown;
    return Status::OK();
  }
  return DecodeRgbInto(out);
}

Status ImageDecoder::DecodeRgb(const uint8_t* data, size_t size, NativeImage* out) {
  ImageHeader h;
  STOKER_RETURN_IF_ERROR(Open(data, size, &h));
  return DecodeRgbInto(out);
}

Status ImageDecoder::DecodeRgbInto(NativeImage* out) {
  DecodedRegion r;
  STOKER_RETURN_IF_ERROR(Decode(DecodeRequest{}, &r));
  out->Resize(r.pixels.width, r.pixels.height, 3, 1);
  for (int y = 0; y < r.pixels.height; ++y) {
    std::memcpy(out->row(y), r.pixels.row(y), out->row_bytes());
  }
  return Status::OK();
}

Status ImageDecoder::DecodeAll(const uint8_t* data, size_t size, DecodedRegion* out) {
  ImageHeader h;
  STOKER_RETURN_IF_ERROR(Open(data, size, &h));
  return Decode(DecodeRequest{}, out);
}

}  // namespace stoker
