// Copyright 2026 The stoker Authors.
#include "ops/convert.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"

namespace stoker {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The compiler's IEEE binary16 conversion (round to nearest even).
uint16_t CompilerHalf(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float CompilerHalfToFloat(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
bool HalfIsNan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }

// Checks FloatToHalf(f) against the compiler, NaN only by class and sign.
void ExpectHalfMatches(float f) {
  const uint16_t got = FloatToHalf(f), want = CompilerHalf(f);
  if (std::isnan(f)) {
    EXPECT_TRUE(HalfIsNan(got)) << std::hex << Bits(f) << " -> " << got;
    EXPECT_EQ(got & 0x8000u, want & 0x8000u) << std::hex << Bits(f);
  } else {
    EXPECT_EQ(got, want) << "float bits 0x" << std::hex << Bits(f) << " (" << std::dec << f
                         << ")";
  }
}

// ---------------------------------------------------------------- half ----

TEST(HalfTest, SpecialValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  // Overflow: 65520 is the tie between 65504 and 65536 (-> even -> inf).
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-1e30f), 0xFC00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7C00);
  // Normal/subnormal boundaries.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);   // smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.5f, -24)), 0x0400);  // tie -> even (normal)
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);   // tie -> even 0
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 ulp -> 2
  EXPECT_EQ(FloatToHalf(std::ldexp(5.0f, -25)), 0x0002);   // 2.5 ulp -> 2
  EXPECT_EQ(FloatToHalf(std::ldexp(7.0f, -25)), 0x0004);   // 3.5 ulp -> 4
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToHalf(1e-10f), 0x0000);
  // Normal ties: 1 + 2^-11 is half-way between 1 and 1 + 2^-10.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Rounding carries into the exponent: 2 - 2^-12 -> 2.
  EXPECT_EQ(FloatToHalf(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // NaN stays NaN, whatever its payload.
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFFC00000u, 0xFF800001u,
                       0x7F802000u, 0x7FFFFFFFu}) {
    const uint16_t h = FloatToHalf(FromBits(nan));
    EXPECT_TRUE(HalfIsNan(h)) << std::hex << nan << " -> " << h;
    EXPECT_EQ(h & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << nan;
    EXPECT_TRUE(std::isnan(HalfToFloat(h)));
  }
}

TEST(HalfTest, SpecialValuesMatchCompiler) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.996f, 65520.0f, 65536.0f,
                          1e-8f, -1e-8f, 3.14159f, 0.1f, 1.0f / 3.0f, 255.0f, 1.0f / 255.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (int e = -30; e <= 17; ++e) {
    for (float m : {1.0f, 1.5f, 1.25f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
                    1.99951171875f, 1.999755859375f}) {
      v.push_back(std::ldexp(m, e));
      v.push_back(-std::ldexp(m, e));
    }
  }
  // Every exact tie between two adjacent halves, and its neighbours.
  for (uint32_t h = 0; h < 0x7C00u; h += 7) {
    const float a = CompilerHalfToFloat(static_cast<uint16_t>(h));
    const float b = CompilerHalfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = (a + b) / 2;  // exact in float
    v.push_back(mid);
    v.push_back(std::nextafter(mid, 0.0f));
    v.push_back(std::nextafter(mid, 1e9f));
    v.push_back(-mid);
  }
  for (float f : v) ExpectHalfMatches(f);
}

TEST(HalfTest, RandomFloatsMatchCompiler) {
  Rng rng(2026);
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t r = rng.Next();
    float f;
    switch (i % 4) {
      case 0:  // any bit pattern: every exponent, NaNs, infinities
        f = FromBits(static_cast<uint32_t>(r));
        break;
      case 1:  // within the half range
        f = static_cast<float>((static_cast<double>(r >> 11) * 0x1.0p-53 - 0.5) * 140000.0);
        break;
      case 2:  // around the subnormal range
        f = FromBits(0x33000000u + static_cast<uint32_t>(r % 0x06000000u)) *
            ((r >> 63) ? -1.0f : 1.0f);
        break;
      default:  // normalised pixel values
        f = (static_cast<float>(r % 256) / 255.0f - 0.485f) / 0.229f;
        break;
    }
    const uint16_t got = FloatToHalf(f), want = CompilerHalf(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(HalfIsNan(got)) << std::hex << Bits(f);
    } else {
      ASSERT_EQ(got, want) << "float bits 0x" << std::hex << Bits(f) << " (" << std::dec << f
                           << ")";
    }
  }
}

TEST(HalfTest, HalfToFloatIsExactForEveryHalf) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float got = HalfToFloat(b), want = CompilerHalfToFloat(b);
    if (HalfIsNan(b)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      // Round trip keeps it a NaN of the same sign.
      const uint16_t back = FloatToHalf(got);
      ASSERT_TRUE(HalfIsNan(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000u, b & 0x8000u);
      continue;
    }
    ASSERT_EQ(Bits(got), Bits(want)) << std::hex << h;
    // Every half survives the round trip exactly.
    ASSERT_EQ(FloatToHalf(got), b) << std::hex << h;
  }
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Bits(HalfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(HalfToFloat(0x7C00), std::numeric_limits<float>::infinity());
}

// ------------------------------------------------------------ bfloat16 ----

// Independent reference: round-to-nearest-even on the upper 16 bits.
uint16_t RefBFloat16(float f) {
  const uint32_t b = Bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((b >> 16) | 0x40);
  const uint32_t hi = b >> 16, lo = b & 0xFFFFu;
  uint32_t r = hi;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) r = hi + 1;
  return static_cast<uint16_t>(r);
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBFloat16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBFloat16(-0.0f), 0x8000);
  // Ties: low half exactly 0x8000.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F808000u)), 0x3F80);  // even stays
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F818000u)), 0x3F82);  // odd rounds up
  EXPECT_EQ(FloatToBFloat16(FromBits(0xBF818000u)), 0xBF82);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3F807FFFu)), 0x3F80);  // below the tie
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3FFF8000u)), 0x4000);  // carry into exponent
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00008000u)), 0x0000);  // subnormal tie
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00018000u)), 0x0002);
}

TEST(BFloat16Test, NanStaysNan) {
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7F80FFFFu, 0xFF800001u, 0x7FFFFFFFu,
                       0xFFFFFFFFu, 0x7F818000u}) {
    const uint16_t b = FloatToBFloat16(FromBits(nan));
    EXPECT_EQ(b & 0x7F80u, 0x7F80u) << std::hex << nan;
    EXPECT_NE(b & 0x007Fu, 0u) << std::hex << nan << " became infinity";
    EXPECT_EQ(b & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << nan;
    EXPECT_TRUE(std::isnan(BFloat16ToFloat(b)));
  }
}

TEST(BFloat16Test, MatchesReferenceAndRoundTrips) {
  Rng rng(7);
  for (int i = 0; i < 1000000; ++i) {
    const float f = FromBits(static_cast<uint32_t>(rng.Next()));
    const uint16_t got = FloatToBFloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(BFloat16ToFloat(got))) << std::hex << Bits(f);
      continue;
    }
    ASSERT_EQ(got, RefBFloat16(f)) << std::hex << Bits(f);
    if (std::isfinite(BFloat16ToFloat(got)) && std::fabs(f) > 1e-37f) {
      ASSERT_LE(std::fabs(BFloat16ToFloat(got) - f), std::ldexp(std::fabs(f), -8));
    }
  }
  for (uint32_t b = 0; b <= 0xFFFFu; ++b) {
    const float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(Bits(f), b << 16);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), b) << std::hex << b;
  }
}

// --------------------------------------------------------- dtype names ----

TEST(DTypeTest, SizesNamesAndParsing) {
  EXPECT_EQ(DTypeSize(DType::kUint8), 1u);
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  for (DType d : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const StatusOr<DType> p = ParseDType(DTypeName(d));
    ASSERT_TRUE(p.ok()) << DTypeName(d);
    EXPECT_EQ(p.value(), d);
  }
  EXPECT_STREQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_FALSE(ParseDType("int8").ok());
  EXPECT_EQ(ParseDType("float64").status().code(), StatusCode::kInvalidArgument);
  for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
    const StatusOr<Layout> p = ParseLayout(LayoutName(l));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value(), l);
  }
  EXPECT_EQ(ParseLayout("CHW").status().code(), StatusCode::kInvalidArgument);
}

// --------------------------------------------------------- PixelWriter ----

constexpr std::array<float, 3> kMean{0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kStd{0.229f, 0.224f, 0.225f};

struct WriterCase {
  DType dtype;
  Layout layout;
  bool normalize;
};

std::string WriterName(const ::testing::TestParamInfo<WriterCase>& info) {
  return std::string(DTypeName(info.param.dtype)) + "_" + LayoutName(info.param.layout) +
         (info.param.normalize ? "_normalized" : "_raw");
}

void PrintTo(const WriterCase& c, std::ostream* os) {
  *os << DTypeName(c.dtype) << " " << LayoutName(c.layout)
      << (c.normalize ? " normalized" : " raw");
}

class PixelWriterTest : public ::testing::TestWithParam<WriterCase> {};

// What torchvision computes for value v of channel c, in float32.
float Expected(int c, int v, bool normalize) {
  float x = static_cast<float>(v) / 255.0f;
  if (normalize) x = (x - kMean[c]) / kStd[c];
  return x;
}

TEST_P(PixelWriterTest, PlacesAndConvertsEveryValue) {
  const WriterCase p = GetParam();
  const int H = 7, W = 13;
  PixelWriter writer(p.dtype, p.layout, H, W, p.normalize, kMean, kStd);
  EXPECT_EQ(writer.dtype(), p.dtype);
  EXPECT_EQ(writer.layout(), p.layout);
  EXPECT_EQ(writer.height(), H);
  EXPECT_EQ(writer.width(), W);
  const size_t esize = DTypeSize(p.dtype);
  ASSERT_EQ(writer.sample_bytes(), static_cast<size_t>(H) * W * 3 * esize);

  // Pixels: every byte value shows up in every channel across the image.
  std::vector<uint8_t> rgb(static_cast<size_t>(H) * W * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  // Guard bytes around the slot catch writes outside it.
  const size_t guard = 64;
  std::vector<uint8_t> buf(writer.sample_bytes() + 2 * guard, 0xA5);
  uint8_t* slot = buf.data() + guard;
  // Rows in a scrambled order: each row lands in its own place.
  std::vector<int> order(H);
  for (int y = 0; y < H; ++y) order[y] = (y * 3) % H;
  for (int y : order) writer.WriteRow(&rgb[static_cast<size_t>(y) * W * 3], y, slot);
  for (size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(buf[i], 0xA5) << "wrote before the slot";
    ASSERT_EQ(buf[guard + writer.sample_bytes() + i], 0xA5) << "wrote after the slot";
  }

  for (int y = 0; y < H; ++y) {
    for (int x = 0; x < W; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = rgb[(static_cast<size_t>(y) * W + x) * 3 + c];
        const size_t index = p.layout == Layout::kNCHW
                                 ? (static_cast<size_t>(c) * H + y) * W + x
                                 : (static_cast<size_t>(y) * W + x) * 3 + c;
        const uint8_t* e = slot + index * esize;
        const float want = Expected(c, v, p.normalize);
        switch (p.dtype) {
          case DType::kUint8:
            ASSERT_EQ(*e, v) << x << "," << y << "," << c;
            ASSERT_EQ(writer.Value(c, v), static_cast<float>(v));
            break;
          case DType::kFloat32: {
            float got;
            std::memcpy(&got, e, 4);
            ASSERT_EQ(Bits(got), Bits(want)) << x << "," << y << "," << c << " v=" << v
                                             << " got " << got << " want " << want;
            ASSERT_EQ(Bits(writer.Value(c, v)), Bits(want));
            break;
          }
          case DType::kFloat16: {
            uint16_t got;
            std::memcpy(&got, e, 2);
            ASSERT_EQ(got, FloatToHalf(want)) << x << "," << y << "," << c << " v=" << v;
            ASSERT_EQ(got, CompilerHalf(want));
            ASSERT_EQ(writer.Value(c, v), HalfToFloat(FloatToHalf(want)));
            break;
          }
          case DType::kBFloat16: {
            uint16_t got;
            std::memcpy(&got, e, 2);
            ASSERT_EQ(got, FloatToBFloat16(want)) << x << "," << y << "," << c << " v=" << v;
            ASSERT_EQ(writer.Value(c, v), BFloat16ToFloat(FloatToBFloat16(want)));
            break;
          }
        }
      }
    }
  }
}

// Variable-size batches (collate="list"): one writer, any sample size. Rows
// written with the size given per call equal those of a writer made for that
// size (0x0 here, as the loader builds it when there is no fixed size), with
// nothing written outside the sample.
TEST_P(PixelWriterTest, SizePerCallEqualsAWriterOfThatSize) {
  const WriterCase p = GetParam();
  PixelWriter any(p.dtype, p.layout, 0, 0, p.normalize, kMean, kStd);
  for (const auto& [H, W] : {std::pair{5, 17}, std::pair{9, 3}, std::pair{1, 40}}) {
    PixelWriter fixed(p.dtype, p.layout, H, W, p.normalize, kMean, kStd);
    std::vector<uint8_t> rgb(static_cast<size_t>(H) * W * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i * 53 + H) % 256);
    const size_t guard = 64, bytes = fixed.sample_bytes();
    std::vector<uint8_t> a(bytes + 2 * guard, 0x5A), b(bytes, 0);
    for (int y = 0; y < H; ++y) {
      any.WriteRow(&rgb[static_cast<size_t>(y) * W * 3], y, H, W, a.data() + guard);
      fixed.WriteRow(&rgb[static_cast<size_t>(y) * W * 3], y, b.data());
    }
    EXPECT_EQ(std::vector<uint8_t>(a.begin() + guard, a.begin() + guard + bytes), b)
        << H << "x" << W;
    for (size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(a[i], 0x5A);
      ASSERT_EQ(a[guard + bytes + i], 0x5A);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDTypes, PixelWriterTest,
    ::testing::Values(WriterCase{DType::kUint8, Layout::kNCHW, false},
                      WriterCase{DType::kUint8, Layout::kNHWC, false},
                      WriterCase{DType::kUint8, Layout::kNCHW, true},
                      WriterCase{DType::kFloat32, Layout::kNCHW, false},
                      WriterCase{DType::kFloat32, Layout::kNHWC, false},
                      WriterCase{DType::kFloat32, Layout::kNCHW, true},
                      WriterCase{DType::kFloat32, Layout::kNHWC, true},
                      WriterCase{DType::kFloat16, Layout::kNCHW, false},
                      WriterCase{DType::kFloat16, Layout::kNHWC, true},
                      WriterCase{DType::kFloat16, Layout::kNCHW, true},
                      WriterCase{DType::kBFloat16, Layout::kNCHW, true},
                      WriterCase{DType::kBFloat16, Layout::kNHWC, false},
                      WriterCase{DType::kBFloat16, Layout::kNHWC, true}),
    WriterName);

TEST(PixelWriterSpotTest, KnownValues) {
  // Spot values computed by hand: 255 / 255 = 1; (1 - 0.5) / 0.25 = 2.
  PixelWriter f(DType::kFloat32, Layout::kNCHW, 1, 2, true, {0.5f, 0.5f, 0.5f},
                {0.25f, 0.25f, 0.25f});
  EXPECT_EQ(f.Value(0, 255), 2.0f);
  EXPECT_EQ(f.Value(1, 0), -2.0f);
  PixelWriter raw(DType::kFloat32, Layout::kNHWC, 1, 2, false, {0.5f, 0.5f, 0.5f},
                  {0.25f, 0.25f, 0.25f});
  EXPECT_EQ(raw.Value(2, 255), 1.0f);
  EXPECT_EQ(raw.Value(2, 0), 0.0f);
  const uint8_t px[6] = {255, 0, 51, 0, 255, 102};
  float out[6];
  raw.WriteRow(px, 0, reinterpret_cast<uint8_t*>(out));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 51.0f / 255.0f);
  EXPECT_EQ(out[4], 1.0f);
  PixelWriter h(DType::kFloat16, Layout::kNCHW, 1, 2, true, {0.5f, 0.5f, 0.5f},
                {0.25f, 0.25f, 0.25f});
  uint16_t hout[6];
  h.WriteRow(px, 0, reinterpret_cast<uint8_t*>(hout));
  // NCHW: R plane {255, 0} -> {2, -2}; G plane {0, 255}; B plane.
  EXPECT_EQ(hout[0], 0x4000);  // 2.0
  EXPECT_EQ(hout[1], 0xC000);  // -2.0
  EXPECT_EQ(hout[2], 0xC000);
  EXPECT_EQ(hout[3], 0x4000);
}

TEST(PixelWriterSpotTest, SampleBytesForEveryDType) {
  for (Layout l : {Layout::kNCHW, Layout::kNHWC}) {
    EXPECT_EQ(PixelWriter(DType::kUint8, l, 224, 160, false, kMean, kStd).sample_bytes(),
              224u * 160 * 3);
    EXPECT_EQ(PixelWriter(DType::kFloat32, l, 224, 160, true, kMean, kStd).sample_bytes(),
              224u * 160 * 3 * 4);
    EXPECT_EQ(PixelWriter(DType::kFloat16, l, 224, 160, true, kMean, kStd).sample_bytes(),
              224u * 160 * 3 * 2);
    EXPECT_EQ(PixelWriter(DType::kBFloat16, l, 224, 160, true, kMean, kStd).sample_bytes(),
              224u * 160 * 3 * 2);
  }
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Wide rows run the vector paths (8 pixels at a time) over every byte value
// of every channel; they must agree bit for bit with the per-value tables.
// The means and stds: ImageNet's, others in common use, random ones, and
// extremes (where the reciprocal with its correction may not give the
// quotient, and the writer must then divide).
std::vector<std::pair<std::array<float, 3>, std::array<float, 3>>> MeanStdCases() {
  std::vector<std::pair<std::array<float, 3>, std::array<float, 3>>> cases = {
      {kMean, kStd},
      {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}},
      {{0.48145466f, 0.4578275f, 0.40821073f}, {0.26862954f, 0.26130258f, 0.27577711f}},
      {{0.f, 0.f, 0.f}, {1.f, 3.f, 7.f}},
      {{1e-30f, -2.f, 0.25f}, {3e-5f, 1e30f, 1.1754944e-38f}},
      {{0.1f, 0.2f, 0.3f}, {1e-7f, 6e-8f, 255.f}}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int k = 0; k < 40; ++k) {
    std::array<float, 3> m{}, sd{};
    for (int c = 0; c < 3; ++c) {
      m[c] = u(rng);
      sd[c] = 0.01f + u(rng);
    }
    cases.push_back({m, sd});
  }
  return cases;
}

bool CpuHasAvx2AndFma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TEST(PixelWriterVectorTest, ImageNetsConstantsDivideByReciprocals) {
  if (!CpuHasAvx2AndFma()) GTEST_SKIP() << "no AVX2 with FMA on this CPU";
  PixelWriter writer(DType::kFloat32, Layout::kNCHW, 4, 4, true, kMean, kStd);
  EXPECT_TRUE(writer.divides_by_reciprocal());
  PixelWriter plain(DType::kFloat32, Layout::kNCHW, 4, 4, false, kMean, kStd);
  EXPECT_TRUE(plain.divides_by_reciprocal());
}

TEST(PixelWriterVectorTest, WideRowsMatchTheTablesForEveryValue) {
  const int H = 3, W = 256 + 5;
  int reciprocal = 0, divided = 0;
  for (const auto& [mean, std] : MeanStdCases()) {
    for (DType dtype : {DType::kUint8, DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (bool normalize : {false, true}) {
        if (dtype == DType::kUint8 && normalize) continue;
        PixelWriter writer(dtype, Layout::kNCHW, H, W, normalize, mean, std);
        (writer.divides_by_reciprocal() ? reciprocal : divided) += 1;
        std::vector<uint8_t> slot(writer.sample_bytes());
        std::vector<uint8_t> rgb(static_cast<size_t>(W) * 3);
        for (int y = 0; y < H; ++y) {
          for (int x = 0; x < W; ++x) {
            for (int c = 0; c < 3; ++c) rgb[3 * x + c] = static_cast<uint8_t>(x + 85 * c + 7 * y);
          }
          writer.WriteRow(rgb.data(), y, slot.data());
        }
        const size_t esize = DTypeSize(dtype), plane = static_cast<size_t>(H) * W;
        for (int y = 0; y < H; ++y) {
          for (int x = 0; x < W; ++x) {
            for (int c = 0; c < 3; ++c) {
              const int v = static_cast<uint8_t>(x + 85 * c + 7 * y);
              const uint8_t* e = slot.data() + (c * plane + static_cast<size_t>(y) * W + x) * esize;
              float got;
              if (dtype == DType::kUint8) got = *e;
              else if (dtype == DType::kFloat32) std::memcpy(&got, e, 4);
              else {
                uint16_t h;
                std::memcpy(&h, e, 2);
                got = dtype == DType::kFloat16 ? HalfToFloat(h) : BFloat16ToFloat(h);
              }
              ASSERT_EQ(Bits(got), Bits(writer.Value(c, v)))
                  << DTypeName(dtype) << " normalize=" << normalize << " x=" << x << " c=" << c
                  << " v=" << v << " mean " << mean[c] << " std " << std[c]
                  << (writer.divides_by_reciprocal() ? " (reciprocal)" : " (division)");
            }
          }
        }
      }
    }
  }
  if (CpuHasAvx2AndFma()) {
    EXPECT_GT(reciprocal, 0);
  }
  std::printf("float writers: %d by reciprocal, %d dividing\n", reciprocal, divided);
}

}  // namespace
}  // namespace stoker
