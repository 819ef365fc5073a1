// Copyright 2026 The stoker Authors.
#include "source/shard_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "testing/files.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::TempDir;

using testing::ListDir;

std::string Text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// Every member of a (possibly compressed) tar; all must be regular files.
std::vector<testing::TarMember> ReadShard(const std::string& path) {
  auto m = testing::ReadTar(path);
  for (const auto& x : m) EXPECT_TRUE(x.regular) << x.name;
  EXPECT_FALSE(m.empty()) << path;
  return m;
}

Status AddSample(ShardWriter* w, int i, size_t size = 10) {
  std::string img(size, static_cast<char>('a' + i % 26));
  std::string cls = std::to_string(i);
  return w->Add("k" + std::to_string(i),
                {{"jpg", reinterpret_cast<const uint8_t*>(img.data()), img.size()},
                 {"cls", reinterpret_cast<const uint8_t*>(cls.data()), cls.size()}});
}

TEST(ShardWriterTest, SplitsBySamplesAndKeepsOrder) {
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    TempDir dir;
    ShardWriterOptions o;
    o.dir = dir.path() + "/out";
    o.prefix = "train";
    o.compression = c;
    o.max_shard_samples = 2;
    auto w = ShardWriter::Create(o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(AddSample(w.value().get(), i).ok());
    ASSERT_TRUE(w.value()->Finish().ok());
    const std::string sfx = ShardSuffix(c);
    EXPECT_EQ(ListDir(o.dir), (std::set<std::string>{"train-000000" + sfx, "train-000001" + sfx,
                                                   "train-000002" + sfx}));
    ASSERT_EQ(w.value()->shards().size(), 3u);
    EXPECT_EQ(w.value()->shards()[2].samples, 1);
    EXPECT_GT(w.value()->shards()[0].file_bytes, 0);
    std::vector<testing::TarMember> all;
    for (int s = 0; s < 3; ++s) {
      auto m = ReadShard(w.value()->ShardPath(s));
      all.insert(all.end(), m.begin(), m.end());
    }
    ASSERT_EQ(all.size(), 10u);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(all[2 * i].name, "k" + std::to_string(i) + ".jpg");
      EXPECT_EQ(Text(all[2 * i].data), std::string(10, static_cast<char>('a' + i)));
      EXPECT_EQ(all[2 * i + 1].name, "k" + std::to_string(i) + ".cls");
      EXPECT_EQ(Text(all[2 * i + 1].data), std::to_string(i));
    }
  }
}

TEST(ShardWriterTest, SplitsByBytes) {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.path();
  // A sample of 1000 + 1 bytes takes 512 + 1024 + 512 + 512 = 2560 tar bytes.
  o.max_shard_bytes = 2560 * 3;
  auto w = ShardWriter::Create(o);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(AddSample(w.value().get(), i, 1000).ok());
  ASSERT_TRUE(w.value()->Finish().ok());
  ASSERT_EQ(w.value()->shards().size(), 3u);
  EXPECT_EQ(w.value()->shards()[0].samples, 3);
  EXPECT_EQ(w.value()->shards()[1].samples, 3);
  EXPECT_EQ(w.value()->shards()[2].samples, 1);
  // A sample larger than the limit still gets written, alone.
  TempDir dir2;
  o.dir = dir2.path();
  o.max_shard_bytes = 100;
  auto w2 = ShardWriter::Create(o);
  ASSERT_TRUE(AddSample(w2.value().get(), 0, 1000).ok());
  ASSERT_TRUE(AddSample(w2.value().get(), 1, 1000).ok());
  ASSERT_TRUE(w2.value()->Finish().ok());
  EXPECT_EQ(w2.value()->shards().size(), 2u);
}

TEST(ShardWriterTest, LongNamesUsePax) {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.path();
  auto w = ShardWriter::Create(o);
  const std::string key(150, 'x');
  const std::string data = "7";
  ASSERT_TRUE(w.value()->Add(key, {{"cls", reinterpret_cast<const uint8_t*>(data.data()), 1}}).ok());
  ASSERT_TRUE(w.value()->Finish().ok());
  auto m = ReadShard(w.value()->ShardPath(0));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].name, key + ".cls");
}

TEST(ShardWriterTest, UnfinishedShardLeavesNoFile) {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.path();
  o.max_shard_samples = 2;
  {
    auto w = ShardWriter::Create(o);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(AddSample(w.value().get(), i).ok());
    // Dropped without Finish (an error upstream): shard 0 is complete, shard 1 is not.
  }
  EXPECT_EQ(ListDir(dir.path()), std::set<std::string>{"shard-000000.tar"});
}

TEST(ShardWriterTest, RefusesExistingOutputUnlessOverwrite) {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.path();
  o.max_shard_samples = 1;
  {
    auto w = ShardWriter::Create(o);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(AddSample(w.value().get(), i).ok());
    ASSERT_TRUE(w.value()->Finish().ok());
  }
  testing::WriteFile(dir.path() + "/other-000000.tar", {1});  // another prefix: untouched
  auto again = ShardWriter::Create(o);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("--overwrite"), std::string::npos);
  o.overwrite = true;
  auto w = ShardWriter::Create(o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(AddSample(w.value().get(), 9).ok());
  ASSERT_TRUE(w.value()->Finish().ok());
  // The older, longer run's shards 1 and 2 are gone.
  EXPECT_EQ(ListDir(dir.path()), (std::set<std::string>{"shard-000000.tar", "other-000000.tar"}));
  EXPECT_EQ(ReadShard(dir.path() + "/shard-000000.tar")[0].name, "k9.jpg");
}

TEST(ShardWriterTest, RemovesStaleTempsOnly) {
  TempDir dir;
  const std::string d = dir.path();
  testing::WriteFile(d + "/shard-000003.tar.tmp-2147483646", {1});        // no such process
  testing::WriteFile(d + "/shard-000001.tar.tmp-" + std::to_string(getppid()), {1});  // alive
  testing::WriteFile(d + "/other-000000.tar.tmp-2147483646", {1});        // other prefix
  ShardWriterOptions o;
  o.dir = d;
  auto w = ShardWriter::Create(o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(ListDir(d), (std::set<std::string>{"shard-000001.tar.tmp-" + std::to_string(getppid()),
                                             "other-000000.tar.tmp-2147483646"}));
}

TEST(ShardWriterTest, BadArguments) {
  TempDir dir;
  ShardWriterOptions o;
  o.dir = dir.path();
  o.prefix = "a.b";
  EXPECT_FALSE(ShardWriter::Create(o).ok());
  o.prefix = "a-b";
  EXPECT_FALSE(ShardWriter::Create(o).ok());
  o.prefix = "ok";
  testing::WriteFile(dir.path() + "/file", {1});
  o.dir = dir.path() + "/file";
  EXPECT_FALSE(ShardWriter::Create(o).ok());
  o.dir = dir.path();
  auto w = ShardWriter::Create(o);
  const uint8_t b = 1;
  EXPECT_EQ(w.value()->Add("a.b", {{"cls", &b, 1}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.value()->Add("", {{"cls", &b, 1}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCompression("lz4").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCompression("zstd").value(), Compression::kZstd);
}

}  // namespace
}  // namespace stoker
