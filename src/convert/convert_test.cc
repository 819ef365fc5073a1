// Copyright 2026 The stoker Authors.
#include "convert/convert.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <set>

#include "base/atomic_file.h"
#include "base/json.h"

#include "codec/decoder.h"
#include "source/image_folder.h"
#include "stoker/sources.h"
#include "testing/files.h"
#include "testing/memory_source.h"
#include "testing/test_arrays.h"
#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

using testing::ListDir;

std::vector<testing::TarMember> ReadShards(const std::vector<ShardInfo>& shards) {
  std::vector<testing::TarMember> out;
  for (const ShardInfo& s : shards) {
    auto m = testing::ReadTar(s.path);
    EXPECT_FALSE(m.empty()) << s.path;
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

// root/cat/{a.b.jpg, x.png}, root/dog/{x.JPEG, sub/y.jpg}: a PNG, a dotted
// name, and the base name "x" twice.
std::string MakeFolder(const TempDir& dir, int w = 80, int h = 60) {
  const std::string r = dir.path() + "/src";
  MakeDirs(r + "/cat");
  MakeDirs(r + "/dog/sub");
  auto jpeg = [&](uint64_t seed) { return testing::EncodeJpeg(testing::MakePixels(w, h, seed), w, h); };
  std::vector<uint8_t> unused;
  WriteFile(r + "/cat/a.b.jpg", jpeg(1));
  WriteFile(r + "/cat/x.png", testing::EncodePng(testing::MakePixels(w, h, 2), w, h, {}, &unused));
  WriteFile(r + "/dog/x.JPEG", jpeg(3));
  WriteFile(r + "/dog/sub/y.jpg", jpeg(4));
  return r;
}

TEST(ConvertTest, KeysFromNames) {
  EXPECT_EQ(ShardKeyFromName("/d/n01440764/n01440764_10026.JPEG"), "n01440764_10026");
  EXPECT_EQ(ShardKeyFromName("a/b.c.png"), "b_c");
  EXPECT_EQ(ShardKeyFromName("x.npy[12]"), "x_npy_12_");
  EXPECT_EQ(ShardKeyFromName("dir/"), "_");
}

TEST(ConvertTest, FolderRoundTripKeepsBytesOrderAndLabels) {
  TempDir dir;
  const std::string src = MakeFolder(dir);
  auto folder = ImageFolder::Open(src).value();
  ConvertOptions o;
  o.shards.dir = dir.path() + "/out";
  o.shards.max_shard_samples = 3;
  o.threads = 3;
  int64_t calls = 0;
  o.progress = [&](int64_t done, int64_t total, int64_t) {
    EXPECT_EQ(done, ++calls);
    EXPECT_EQ(total, 4);
  };
  auto r = ConvertToShards(folder.get(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().samples, 4);
  EXPECT_EQ(r.value().reencoded, 0);
  EXPECT_EQ(r.value().shards.size(), 2u);
  EXPECT_EQ(calls, 4);
  const auto m = ReadShards(r.value().shards);
  ASSERT_EQ(m.size(), 8u);
  const std::vector<std::string> names = {"a_b.jpg", "a_b.cls", "x.png", "x.cls",
                                          "x_2.jpg", "x_2.cls", "y.jpg", "y.cls"};
  for (size_t i = 0; i < m.size(); ++i) EXPECT_EQ(m[i].name, names[i]);
  SampleScratch scratch;
  for (int i = 0; i < 4; ++i) {
    SampleData d;
    ASSERT_TRUE(folder->ReadIndex(i, &scratch, &d).ok());
    EXPECT_EQ(m[2 * i].data, std::vector<uint8_t>(d.bytes, d.bytes + d.size)) << i;
    const std::string label(m[2 * i + 1].data.begin(), m[2 * i + 1].data.end());
    EXPECT_EQ(label, std::to_string(folder->Label(i)));
  }
  EXPECT_EQ(r.value().input_bytes, [&] {
    int64_t s = 0;
    for (int i = 0; i < 4; i += 1) s += static_cast<int64_t>(m[2 * i].data.size());
    return s;
  }());
}

TEST(ConvertTest, ResizeShrinksLargeImagesOnly) {
  TempDir dir;
  const std::string src = MakeFolder(dir, 90, 60);
  WriteFile(src + "/cat/small.jpg",
            testing::EncodeJpeg(testing::MakePixels(30, 20, 9), 30, 20));
  auto folder = ImageFolder::Open(src).value();
  ConvertOptions o;
  o.shards.dir = dir.path() + "/out";
  o.shards.compression = Compression::kZstd;
  o.resize = 32;
  o.quality = 95;
  o.threads = 2;
  auto r = ConvertToShards(folder.get(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().reencoded, 4);
  const auto m = ReadShards(r.value().shards);
  ASSERT_EQ(m.size(), 10u);
  ImageDecoder dec;
  for (size_t i = 0; i < m.size(); i += 2) {
    ASSERT_EQ(m[i].name.substr(m[i].name.size() - 4), ".jpg") << m[i].name;  // PNG re-encoded
    DecodedRegion out;
    ASSERT_TRUE(dec.DecodeAll(m[i].data.data(), m[i].data.size(), &out).ok());
    if (m[i].name == "small.jpg") {
      EXPECT_EQ(out.pixels.width, 30);  // kept as it was
      SampleScratch sc;
      SampleData d;
      ASSERT_TRUE(folder->ReadIndex(1, &sc, &d).ok());  // cat/small.jpg
      EXPECT_EQ(m[i].data, std::vector<uint8_t>(d.bytes, d.bytes + d.size));
    } else {
      EXPECT_EQ(out.pixels.height, 32) << m[i].name;  // 90x60 -> 48x32
      EXPECT_EQ(out.pixels.width, 48) << m[i].name;
    }
  }
}

TEST(ConvertTest, RawPixelsAreEncoded) {
  std::vector<testing::MemorySample> samples(3);
  for (int i = 0; i < 3; ++i) {
    samples[i].bytes = testing::MakePixels(40, 20, i);
    samples[i].raw_width = 40;
    samples[i].raw_height = 20;
    samples[i].label = i == 1 ? -1 : i;  // -1: no .cls
    samples[i].name = "arr.npy[" + std::to_string(i) + "]";
  }
  testing::MemorySource src(std::move(samples));
  TempDir dir;
  ConvertOptions o;
  o.shards.dir = dir.path();
  o.resize = 10;
  auto r = ConvertToShards(&src, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto m = ReadShards(r.value().shards);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].name, "arr_npy_0_.jpg");
  EXPECT_EQ(m[2].name, "arr_npy_1_.jpg");
  EXPECT_EQ(m[3].name, "arr_npy_2_.jpg");
  ImageDecoder dec;
  DecodedRegion out;
  ASSERT_TRUE(dec.DecodeAll(m[0].data.data(), m[0].data.size(), &out).ok());
  EXPECT_EQ(out.pixels.width, 20);
  EXPECT_EQ(out.pixels.height, 10);
}

// Records: every field is written as KEY.NAME.<kind's extension> (the primary
// image and label as KEY.<format> and KEY.cls) and reads back through
// Shards(fields=) with the same values, here from a source of shard records
// (text, json, .npy arrays of two shapes, a label).
TEST(ConvertTest, RecordFieldsRoundTripThroughShards) {
  TempDir dir;
  std::vector<testing::TarEntry> in;
  std::vector<std::vector<uint8_t>> jpegs, embs;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "s" + std::to_string(i);
    jpegs.push_back(testing::EncodeJpeg(testing::MakePixels(16, 12, i), 16, 12));
    const std::vector<int16_t> e = {int16_t(i), int16_t(-i), 300};
    embs.emplace_back(reinterpret_cast<const uint8_t*>(e.data()),
                      reinterpret_cast<const uint8_t*>(e.data()) + (i == 2 ? 4 : 6));
    in.push_back({key + ".jpg", jpegs.back()});
    in.push_back({key + ".txt", testing::Text("caption " + std::to_string(i))});
    in.push_back({key + ".json", testing::Text("{\"i\": " + std::to_string(i) + "}")});
    in.push_back({key + ".npy", testing::NpyBytes("<i2", {i == 2 ? 2 : 3}, embs.back())});
    in.push_back({key + ".cls", testing::Text(std::to_string(5 + i))});
  }
  WriteFile(dir.path() + "/in.tar", testing::MakeTar(in));
  ShardOptions so;
  so.patterns = {dir.path() + "/in.tar"};
  so.spec.fields = {{"image", {"jpg"}}, {"caption", {"txt"}}, {"meta", {"json"}},
                    {"emb", {"npy"}}, {"label", {"cls"}}};
  auto src = OpenShards(so);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ConvertOptions o;
  o.shards.dir = dir.path() + "/out";
  auto r = ConvertToShards(src.value().get(), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto m = ReadShards(r.value().shards);
  ASSERT_EQ(m.size(), 15u);
  EXPECT_EQ(m[0].name.substr(m[0].name.find('.')), ".jpg");
  EXPECT_EQ(m[1].name.substr(m[1].name.find('.')), ".cls");
  EXPECT_EQ(m[2].name.substr(m[2].name.find('.')), ".caption.txt");
  EXPECT_EQ(m[3].name.substr(m[3].name.find('.')), ".meta.json");
  EXPECT_EQ(m[4].name.substr(m[4].name.find('.')), ".emb.npy");

  ShardOptions back;
  back.patterns = {r.value().shards[0].path};
  back.spec.fields = {{"image", {"jpg"}}, {"caption", {"caption.txt"}},
                      {"meta", {"meta.json"}}, {"emb", {"emb.npy"}}, {"label", {"cls"}}};
  auto read = OpenShards(back);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto reader = read.value()->StartEpoch(EpochSpec{});
  ASSERT_TRUE(reader.ok());
  SampleScratch scratch;
  for (int i = 0; i < 3; ++i) {
    SampleData d;
    bool end = false;
    ASSERT_TRUE(reader.value()->Read(i, &scratch, &d, &end).ok());
    ASSERT_FALSE(end);
    EXPECT_EQ(d.label, 5 + i);
    EXPECT_EQ(std::vector<uint8_t>(d.bytes, d.bytes + d.size), jpegs[i]);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.fields[1].data), d.fields[1].size),
              "caption " + std::to_string(i));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.fields[2].data), d.fields[2].size),
              "{\"i\": " + std::to_string(i) + "}");
    const FieldValue& e = d.fields[3];
    EXPECT_EQ(e.dtype, ElemType::kInt16);
    ASSERT_EQ(e.ndim, 1);
    EXPECT_EQ(e.dims[0], i == 2 ? 2 : 3);
    EXPECT_EQ(std::vector<uint8_t>(e.data, e.data + e.size), embs[i]);
  }
}

TEST(ConvertTest, BadSampleStopsWithItsNameAndLeavesNoPartialShard) {
  TempDir dir;
  const std::string src = MakeFolder(dir);
  WriteFile(src + "/dog/sub/z.jpg", {0xFF, 0xD8, 0xFF, 0xE0, 0, 0});  // truncated JPEG: last
  auto folder = ImageFolder::Open(src).value();
  ConvertOptions o;
  o.shards.dir = dir.path() + "/out";
  o.shards.max_shard_samples = 3;
  o.resize = 16;  // needs a decode
  auto r = ConvertToShards(folder.get(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("z.jpg"), std::string::npos) << r.status().ToString();
  // Samples 0-2 fill shard 0; shard 1 held sample 3 when sample 4 failed: deleted.
  EXPECT_EQ(ListDir(o.shards.dir), std::set<std::string>{"shard-000000.tar"});
  // Not an image at all, without resizing.
  WriteFile(src + "/dog/sub/z.jpg", {'h', 'i'});
  o.shards.overwrite = true;
  o.resize = 0;
  r = ConvertToShards(ImageFolder::Open(src).value().get(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a JPEG, PNG, WebP, TIFF, BMP or PNM image"), std::string::npos);
  o.quality = 0;
  EXPECT_EQ(ConvertToShards(folder.get(), o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ConvertTest, KilledRunLeavesNoFinalPartialShardAndRerunRecovers) {
  std::vector<testing::MemorySample> samples(20);
  for (int i = 0; i < 20; ++i) {
    samples[i].bytes = testing::EncodeJpeg(testing::MakePixels(16, 16, i), 16, 16);
    samples[i].label = i;
    samples[i].name = "s" + std::to_string(i) + ".jpg";
  }
  TempDir dir;
  ConvertOptions o;
  o.shards.dir = dir.path();
  o.shards.max_shard_samples = 6;
  o.threads = 1;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Killed right after sample 13 is written: no destructor, no cleanup runs.
    o.progress = [](int64_t done, int64_t, int64_t) {
      if (done == 14) _exit(3);
    };
    testing::MemorySource src(samples);
    (void)ConvertToShards(&src, o);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  // Shards 0 and 1 (samples 0-11) are complete; shard 2 was being written.
  std::set<std::string> after_kill = ListDir(dir.path());
  ASSERT_EQ(after_kill.size(), 3u);
  const std::string temp = *after_kill.rbegin();  // the killed child's temporary shard
  EXPECT_EQ(AtomicTempOwner(temp, "shard-000002.tar"), child) << temp;
  after_kill.erase(temp);
  EXPECT_EQ(after_kill, (std::set<std::string>{"shard-000000.tar", "shard-000001.tar"}));
  testing::MemorySource src(samples);
  auto refused = ConvertToShards(&src, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--overwrite"), std::string::npos);
  o.shards.overwrite = true;
  auto r = ConvertToShards(&src, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ListDir(dir.path()), (std::set<std::string>{"shard-000000.tar", "shard-000001.tar",
                                                      "shard-000002.tar", "shard-000003.tar"}));
  EXPECT_EQ(ReadShards(r.value().shards).size(), 40u);
}

// A source with class names of its own (MemorySource has none).
class NamedClassesSource : public testing::MemorySource {
 public:
  NamedClassesSource(std::vector<testing::MemorySample> samples, std::vector<std::string> classes)
      : testing::MemorySource(std::move(samples)), classes_(std::move(classes)) {}
  std::vector<std::string> classes() const override { return classes_; }

 private:
  std::vector<std::string> classes_;
};

std::vector<testing::MemorySample> OneSample() {
  std::vector<testing::MemorySample> samples(1);
  samples[0].bytes = testing::EncodeJpeg(testing::MakePixels(8, 8, 1), 8, 8);
  samples[0].name = "a.jpg";
  return samples;
}

bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += static_cast<size_t>(n);
  }
  return true;
}

// Issue 32 item 25: a class folder named in Latin-1 went into classes.json
// as raw bytes (not UTF-8, so not JSON), and Python could not read the
// class names back. Bytes that are not UTF-8 are written as the surrogate
// escapes os.fsdecode makes ("\udce9", which Python's json reads as the
// same str), and read back as the original bytes.
TEST(ConvertTest, ClassNamesThatAreNotUtf8AreValidJson) {
  TempDir dir;
  const std::vector<std::string> names = {"caf\xe9", "ok", "\xff\xfe", "\xc3\xa9t\xc3\xa9"};
  NamedClassesSource src(OneSample(), names);
  ConvertOptions o;
  o.shards.dir = dir.path();
  ASSERT_TRUE(ConvertToShards(&src, o).ok());
  std::ifstream in(dir.path() + "/classes.json", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(ValidUtf8(text)) << text;
  EXPECT_NE(text.find("caf\\udce9"), std::string::npos) << text;
  EXPECT_NE(text.find("\xc3\xa9t\xc3\xa9"), std::string::npos) << text;  // UTF-8 kept as is
  std::vector<std::string> back;
  ASSERT_TRUE(ParseJsonStringArray(text, &back)) << text;
  EXPECT_EQ(back, names);
}

// Issue 32 item 33: a full disk while classes.json was written left a
// classes.json.tmp behind. The write is checked and the temporary removed.
// The disk fills up here through RLIMIT_FSIZE (the shard fits, the 130 KB
// of class names do not), in a child process.
TEST(ConvertTest, FailedClassNamesWriteLeavesNoTemporary) {
  TempDir dir;
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("class_" + std::string(60, 'x') + std::to_string(i));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // write() fails with EFBIG instead
    struct rlimit lim = {64 << 10, 64 << 10};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    NamedClassesSource src(OneSample(), names);
    ConvertOptions o;
    o.shards.dir = dir.path();
    auto r = ConvertToShards(&src, o);
    if (r.ok()) _exit(2);
    if (r.status().message().find("classes.json") == std::string::npos) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ListDir(dir.path()), std::set<std::string>{"shard-000000.tar"});
}

}  // namespace
}  // namespace stoker
