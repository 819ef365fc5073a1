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

inline uint8_t Clip8(int v) { return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }

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
  STOKER_RETURN_IF_ERROR(OpenSize(t, &w64, &h64));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(w64, h64, max_pixels));
  TIFF* tif = t.get();
  const int w = static_cast<int>(w64), h = static_cast<int>(h64);
  uint16_t photo = 0, bps = 1, spp = 1, planar = PLANARCONFIG_CONTIG, fmt = SAMPLEFORMAT_UINT;
  uint16_t compression = COMPRESSION_NONE;
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photo)) {
    return UnimplementedError("TIFF: no PhotometricInterpretation tag");
  }
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &fmt);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
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

  // The decoded samples: for contiguous data one plane of `spp` samples per
  // pixel, for separate data `spp` planes of one sample per pixel.
  const int planes = separate ? spp : 1;
  const int per_pixel = separate ? 1 : spp;
  const size_t row_bytes = (static_cast<size_t>(w) * per_pixel * bps + 7) / 8;
  if (static_cast<uint64_t>(TIFFScanlineSize64(tif)) != row_bytes) {
    return t.Error("unexpected scanline size " + std::to_string(TIFFScanlineSize64(tif)) +
                   " for " + layout);
  }
  std::vector<uint8_t> raw(row_bytes * h * planes);
  if (TIFFIsTiled(tif)) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0) return t.Error("tile size is zero");
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
          // bytes; sub-byte samples in tiles are not supported.
          if ((static_cast<size_t>(tx) * per_pixel * bps) % 8 != 0) {
            return UnimplementedError("TIFF: tiles of sub-byte samples");
          }
          const size_t x_off = static_cast<size_t>(tx) * per_pixel * bps / 8;
          const size_t copy = std::min(tile_row, row_bytes - x_off);
          const uint32_t rows = std::min<uint32_t>(th, static_cast<uint32_t>(h) - ty);
          for (uint32_t r = 0; r < rows; ++r) {
            std::memcpy(raw.data() + (static_cast<size_t>(p) * h + ty + r) * row_bytes + x_off,
                        tile.data() + r * tile_row, copy);
          }
        }
      }
    }
  } else {
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > static_cast<uint32_t>(h)) rps = static_cast<uint32_t>(h);
    for (int p = 0; p < planes; ++p) {
      for (uint32_t y = 0; y < static_cast<uint32_t>(h); y += rps) {
        const tstrip_t index = TIFFComputeStrip(tif, y, static_cast<uint16_t>(p));
        const uint32_t rows = std::min<uint32_t>(rps, static_cast<uint32_t>(h) - y);
        uint8_t* dst = raw.data() + (static_cast<size_t>(p) * h + y) * row_bytes;
        const tmsize_t want = static_cast<tmsize_t>(rows * row_bytes);
        const tmsize_t got = TIFFReadEncodedStrip(tif, index, dst, want);
        if (got < 0) return t.Error("cannot decode strip " + std::to_string(index));
        if (got < want) {
          return t.Error("strip " + std::to_string(index) + " holds " + std::to_string(got) +
                         " of " + std::to_string(want) + " bytes");
        }
      }
    }
  }

  // Sample s of pixel x in row y, as the value of its `bps` bits.
  const size_t plane_bytes = row_bytes * h;
  auto sample = [&](int y, int x, int s) -> uint32_t {
    const uint8_t* row = raw.data() + (separate ? s * plane_bytes : 0) + y * row_bytes;
    const size_t i = separate ? static_cast<size_t>(x) : static_cast<size_t>(x) * spp + s;
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

  out->Resize(w, h);
  const bool white = photo == PHOTOMETRIC_MINISWHITE;
  for (int y = 0; y < h; ++y) {
    uint8_t* o = out->row(y);
    for (int x = 0; x < w; ++x) {
      uint8_t r, g, b;
      if (colour == 1 && photo != PHOTOMETRIC_PALETTE) {
        const uint32_t v = sample(y, x, 0);
        int l;
        if (bps == 16) {
          l = v > 255 ? 255 : static_cast<int>(v);  // Pillow's I;16 -> RGB clips
        } else {
          l = static_cast<int>(v * (255 / ((1u << bps) - 1)));
          if (white) l = 255 - l;
        }
        r = g = b = static_cast<uint8_t>(l);
      } else if (colour == 1) {
        const uint8_t* c = pal[sample(y, x, 0) & 0xFF];
        r = c[0];
        g = c[1];
        b = c[2];
      } else if (colour == 4) {
        const int k = static_cast<int>(sample(y, x, 3));
        r = CmykChannel(static_cast<int>(sample(y, x, 0)), k);
        g = CmykChannel(static_cast<int>(sample(y, x, 1)), k);
        b = CmykChannel(static_cast<int>(sample(y, x, 2)), k);
      } else {
        const int shift = bps == 16 ? 8 : 0;
        int c[3];
        for (int s = 0; s < 3; ++s) c[s] = static_cast<int>(sample(y, x, s) >> shift);
        if (premultiplied) {
          const int a = static_cast<int>(sample(y, x, 3) >> shift);
          for (int s = 0; s < 3; ++s) c[s] = a == 0 ? 0 : (a == 255 ? c[s] : Clip8(c[s] * 255 / a));
        }
        r = static_cast<uint8_t>(c[0]);
        g = static_cast<uint8_t>(c[1]);
        b = static_cast<uint8_t>(c[2]);
      }
      o[3 * x] = r;
      o[3 * x + 1] = g;
      o[3 * x + 2] = b;
    }
  }
  return Status::OK();
}

}  // namespace stoker::codec_internal
