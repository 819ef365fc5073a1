// Copyright 2026 The stoker Authors.
#include "source/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "stoker/loader.h"
#include "testing/epoch_images.h"
#include "testing/memory_source.h"
#include "testing/test_arrays.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::NpyBytes;
using testing::TempDir;
using testing::WriteFile;

// Version 1.0 header with `dict_text` as it is, then `data`.
std::vector<uint8_t> RawHeader(const std::string& dict_text, const std::string& data = "") {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              static_cast<uint8_t>(dict_text.size()), 0};
  out.reserve(out.size() + dict_text.size() + data.size());  // (GCC 12: no -Warray-bounds)
  out.insert(out.end(), dict_text.begin(), dict_text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Status Parse(const std::vector<uint8_t>& bytes, NpyHeader* h) {
  return ParseNpyHeader(bytes.data(), bytes.size(), h);
}

TEST(NpyHeaderTest, ParsesVersionsOneTwoThree) {
  for (int version : {1, 2, 3}) {
    const auto f = NpyBytes("|u1", {2, 4, 5, 3}, std::vector<uint8_t>(120, 7), false, version);
    NpyHeader h;
    ASSERT_TRUE(Parse(f, &h).ok()) << version;
    EXPECT_EQ(h.kind, 'u');
    EXPECT_EQ(h.item_size, 1);
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 4, 5, 3}));
    EXPECT_EQ(h.data_bytes, 120u);
    EXPECT_EQ(h.data_offset % 64, 0u);
    EXPECT_EQ(f[h.data_offset], 7);
  }
}

TEST(NpyHeaderTest, AcceptsNumpyVariants) {
  NpyHeader h;
  // Keys in another order, double quotes, no trailing comma, 1-D and 0-D shapes, 'L'.
  ASSERT_TRUE(Parse(RawHeader("{\"shape\": (3,), \"fortran_order\": True, \"descr\": \">i4\"}\n",
                              "............"), &h).ok());
  EXPECT_EQ(h.shape, std::vector<int64_t>{3});
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.byte_order, '>');
  ASSERT_TRUE(Parse(RawHeader("{'descr': '<f8', 'fortran_order': False, 'shape': ()}\n", "12345678"),
                    &h).ok());
  EXPECT_TRUE(h.shape.empty());
  EXPECT_EQ(h.data_bytes, 8u);
  ASSERT_TRUE(Parse(RawHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (2L, 1L), }  \n",
                              "xx"), &h).ok());
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 1}));
  // float16 (record arrays), but not as labels.
  const std::vector<uint8_t> half = RawHeader("{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}\n",
                                     "xxxx");
  ASSERT_TRUE(Parse(half, &h).ok());
  EXPECT_EQ(h.kind, 'f');
  EXPECT_EQ(h.item_size, 2);
  std::vector<int64_t> labels;
  EXPECT_FALSE(ParseNpyLabels(half.data(), half.size(), &labels).ok());
}

TEST(NpyHeaderTest, RejectsMalformedHeaders) {
  const std::vector<std::string> bad = {
      "",                                                                  // empty dict text
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }",         // no newline
      "{'descr': '|u1', 'fortran_order': False}\n",                        // missing shape
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", // unknown key
      "{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (1,)}\n",  // repeated
      "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}\n",  // structured
      "{'descr': '<U4', 'fortran_order': False, 'shape': (1,)}\n",         // unicode dtype
      "{'descr': '<u3', 'fortran_order': False, 'shape': (1,)}\n",         // odd size
      "{'descr': '<f3', 'fortran_order': False, 'shape': (1,)}\n",         // odd float size
      "{'descr': '|u1', 'fortran_order': 0, 'shape': (1,)}\n",             // not a bool
      "{'descr': '|u1', 'fortran_order': False, 'shape': (-1,)}\n",        // negative
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1 2)}\n",        // no comma
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1,}\n",          // unclosed tuple
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1,)} x\n",       // trailing text
      "{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999,)}\n",
      "{'descr': '<u8', 'fortran_order': False, 'shape': (4611686018427387904, 4)}\n",  // overflow
      "{'descr': '|u1', 'fortran_order': False, 'shape': (100,)}\n",       // data missing
      "{'descr': 'u1\\', 'fortran_order': False, 'shape': (1,)}\n",        // escape
      "{'descr': '|u1, 'fortran_order': False, 'shape': (1,)}\n",          // bad quoting
  };
  // Each has 64 data bytes, enough for the shape it announces (but the 100).
  NpyHeader good;
  ASSERT_TRUE(Parse(RawHeader("{'descr': '|u1', 'fortran_order': False, 'shape': (64,)}\n",
                              std::string(64, 'x')), &good).ok());
  for (const std::string& text : bad) {
    NpyHeader h;
    Status s = Parse(RawHeader(text, std::string(64, 'x')), &h);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
  }
  NpyHeader h;
  std::vector<uint8_t> f = NpyBytes("|u1", {1}, {1});
  f[0] = 'x';
  EXPECT_FALSE(Parse(f, &h).ok());  // no magic
  f = NpyBytes("|u1", {1}, {1});
  f[6] = 4;
  EXPECT_NE(Parse(f, &h).message().find("version 4"), std::string::npos);
  f = NpyBytes("|u1", {1}, {1});
  f[8] = 0xFF;  // header length past the end
  EXPECT_FALSE(Parse(f, &h).ok());
  // Every truncation of a valid file fails cleanly.
  f = NpyBytes("|u1", {2, 2, 2, 3}, std::vector<uint8_t>(24, 1));
  for (size_t n = 0; n < f.size(); ++n) {
    EXPECT_FALSE(ParseNpyHeader(f.data(), n, &h).ok()) << n;
  }
  EXPECT_TRUE(ParseNpyHeader(f.data(), f.size(), &h).ok());
}

std::vector<uint8_t> Le(int64_t v, int size) {
  std::vector<uint8_t> out;
  for (int i = 0; i < size; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

TEST(NpyLabelsTest, EveryNumericDtypeBecomesInt64) {
  TempDir dir;
  const std::string p = dir.path() + "/y.npy";
  struct Case {
    std::string descr;
    std::vector<uint8_t> data;
    std::vector<int64_t> want;
  };
  auto cat = [](std::vector<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (auto& v : parts) out.insert(out.end(), v.begin(), v.end());
    return out;
  };
  float f1 = 7.0f, f2 = -2.0f;
  std::vector<uint8_t> floats(8);
  std::memcpy(floats.data(), &f1, 4);
  std::memcpy(floats.data() + 4, &f2, 4);
  const std::vector<Case> cases = {
      {"|i1", {0xFF, 5}, {-1, 5}},
      {"|u1", {0xFF, 5}, {255, 5}},
      {"|b1", {1, 0}, {1, 0}},
      {"<i2", cat({Le(-300, 2), Le(300, 2)}), {-300, 300}},
      {">i2", {0xFE, 0xD4, 0x01, 0x2C}, {-300, 300}},
      {"<u2", cat({Le(65535, 2), Le(1, 2)}), {65535, 1}},
      {"<i4", cat({Le(-70000, 4), Le(9, 4)}), {-70000, 9}},
      {"<u4", cat({Le(4000000000, 4), Le(0, 4)}), {4000000000, 0}},
      {"<i8", cat({Le(-5000000000, 8), Le(1, 8)}), {-5000000000, 1}},
      {"<u8", cat({Le(12, 8), Le(13, 8)}), {12, 13}},
      {"<f4", floats, {7, -2}},
  };
  for (const Case& c : cases) {
    WriteFile(p, NpyBytes(c.descr, {2}, c.data));
    auto v = ReadNpyLabels(p);
    ASSERT_TRUE(v.ok()) << c.descr << ": " << v.status().ToString();
    EXPECT_EQ(v.value(), c.want) << c.descr;
  }
  double half = 2.5;
  std::vector<uint8_t> d(8);
  std::memcpy(d.data(), &half, 8);
  WriteFile(p, NpyBytes("<f8", {1}, d));
  EXPECT_NE(ReadNpyLabels(p).status().message().find("not an integral"), std::string::npos);
  WriteFile(p, NpyBytes("<u8", {1}, std::vector<uint8_t>(8, 0xFF)));
  EXPECT_FALSE(ReadNpyLabels(p).ok());
  WriteFile(p, NpyBytes("<i8", {1, 1}, Le(1, 8)));
  EXPECT_NE(ReadNpyLabels(p).status().message().find("1-D"), std::string::npos);
}

// n images h x w, RGB HWC, from MakePixels.
std::vector<uint8_t> Images(int n, int h, int w) {
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    auto p = testing::MakePixels(w, h, 100 + i);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

std::vector<uint8_t> ToNchw(const std::vector<uint8_t>& nhwc, int n, int h, int w) {
  std::vector<uint8_t> out(nhwc.size());
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < h * w; ++p)
        out[(static_cast<size_t>(i) * 3 + c) * h * w + p] = nhwc[(static_cast<size_t>(i) * h * w + p) * 3 + c];
  return out;
}

TEST(NpySourceTest, NhwcIsZeroCopyAndNchwMatchesIt) {
  TempDir dir;
  const int n = 3, h = 5, w = 7;
  const auto px = Images(n, h, w);
  WriteFile(dir.path() + "/x.npy", NpyBytes("|u1", {n, h, w, 3}, px));
  WriteFile(dir.path() + "/c.npy", NpyBytes("|u1", {n, 3, h, w}, ToNchw(px, n, h, w)));
  WriteFile(dir.path() + "/y.npy", NpyBytes("<i8", {n}, [] {
              std::vector<uint8_t> v;
              for (int i = 0; i < 3; ++i) for (uint8_t b : Le(10 + i, 8)) v.push_back(b);
              return v;
            }()));
  auto a = NpySource::Open(dir.path() + "/x.npy", dir.path() + "/y.npy");
  auto b = NpySource::Open(dir.path() + "/c.npy", "");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(a.value()->zero_copy());
  EXPECT_TRUE(b.value()->nchw());
  EXPECT_EQ(a.value()->size(), n);
  SampleScratch sa, sb;
  for (int i = 0; i < n; ++i) {
    SampleData da, db;
    ASSERT_TRUE(a.value()->ReadIndex(i, &sa, &da).ok());
    ASSERT_TRUE(b.value()->ReadIndex(i, &sb, &db).ok());
    EXPECT_EQ(da.label, 10 + i);
    EXPECT_EQ(db.label, -1);
    EXPECT_EQ(da.pixel_width, w);
    EXPECT_EQ(da.pixel_height, h);
    EXPECT_TRUE(sa.bytes.empty());  // served from the mapping
    EXPECT_EQ(0, std::memcmp(da.pixels, px.data() + static_cast<size_t>(i) * h * w * 3, h * w * 3));
    EXPECT_EQ(0, std::memcmp(db.pixels, da.pixels, h * w * 3)) << i;
  }
  EXPECT_NE(a.value()->Describe().find("NHWC"), std::string::npos);
  EXPECT_EQ(a.value()->NameOf(2), dir.path() + "/x.npy[2]");
  SampleData d;
  EXPECT_FALSE(a.value()->ReadIndex(n, &sa, &d).ok());
}

TEST(NpySourceTest, GreyIsReplicated) {
  TempDir dir;
  std::vector<uint8_t> g = {1, 2, 3, 4, 5, 6};
  WriteFile(dir.path() + "/g.npy", NpyBytes("|u1", {1, 2, 3, 1}, g));
  auto s = NpySource::Open(dir.path() + "/g.npy", "");
  ASSERT_TRUE(s.ok());
  SampleScratch sc;
  SampleData d;
  ASSERT_TRUE(s.value()->ReadIndex(0, &sc, &d).ok());
  for (int i = 0; i < 6; ++i) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(d.pixels[i * 3 + c], g[i]);
  }
}

TEST(NpySourceTest, BadArraysAreRefusedWithTheReason) {
  TempDir dir;
  const std::string p = dir.path() + "/x.npy";
  auto msg = [&](const std::vector<uint8_t>& f, const std::string& labels = "") {
    WriteFile(p, f);
    auto s = NpySource::Open(p, labels);
    EXPECT_FALSE(s.ok());
    return s.status().message();
  };
  EXPECT_NE(msg(NpyBytes("<f4", {1, 2, 2, 3}, std::vector<uint8_t>(48))).find("uint8"),
            std::string::npos);
  EXPECT_NE(msg(NpyBytes("|u1", {2, 2, 3}, std::vector<uint8_t>(12))).find("4-D"),
            std::string::npos);
  EXPECT_NE(msg(NpyBytes("|u1", {1, 4, 4, 4}, std::vector<uint8_t>(64))).find("channel"),
            std::string::npos);
  EXPECT_NE(msg(NpyBytes("|u1", {1, 2, 2, 3}, std::vector<uint8_t>(12), true)).find("Fortran"),
            std::string::npos);
  EXPECT_NE(msg(NpyBytes("|u1", {1, 0, 2, 3}, {})).find("sides"), std::string::npos);
  EXPECT_NE(msg(NpyBytes("|u1", {2, 2, 2, 3}, std::vector<uint8_t>(20))).find("truncated"),
            std::string::npos);
  WriteFile(dir.path() + "/y.npy", NpyBytes("|u1", {3}, {0, 1, 2}));
  EXPECT_NE(msg(NpyBytes("|u1", {2, 2, 2, 3}, std::vector<uint8_t>(24)), dir.path() + "/y.npy")
                .find("3 labels for 2 images"),
            std::string::npos);
  EXPECT_EQ(NpySource::Open(dir.path() + "/missing.npy", "").status().code(),
            StatusCode::kNotFound);
  WriteFile(p, {});
  EXPECT_FALSE(NpySource::Open(p, "").ok());
  WriteFile(p, NpyBytes("|u1", {1, 3, 2, 3}, std::vector<uint8_t>(18)));
  EXPECT_FALSE(NpySource::Open(p, "", "NCWH").ok());
  auto forced = NpySource::Open(p, "", "NCHW");  // [1, 3, 2, 3]: both readings possible
  ASSERT_TRUE(forced.ok());
  EXPECT_TRUE(forced.value()->nchw());
  EXPECT_FALSE(NpySource::Open(p, "").value()->nchw());  // the default reads NHWC
}

// Raw pixels through the engine give exactly what decoding a lossless PNG of
// the same pixels gives, for both layouts and for the fast and slow paths.
TEST(NpySourceTest, LoaderOutputEqualsDecodedPng) {
  TempDir dir;
  const int n = 6, h = 40, w = 52;
  const auto px = Images(n, h, w);
  WriteFile(dir.path() + "/x.npy", NpyBytes("|u1", {n, h, w, 3}, px));
  WriteFile(dir.path() + "/c.npy", NpyBytes("|u1", {n, 3, h, w}, ToNchw(px, n, h, w)));
  std::vector<testing::MemorySample> samples;
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> one(px.begin() + static_cast<ptrdiff_t>(i) * h * w * 3,
                             px.begin() + static_cast<ptrdiff_t>(i + 1) * h * w * 3);
    std::vector<uint8_t> expected;
    testing::MemorySample s;
    s.bytes = testing::EncodePng(one, w, h, testing::PngSpec{}, &expected);
    ASSERT_EQ(expected, one);
    s.label = -1;
    samples.push_back(std::move(s));
  }
  auto png = std::make_shared<testing::MemorySource>(std::move(samples));
  const std::vector<std::vector<Transform>> chains = {
      {Transform::Resize(32), Transform::CenterCrop(28, 28)},
      {Transform::RandomResizedCrop(24, 24), Transform::RandomHorizontalFlip()},
      {Transform::CenterCrop(60, 60)},  // pads: the slow path
  };
  for (const auto& chain : chains) {
    LoaderOptions o;
    o.batch_size = 4;
    o.threads = 2;
    o.shuffle = true;
    o.seed = 3;
    o.dtype = DType::kUint8;
    o.transforms = chain;
    std::vector<std::vector<uint8_t>> outs;
    for (std::shared_ptr<Source> src :
         {std::shared_ptr<Source>(png),
          std::shared_ptr<Source>(NpySource::Open(dir.path() + "/x.npy", "").value()),
          std::shared_ptr<Source>(NpySource::Open(dir.path() + "/c.npy", "").value())}) {
      std::vector<uint8_t> all = testing::EpochImages(src, o);
      outs.push_back(std::move(all));
    }
    ASSERT_FALSE(outs[0].empty());
    EXPECT_EQ(outs[1], outs[0]) << chain[0].ToString();
    EXPECT_EQ(outs[2], outs[0]) << chain[0].ToString();
  }
}

}  // namespace
}  // namespace stoker
