// Copyright 2026 The stoker Authors.
#include "codec/png_rows.h"

#include <zlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace stoker {
namespace {

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The PNG's chunks from the signature on, handing out the IDAT data: the
// first IDAT wherever it is, then only the chunks straight after it (a
// non-IDAT chunk ends the image data, as in libpng).
class IdatReader {
 public:
  IdatReader(const uint8_t* data, size_t size) : data_(data), size_(size), pos_(8) {}

  // The next IDAT chunk's data, its CRC checked. False with *status OK when
  // the image data has ended.
  bool Next(const uint8_t** chunk, size_t* len, Status* status) {
    *status = Status::OK();
    while (pos_ + 12 <= size_) {
      const uint32_t n = BigEndian32(data_ + pos_);
      const uint8_t* type = data_ + pos_ + 4;
      if (n > size_ - pos_ - 12) {
        *status = DataLossError("PNG: chunk declares " + std::to_string(n) +
                                " bytes past the end of the file");
        return false;
      }
      const bool idat = std::memcmp(type, "IDAT", 4) == 0;
      if (!idat && seen_idat_) return false;
      const size_t at = pos_;
      pos_ += 12 + static_cast<size_t>(n);
      if (!idat) continue;
      seen_idat_ = true;
      const uLong crc = crc32(crc32(0L, Z_NULL, 0), type, static_cast<uInt>(4 + n));
      if (crc != BigEndian32(data_ + at + 8 + n)) {
        *status = DataLossError("PNG: IDAT: CRC error");
        return false;
      }
      *chunk = data_ + at + 8;
      *len = n;
      return true;
    }
    return false;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_;
  bool seen_idat_ = false;
};

// The predictor when the bytes above differ (b != c); with b == c it is a.
inline int PaethOfUnequalAbove(int a, int b, int c) {
  const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// True when in[0, 16) are all 0 and prev[-1, 16) all equal.
inline bool FlatAboveAndZero16(const uint8_t* in, const uint8_t* prev) {
#if defined(__SSE2__)
  const __m128i above = _mm_loadu_si128(reinterpret_cast<const __m128i*>(prev));
  const __m128i above_left = _mm_loadu_si128(reinterpret_cast<const __m128i*>(prev - 1));
  const __m128i f = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  const __m128i same = _mm_and_si128(_mm_cmpeq_epi8(above, above_left),
                                     _mm_cmpeq_epi8(f, _mm_setzero_si128()));
  return _mm_movemask_epi8(same) == 0xFFFF;
#else
  for (int k = 0; k < 16; ++k) {
    if (in[k] != 0 || prev[k] != prev[k - 1]) return false;
  }
  return true;
#endif
}

}  // namespace

void UnfilterBytePixelRow(int filter, const uint8_t* __restrict in,
                          const uint8_t* __restrict prev, uint8_t* __restrict out, size_t n) {
  if (n == 0) return;
  switch (filter) {
    case 0:
      std::memcpy(out, in, n);
      return;
    case 1: {
      uint8_t left = 0;
      for (size_t i = 0; i < n; ++i) out[i] = left = static_cast<uint8_t>(in[i] + left);
      return;
    }
    case 2:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(in[i] + prev[i]);
      return;
    case 3: {
      int left = 0;
      for (size_t i = 0; i < n; ++i) {
        left = static_cast<uint8_t>(in[i] + ((left + prev[i]) >> 1));
        out[i] = static_cast<uint8_t>(left);
      }
      return;
    }
    default: {
      // Where the row above is flat (b == c) the predictor is the left
      // byte: that test reads only the row above, so it stays out of the
      // chain from one byte to the next, which is then one add. And where,
      // in addition, the filtered bytes are 0 (a flat area of a label map),
      // 16 bytes at a time are the left byte repeated.
      int left = 0, upleft = 0;
      for (size_t i = 0; i < n;) {
        if (i > 0 && i + 16 <= n && FlatAboveAndZero16(in + i, prev + i)) {
          std::memset(out + i, left, 16);
          i += 16;
          upleft = prev[i - 1];
          continue;
        }
        for (const size_t stop = std::min(n, i + 16); i < stop; ++i) {
          const int up = prev[i];
          const int pred = up == upleft ? left : PaethOfUnequalAbove(left, up, upleft);
          left = static_cast<uint8_t>(in[i] + pred);
          out[i] = static_cast<uint8_t>(left);
          upleft = up;
        }
      }
      return;
    }
  }
}

Status DecodeBytePixelPngRows(const uint8_t* data, size_t size, int width, int height, int begin,
                              int end, uint8_t* out, size_t stride,
                              std::vector<uint8_t>* scratch) {
  if (width <= 0 || height <= 0 || begin < 0 || begin > end || end > height) {
    return InvalidArgumentError("DecodeBytePixelPngRows: rows [" + std::to_string(begin) + ", " +
                                std::to_string(end) + ") of a " + std::to_string(width) + "x" +
                                std::to_string(height) + " image");
  }
  const size_t n = static_cast<size_t>(width);
  // Layout: the filtered row (filter byte first), then two unfiltered rows
  // used in turn for the rows that are not kept.
  scratch->assign(3 * n + 1, 0);
  uint8_t* filtered = scratch->data();
  uint8_t* spare[2] = {filtered + n + 1, filtered + 2 * n + 1};
  IdatReader idat(data, size);
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return InternalError("PNG: inflateInit failed");
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end_stream{&zs};
  // A band that stops before the last row never reaches the stream's
  // Adler-32 (after the last row's data): not computed either (it cost as
  // much as the inflate on the label maps), as libpng's PNG_IGNORE_ADLER32.
  if (end < height) inflateValidate(&zs, 0);

  // Inflates exactly `want` bytes into `to`. False when it could not:
  // `status` says why, except at the stream's end while `checking`. The
  // stream may end with the last byte wanted.
  Status status;
  bool stream_ended = false;
  auto inflate_into = [&](uint8_t* to, size_t want, bool checking) -> bool {
    zs.next_out = to;
    zs.avail_out = static_cast<uInt>(want);
    while (zs.avail_out > 0) {
      if (zs.avail_in == 0) {
        const uint8_t* chunk = nullptr;
        size_t len = 0;
        if (!idat.Next(&chunk, &len, &status)) {
          if (status.ok()) status = DataLossError("PNG: Not enough image data");
          return false;
        }
        zs.next_in = const_cast<Bytef*>(chunk);
        zs.avail_in = static_cast<uInt>(len);
        continue;
      }
      const int r = inflate(&zs, Z_NO_FLUSH);
      if (r == Z_STREAM_END) {
        stream_ended = true;
        if (zs.avail_out == 0) return true;
        if (!checking) status = DataLossError("PNG: Not enough image data");
        return false;
      }
      if (r != Z_OK && r != Z_BUF_ERROR) {
        status = DataLossError(std::string("PNG: ") + (zs.msg != nullptr ? zs.msg : "zlib error"));
        return false;
      }
    }
    return true;
  };

  const uint8_t* prev = spare[1];  // zeros: the row above the first
  for (int y = 0; y < end; ++y) {
    if (!inflate_into(filtered, n + 1, false)) return status;
    if (filtered[0] > 4) return DataLossError("PNG: bad adaptive filter value");
    // Rows not kept alternate between the spares, so never overwrite `prev`.
    uint8_t* row = y >= begin ? out + static_cast<size_t>(y - begin) * stride : spare[y & 1];
    UnfilterBytePixelRow(filtered[0], filtered + 1, prev, row, n);
    prev = row;
  }
  if (end < height) return Status::OK();
  // Every row read: on to the stream's end and its Adler-32, as libpng does,
  // so that image data cut short or damaged after the last row is an error.
  // Compressed data left over after the rows is not (libpng warns).
  if (stream_ended) return Status::OK();
  uint8_t sink[256];
  if (!inflate_into(sink, sizeof(sink), true) && !stream_ended) return status;
  return Status::OK();
}

}  // namespace stoker
