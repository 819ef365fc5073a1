// Copyright 2026 The stoker Authors.
#include "source/tar_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker {
namespace {

using testing::MakeTar;
using testing::TarEntry;
using testing::TarFilter;
using testing::TarFormat;
using testing::Text;

// Small chunks: members straddle the reads.
std::unique_ptr<ByteStream> Mem(std::vector<uint8_t> bytes) {
  return MemoryStream(std::move(bytes), "mem.tar", 777);
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

struct Got {
  std::vector<ShardSample> samples;
  Status error;
};

Got ReadAll(std::vector<uint8_t> tar, const SampleSpec& spec = {}) {
  Got g;
  auto r = ShardSampleReader::FromStream(Mem(std::move(tar)), spec);
  if (!r.ok()) {
    g.error = r.status();
    return g;
  }
  for (;;) {
    ShardSample s;
    bool end = false;
    Status st = r.value()->Next(&s, &end);
    if (!st.ok()) {
      g.error = st;
      continue;  // the reader ends by itself after damage
    }
    if (end) break;
    g.samples.push_back(std::move(s));
  }
  return g;
}

TEST(TarReaderTest, SplitKeyAtTheFirstDotOfTheBasename) {
  std::string key, ext;
  ASSERT_TRUE(SplitKey("n01440764_10026.jpg", &key, &ext));
  EXPECT_EQ(key, "n01440764_10026");
  EXPECT_EQ(ext, "jpg");
  ASSERT_TRUE(SplitKey("a.b/c/n0144.seg.png", &key, &ext));
  EXPECT_EQ(key, "a.b/c/n0144");
  EXPECT_EQ(ext, "seg.png");
  EXPECT_FALSE(SplitKey("dir.x/README", &key, &ext));
}

TEST(TarReaderTest, ParseLabel) {
  auto v = ParseLabel(reinterpret_cast<const uint8_t*>(" 42\n"), 4);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value(), 42);
  EXPECT_EQ(ParseLabel(reinterpret_cast<const uint8_t*>("-3"), 2, true).value(), -3);
  // Issue 17 item 17: refused unless asked.
  const auto neg = ParseLabel(reinterpret_cast<const uint8_t*>("-5\n"), 3);
  EXPECT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative label -5"), std::string::npos);
  EXPECT_EQ(ParseLabel(reinterpret_cast<const uint8_t*>("-0"), 2).value(), 0);
  EXPECT_FALSE(ParseLabel(reinterpret_cast<const uint8_t*>("4x"), 2).ok());
  EXPECT_FALSE(ParseLabel(reinterpret_cast<const uint8_t*>(""), 0).ok());
  EXPECT_FALSE(ParseLabel(reinterpret_cast<const uint8_t*>("99999999999999999999"), 20).ok());
}

TEST(TarReaderTest, GroupsMembersByKeyInEveryFormatAndFilter) {
  const std::string long_dir(120, 'd');  // needs pax or GNU long names
  std::vector<TarEntry> entries = {
      {"a/s0.jpg", Bytes(3000, 1)},  {"a/s0.cls", Text("3")},     {"a/s0.json", Text("{}")},
      {"a/s1.cls", Text("4\n")},     {"a/s1.png", Bytes(700, 2)}, {"a/s1.jpg", Bytes(10, 3)},
      {long_dir + "/s2.jpeg", Bytes(1, 4)}, {long_dir + "/s2.cls", Text("5")},
      {"README", Text("no extension: ignored")},
  };
  for (TarFormat f : {TarFormat::kPax, TarFormat::kGnu}) {
    for (TarFilter c : {TarFilter::kNone, TarFilter::kGzip, TarFilter::kZstd}) {
      Got g = ReadAll(MakeTar(entries, f, c));
      ASSERT_TRUE(g.error.ok()) << g.error.ToString();
      ASSERT_EQ(g.samples.size(), 3u);
      EXPECT_EQ(g.samples[0].key, "a/s0");
      EXPECT_EQ(g.samples[0].bytes, Bytes(3000, 1));
      EXPECT_EQ(g.samples[0].label, 3);
      // jpg is listed before png: it wins although png comes first.
      EXPECT_EQ(g.samples[1].image_member, "a/s1.jpg");
      EXPECT_EQ(g.samples[1].bytes, Bytes(10, 3));
      EXPECT_EQ(g.samples[1].label, 4);
      EXPECT_EQ(g.samples[2].key, long_dir + "/s2");
      EXPECT_EQ(g.samples[2].label, 5);
    }
  }
}

TEST(TarReaderTest, DataOffsetsPointAtTheMemberBytes) {
  std::vector<TarEntry> entries = {{std::string(150, 'x') + ".jpg", Bytes(1234, 9)},
                                   {"y.jpg", Bytes(513, 8)}};
  const std::vector<uint8_t> tar = MakeTar(entries);
  SampleSpec spec;
  spec.label_ext = "";
  auto r = ShardSampleReader::FromStream(Mem(tar), spec, false).value();
  for (const TarEntry& e : entries) {
    ShardSample s;
    bool end = false;
    ASSERT_TRUE(r->Next(&s, &end).ok());
    ASSERT_FALSE(end);
    ASSERT_EQ(s.data_size, static_cast<int64_t>(e.data.size()));
    EXPECT_TRUE(s.bytes.empty());
    EXPECT_EQ(std::vector<uint8_t>(tar.begin() + s.data_offset,
                                   tar.begin() + s.data_offset + s.data_size),
              e.data);
  }
}

TEST(TarReaderTest, MissingImageOrLabelIsAnErrorOfThatSampleOnly) {
  Got g = ReadAll(MakeTar({{"k0.jpg", Bytes(5, 1)}, {"k0.cls", Text("1")},
                           {"k1.txt", Text("x")}, {"k1.cls", Text("2")},
                           {"k2.jpg", Bytes(5, 2)}, {"k2.cls", Text("two")},
                           {"k3.jpg", Bytes(5, 3)}, {"k3.cls", Text("3")}}));
  ASSERT_EQ(g.samples.size(), 2u);
  EXPECT_EQ(g.samples[1].key, "k3");
  EXPECT_NE(g.error.message().find("k2.cls"), std::string::npos) << g.error.ToString();
}

TEST(TarReaderTest, DeclaredHugeMemberAllocatesOnlyWhatIsPresent) {
  std::vector<uint8_t> tar = MakeTar({{"k0.jpg", Bytes(150000, 1)}, {"k0.cls", Text("1")}},
                                     TarFormat::kUstar);
  // k0.jpg's header declares 900 MiB (octal in bytes 124..135), checksum redone.
  std::snprintf(reinterpret_cast<char*>(tar.data() + 124), 12, "%011o", 900u << 20);
  std::memset(tar.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += tar[i];
  std::snprintf(reinterpret_cast<char*>(tar.data() + 148), 8, "%06o", sum);
  tar[155] = ' ';
  SampleSpec spec;
  spec.max_member_bytes = int64_t{1} << 30;  // under the limit: only the bytes present count
  auto r = TarReader::Open(Mem(tar), spec.max_member_bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  TarMember m;
  bool end = false;
  ASSERT_TRUE(r.value()->Next(&m, &end).ok());
  ASSERT_EQ(m.size, int64_t{900} << 20);
  std::vector<uint8_t> data;
  const Status st = r.value()->ReadData(&data);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("k0.jpg"), std::string::npos) << st.ToString();
  EXPECT_LT(data.capacity(), size_t{4} << 20);  // was 900 MiB
  // Over the (default, 256 MiB) limit: refused before reading, by name.
  auto r2 = TarReader::Open(Mem(tar));
  ASSERT_TRUE(r2.value()->Next(&m, &end).ok());
  const Status st2 = r2.value()->ReadData(&data);
  EXPECT_NE(st2.message().find("max_sample_bytes"), std::string::npos) << st2.ToString();
}

TEST(TarReaderTest, TruncatedMemberNamesShardAndMember) {
  std::vector<uint8_t> tar = MakeTar({{"k0.jpg", Bytes(5000, 1)}, {"k0.cls", Text("1")},
                                      {"k1.jpg", Bytes(5000, 2)}, {"k1.cls", Text("1")}});
  tar.resize(512 * 3 + 5000 + 1024 + 512 + 2000);  // cut inside k1.jpg's data
  Got g = ReadAll(tar);
  ASSERT_FALSE(g.error.ok());
  EXPECT_EQ(g.samples.size(), 1u);
  EXPECT_NE(g.error.message().find("mem.tar: member k1.jpg"), std::string::npos)
      << g.error.ToString();
}

TEST(TarReaderTest, BadHeaderChecksumIsAnError) {
  std::vector<uint8_t> tar = MakeTar({{"k0.jpg", Bytes(100, 1)}, {"k0.cls", Text("1")},
                                      {"k1.jpg", Bytes(100, 2)}, {"k1.cls", Text("1")}},
                                     TarFormat::kUstar);
  tar[512 * 4 + 10] ^= 0x55;  // k1.jpg's header (after 2 x (header + 1 data block))
  Got g = ReadAll(tar);
  ASSERT_FALSE(g.error.ok());
  EXPECT_NE(g.error.message().find("after member k0.cls"), std::string::npos)
      << g.error.ToString();
  EXPECT_EQ(g.samples.size(), 1u);
}

TEST(TarReaderTest, TruncatedCompressedStreamIsAnError) {
  for (TarFilter c : {TarFilter::kGzip, TarFilter::kZstd}) {
    std::vector<uint8_t> payload = testing::MakePixels(200, 200, 3);  // compresses poorly
    std::vector<uint8_t> tar = MakeTar({{"k0.jpg", payload}, {"k0.cls", Text("1")},
                                        {"k1.jpg", payload}, {"k1.cls", Text("2")}},
                                       TarFormat::kPax, c);
    tar.resize(tar.size() * 3 / 4);
    Got g = ReadAll(tar);
    ASSERT_FALSE(g.error.ok()) << static_cast<int>(c);
    EXPECT_NE(g.error.message().find("mem.tar"), std::string::npos) << g.error.ToString();
    EXPECT_LE(g.samples.size(), 1u);
  }
}

TEST(TarReaderTest, GarbageAndEmptyInput) {
  EXPECT_FALSE(ReadAll(Bytes(3000, 5)).error.ok());
  Got empty = ReadAll({});
  EXPECT_TRUE(empty.error.ok()) << empty.error.ToString();
  EXPECT_TRUE(empty.samples.empty());
}

}  // namespace
}  // namespace stoker
