// Copyright 2026 The stoker Authors.
#include "testing/hostile_images.h"

#include <webp/decode.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

namespace stoker::testing {
namespace {

void Le16(Bytes* b, uint32_t v) {
  b->push_back(static_cast<uint8_t>(v));
  b->push_back(static_cast<uint8_t>(v >> 8));
}
void Le24(Bytes* b, uint32_t v) {
  Le16(b, v & 0xFFFF);
  b->push_back(static_cast<uint8_t>(v >> 16));
}
void Le32(Bytes* b, uint32_t v) {
  Le16(b, v & 0xFFFF);
  Le16(b, v >> 16);
}
void Be32(Bytes* b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b->push_back(static_cast<uint8_t>(v >> s));
}
void Append(Bytes* b, const Bytes& more) { b->insert(b->end(), more.begin(), more.end()); }
void Append(Bytes* b, const char* tag) { b->insert(b->end(), tag, tag + std::strlen(tag)); }

// A RIFF chunk: tag, little-endian size, payload, pad byte to an even size.
Bytes Chunk(const char* tag, const Bytes& payload) {
  Bytes c;
  Append(&c, tag);
  Le32(&c, static_cast<uint32_t>(payload.size()));
  Append(&c, payload);
  if (payload.size() % 2 != 0) c.push_back(0);
  return c;
}

}  // namespace

Bytes MakeTiff(const TiffSpec& s, const Bytes& data) {
  // (tag, type, values); type 3 SHORT, 4 LONG. Values over 4 bytes go after
  // the IFD.
  using Entry = std::tuple<uint16_t, uint16_t, std::vector<uint32_t>>;
  const bool tiled = s.tile_width > 0;
  const uint32_t kData = 0xFFFFFFFF;  // placeholder: the data's offset
  std::vector<Entry> e = {
      {256, 4, {s.width}},
      {257, 4, {s.height}},
      {258, 3, std::vector<uint32_t>(static_cast<size_t>(s.spp), static_cast<uint32_t>(s.bits))},
      {259, 3, {static_cast<uint32_t>(s.compression)}},
      {262, 3, {static_cast<uint32_t>(s.photometric)}},
      {277, 3, {static_cast<uint32_t>(s.spp)}},
      {284, 3, {1}},
  };
  const uint32_t count = static_cast<uint32_t>(data.size());
  if (tiled) {
    e.push_back({322, 4, {s.tile_width}});
    e.push_back({323, 4, {s.tile_height}});
    e.push_back({324, 4, {kData}});
    e.push_back({325, 4, {count}});
  } else {
    const uint32_t rps = s.rows_per_strip > 0 ? s.rows_per_strip : s.height;
    const size_t strips = (s.height + rps - 1) / rps;
    e.push_back({273, 4, std::vector<uint32_t>(strips, kData)});
    e.push_back({278, 4, {rps}});
    e.push_back({279, 4, std::vector<uint32_t>(strips, count)});
  }
  std::sort(e.begin(), e.end(),
            [](const Entry& a, const Entry& b) { return std::get<0>(a) < std::get<0>(b); });
  const uint32_t ifd = 8;
  const uint32_t extra_at = ifd + 2 + 12 * static_cast<uint32_t>(e.size()) + 4;
  Bytes extra;
  // The out-of-line values come first, then the data.
  uint32_t extra_size = 0;
  for (const Entry& en : e) {
    const uint32_t bytes = (std::get<1>(en) == 3 ? 2 : 4) * std::get<2>(en).size();
    if (bytes > 4) extra_size += bytes;
  }
  const uint32_t data_at = extra_at + extra_size;
  Bytes b = {'I', 'I', 42, 0};
  Le32(&b, ifd);
  Le16(&b, static_cast<uint32_t>(e.size()));
  for (const Entry& en : e) {
    const auto& [tag, type, values] = en;
    Le16(&b, tag);
    Le16(&b, type);
    Le32(&b, static_cast<uint32_t>(values.size()));
    Bytes packed;
    for (uint32_t v : values) {
      if (v == kData) v = data_at;
      if (type == 3) Le16(&packed, v);
      else Le32(&packed, v);
    }
    if (packed.size() <= 4) {
      packed.resize(4, 0);
      Append(&b, packed);
    } else {
      Le32(&b, extra_at + static_cast<uint32_t>(extra.size()));
      Append(&extra, packed);
    }
  }
  Le32(&b, 0);  // no next IFD
  Append(&b, extra);
  Append(&b, data);
  return b;
}

Bytes Deflate(const Bytes& raw) {
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  Bytes out(n);
  if (compress2(out.data(), &n, raw.data(), static_cast<uLong>(raw.size()), 9) != Z_OK) return {};
  out.resize(n);
  return out;
}

Bytes MakeAnimatedWebp(int canvas_w, int canvas_h, const std::vector<Bytes>& stills,
                       const std::vector<int>& x, const std::vector<int>& y) {
  Bytes vp8x = {0x02, 0, 0, 0};  // animation
  bool alpha = false;
  Bytes frames;
  for (size_t i = 0; i < stills.size(); ++i) {
    const Bytes& s = stills[i];
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(s.data(), s.size(), &f) != VP8_STATUS_OK) return {};
    alpha = alpha || f.has_alpha;
    Bytes anmf;
    Le24(&anmf, static_cast<uint32_t>(x[i] / 2));
    Le24(&anmf, static_cast<uint32_t>(y[i] / 2));
    Le24(&anmf, static_cast<uint32_t>(f.width - 1));
    Le24(&anmf, static_cast<uint32_t>(f.height - 1));
    Le24(&anmf, 100);  // duration (ms)
    anmf.push_back(0);  // alpha-blend, no disposal
    // The still's image chunks, after "RIFF" size "WEBP".
    for (size_t pos = 12; pos + 8 <= s.size();) {
      const std::string tag(reinterpret_cast<const char*>(&s[pos]), 4);
      const uint32_t len = s[pos + 4] | (s[pos + 5] << 8) | (s[pos + 6] << 16) |
                           (static_cast<uint32_t>(s[pos + 7]) << 24);
      const size_t end = std::min(s.size(), pos + 8 + len + (len % 2));
      if (tag == "ALPH" || tag == "VP8 " || tag == "VP8L") {
        anmf.insert(anmf.end(), s.begin() + static_cast<std::ptrdiff_t>(pos),
                    s.begin() + static_cast<std::ptrdiff_t>(end));
      }
      pos = end;
    }
    Append(&frames, Chunk("ANMF", anmf));
  }
  if (alpha) vp8x[0] |= 0x10;
  Le24(&vp8x, static_cast<uint32_t>(canvas_w - 1));
  Le24(&vp8x, static_cast<uint32_t>(canvas_h - 1));
  Bytes anim = {0, 0, 0, 0};  // background colour (ignored by decoders)
  Le16(&anim, 0);             // loop forever
  Bytes body;
  Append(&body, "WEBP");
  Append(&body, Chunk("VP8X", vp8x));
  Append(&body, Chunk("ANIM", anim));
  Append(&body, frames);
  Bytes file;
  Append(&file, "RIFF");
  Le32(&file, static_cast<uint32_t>(body.size()));
  Append(&file, body);
  return file;
}

Bytes WithVp8Size(const Bytes& lossy_webp, int w, int h) {
  Bytes b = lossy_webp;
  for (size_t pos = 12; pos + 18 <= b.size();) {
    const uint32_t len = b[pos + 4] | (b[pos + 5] << 8) | (b[pos + 6] << 16) |
                         (static_cast<uint32_t>(b[pos + 7]) << 24);
    if (std::memcmp(&b[pos], "VP8 ", 4) == 0) {
      // Frame tag (3 bytes), start code (3), then 14-bit width and height.
      const size_t at = pos + 8 + 6;
      b[at] = static_cast<uint8_t>(w);
      b[at + 1] = static_cast<uint8_t>((w >> 8) & 0x3F);
      b[at + 2] = static_cast<uint8_t>(h);
      b[at + 3] = static_cast<uint8_t>((h >> 8) & 0x3F);
      // An extended file states the canvas in VP8X too.
      if (std::memcmp(&b[12], "VP8X", 4) == 0) {
        for (int i = 0; i < 3; ++i) {
          b[24 + i] = static_cast<uint8_t>((w - 1) >> (8 * i));
          b[27 + i] = static_cast<uint8_t>((h - 1) >> (8 * i));
        }
      }
      return b;
    }
    pos += 8 + len + (len % 2);
  }
  return b;
}

Bytes MakeRle8Bmp(int w, int h, const Bytes& rle) {
  Bytes palette;
  for (int i = 0; i < 256; ++i) {
    for (int c = 0; c < 3; ++c) palette.push_back(static_cast<uint8_t>(i));
    palette.push_back(0);
  }
  const uint32_t offset = 14 + 40 + static_cast<uint32_t>(palette.size());
  Bytes b = {'B', 'M'};
  Le32(&b, offset + static_cast<uint32_t>(rle.size()));
  Le32(&b, 0);
  Le32(&b, offset);
  Le32(&b, 40);
  Le32(&b, static_cast<uint32_t>(w));
  Le32(&b, static_cast<uint32_t>(h));
  Le16(&b, 1);   // planes
  Le16(&b, 8);   // bits
  Le32(&b, 1);   // RLE8
  Le32(&b, static_cast<uint32_t>(rle.size()));
  Le32(&b, 0);
  Le32(&b, 0);
  Le32(&b, 256);  // colours
  Le32(&b, 0);
  Append(&b, palette);
  Append(&b, rle);
  return b;
}

Bytes MakePng(uint32_t w, uint32_t h, const Bytes& idat, bool interlaced) {
  auto chunk = [](Bytes* out, const char* type, const Bytes& data) {
    Be32(out, static_cast<uint32_t>(data.size()));
    const size_t at = out->size();
    Append(out, type);
    Append(out, data);
    Be32(out, static_cast<uint32_t>(
                  crc32(0, out->data() + at, static_cast<uInt>(out->size() - at))));
  };
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  Be32(&ihdr, w);
  Be32(&ihdr, h);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, static_cast<uint8_t>(interlaced ? 1 : 0)});
  chunk(&b, "IHDR", ihdr);
  chunk(&b, "IDAT", idat);
  chunk(&b, "IEND", {});
  return b;
}

Bytes WithJpegSize(const Bytes& jpeg, int w, int h) {
  Bytes b = jpeg;
  size_t pos = 2;
  while (pos + 9 <= b.size() && b[pos] == 0xFF) {
    const uint8_t marker = b[pos + 1];
    const size_t len = (static_cast<size_t>(b[pos + 2]) << 8) | b[pos + 3];
    if (marker == 0xC0 || marker == 0xC1 || marker == 0xC2) {
      b[pos + 5] = static_cast<uint8_t>(h >> 8);
      b[pos + 6] = static_cast<uint8_t>(h);
      b[pos + 7] = static_cast<uint8_t>(w >> 8);
      b[pos + 8] = static_cast<uint8_t>(w);
      return b;
    }
    pos += 2 + len;
  }
  return b;
}

}  // namespace stoker::testing
