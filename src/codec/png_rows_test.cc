// Copyright 2026 The stoker Authors.
#include "codec/png_rows.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "codec/decoder.h"

namespace stoker {
namespace {

using Bytes = std::vector<uint8_t>;

// The PNG specification's predictor (section 9.4), with its branches.
int SpecPaeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  if (pb <= pc) return b;
  return c;
}

// Filters one row of one-byte pixels the way an encoder does.
Bytes SpecFilter(int filter, const Bytes& row, const Bytes& prev) {
  Bytes out(row.size());
  for (size_t i = 0; i < row.size(); ++i) {
    const int a = i > 0 ? row[i - 1] : 0, b = prev[i], c = i > 0 ? prev[i - 1] : 0;
    int pred = 0;
    switch (filter) {
      case 1: pred = a; break;
      case 2: pred = b; break;
      case 3: pred = (a + b) / 2; break;
      case 4: pred = SpecPaeth(a, b, c); break;
      default: break;
    }
    out[i] = static_cast<uint8_t>(row[i] - pred);
  }
  return out;
}

void PutChunk(Bytes* png, const char* type, const Bytes& data) {
  const uint32_t n = static_cast<uint32_t>(data.size());
  for (int s : {24, 16, 8, 0}) png->push_back(static_cast<uint8_t>(n >> s));
  const size_t at = png->size();
  png->insert(png->end(), type, type + 4);
  png->insert(png->end(), data.begin(), data.end());
  const uLong crc = crc32(0L, png->data() + at, static_cast<uInt>(4 + n));
  for (int s : {24, 16, 8, 0}) png->push_back(static_cast<uint8_t>(crc >> s));
}

struct Made {
  Bytes png;
  Bytes pixels;  // w * h, what any decode must give
};

// A w x h one-byte-per-pixel PNG (colour type 0, or 3 with a grey PLTE)
// whose row y uses filter filters[y % size], the zlib stream cut into IDAT
// chunks of `chunk` bytes. Pixels: flat runs with steps and noise, like a
// label map that also has texture.
Made MakePng(int w, int h, int color_type, const std::vector<int>& filters, size_t chunk,
             uint32_t seed) {
  std::mt19937 rng(seed);
  Made m;
  m.pixels.resize(static_cast<size_t>(w) * h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint32_t r = rng();
      uint8_t v = static_cast<uint8_t>((x / 7 + y / 5) % 19);
      if (r % 5 == 0) v = static_cast<uint8_t>(r >> 8);
      m.pixels[static_cast<size_t>(y) * w + x] = v;
    }
  }
  Bytes raw, prev(static_cast<size_t>(w), 0);
  for (int y = 0; y < h; ++y) {
    const int f = filters[static_cast<size_t>(y) % filters.size()];
    Bytes row(m.pixels.begin() + static_cast<ptrdiff_t>(y) * w,
              m.pixels.begin() + static_cast<ptrdiff_t>(y + 1) * w);
    raw.push_back(static_cast<uint8_t>(f));
    const Bytes filtered = SpecFilter(f, row, prev);
    raw.insert(raw.end(), filtered.begin(), filtered.end());
    prev = row;
  }
  uLongf zn = compressBound(static_cast<uLong>(raw.size()));
  Bytes z(zn);
  EXPECT_EQ(compress2(z.data(), &zn, raw.data(), static_cast<uLong>(raw.size()), 9), Z_OK);
  z.resize(zn);
  m.png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  for (uint32_t v : {static_cast<uint32_t>(w), static_cast<uint32_t>(h)}) {
    for (int s : {24, 16, 8, 0}) ihdr.push_back(static_cast<uint8_t>(v >> s));
  }
  ihdr.insert(ihdr.end(), {8, static_cast<uint8_t>(color_type), 0, 0, 0});
  PutChunk(&m.png, "IHDR", ihdr);
  if (color_type == 3) {
    Bytes plte;
    for (int i = 0; i < 256; ++i) plte.insert(plte.end(), 3, static_cast<uint8_t>(i));
    PutChunk(&m.png, "PLTE", plte);
  }
  PutChunk(&m.png, "tEXt", Bytes{'a', 0, 'b'});  // an ancillary chunk before the data
  for (size_t at = 0; at < z.size(); at += chunk) {
    PutChunk(&m.png, "IDAT", Bytes(z.begin() + static_cast<ptrdiff_t>(at),
                                   z.begin() + static_cast<ptrdiff_t>(std::min(z.size(), at + chunk))));
  }
  PutChunk(&m.png, "IEND", Bytes{});
  return m;
}

// Offsets of the IDAT chunks (their length field) in `png`.
std::vector<size_t> IdatOffsets(const Bytes& png) {
  std::vector<size_t> at;
  for (size_t pos = 8; pos + 12 <= png.size();) {
    const uint32_t n = (uint32_t{png[pos]} << 24) | (uint32_t{png[pos + 1]} << 16) |
                       (uint32_t{png[pos + 2]} << 8) | png[pos + 3];
    if (std::string(png.begin() + static_cast<ptrdiff_t>(pos + 4),
                    png.begin() + static_cast<ptrdiff_t>(pos + 8)) == "IDAT") {
      at.push_back(pos);
    }
    pos += 12 + n;
  }
  return at;
}

TEST(PngRowsTest, EachFilterUndoesTheSpecificationsFilter) {
  std::mt19937 rng(7);
  for (size_t n : {1u, 2u, 3u, 31u, 64u, 2049u}) {
    for (int f = 0; f <= 4; ++f) {
      for (int trial = 0; trial < 20; ++trial) {
        Bytes row(n), prev(n);
        for (auto& v : row) v = static_cast<uint8_t>(rng());
        for (auto& v : prev) v = static_cast<uint8_t>(trial % 3 == 0 ? 0 : rng());
        const Bytes filtered = SpecFilter(f, row, prev);
        Bytes out(n, 0xEE);
        UnfilterBytePixelRow(f, filtered.data(), prev.data(), out.data(), n);
        ASSERT_EQ(out, row) << "filter " << f << " n " << n << " trial " << trial;
      }
    }
  }
}

// Rows of runs, as a label map's: a run of 1 to 40 bytes of one value, and
// each row the one above with a few runs changed.
TEST(PngRowsTest, EachFilterUndoesTheSpecificationsFilterOnRuns) {
  std::mt19937 rng(11);
  for (size_t n : {17u, 33u, 100u, 2048u}) {
    Bytes prev(n, 0);
    for (int y = 0; y < 60; ++y) {
      Bytes row = prev;
      for (size_t x = 0; x < n;) {
        const size_t run = 1 + rng() % 40;
        const bool change = y == 0 || rng() % 4 == 0;
        const uint8_t v = static_cast<uint8_t>(rng() % 5);
        for (size_t k = x; k < std::min(n, x + run); ++k) {
          if (change) row[k] = v;
        }
        x += run;
      }
      for (int f = 0; f <= 4; ++f) {
        const Bytes filtered = SpecFilter(f, row, prev);
        Bytes out(n, 0xEE);
        UnfilterBytePixelRow(f, filtered.data(), prev.data(), out.data(), n);
        ASSERT_EQ(out, row) << "filter " << f << " n " << n << " row " << y;
      }
      prev = row;
    }
  }
}

TEST(PngRowsTest, WholeImagesAndBandsEqualThePixelsWritten) {
  const std::vector<std::vector<int>> filter_cycles = {{0}, {1}, {2}, {3}, {4}, {2, 4, 1, 3, 0}};
  for (int color_type : {0, 3}) {
    for (const auto& filters : filter_cycles) {
      for (size_t chunk : {size_t{7}, size_t{1} << 20}) {
        const int w = 97, h = 41;
        const Made m = MakePng(w, h, color_type, filters, chunk, 3);
        const std::string what = "type " + std::to_string(color_type) + " filter " +
                                 std::to_string(filters[0]) + " cycle " +
                                 std::to_string(filters.size()) + " chunk " + std::to_string(chunk);
        Bytes scratch;
        Bytes whole(static_cast<size_t>(w) * h);
        ASSERT_TRUE(DecodeBytePixelPngRows(m.png.data(), m.png.size(), w, h, 0, h, whole.data(), w,
                                           &scratch).ok()) << what;
        EXPECT_EQ(whole, m.pixels) << what;
        for (auto [y0, y1] : {std::pair{0, 1}, std::pair{5, 6}, std::pair{13, 40}, std::pair{40, 41},
                              std::pair{9, 9}}) {
          const size_t stride = w + 3;  // a wider destination row: only w bytes written
          Bytes band(stride * static_cast<size_t>(y1 - y0) + 1, 0xCD);
          ASSERT_TRUE(DecodeBytePixelPngRows(m.png.data(), m.png.size(), w, h, y0, y1,
                                             band.data(), stride, &scratch).ok()) << what;
          for (int y = y0; y < y1; ++y) {
            const uint8_t* got = band.data() + (y - y0) * stride;
            ASSERT_TRUE(std::equal(got, got + w, m.pixels.begin() + static_cast<ptrdiff_t>(y) * w))
                << what << " row " << y;
            EXPECT_EQ(got[w], 0xCD) << what << " row " << y << ": past the row's end";
          }
        }
      }
    }
  }
}

TEST(PngRowsTest, ImageDecoderGivesTheBytePixelsOfGreyAndIndexedFiles) {
  for (int color_type : {0, 3}) {
    const int w = 300, h = 70;
    const Made m = MakePng(w, h, color_type, {2, 4, 1, 3, 0}, 50, 11);
    ImageDecoder dec;
    NativeImage img;
    ASSERT_TRUE(dec.DecodeNative(m.png.data(), m.png.size(), &img, true).ok());
    ASSERT_EQ(img.width, w);
    ASSERT_EQ(img.height, h);
    ASSERT_EQ(img.channels, 1);
    EXPECT_TRUE(std::equal(m.pixels.begin(), m.pixels.end(), img.pixels.begin()));
    NativeRows rows;
    rows.begin = 20;
    rows.end = 33;
    ASSERT_TRUE(dec.DecodeNative(m.png.data(), m.png.size(), &img, true, &rows).ok());
    EXPECT_EQ(rows.first, 20);
    EXPECT_EQ(rows.rows_read, 33);
    EXPECT_EQ(rows.image_height, h);
    ASSERT_EQ(img.height, 13);
    EXPECT_TRUE(std::equal(img.pixels.begin(), img.pixels.begin() + 13 * w,
                           m.pixels.begin() + 20 * w));
  }
}

Status Decode(const Bytes& png, int w, int h, int y0, int y1) {
  Bytes out(static_cast<size_t>(w) * h), scratch;
  return DecodeBytePixelPngRows(png.data(), png.size(), w, h, y0, y1, out.data(), w, &scratch);
}

TEST(PngRowsTest, DamageInTheDataABandReadsIsAnErrorAndAfterItIsNot) {
  const int w = 64, h = 40;
  const Made m = MakePng(w, h, 0, {4, 2}, 16, 5);
  const std::vector<size_t> idat = IdatOffsets(m.png);
  ASSERT_GT(idat.size(), 8u);
  // A flipped byte in the last chunk: its CRC no longer matches.
  Bytes bad = m.png;
  bad[idat.back() + 8] ^= 0x40;
  Status s = Decode(bad, w, h, 0, h);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("CRC"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Decode(bad, w, h, 2, 5).ok()) << "the band ends long before the last chunk";
  // The same in the first chunk: every band reads it.
  bad = m.png;
  bad[idat.front() + 9] ^= 0x40;
  EXPECT_NE(Decode(bad, w, h, 0, 1).message().find("CRC"), std::string::npos);
}

TEST(PngRowsTest, ImageDataEndingEarlyIsNamed) {
  const int w = 64, h = 40;
  const Made m = MakePng(w, h, 0, {2}, 16, 5);
  const std::vector<size_t> idat = IdatOffsets(m.png);
  // Drop the last two IDAT chunks (IEND follows the rest).
  Bytes cut(m.png.begin(), m.png.begin() + static_cast<ptrdiff_t>(idat[idat.size() - 2]));
  PutChunk(&cut, "IEND", Bytes{});
  const Status s = Decode(cut, w, h, 0, h);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("Not enough image data"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Decode(cut, w, h, 0, 3).ok());
  // The same file through ImageDecoder: an error, not a short image.
  ImageDecoder dec;
  NativeImage img;
  EXPECT_EQ(dec.DecodeNative(cut.data(), cut.size(), &img, true).code(), StatusCode::kDataLoss);
}

// Rows whose filter bytes and deflate data are given as is.
Bytes PngOfRawRows(int w, int h, const Bytes& raw, bool fix_adler) {
  uLongf zn = compressBound(static_cast<uLong>(raw.size()));
  Bytes z(zn);
  EXPECT_EQ(compress2(z.data(), &zn, raw.data(), static_cast<uLong>(raw.size()), 6), Z_OK);
  z.resize(zn);
  if (!fix_adler) z.back() ^= 1;  // the stream's Adler-32, after the last row's data
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  for (uint32_t v : {static_cast<uint32_t>(w), static_cast<uint32_t>(h)}) {
    for (int s : {24, 16, 8, 0}) ihdr.push_back(static_cast<uint8_t>(v >> s));
  }
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});
  PutChunk(&png, "IHDR", ihdr);
  PutChunk(&png, "IDAT", z);
  PutChunk(&png, "IEND", Bytes{});
  return png;
}

TEST(PngRowsTest, ABadFilterTypeAndBadDeflateDataAreErrors) {
  const int w = 8, h = 4;
  Bytes raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(y == 2 ? 5 : 0);
    raw.insert(raw.end(), static_cast<size_t>(w), static_cast<uint8_t>(y));
  }
  Status s = Decode(PngOfRawRows(w, h, raw, true), w, h, 0, h);
  EXPECT_NE(s.message().find("bad adaptive filter value"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Decode(PngOfRawRows(w, h, raw, true), w, h, 0, 2).ok());
  // Deflate data that is not: a stored block whose length check fails.
  Bytes png = PngOfRawRows(w, h, Bytes(static_cast<size_t>(w + 1) * h, 0), true);
  const std::vector<size_t> idat = IdatOffsets(png);
  const size_t data = idat[0] + 8;
  png[data + 2] = 0x01;  // after the zlib header: BFINAL=1, BTYPE=00 (stored)
  png[data + 3] = 0x10;
  png[data + 4] = 0x00;  // LEN 16, NLEN not its complement
  png[data + 5] = 0x00;
  png[data + 6] = 0x00;
  const uint32_t n = (uint32_t{png[idat[0]]} << 24) | (uint32_t{png[idat[0] + 1]} << 16) |
                     (uint32_t{png[idat[0] + 2]} << 8) | png[idat[0] + 3];
  const uLong crc = crc32(0L, png.data() + idat[0] + 4, 4 + n);
  for (int k = 0; k < 4; ++k) png[data + n + k] = static_cast<uint8_t>(crc >> (24 - 8 * k));
  s = Decode(png, w, h, 0, 1);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("PNG: invalid stored block lengths"), std::string::npos)
      << s.ToString();
}

TEST(PngRowsTest, AWrongAdlerIsAnErrorOfTheWholeImageOnly) {
  const int w = 8, h = 4;
  Bytes raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(2);
    raw.insert(raw.end(), static_cast<size_t>(w), static_cast<uint8_t>(y + 1));
  }
  Bytes out(static_cast<size_t>(w) * h), scratch;
  const Bytes good = PngOfRawRows(w, h, raw, true);
  ASSERT_TRUE(DecodeBytePixelPngRows(good.data(), good.size(), w, h, 0, h, out.data(), w,
                                     &scratch).ok());
  EXPECT_EQ(out[static_cast<size_t>(w) * 3], 1 + 2 + 3 + 4);  // Up filter: sums of the rows
  // The checksum after the last row's data (libpng: "IDAT: incorrect data check").
  const Bytes bad = PngOfRawRows(w, h, raw, false);
  const Status s = DecodeBytePixelPngRows(bad.data(), bad.size(), w, h, 0, h, out.data(), w,
                                          &scratch);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("incorrect data check"), std::string::npos) << s.ToString();
  EXPECT_TRUE(DecodeBytePixelPngRows(bad.data(), bad.size(), w, h, 0, h - 1, out.data(), w,
                                     &scratch).ok());
}

}  // namespace
}  // namespace stoker
