// Copyright 2026 The stoker Authors.
//
// The allocation rule (docs/reliability.md, "Allocations"): every allocation
// a decoder makes from a header field is checked, before it is made, against
// max_pixels and against what the file's size can hold. Each case decodes a
// hostile file in a forked child under an address-space limit (so a
// regression fails the test instead of exhausting the machine) and checks
// the child's peak resident memory: a header that lies is refused with a
// named error before any large allocation; a file that legitimately codes a
// large image in few bytes costs the image (3 bytes a pixel) and little more.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <webp/encode.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "testing/hostile_images.h"
#include "testing/sanitizers.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::Bytes;
constexpr size_t kMiB = size_t{1} << 20;

struct Outcome {
  bool returned = false;  // the child got a Status back (no crash, no bad_alloc)
  StatusCode code = StatusCode::kOk;
  std::string message;
  double peak_mib = 0;    // the child's peak resident memory above the parent's
  std::string ToString() const {
    return returned ? "status " + std::to_string(static_cast<int>(code)) + " '" + message +
                          "', peak +" + std::to_string(peak_mib) + " MiB"
                    : "the child died (a crash, or an exception such as std::bad_alloc)";
  }
};

long StatmPages(int field) {
  long v[2] = {0, 0};
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &v[0], &v[1]) != 2) v[0] = v[1] = 0;
    std::fclose(f);
  }
  return v[field];
}

// Decodes `file` whole (ImageDecoder::DecodeAll, `max_pixels`) in a forked
// child whose address space may grow by `headroom` bytes (not under the
// sanitizers, which reserve terabytes of shadow), and reports its Status and
// peak RSS growth; `check` runs on the decoded image in the child (its
// failures make the child report kInternal).
template <typename Check>
Outcome DecodeInChild(const Bytes& file, size_t headroom, Check check,
                      int64_t max_pixels = int64_t{1} << 28) {
  const long page = sysconf(_SC_PAGESIZE);
  const long parent_kib = StatmPages(1) * (page / 1024);
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
#ifndef STOKER_SANITIZED
    const rlim_t limit = static_cast<rlim_t>(StatmPages(0)) * page + headroom;
    rlimit rl{limit, limit};
    setrlimit(RLIMIT_AS, &rl);
#endif
    // Nothing may leave the child (gtest would go on running tests in it).
    Status s;
    try {
      ImageDecoder dec(DecoderOptions{max_pixels});
      DecodedRegion r;
      s = dec.DecodeAll(file.data(), file.size(), &r);
      if (s.ok() && !check(r.pixels)) s = InternalError("the decoded pixels are wrong");
    } catch (...) {
      _exit(4);  // e.g. std::bad_alloc under the address-space limit
    }
    const std::string line = std::to_string(static_cast<int>(s.code())) + " " + s.message();
    if (write(fds[1], line.data(), line.size()) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) {
    got.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int wstatus = 0;
  rusage ru{};
  Outcome o;
  if (wait4(pid, &wstatus, 0, &ru) != pid) return o;
  o.returned = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 && !got.empty();
  if (o.returned) {
    const size_t sp = got.find(' ');
    o.code = static_cast<StatusCode>(std::stoi(got.substr(0, sp)));
    o.message = sp == std::string::npos ? "" : got.substr(sp + 1);
  }
  o.peak_mib = static_cast<double>(ru.ru_maxrss - parent_kib) / 1024.0;
  return o;
}

Outcome DecodeInChild(const Bytes& file, size_t headroom) {
  return DecodeInChild(file, headroom, [](const RgbView&) { return true; });
}

// A refused header: the named error, and no more than 32 MiB of memory (the
// image would take 768 MiB or more).
void ExpectRefusedCheaply(const Bytes& file, StatusCode code, const std::string& words,
                          const std::string& what) {
  const Outcome o = DecodeInChild(file, 256 * kMiB);
  ASSERT_TRUE(o.returned) << what << ": " << o.ToString();
  EXPECT_EQ(o.code, code) << what << ": " << o.ToString();
  EXPECT_NE(o.message.find(words), std::string::npos) << what << ": " << o.ToString();
  EXPECT_LT(o.peak_mib, 32.0) << what << ": " << o.ToString();
}

// A valid image coded in few bytes: decodes (every pixel `rgb`), costing the
// image's 3 bytes a pixel plus a little.
void ExpectImageOnlyCost(const Bytes& file, int w, int h, const std::string& what,
                         std::vector<uint8_t> rgb = {0, 0, 0}) {
  const double image_mib = 3.0 * w * h / kMiB;
  const Outcome o = DecodeInChild(
      file, static_cast<size_t>(image_mib * 1.25 * kMiB) + 96 * kMiB, [&](const RgbView& v) {
        if (v.width != w || v.height != h) return false;
        for (int y = 0; y < h; y += 97) {
          for (int x = 0; x < w; ++x) {
            if (std::memcmp(v.row(y) + 3 * x, rgb.data(), 3) != 0) return false;
          }
        }
        return true;
      });
  ASSERT_TRUE(o.returned) << what << ": " << o.ToString();
  EXPECT_EQ(o.code, StatusCode::kOk) << what << ": " << o.ToString();
  EXPECT_LT(o.peak_mib, image_mib * 1.15 + 16) << what << ": " << o.ToString();
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST(AllocationTest, PlainPnmHeaderIsRefusedBeforeTheImageIsAllocated) {
  // 19 bytes used to allocate 805 MB.
  ExpectRefusedCheaply(Text("P3 16383 16383 255\n"), StatusCode::kDataLoss,
                       "PNM: 16383x16383 needs at least 1610416133 bytes of plain raster",
                       "P3");
  ExpectRefusedCheaply(Text("P2 16383 16383 255\n1 2 3\n"), StatusCode::kDataLoss,
                       "bytes of plain raster, the file has 6", "P2");
  ExpectRefusedCheaply(Text("P1 16383 16383\n0101"), StatusCode::kDataLoss,
                       "needs at least 268402689 bytes of plain raster", "P1");
}

TEST(AllocationTest, TiffStripsThatCannotHoldTheImageAreRefused) {
  // Issue 32, item 8: one tiny strip for 16383 x 16383.
  testing::TiffSpec s;
  s.width = s.height = 16383;
  ExpectRefusedCheaply(testing::MakeTiff(s, Bytes(100, 7)), StatusCode::kDataLoss,
                       "needs at least 805208067 bytes of strip and tile data, the file has 100",
                       "uncompressed");
  s.compression = 8;  // Deflate: at most 1032 bytes out per byte in
  ExpectRefusedCheaply(testing::MakeTiff(s, testing::Deflate(Bytes(1000, 0))),
                       StatusCode::kDataLoss, "bytes of strip and tile data", "deflate");
  s.compression = 32773;  // PackBits: 2 bytes give at most 128
  ExpectRefusedCheaply(testing::MakeTiff(s, Bytes{0x81, 0, 0x81, 0}), StatusCode::kDataLoss,
                       "bytes of strip and tile data", "packbits");
  s.bits = 16;
  s.spp = 4;  // RGBA 16-bit: the 3.3 GB case
  s.compression = 5;
  ExpectRefusedCheaply(testing::MakeTiff(s, Bytes(150, 0x80)), StatusCode::kDataLoss,
                       "bytes of strip and tile data", "lzw");
  // 1024 strips sharing the same 300 bytes hold 300 bytes, not 307,200.
  testing::TiffSpec shared;
  shared.width = shared.height = 16384;
  shared.spp = 1;
  shared.photometric = 1;
  shared.compression = 8;
  shared.rows_per_strip = 16;
  ExpectRefusedCheaply(testing::MakeTiff(shared, Bytes(300, 0x55)), StatusCode::kDataLoss,
                       "needs at least 260112 bytes of strip and tile data, the file has 300",
                       "shared strips");
}

TEST(AllocationTest, TiffTilesAreBoundedLikeImages) {
  // Issue 32, item 7: a 16 x 16 image in 32768 x 32768 tiles.
  testing::TiffSpec s;
  s.spp = 1;
  s.photometric = 1;
  s.tile_width = s.tile_height = 32768;
  ExpectRefusedCheaply(testing::MakeTiff(s, Bytes(256, 0)), StatusCode::kResourceExhausted,
                       "TIFF: tiles of 32768x32768 for a 16x16 image", "above max_pixels");
  // Within max_pixels, but a compression without a size bound (ZSTD): the
  // tile may not exceed 4 times the image (or 1024 x 1024).
  s.tile_width = s.tile_height = 16384;
  s.compression = 50000;
  ExpectRefusedCheaply(testing::MakeTiff(s, Bytes(256, 0)), StatusCode::kResourceExhausted,
                       "above the limit of 1048576 pixels per tile", "zstd tile");
}

TEST(AllocationTest, TiffSingleStripIsDecodedRowByRow) {
  // A valid 2048 x 2048 RGBA 16-bit TIFF in one Deflate strip: its raw data
  // (32 MiB) used to be held besides the image (12 MiB).
  const int n = 2048;
  testing::TiffSpec s;
  s.width = s.height = n;
  s.bits = 16;
  s.spp = 4;
  s.compression = 8;
  Bytes file;
  {
    const Bytes raw(static_cast<size_t>(n) * n * 8, 0);
    file = testing::MakeTiff(s, testing::Deflate(raw));
  }
  ExpectImageOnlyCost(file, n, n, "one-strip RGBA16");
}

TEST(AllocationTest, LossyWebpSizeBombIsRefused) {
  const Bytes px = testing::MakePixels(32, 24, 5);
  uint8_t* out = nullptr;
  const size_t size = WebPEncodeRGB(px.data(), 32, 24, 32 * 3, 75.0f, &out);
  const Bytes webp(out, out + size);
  WebPFree(out);
  ExpectRefusedCheaply(testing::WithVp8Size(webp, 16383, 16383), StatusCode::kDataLoss,
                       "needs at least 65536 bytes of lossy data", "lossy WebP");
}

TEST(AllocationTest, AnimatedWebpCanvasCostsTheImageOnly) {
  // Issue 32, item 6: a tiny frame on a large canvas is valid; it used to
  // cost two RGBA canvases (8 bytes a pixel) besides the image.
  const Bytes black = {0, 0, 0};
  uint8_t* out = nullptr;
  const size_t size = WebPEncodeLosslessRGB(black.data(), 1, 1, 3, &out);
  const Bytes still(out, out + size);
  WebPFree(out);
  const int n = 4096;
  ExpectImageOnlyCost(testing::MakeAnimatedWebp(n, n, {still, still}, {0, 0}, {0, 0}), n, n,
                      "animated WebP");
  // The first frame's bitstream is checked like a still's.
  const Bytes px = testing::MakePixels(32, 24, 5);
  const size_t lossy_size = WebPEncodeRGB(px.data(), 32, 24, 32 * 3, 75.0f, &out);
  const Bytes lossy(out, out + lossy_size);
  WebPFree(out);
  const Bytes frame = testing::WithVp8Size(lossy, 16000, 16000);
  ExpectRefusedCheaply(testing::MakeAnimatedWebp(16000, 16000, {frame}, {0}, {0}),
                       StatusCode::kDataLoss, "bytes of lossy data", "animated lossy frame");
}

TEST(AllocationTest, BmpRleDeltasCostTheImageOnly) {
  // Issue 32, item 10: valid, but it held a byte per pixel of palette
  // indices besides the image, and took seconds.
  const int n = 8192;
  Bytes rle;
  for (int y = 0; y < n; y += 255) rle.insert(rle.end(), {0, 2, 0, 255});
  rle.insert(rle.end(), {0, 1});
  ExpectImageOnlyCost(testing::MakeRle8Bmp(n, n, rle), n, n, "RLE deltas");
  // A stream that stops early fails before the image is allocated.
  const Bytes few = {0, 2, 0, 255, 0, 2, 0, 255};
  ExpectRefusedCheaply(testing::MakeRle8Bmp(16383, 16383, few), StatusCode::kDataLoss,
                       "BMP: RLE data gives 8355330 of 268402689 pixels", "short RLE");
}

TEST(AllocationTest, PngIdatThatCannotHoldTheImageIsRefused) {
  const Bytes idat = testing::Deflate(Bytes(100, 0));
  for (bool interlaced : {false, true}) {
    ExpectRefusedCheaply(testing::MakePng(16383, 16383, idat, interlaced), StatusCode::kDataLoss,
                         "PNG: 16383x16383 needs at least 780240 bytes of IDAT data",
                         interlaced ? "interlaced" : "sequential");
  }
}

TEST(AllocationTest, PngBoundIsDeflatesBest) {
  // zlib's best on zeros comes within a fraction of 1032:1; the bound must
  // pass it (it counts the samples without the filter bytes).
  const uint32_t w = 4096, h = 4096;
  Bytes file;
  {
    const Bytes raw(static_cast<size_t>(h) * (1 + 3 * w), 0);  // filter byte 0 per row
    file = testing::MakePng(w, h, testing::Deflate(raw));
  }
  ImageDecoder dec;
  ImageHeader header;
  const Status s = dec.Open(file.data(), file.size(), &header);
  EXPECT_TRUE(s.ok()) << s.ToString() << " (" << file.size() << " bytes)";
}

TEST(AllocationTest, JpegScanThatCannotHoldTheImageIsRefused) {
  const Bytes px = testing::MakePixels(64, 48, 3);
  for (bool progressive : {false, true}) {
    testing::JpegSpec spec;
    spec.progressive = progressive;
    spec.subsampling = 420;
    const Bytes jpeg = testing::WithJpegSize(testing::EncodeJpeg(px, 64, 48, spec), 16383, 16383);
    ExpectRefusedCheaply(jpeg, StatusCode::kDataLoss,
                         "JPEG: 16383x16383 needs at least",
                         progressive ? "progressive" : "baseline");
  }
  // Arithmetic coding has no such floor: the size is checked by max_pixels
  // only, and the truncated data fails while it is decoded.
  testing::JpegSpec arith;
  arith.arithmetic = true;
  const Bytes jpeg = testing::WithJpegSize(testing::EncodeJpeg(px, 64, 48, arith), 2000, 2000);
  ImageDecoder dec;
  ImageHeader header;
  EXPECT_TRUE(dec.Open(jpeg.data(), jpeg.size(), &header).ok());
}

}  // namespace
}  // namespace stoker
