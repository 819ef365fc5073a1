// Copyright 2026 The stoker Authors.
//
// BMP, read as Pillow 9.4's BmpImagePlugin reads it, so that convert("RGB")
// gives the same pixels:
//  - headers: OS/2 v1 (12 bytes), Windows v3 (40), OS/2 v2 (64), v4 (108),
//    v5 (124); bottom-up or top-down (negative height);
//  - 1, 4 and 8 bits per pixel through the palette (BGR or BGRX entries; an
//    index past the palette gives grey (i, i, i), Pillow's palette ramp),
//    uncompressed or RLE8/RLE4 (Pillow's decoding of the RLE stream);
//  - 16 bits: 5-5-5 (or 5-6-5 with BITFIELDS), each channel c * 255 / max
//    truncated; 24 bits BGR; 32 bits BGRX, or the BITFIELDS layouts Pillow
//    knows; alpha is dropped;
//  - the raster starts at the file header's offset (Pillow's fix-up for an
//    offset that points at the palette included).
// Other depths, bitfield layouts and compressions (JPEG, PNG) are
// Unimplemented; a truncated raster or RLE stream is DataLoss.
// Our own parser: no Debian library decodes BMP on its own.
#include <algorithm>
#include <cstring>
#include <string>

#include "codec/formats.h"

namespace stoker::codec_internal {
namespace {

uint32_t U32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint32_t U16(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }

struct BmpHeader {
  uint32_t header_size = 0;
  int64_t width = 0, height = 0;
  bool top_down = false;
  int bits = 0;
  uint32_t compression = 0;  // 0 raw, 1 RLE8, 2 RLE4, 3 bitfields
  uint32_t masks[4] = {0, 0, 0, 0};
  int64_t colors = 0;
  int palette_entry = 4;  // bytes per palette entry
  size_t palette_at = 0;
  size_t raster = 0;
};

Status Truncated(const char* what) {
  return DataLossError(std::string("BMP: file is truncated in the ") + what);
}

Status ParseHeader(const uint8_t* d, size_t size, BmpHeader* h) {
  if (!IsBmp(d, size)) return InvalidArgumentError("not a BMP image");
  if (size < 18) return Truncated("header");
  size_t offset = U32(d + 10);
  h->header_size = U32(d + 14);
  const uint32_t hs = h->header_size;
  if (hs != 12 && hs != 40 && hs != 64 && hs != 108 && hs != 124) {
    return UnimplementedError("BMP: unsupported header size " + std::to_string(hs));
  }
  if (size < 14 + static_cast<size_t>(hs)) return Truncated("header");
  const uint8_t* p = d + 18;  // the header after its size field
  size_t pos = 14 + hs;
  if (hs == 12) {
    h->width = U16(p);
    h->height = U16(p + 2);
    h->bits = static_cast<int>(U16(p + 6));
    h->palette_entry = 3;
  } else {
    h->width = U32(p);
    const uint32_t raw_h = U32(p + 4);
    h->top_down = p[7] == 0xFF;
    h->height = h->top_down ? int64_t{1} << 32 : 0;
    h->height = h->top_down ? h->height - raw_h : raw_h;
    h->bits = static_cast<int>(U16(p + 10));
    h->compression = U32(p + 12);
    h->colors = U32(p + 28);
    if (h->compression == 3) {
      if (hs >= 56) {
        for (int i = 0; i < 4; ++i) h->masks[i] = U32(p + 36 + 4 * i);
      } else {
        if (size < pos + 12) return Truncated("bit masks");
        for (int i = 0; i < 3; ++i) h->masks[i] = U32(d + pos + 4 * i);
        pos += 12;
      }
    }
  }
  if (h->colors == 0) h->colors = h->bits < 32 ? int64_t{1} << h->bits : 0;
  if (offset == 14 + hs && h->bits <= 8 && h->colors > 0 && h->colors <= 65536) {
    offset += static_cast<size_t>(4 * h->colors);
  }
  h->palette_at = pos;
  h->raster = offset != 0 ? offset : pos;
  const int b = h->bits;
  if (b != 1 && b != 4 && b != 8 && b != 16 && b != 24 && b != 32) {
    return UnimplementedError("BMP: unsupported pixel depth " + std::to_string(b));
  }
  const uint32_t c = h->compression;
  if (c == 3) {
    const uint32_t* m = h->masks;
    auto is = [&](uint32_t r, uint32_t g, uint32_t bl, uint32_t a) {
      return m[0] == r && m[1] == g && m[2] == bl && m[3] == a;
    };
    bool ok = false;
    if (b == 32) {
      ok = is(0xFF0000, 0xFF00, 0xFF, 0) || is(0xFF000000, 0xFF0000, 0xFF00, 0) ||
           is(0xFF000000, 0xFF0000, 0xFF00, 0xFF) || is(0xFF, 0xFF00, 0xFF0000, 0xFF000000) ||
           is(0xFF0000, 0xFF00, 0xFF, 0xFF000000) || is(0, 0, 0, 0);
      if (is(0, 0, 0, 0)) {  // Pillow reads it as BGRA
        h->masks[0] = 0xFF0000;
        h->masks[1] = 0xFF00;
        h->masks[2] = 0xFF;
      }
    } else if (b == 24) {
      ok = m[0] == 0xFF0000 && m[1] == 0xFF00 && m[2] == 0xFF;
    } else if (b == 16) {
      ok = (m[0] == 0xF800 && m[1] == 0x7E0 && m[2] == 0x1F) ||
           (m[0] == 0x7C00 && m[1] == 0x3E0 && m[2] == 0x1F);
    }
    if (!ok) return UnimplementedError("BMP: unsupported bitfields layout");
  } else if (c == 0) {
    if (b == 16) {
      h->masks[0] = 0x7C00;
      h->masks[1] = 0x3E0;
      h->masks[2] = 0x1F;
    } else if (b == 24 || b == 32) {
      h->masks[0] = 0xFF0000;
      h->masks[1] = 0xFF00;
      h->masks[2] = 0xFF;
    }
  } else if (c != 1 && c != 2) {
    return UnimplementedError("BMP: unsupported compression " + std::to_string(c));
  }
  if (b <= 8 && (h->colors <= 0 || h->colors > 65536)) {
    return DataLossError("BMP: palette size " + std::to_string(h->colors) + " is outside 1..65536");
  }
  if ((c == 1 || c == 2) && b > 8) {
    return UnimplementedError("BMP: RLE compression with " + std::to_string(b) + " bits");
  }
  return Status::OK();
}

int Shift(uint32_t mask) {
  int s = 0;
  while (mask != 0 && (mask & 1) == 0) {
    mask >>= 1;
    ++s;
  }
  return s;
}

// Pillow's RLE8/RLE4 decoding: the stream fills a linear buffer of palette
// indices in file row order (bottom-up unless top-down); end of line and
// delta pad it with index 0; short data is an error. Walks the commands and
// hands each run to `sink` at its linear position `at`:
//   sink.Run(at, n, hi, lo): n indices alternating hi, lo (hi == lo for RLE8);
//   sink.Literal(at, src, n): n bytes of indices (RLE4: two per byte, high
//   nibble first).
// Padding is a jump of the position. Returns the number of indices the
// stream gives (at most `total` plus one command's worth); reads only
// d[pos, size). Cost: one step per command, plus the sink's.
template <typename Sink>
size_t WalkRle(const uint8_t* d, size_t size, size_t pos, size_t xs, size_t total, bool rle4,
               Sink* sink) {
  size_t at = 0;  // indices so far
  size_t x = 0;   // column as Pillow tracks it
  while (at < total) {
    if (pos + 2 > size) break;
    size_t n = d[pos];
    const uint8_t byte = d[pos + 1];
    pos += 2;
    if (n != 0) {  // encoded run
      if (x + n > xs) n = x < xs ? xs - x : 0;
      if (rle4) {
        sink->Run(at, n, static_cast<uint8_t>(byte >> 4), static_cast<uint8_t>(byte & 0x0F));
      } else {
        sink->Run(at, n, byte, byte);
      }
      at += n;
      x += n;
    } else if (byte == 0) {  // end of line
      at = (at + xs - 1) / xs * xs;
      x = 0;
    } else if (byte == 1) {  // end of bitmap
      break;
    } else if (byte == 2) {  // delta
      if (pos + 2 > size) break;
      const size_t right = d[pos], up = d[pos + 1];
      pos += 2;
      const size_t add = right + up * xs;
      at = add > total - std::min(total, at) ? total : at + add;
      x = at % xs;
    } else {  // absolute run
      const size_t count = rle4 ? byte / 2 : byte;
      const size_t got = std::min(count, size - pos);
      sink->Literal(at, d + pos, got);
      at += rle4 ? 2 * got : got;
      pos += got;
      if (got < count) break;
      x += byte;
      if (pos % 2 != 0) ++pos;  // runs are word-aligned in the file
    }
  }
  return at;
}

// Counts only (the first pass: nothing is allocated before the stream is
// known to describe every pixel).
struct RleCounter {
  void Run(size_t, size_t, uint8_t, uint8_t) {}
  void Literal(size_t, const uint8_t*, size_t) {}
};

// Writes the indices' colours into the image, whose every pixel already holds
// index 0's colour (the padding).
class RleWriter {
 public:
  RleWriter(const uint8_t (*pal)[3], size_t xs, size_t total, bool top_down, bool rle4,
            RgbImage* out)
      : pal_(pal), xs_(xs), total_(total), top_down_(top_down), rle4_(rle4), out_(out) {}
  void Run(size_t at, size_t n, uint8_t hi, uint8_t lo) {
    for (size_t i = 0; i < n; ++i) Put(at + i, i % 2 == 0 ? hi : lo);
  }
  void Literal(size_t at, const uint8_t* src, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (rle4_) {
        Put(at + 2 * i, static_cast<uint8_t>(src[i] >> 4));
        Put(at + 2 * i + 1, static_cast<uint8_t>(src[i] & 0x0F));
      } else {
        Put(at + i, src[i]);
      }
    }
  }

 private:
  void Put(size_t at, uint8_t index) {
    if (at >= total_) return;  // a command's tail past the last pixel
    const size_t r = at / xs_;
    const int row = static_cast<int>(top_down_ ? r : total_ / xs_ - 1 - r);
    uint8_t* o = out_->row(row) + (at % xs_) * 3;
    o[0] = pal_[index][0];
    o[1] = pal_[index][1];
    o[2] = pal_[index][2];
  }
  const uint8_t (*pal_)[3];
  size_t xs_, total_;
  bool top_down_, rle4_;
  RgbImage* out_;
};

}  // namespace

bool IsBmp(const uint8_t* data, size_t size) {
  return size >= 2 && data[0] == 'B' && data[1] == 'M';
}

Status BmpInfo(const uint8_t* data, size_t size, int* width, int* height) {
  BmpHeader h;
  STOKER_RETURN_IF_ERROR(ParseHeader(data, size, &h));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(h.width, h.height, 0));
  *width = static_cast<int>(h.width);
  *height = static_cast<int>(h.height);
  return Status::OK();
}

Status DecodeBmp(const uint8_t* d, size_t size, int64_t max_pixels, RgbImage* out) {
  BmpHeader h;
  STOKER_RETURN_IF_ERROR(ParseHeader(d, size, &h));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(h.width, h.height, max_pixels));
  const int w = static_cast<int>(h.width), ht = static_cast<int>(h.height);

  // Palette: Pillow's ramp (i, i, i) past the entries the file holds.
  uint8_t pal[256][3];
  if (h.bits <= 8) {
    const int64_t n = std::min<int64_t>(h.colors, 256);
    if (h.palette_at + static_cast<size_t>(h.colors) * h.palette_entry > size) {
      return Truncated("palette");
    }
    for (int i = 0; i < 256; ++i) {
      if (i < n) {
        const uint8_t* e = d + h.palette_at + static_cast<size_t>(i) * h.palette_entry;
        pal[i][0] = e[2];
        pal[i][1] = e[1];
        pal[i][2] = e[0];
      } else {
        pal[i][0] = pal[i][1] = pal[i][2] = static_cast<uint8_t>(i);
      }
    }
  }
  if (h.raster > size) return Truncated("raster");

  if (h.compression == 1 || h.compression == 2) {
    // Two passes: the first counts the pixels the stream describes (a few
    // delta commands can describe any size, which is valid), so a short
    // stream fails before the image is allocated; the second writes them
    // over an image filled with index 0's colour. Memory: the image only;
    // time: the fill plus one step per command.
    const bool rle4 = h.compression == 2;
    const size_t xs = static_cast<size_t>(w), total = xs * static_cast<size_t>(ht);
    RleCounter counter;
    const size_t got = WalkRle(d, size, h.raster, xs, total, rle4, &counter);
    if (got < total) {
      return DataLossError("BMP: RLE data gives " + std::to_string(got) + " of " +
                           std::to_string(total) + " pixels");
    }
    out->Resize(w, ht);
    uint8_t* first = out->row(0);
    for (int x = 0; x < w; ++x) std::memcpy(first + 3 * x, pal[0], 3);
    for (int r = 1; r < ht; ++r) std::memcpy(out->row(r), first, xs * 3);
    RleWriter writer(pal, xs, total, h.top_down, rle4, out);
    WalkRle(d, size, h.raster, xs, total, rle4, &writer);
    return Status::OK();
  }

  const size_t stride = ((static_cast<size_t>(w) * h.bits + 31) >> 3) & ~size_t{3};
  const size_t avail = size - h.raster;
  if (avail / stride < static_cast<size_t>(ht)) {
    return DataLossError("BMP: raster is truncated (" + std::to_string(avail) + " of " +
                         std::to_string(stride * ht) + " bytes)");
  }
  out->Resize(w, ht);
  const int bytes = h.bits / 8;
  const int rs = Shift(h.masks[0]), gs = Shift(h.masks[1]), bs = Shift(h.masks[2]);
  const uint32_t rm = h.masks[0] >> rs, gm = h.masks[1] >> gs, bm = h.masks[2] >> bs;
  for (int r = 0; r < ht; ++r) {
    const uint8_t* in = d + h.raster + static_cast<size_t>(r) * stride;
    uint8_t* o = out->row(h.top_down ? r : ht - 1 - r);
    if (h.bits <= 8) {
      const int per = 8 / h.bits;
      const int mask = (1 << h.bits) - 1;
      for (int x = 0; x < w; ++x) {
        const int i = (in[x / per] >> (8 - h.bits * (x % per + 1))) & mask;
        o[3 * x] = pal[i][0];
        o[3 * x + 1] = pal[i][1];
        o[3 * x + 2] = pal[i][2];
      }
    } else if (h.bits == 16) {
      for (int x = 0; x < w; ++x) {
        const uint32_t v = U16(in + 2 * x);
        o[3 * x] = static_cast<uint8_t>(((v >> rs) & rm) * 255 / rm);
        o[3 * x + 1] = static_cast<uint8_t>(((v >> gs) & gm) * 255 / gm);
        o[3 * x + 2] = static_cast<uint8_t>(((v >> bs) & bm) * 255 / bm);
      }
    } else {
      for (int x = 0; x < w; ++x) {
        const uint8_t* q = in + bytes * x;
        const uint32_t v = bytes == 4 ? U32(q) : (uint32_t{q[0]} | (uint32_t{q[1]} << 8) |
                                                  (uint32_t{q[2]} << 16));
        o[3 * x] = static_cast<uint8_t>(v >> rs);
        o[3 * x + 1] = static_cast<uint8_t>(v >> gs);
        o[3 * x + 2] = static_cast<uint8_t>(v >> bs);
      }
    }
  }
  return Status::OK();
}

}  // namespace stoker::codec_internal
