// Copyright 2026 The stoker Authors.
//
// PNM: P1 (plain PBM), P2 (plain PGM), P3 (plain PPM), P4, P5, P6 (raw), read
// as Pillow 9.4's PpmImagePlugin reads them, so that convert("RGB") gives the
// same pixels:
//  - header: magic, width, height and (except for PBM) maxval in 1..65535,
//    tokens of at most 10 characters separated by whitespace; '#' starts a
//    comment that runs to the next CR or LF and is cut out (with that CR/LF)
//    of the byte stream; exactly one whitespace byte ends the header;
//  - PBM: 1 is black (0), 0 is white (255); raw rows are padded to a byte;
//  - samples are scaled as round(v / maxval * M) (round half to even, as
//    Python's round) with M = 255, except for greyscale with maxval > 255
//    where Pillow keeps 16-bit mode "I" (M = 65535) and convert("RGB") then
//    clips to 255: a 16-bit PGM keeps min(v, 255), not its high byte;
//  - raw samples above maxval are clipped to the maximum; plain ones are
//    errors, as are truncated rasters. Bytes after the raster are ignored.
// Our own parser: libnetpbm reports errors through a process-wide jump
// buffer and exits by default, which does not fit decoder threads.
#include <cmath>
#include <string>
#include <vector>

#include "codec/formats.h"

namespace stoker::codec_internal {
namespace {

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// A byte stream with '#' comments (to and including the next CR or LF) cut out.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, size_t pos) : d_(data), n_(size), pos_(pos) {}
  // Next byte outside comments; false at the end.
  bool Next(uint8_t* c) {
    while (pos_ < n_) {
      const uint8_t b = d_[pos_++];
      if (b != '#') {
        *c = b;
        return true;
      }
      while (pos_ < n_) {
        const uint8_t e = d_[pos_++];
        if (e == '\r' || e == '\n') break;
      }
    }
    return false;
  }
  // A whitespace-separated token of decimal digits (at most 10), as an
  // integer. `what` names it in errors.
  Status Token(const char* what, int64_t* value) {
    std::string tok;
    uint8_t c;
    while (Next(&c)) {
      if (IsSpace(c)) {
        if (tok.empty()) continue;
        break;
      }
      tok.push_back(static_cast<char>(c));
      if (tok.size() > 10) {
        return DataLossError(std::string("PNM: ") + what + " token is longer than 10 characters");
      }
    }
    if (tok.empty()) return DataLossError(std::string("PNM: data ends before the ") + what);
    int64_t v = 0;
    for (char ch : tok) {
      if (ch < '0' || ch > '9') {
        return DataLossError(std::string("PNM: ") + what + " '" + tok + "' is not a number");
      }
      v = v * 10 + (ch - '0');
    }
    *value = v;
    return Status::OK();
  }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_;
};

struct PnmHeader {
  int kind = 0;  // 1..6
  int64_t width = 0, height = 0, maxval = 1;
  size_t raster = 0;  // offset of the first raster byte
};

Status ParseHeader(const uint8_t* data, size_t size, PnmHeader* h) {
  if (!IsPnm(data, size, &h->kind)) return InvalidArgumentError("not a PNM image");
  Reader r(data, size, 3);
  STOKER_RETURN_IF_ERROR(r.Token("width", &h->width));
  STOKER_RETURN_IF_ERROR(r.Token("height", &h->height));
  if (h->kind != 1 && h->kind != 4) {
    STOKER_RETURN_IF_ERROR(r.Token("maxval", &h->maxval));
    if (h->maxval < 1 || h->maxval > 65535) {
      return DataLossError("PNM: maxval " + std::to_string(h->maxval) +
                           " is outside 1..65535");
    }
  }
  h->raster = r.pos();
  return Status::OK();
}

}  // namespace

bool IsPnm(const uint8_t* data, size_t size, int* kind) {
  if (size < 3 || data[0] != 'P' || data[1] < '1' || data[1] > '6' || !IsSpace(data[2])) {
    return false;
  }
  if (kind != nullptr) *kind = data[1] - '0';
  return true;
}

Status PnmInfo(const uint8_t* data, size_t size, int* width, int* height) {
  PnmHeader h;
  STOKER_RETURN_IF_ERROR(ParseHeader(data, size, &h));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(h.width, h.height, 0));
  *width = static_cast<int>(h.width);
  *height = static_cast<int>(h.height);
  return Status::OK();
}

Status DecodePnm(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out) {
  PnmHeader h;
  STOKER_RETURN_IF_ERROR(ParseHeader(data, size, &h));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(h.width, h.height, max_pixels));
  const int w = static_cast<int>(h.width), ht = static_cast<int>(h.height);
  const bool bits = h.kind == 1 || h.kind == 4;
  const bool grey = h.kind == 2 || h.kind == 5;
  const int bands = (h.kind == 3 || h.kind == 6) ? 3 : 1;
  const size_t samples = static_cast<size_t>(w) * ht * bands;
  const size_t avail = size - h.raster;
  const uint8_t* p = data + h.raster;

  if (h.kind == 4) {
    const size_t row = (static_cast<size_t>(w) + 7) / 8;
    if (avail / row < static_cast<size_t>(ht)) {
      return DataLossError("PNM: raster is truncated (" + std::to_string(avail) + " of " +
                           std::to_string(row * ht) + " bytes)");
    }
    out->Resize(w, ht);
    for (int y = 0; y < ht; ++y) {
      const uint8_t* in = p + y * row;
      uint8_t* o = out->row(y);
      for (int x = 0; x < w; ++x) {
        const uint8_t v = (in[x >> 3] >> (7 - (x & 7))) & 1 ? 0 : 255;
        o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = v;
      }
    }
    return Status::OK();
  }

  // Sample value -> output byte, Pillow's rounding and clipping.
  const int64_t top = h.maxval > 255 ? 65535 : 255;  // largest raw sample
  const double out_max = grey && h.maxval > 255 ? 65535.0 : 255.0;
  std::vector<uint8_t> lut(static_cast<size_t>(top) + 1);
  for (int64_t v = 0; v <= top; ++v) {
    double s = std::nearbyint(static_cast<double>(v) / static_cast<double>(h.maxval) * out_max);
    if (s > out_max) s = out_max;
    lut[static_cast<size_t>(v)] = static_cast<uint8_t>(s > 255 ? 255 : s);
  }
  auto put = [&](size_t i, uint8_t v) {
    const size_t px = i / bands;
    uint8_t* o = out->row(static_cast<int>(px / w)) + (px % w) * 3;
    if (bands == 1) {
      o[0] = o[1] = o[2] = v;
    } else {
      o[i % 3] = v;
    }
  };

  if (h.kind == 5 || h.kind == 6) {
    const size_t bps = h.maxval > 255 ? 2 : 1;
    if (avail / bps < samples) {
      return DataLossError("PNM: raster is truncated (" + std::to_string(avail) + " of " +
                           std::to_string(samples * bps) + " bytes)");
    }
    out->Resize(w, ht);
    if (bps == 1) {
      for (size_t i = 0; i < samples; ++i) put(i, lut[p[i]]);
    } else {
      for (size_t i = 0; i < samples; ++i) put(i, lut[(size_t{p[2 * i]} << 8) | p[2 * i + 1]]);
    }
    return Status::OK();
  }

  // Plain formats: every sample is a token; the reader cuts out comments.
  // A PBM sample takes at least one byte, a PGM/PPM sample at least one digit
  // and one separator: refuse a raster the bytes left cannot hold before
  // allocating the image (a 19-byte header must not cost a full image).
  const uint64_t need = bits ? samples : 2 * static_cast<uint64_t>(samples) - 1;
  STOKER_RETURN_IF_ERROR(CheckFileCanHold("PNM", w, ht, need, avail, "plain raster"));
  Reader r(data, size, h.raster);
  out->Resize(w, ht);
  size_t i = 0;
  uint8_t c;
  if (bits) {
    while (i < samples && r.Next(&c)) {
      if (IsSpace(c)) continue;
      if (c != '0' && c != '1') {
        return DataLossError("PNM: plain PBM holds a byte that is not 0 or 1");
      }
      put(i++, c == '1' ? 0 : 255);
    }
  } else {
    while (i < samples) {
      int64_t v = 0;
      Status s = r.Token("sample", &v);
      if (!s.ok()) {
        if (s.message().find("ends before") != std::string::npos) break;
        return s;
      }
      if (v > h.maxval) {
        return DataLossError("PNM: sample " + std::to_string(v) + " is above maxval " +
                             std::to_string(h.maxval));
      }
      put(i++, lut[static_cast<size_t>(v)]);
    }
  }
  if (i < samples) {
    return DataLossError("PNM: plain raster ends after " + std::to_string(i) + " of " +
                         std::to_string(samples) + " samples");
  }
  return Status::OK();
}

}  // namespace stoker::codec_internal
