// Copyright 2026 The stoker Authors.
//
// TIFF through libtiff (its first image), converted to RGB by Pillow 9.4's
// rules for the layouts Pillow reads (TiffImagePlugin's OPEN_INFO), so that
// convert("RGB") gives the same pixels:
//  - bilevel and greyscale, 1/2/4/8 bits (MinIsWhite inverted, 2 and 4 bits
//    scaled to 0..255), 16 bits clipped to 255 as Pillow's mode "I;16" is
//    (MinIsWhite not inverted at 16 bits, as in Pillow), with or without an
//    alpha sample (dropped);
//  - RGB, 8 or 16 bits (16: the high byte), with extra samples: unassociated
//    alpha and unspecified extras are dropped, associated (premultiplied)
//    alpha is divided out as Pillow's "RGBa" unpacking does;
//  - palette, 1/2/4/8 bits (the colour map's high bytes);
//  - CMYK (8 bits, Pillow's CMYK -> RGB);
//  - YCbCr: JPEG-compressed with libjpeg's RGB conversion, otherwise
//    libtiff's RGBA conversion (what Pillow uses for it);
//  - planar (separate) or contiguous samples, strips or tiles, every
//    compression this libtiff decodes. FillOrder is handled by libtiff.
// Other layouts (float or signed samples, LAB, ...) are Unimplemented.
// Errors are reported through per-file handlers (TIFFClientOpenExt), never
// the process-wide ones, and no single allocation of libtiff's may exceed
// a bound derived from max_pixels.
#include <tiffio.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "codec/formats.h"

namespace stoker::codec_internal {
namespace {

struct MemFile {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  std::string error;  // first error libtiff reported
};

tsize_t ReadProc(thandle_t h, tdata_t buf, tsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  if (n < 0) return 0;
  const size_t left = f->pos < f->size ? f->size - f->pos : 0;
  const size_t got = std::min(left, static_cast<size_t>(n));
  std::memcpy(buf, f->data + f->pos, got);
  f->pos += got;
  return static_cast<tsize_t>(got);
}
tsize_t WriteProc(thandle_t, tdata_t, tsize_t) { return 0; }
toff_t SeekProc(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<MemFile*>(h);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = f->pos;
  if (whence == SEEK_END) base = f->size;
  const uint64_t to = base + off;  // toff_t is unsigned; negative offsets wrap
  f->pos = static_cast<size_t>(std::min<uint64_t>(to, uint64_t{1} << 62));
  return f->pos;
}
int CloseProc(thandle_t) { return 0; }
toff_t SizeProc(thandle_t h) { return static_cast<MemFile*>(h)->size; }
int MapProc(thandle_t h, tdata_t* base, toff_t* size) {
  auto* f = static_cast<MemFile*>(h);
  *base = const_cast<uint8_t*>(f->data);
  *size = f->size;
  return 1;
}
void UnmapProc(thandle_t, tdata_t, toff_t) {}

int ErrorHandler(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* f = static_cast<MemFile*>(user);
  if (f->error.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    f->error = buf;
  }
  return 1;  // handled: the process-wide handler is not called
}
int WarningHandler(TIFF*, void*, const char*, const char*, va_list) { return 1; }

// An open TIFF on memory, closed on destruction.
class Tiff {
 public:
  Tiff(const uint8_t* data, size_t size, int64_t max_pixels) : file_{data, size} {
    TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetErrorHandlerExtR(opts, &ErrorHandler, &file_);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, &WarningHandler, &file_);
    // A strip or tile of a legitimate image is at most the whole image at
    // 16 bytes per pixel; corrupt byte counts must not allocate more.
    if (max_pixels > 0) {
      TIFFOpenOptionsSetMaxSingleMemAlloc(opts, std::max<int64_t>(64 << 20, max_pixels * 16));
    }
    tif_ = TIFFClientOpenExt("memory", "r", &file_, &ReadProc, &WriteProc, &SeekProc, &CloseProc,
                             &SizeProc, &MapProc, &UnmapProc, opts);
    TIFFOpenOptionsFree(opts);
  }
  ~Tiff() {
    if (tif_ != nullptr) TIFFClose(tif_);
  }
  TIFF* get() const { return tif_; }
  Status Error(const std::string& what) const {
    return DataLossError("TIFF: " + what + (file_.error.empty() ? "" : ": " + file_.error));
  }

 private:
  MemFile file_;
  TIFF* tif_ = nullptr;
};

Status OpenSize(const Tiff& t, int64_t* w, int64_t* h) {
  if (t.get() == nullptr) return t.Error("cannot read the header");
  uint32_t width = 0, height = 0;
  if (!TIFFGetField(t.get(), TIFFTAG_IMAGEWIDTH, &width) ||
      !TIFFGetField(t.get(), TIFFTAG_IMAGELENGTH, &height)) {
    return t.Error("no image size");
  }
  *w = width;
  *h = height;
  return Status::OK();
}

// OpenSize, then the pixel limit (before anything is allocated).
Status OpenSizeWithin(const Tiff& t, int64_t max_pixels, int64_t* w, int64_t* h) {
  STOKER_RETURN_IF_ERROR(OpenSize(t, w, h));
  return CheckPixelLimit(*w, *h, max_pixels);
}

inline uint8_t Clip8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// The most bytes one byte of strip or tile data can decode to, per
// compression, or 0 where the format has no such bound (JPEG, LZMA, ZSTD,
// ...: those images are bounded by max_pixels alone).
//  - none: 1; PackBits: 64 (2 bytes repeat a byte up to 128 times);
//  - Deflate: 1032 (a 258-byte match in two 1-bit codes);
//  - LZW: 4096 (a code of 9 to 12 bits gives at most the ~4860 bytes of the
//    longest string libtiff's 5119-entry table can hold, and only 12-bit
//    codes reach that far: under 3300);
//  - CCITT (modified Huffman, Group 3 and 4): a row costs at least one bit.
uint64_t MaxExpansion(uint16_t compression, uint64_t row_bytes) {
  switch (compression) {
    case COMPRESSION_NONE: return 1;
    case COMPRESSION_PACKBITS: return 64;
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return 1032;
    case COMPRESSION_LZW: return 4096;
    case COMPRESSION_CCITTRLE:
    case COMPRESSION_CCITTRLEW:
    case COMPRESSION_CCITTFAX3:
    case COMPRESSION_CCITTFAX4: return 8 * std::max<uint64_t>(row_bytes, 1);
    default: return 0;
  }
}

// The allocation rule for TIFF: `decoded` bytes (every strip's rows, or every
// tile) must come from the strips' and tiles' data actually in the file at
// the compression's densest: the file's bytes that some strip or tile
// covers (byte ranges cut to the file, overlaps counted once, so strips
// that all point at the same few bytes hold only those). Checked before the
// image is allocated. libtiff reads the offset and count arrays from the
// file, so their length is bounded by its size.
Status CheckStrilesHold(TIFF* tif, size_t size, uint16_t compression, uint64_t row_bytes,
                        uint64_t decoded, int w, int h) {
  const uint64_t ratio = MaxExpansion(compression, row_bytes);
  if (ratio == 0) return Status::OK();
  const uint64_t need = decoded / ratio + (decoded % ratio != 0 ? 1 : 0);
  const uint32_t n = TIFFIsTiled(tif) ? TIFFNumberOfTiles(tif) : TIFFNumberOfStrips(tif);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) within the file
  ranges.reserve(std::min<uint64_t>(n, size));
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t offset = TIFFGetStrileOffset(tif, i);
    const uint64_t count = TIFFGetStrileByteCount(tif, i);
    if (offset < size && count > 0) {
      ranges.emplace_back(offset, offset + std::min<uint64_t>(count, size - offset));
    }
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t have = 0, covered_to = 0;
  for (const auto& [begin, end] : ranges) {
    const uint64_t from = std::max(begin, covered_to);
    if (end > from) have += end - from;
    covered_to = std::max(covered_to, end);
  }
  return CheckFileCanHold("TIFF", w, h, need, have, "strip and tile data");
}

// A tile is decoded whole into one buffer, so its size is a header field to
// check like the image's: at most max_pixels pixels, and at most 4 times the
// image's (or 1024 x 1024, which small images' writers commonly use).
Status CheckTileSize(uint32_t tw, uint32_t th, int64_t w, int64_t h, int64_t max_pixels) {
  const int64_t area = int64_t{tw} * th;
  const int64_t cap = std::max<int64_t>(4 * w * h, int64_t{1} << 20);
  if ((max_pixels > 0 && area > max_pixels) || area > cap) {
    return ResourceExhaustedError(
        "TIFF: tiles of " + std::to_string(tw) + "x" + std::to_string(th) + " for a " +
        std::to_string(w) + "x" + std::to_string(h) + " image, above the limit of " +
        std::to_string(max_pixels > 0 ? std::min(cap, max_pixels) : cap) +
        " pixels per tile (max_pixels, and 4 times the image)");
  }
  return Status::OK();
}

// The allocation checks before an image is decoded: the tile size (tiled
// files; `*tw`, `*th` get it, 0 for strips), then that the file's strip or
// tile data can hold what they decode to: `strip_bytes` (every row of every
// plane) for strips, every tile for tiles.
Status CheckDecodedHold(const Tiff& t, size_t size, uint16_t compression, uint64_t row_bytes,
                        uint64_t strip_bytes, int64_t w, int64_t h, int64_t max_pixels,
                        uint32_t* tw, uint32_t* th) {
  TIFF* tif = t.get();
  *tw = *th = 0;
  uint64_t decoded = strip_bytes;
  if (TIFFIsTiled(tif)) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, th);
    if (*tw == 0 || *th == 0) return t.Error("tile size is zero");
    STOKER_RETURN_IF_ERROR(CheckTileSize(*tw, *th, w, h, max_pixels));
    decoded = TIFFTileSize64(tif) * static_cast<uint64_t>(TIFFNumberOfTiles(tif));
  }
  return CheckStrilesHold(tif, size, compression, row_bytes, decoded, static_cast<int>(w),
                          static_cast<int>(h));
}

// The tags that say how samples are stored (libtiff's defaults where absent).
struct SampleLayout {
  uint16_t photo = 0;
  uint16_t bps = 1;
  uint16_t spp = 1;
  uint16_t planar = PLANARCONFIG_CONTIG;
  uint16_t fmt = SAMPLEFORMAT_UINT;
  uint16_t compression = COMPRESSION_NONE;
};

// False when the file has no PhotometricInterpretation tag.
bool ReadSampleLayout(TIFF* tif, SampleLayout* l) {
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &l->photo)) return false;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &l->bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &l->spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &l->planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &l->fmt);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &l->compression);
  return true;
}

}  // namespace

bool IsTiff(const uint8_t* data, size_t size) {
  if (size < 4) return false;
  return std::memcmp(data, "II\x2A\x00", 4) == 0 || std::memcmp(data, "MM\x00\x2A", 4) == 0 ||
         std::memcmp(data, "II\x2B\x00", 4) == 0 || std::memcmp(data, "MM\x00\x2B", 4) == 0;
}

Status TiffInfo(const uint8_t* data, size_t size, int* width, int* height) {
  Tiff t(data, size, 0);
  int64_t w = 0, h = 0;
  STOKER_RETURN_IF_ERROR(OpenSize(t, &w, &h));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(w, h, 0));
  *width = static_cast<int>(w);
  *height = static_cast<int>(h);
  return Status::OK();
}

Status DecodeTiff(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out) {
  Tiff t(data, size, max_pixels);
  int64_t w64 = 0, h64 = 0;
  STOKER_RETURN_IF_ERROR(OpenSizeWithin(t, max_pixels, &w64, &h64));
  TIFF* tif = t.get();
  const int w = static_cast<int>(w64), h = static_cast<int>(h64);
  SampleLayout sl;
  if (!ReadSampleLayout(tif, &sl)) {
    return UnimplementedError("TIFF: no PhotometricInterpretation tag");
  }
  const uint16_t photo = sl.photo, bps = sl.bps, spp = sl.spp, planar = sl.planar, fmt = sl.fmt;
  const uint16_t compression = sl.compression;
  uint16_t nextra = 0;
  uint16_t* extra = nullptr;
  TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &nextra, &extra);
  const int first_extra = nextra > 0 && extra != nullptr ? extra[0] : -1;
  const std::string layout = "photometric " + std::to_string(photo) + ", " +
                             std::to_string(spp) + " x " + std::to_string(bps) + "-bit samples";
  if (fmt != SAMPLEFORMAT_UINT) {
    return UnimplementedError("TIFF: non-integer or signed samples (" + layout + ")");
  }

  // YCbCr without JPEG: libtiff's RGBA conversion, as Pillow does.
  if (photo == PHOTOMETRIC_YCBCR &&
      !(compression == COMPRESSION_JPEG && planar == PLANARCONFIG_CONTIG)) {
    if (bps != 8) return UnimplementedError("TIFF: YCbCr with " + layout);
    uint32_t tw = 0, th = 0;
    STOKER_RETURN_IF_ERROR(CheckDecodedHold(
        t, size, compression, TIFFScanlineSize64(tif),
        TIFFVStripSize64(tif, static_cast<uint32_t>(h)) *
            (planar == PLANARCONFIG_SEPARATE ? spp : 1),
        w64, h64, max_pixels, &tw, &th));
    // libtiff's RGBA reader: 4 bytes per pixel besides the image (this
    // rarely used layout is not streamed).
    std::vector<uint32_t> rgba(static_cast<size_t>(w) * h);
    if (!TIFFReadRGBAImageOriented(tif, w, h, rgba.data(), ORIENTATION_TOPLEFT, 0)) {
      return t.Error("cannot decode the YCbCr image");
    }
    out->Resize(w, h);
    for (int y = 0; y < h; ++y) {
      uint8_t* o = out->row(y);
      for (int x = 0; x < w; ++x) {
        const uint32_t p = rgba[static_cast<size_t>(y) * w + x];
        o[3 * x] = static_cast<uint8_t>(TIFFGetR(p));
        o[3 * x + 1] = static_cast<uint8_t>(TIFFGetG(p));
        o[3 * x + 2] = static_cast<uint8_t>(TIFFGetB(p));
      }
    }
    return Status::OK();
  }
  int colour = 0;  // samples before the extras
  switch (photo) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK:
      colour = 1;
      if (!(bps == 1 || bps == 2 || bps == 4 || bps == 8 || bps == 16)) colour = 0;
      if (spp > 1 && bps != 8) colour = 0;  // Pillow reads only 8-bit LA
      break;
    case PHOTOMETRIC_PALETTE:
      colour = (bps == 1 || bps == 2 || bps == 4 || bps == 8) && (spp == 1 || bps == 8) ? 1 : 0;
      break;
    case PHOTOMETRIC_RGB:
      colour = (bps == 8 || bps == 16) && spp >= 3 ? 3 : 0;
      break;
    case PHOTOMETRIC_SEPARATED:
      colour = bps == 8 && spp >= 4 ? 4 : 0;
      break;
    case PHOTOMETRIC_YCBCR:  // JPEG: libjpeg converts to RGB
      if (bps == 8 && spp == 3) {
        TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
        colour = 3;
      }
      break;
    default:
      break;
  }
  if (colour == 0 || spp > colour + 3) {
    return UnimplementedError("TIFF: layout not supported (" + layout + ")");
  }
  const bool separate = planar == PLANARCONFIG_SEPARATE && spp > 1;
  const bool premultiplied = colour == 3 && spp > 3 && first_extra == EXTRASAMPLE_ASSOCALPHA;

  // The decoded samples come a row (strips) or a tile at a time: for
  // contiguous data one plane of `spp` samples per pixel, for separate data
  // `spp` planes of one sample per pixel, read plane after plane and folded
  // into the RGB image (below). Nothing but the image, one row and one tile
  // is ever held.
  const int planes = separate ? spp : 1;
  const int per_pixel = separate ? 1 : spp;
  const size_t row_bytes = (static_cast<size_t>(w) * per_pixel * bps + 7) / 8;
  if (static_cast<uint64_t>(TIFFScanlineSize64(tif)) != row_bytes) {
    return t.Error("unexpected scanline size " + std::to_string(TIFFScanlineSize64(tif)) +
                   " for " + layout);
  }
  // The planes that give the pixels: grey and palette need the first only
  // (alpha is dropped), CMYK all four, RGB three (four to divide out an
  // associated alpha). The others are decoded too (damage there is an error
  // as anywhere) but not used.
  const int used_planes = !separate ? 1 : (colour == 4 ? 4 : (premultiplied ? 4 : colour));
  uint32_t tw = 0, th = 0;
  const bool tiled = TIFFIsTiled(tif) != 0;
  STOKER_RETURN_IF_ERROR(CheckDecodedHold(t, size, compression, row_bytes,
                                          static_cast<uint64_t>(row_bytes) * h * planes, w64,
                                          h64, max_pixels, &tw, &th));

  // Sample s (contiguous) of pixel x of a decoded row, as the value of its
  // `bps` bits; for separate data s is 0 (the row is one plane's).
  auto sample = [&](const uint8_t* row, int x, int s) -> uint32_t {
    const size_t i = static_cast<size_t>(x) * per_pixel + s;
    switch (bps) {
      case 8: return row[i];
      case 16: {
        uint16_t v;
        std::memcpy(&v, row + 2 * i, 2);  // libtiff gives native byte order
        return v;
      }
      default: {
        const size_t bit = i * bps;
        return (row[bit / 8] >> (8 - bps - bit % 8)) & ((1u << bps) - 1);
      }
    }
  };

  uint8_t pal[256][3];
  if (photo == PHOTOMETRIC_PALETTE) {
    uint16_t *r = nullptr, *g = nullptr, *b = nullptr;
    if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r, &g, &b)) return t.Error("palette without map");
    const int n = 1 << bps;
    for (int i = 0; i < 256; ++i) {
      pal[i][0] = i < n ? static_cast<uint8_t>(r[i] >> 8) : 0;
      pal[i][1] = i < n ? static_cast<uint8_t>(g[i] >> 8) : 0;
      pal[i][2] = i < n ? static_cast<uint8_t>(b[i] >> 8) : 0;
    }
  }

  const bool white = photo == PHOTOMETRIC_MINISWHITE;
  const int shift = bps == 16 ? 8 : 0;
  // Converts pixels [x0, x1) of a decoded row (`in`, whose pixel 0 is image
  // column `in_x`) into the same pixels of RGB row `o`. Contiguous data
  // (plane -1) gives the pixel at once; plane p of separate data stores its
  // channel (grey and palette: plane 0 gives all three), and the last plane
  // of CMYK (K) or associated-alpha RGB (A) then finishes the pixel from the
  // channels stored: the same arithmetic as on a whole pixel.
  auto convert = [&](const uint8_t* in, int in_x, int x0, int x1, int plane, uint8_t* o) {
    for (int x = x0; x < x1; ++x) {
      const int xi = x - in_x;
      uint8_t* px = o + 3 * x;
      if (plane > 0) {  // separate data, a later plane
        const int v = static_cast<int>(sample(in, xi, 0) >> shift);
        if (plane < 3) {
          px[plane] = static_cast<uint8_t>(v);
        } else if (colour == 4) {
          for (int c = 0; c < 3; ++c) px[c] = CmykChannel(px[c], v);
        } else {
          for (int c = 0; c < 3; ++c) {
            px[c] = v == 0 ? 0 : (v == 255 ? px[c] : Clip8(px[c] * 255 / v));
          }
        }
        continue;
      }
      uint8_t r, g, b;
      if (colour == 1 && photo != PHOTOMETRIC_PALETTE) {
        const uint32_t v = sample(in, xi, 0);
        int l;
        if (bps == 16) {
          l = v > 255 ? 255 : static_cast<int>(v);  // Pillow's I;16 -> RGB clips
        } else {
          l = static_cast<int>(v * (255 / ((1u << bps) - 1)));
          if (white) l = 255 - l;
        }
        r = g = b = static_cast<uint8_t>(l);
      } else if (colour == 1) {
        const uint8_t* c = pal[sample(in, xi, 0) & 0xFF];
        r = c[0];
        g = c[1];
        b = c[2];
      } else if (plane == 0) {  // separate RGB or CMYK: the first channel
        px[0] = static_cast<uint8_t>(sample(in, xi, 0) >> shift);
        continue;
      } else if (colour == 4) {
        const int k = static_cast<int>(sample(in, xi, 3));
        r = CmykChannel(static_cast<int>(sample(in, xi, 0)), k);
        g = CmykChannel(static_cast<int>(sample(in, xi, 1)), k);
        b = CmykChannel(static_cast<int>(sample(in, xi, 2)), k);
      } else {
        int c[3];
        for (int s = 0; s < 3; ++s) c[s] = static_cast<int>(sample(in, xi, s) >> shift);
        if (premultiplied) {
          const int a = static_cast<int>(sample(in, xi, 3) >> shift);
          for (int s = 0; s < 3; ++s) c[s] = a == 0 ? 0 : (a == 255 ? c[s] : Clip8(c[s] * 255 / a));
        }
        r = static_cast<uint8_t>(c[0]);
        g = static_cast<uint8_t>(c[1]);
        b = static_cast<uint8_t>(c[2]);
      }
      px[0] = r;
      px[1] = g;
      px[2] = b;
    }
  };

  out->Resize(w, h);
  if (tiled) {
    const tmsize_t tile_size = TIFFTileSize(tif);
    const size_t tile_row = (static_cast<size_t>(tw) * per_pixel * bps + 7) / 8;
    if (tile_size <= 0 || static_cast<size_t>(tile_size) < tile_row * th) {
      return t.Error("bad tile size");
    }
    std::vector<uint8_t> tile(static_cast<size_t>(tile_size));
    for (int p = 0; p < planes; ++p) {
      for (uint32_t ty = 0; ty < static_cast<uint32_t>(h); ty += th) {
        for (uint32_t tx = 0; tx < static_cast<uint32_t>(w); tx += tw) {
          const ttile_t index = TIFFComputeTile(tif, tx, ty, 0, static_cast<uint16_t>(p));
          if (TIFFReadEncodedTile(tif, index, tile.data(), tile_size) < 0) {
            return t.Error("cannot decode tile " + std::to_string(index));
          }
          // Tiles start on whole bytes only when bits per tile row are whole
          // bytes; sub-byte samples in such tiles are not supported.
          if ((static_cast<size_t>(tx) * per_pixel * bps) % 8 != 0) {
            return UnimplementedError("TIFF: tiles of sub-byte samples");
          }
          const int x1 = static_cast<int>(std::min<uint32_t>(tx + tw, static_cast<uint32_t>(w)));
          const uint32_t rows = std::min<uint32_t>(th, static_cast<uint32_t>(h) - ty);
          for (uint32_t r = 0; r < rows && p < used_planes; ++r) {
            convert(tile.data() + r * tile_row, static_cast<int>(tx), static_cast<int>(tx), x1,
                    separate ? p : -1, out->row(static_cast<int>(ty + r)));
          }
        }
      }
    }
    return Status::OK();
  }
  // Strips, a row at a time: libtiff decodes each strip's rows in order
  // (reading the compressed strip from the file's bytes in place), so a
  // single-strip image never needs a buffer of its whole raw data.
  std::vector<uint8_t> row(row_bytes + 8);
  for (int p = 0; p < planes; ++p) {
    for (int y = 0; y < h; ++y) {
      if (TIFFReadScanline(tif, row.data(), static_cast<uint32_t>(y),
                           static_cast<uint16_t>(p)) < 0) {
        const tstrip_t index = TIFFComputeStrip(tif, static_cast<uint32_t>(y),
                                                static_cast<uint16_t>(p));
        return t.Error("cannot decode strip " + std::to_string(index) + " (row " +
                       std::to_string(y) + ")");
      }
      if (p < used_planes) convert(row.data(), 0, 0, w, separate ? p : -1, out->row(y));
    }
  }
  return Status::OK();
}

Status DecodeTiffNative(const uint8_t* data, size_t size, int64_t max_pixels, NativeImage* out,
                        bool* handled) {
  *handled = false;
  Tiff t(data, size, max_pixels);
  int64_t w64 = 0, h64 = 0;
  STOKER_RETURN_IF_ERROR(OpenSizeWithin(t, max_pixels, &w64, &h64));
  TIFF* tif = t.get();
  const int w = static_cast<int>(w64), h = static_cast<int>(h64);
  SampleLayout sl;
  if (!ReadSampleLayout(tif, &sl)) return Status::OK();  // DecodeTiff says why
  const uint16_t photo = sl.photo, bps = sl.bps, spp = sl.spp, planar = sl.planar, fmt = sl.fmt;
  const uint16_t compression = sl.compression;
  const int colour = photo == PHOTOMETRIC_MINISBLACK ? 1 : (photo == PHOTOMETRIC_RGB ? 3 : 0);
  if (fmt != SAMPLEFORMAT_UINT || colour == 0 || (bps != 8 && bps != 16) || spp < colour ||
      spp > colour + 1) {
    return Status::OK();  // DecodeTiff's RGB, or its error
  }
  if (planar == PLANARCONFIG_SEPARATE && spp > 1) {
    return UnimplementedError("TIFF: native decode of samples in separate planes (" +
                              std::to_string(spp) + " x " + std::to_string(bps) + "-bit)");
  }
  const size_t row_bytes = static_cast<size_t>(w) * spp * (bps / 8);
  if (static_cast<uint64_t>(TIFFScanlineSize64(tif)) != row_bytes) {
    return t.Error("unexpected scanline size " + std::to_string(TIFFScanlineSize64(tif)));
  }
  uint32_t tw = 0, th = 0;
  const bool tiled = TIFFIsTiled(tif) != 0;
  STOKER_RETURN_IF_ERROR(CheckDecodedHold(t, size, compression, row_bytes,
                                          static_cast<uint64_t>(row_bytes) * h, w64, h64,
                                          max_pixels, &tw, &th));
  *handled = true;
  out->Resize(w, h, spp, bps / 8);
  if (tiled) {
    const tmsize_t tile_size = TIFFTileSize(tif);
    const size_t tile_row = static_cast<size_t>(tw) * spp * (bps / 8);
    if (tile_size <= 0 || static_cast<size_t>(tile_size) < tile_row * th) {
      return t.Error("bad tile size");
    }
    std::vector<uint8_t> tile(static_cast<size_t>(tile_size));
    const size_t pixel = static_cast<size_t>(spp) * (bps / 8);
    for (uint32_t ty = 0; ty < static_cast<uint32_t>(h); ty += th) {
      for (uint32_t tx = 0; tx < static_cast<uint32_t>(w); tx += tw) {
        const ttile_t index = TIFFComputeTile(tif, tx, ty, 0, 0);
        if (TIFFReadEncodedTile(tif, index, tile.data(), tile_size) < 0) {
          return t.Error("cannot decode tile " + std::to_string(index));
        }
        const uint32_t cols = std::min<uint32_t>(tw, static_cast<uint32_t>(w) - tx);
        const uint32_t rows = std::min<uint32_t>(th, static_cast<uint32_t>(h) - ty);
        for (uint32_t r = 0; r < rows; ++r) {
          std::memcpy(out->row(static_cast<int>(ty + r)) + tx * pixel, tile.data() + r * tile_row,
                      cols * pixel);
        }
      }
    }
    return Status::OK();
  }
  for (int y = 0; y < h; ++y) {  // libtiff gives samples in the host's byte order
    if (TIFFReadScanline(tif, out->row(y), static_cast<uint32_t>(y), 0) < 0) {
      const tstrip_t index = TIFFComputeStrip(tif, static_cast<uint32_t>(y), 0);
      return t.Error("cannot decode strip " + std::to_string(index) + " (row " +
                     std::to_string(y) + ")");
    }
  }
  return Status::OK();
}

}  // namespace stoker::codec_internal
