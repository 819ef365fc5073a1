// Copyright 2026 The stoker Authors.
#include "source/shards.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "source/tar_index.h"
#include "stoker/loader.h"
#include "testing/loader_fixtures.h"
#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker {
namespace {

using testing::MakeTar;
using testing::TarEntry;
using testing::TarFilter;
using testing::TarFormat;
using testing::Text;

// `shards` shards of `per` samples each: key s<shard>_<i>, a small JPEG and
// label (shard * per + i) % 10. Returns the paths.
std::vector<std::string> WriteShards(const std::string& dir, int shards, int per,
                                     TarFilter filter = TarFilter::kNone,
                                     const std::string& ext = ".tar") {
  std::vector<std::string> paths;
  for (int s = 0; s < shards; ++s) {
    std::vector<TarEntry> entries;
    for (int i = 0; i < per; ++i) {
      const int g = s * per + i;
      const std::string key = "sub/s" + std::to_string(s) + "_" + std::to_string(i);
      const int w = 24 + g % 9, h = 20 + g % 7;
      entries.push_back({key + ".jpg", testing::EncodeJpeg(testing::MakePixels(w, h, g), w, h)});
      entries.push_back({key + ".cls", Text(std::to_string(g % 10))});
      entries.push_back({key + ".json", Text("{\"g\": " + std::to_string(g) + "}")});
    }
    char name[64];
    std::snprintf(name, sizeof name, "/train-%03d", s);
    paths.push_back(dir + name + ext);
    testing::WriteFile(paths.back(), MakeTar(entries, TarFormat::kPax, filter));
  }
  return paths;
}

LoaderOptions Options(int batch, int threads, bool shuffle) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.shuffle = shuffle;
  o.seed = 3;
  o.dtype = DType::kUint8;
  o.transforms = {Transform::Resize(16, 16)};
  return o;
}

// One epoch through the shared consumer, with the samples it skipped.
struct Epoch : testing::Delivered {
  int64_t skipped = 0;
};

Epoch RunEpoch(Loader* loader) {
  Epoch e;
  static_cast<testing::Delivered&>(e) = testing::RunEpoch(loader);
  e.skipped = loader->stats().epoch.skipped;
  return e;
}

std::shared_ptr<Source> Open(const std::string& pattern, ShardMode mode, int buffer = 8) {
  ShardOptions o;
  o.patterns = {pattern};
  o.mode = mode;
  o.shuffle_buffer = buffer;
  o.concurrent_shards = 2;
  auto s = OpenShards(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? s.value() : nullptr;
}

TEST(ShardPatternTest, BracesAndGlobs) {
  auto v = ExpandBraces("d/t-{008..011}.{tar,tgz}").value();
  EXPECT_EQ(v, (std::vector<std::string>{"d/t-008.tar", "d/t-008.tgz", "d/t-009.tar", "d/t-009.tgz",
                                         "d/t-010.tar", "d/t-010.tgz", "d/t-011.tar", "d/t-011.tgz"}));
  EXPECT_EQ(ExpandBraces("a{1..3}").value(), (std::vector<std::string>{"a1", "a2", "a3"}));
  EXPECT_FALSE(ExpandBraces("a{1..3").ok());
  EXPECT_FALSE(ExpandBraces("a{5..3}").ok());

  testing::TempDir dir;
  WriteShards(dir.path(), 3, 1);
  auto g = ExpandShardPatterns({dir.path() + "/train-*.tar"}).value();
  EXPECT_EQ(g.size(), 3u);
  EXPECT_TRUE(g[0] < g[1] && g[1] < g[2]);
  EXPECT_EQ(ExpandShardPatterns({dir.path() + "/train-{000..002}.tar"}).value(), g);
  auto none = ExpandShardPatterns({dir.path() + "/nothing-*.tar"});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("nothing-*.tar"), std::string::npos);
  EXPECT_EQ(ExpandShardPatterns({dir.path() + "/train-{000..003}.tar"}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ExpandShardPatterns({"http://h/x-{0..1}.tar"}).value().size(), 2u);
}

TEST(ShardPatternTest, ExpansionIsBoundedBeforeMaterialising) {
  auto one = ExpandBraces("s-{0..9999999}.tar");
  EXPECT_EQ(one.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(one.status().message().find("10000000 shards"), std::string::npos)
      << one.status().message();
  // A product of small ranges is refused from the counts, not after building it.
  auto product = ExpandBraces("s-{0..999}-{0..999}-{0..99}.tar");
  EXPECT_EQ(product.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(product.status().message().find("100000000 shards"), std::string::npos)
      << product.status().message();
  EXPECT_EQ(ExpandBraces("s-{0..999}-{0..999}.tar").value().size(), 1000000u);
}

TEST(ShardPatternTest, UrlSchemes) {
  testing::TempDir dir;
  WriteShards(dir.path(), 2, 1);
  auto local = ExpandShardPatterns({"file://" + dir.path() + "/train-{000..001}.tar"});
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local.value()[0], dir.path() + "/train-000.tar");
  auto ftp = ExpandShardPatterns({"ftp://h/x.tar"});
  EXPECT_EQ(ftp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ftp.status().message().find("'ftp://' is not supported"), std::string::npos)
      << ftp.status().message();
}

TEST(ShardsTest, IndexedModeBehavesLikeAFolder) {
  testing::TempDir dir;
  WriteShards(dir.path(), 3, 7);
  auto src = Open(dir.path() + "/train-{000..002}.tar", ShardMode::kAuto);
  ASSERT_EQ(src->size(), 21);
  EXPECT_NE(src->Describe().find("indexed"), std::string::npos);
  auto loader = Loader::Create(src, Options(5, 3, true)).value();
  EXPECT_EQ(loader->num_batches(), 5);
  loader->SetEpoch(2);
  Epoch e = RunEpoch(loader.get());
  ASSERT_TRUE(e.status.ok()) << e.status.ToString();
  auto perm = EpochPermutation(21, 3, 2);
  ASSERT_EQ(e.ids.size(), 21u);
  for (int i = 0; i < 21; ++i) {
    EXPECT_EQ(e.ids[i], perm[i]);
    EXPECT_EQ(e.labels[i], perm[i] % 10);
  }
  // Indexed and streamed (unshuffled) read the same pixels in the same order.
  Epoch a = RunEpoch(Loader::Create(src, Options(4, 2, false)).value().get());
  Epoch b = RunEpoch(Loader::Create(Open(dir.path() + "/train-*.tar", ShardMode::kStream), Options(4, 2, false))
                    .value().get());
  ASSERT_TRUE(b.status.ok()) << b.status.ToString();
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST(ShardsTest, IndexIsCachedAndRebuiltWhenTheShardChanges) {
  testing::TempDir dir;
  auto paths = WriteShards(dir.path(), 1, 4);
  SampleSpec spec;
  bool built = false;
  ASSERT_TRUE(LoadOrBuildTarIndex(paths[0], spec, "", &built).ok());
  EXPECT_TRUE(built);
  EXPECT_EQ(::access((paths[0] + ".idx").c_str(), R_OK), 0);
  auto again = LoadOrBuildTarIndex(paths[0], spec, "", &built);
  EXPECT_FALSE(built);
  EXPECT_EQ(again.value().entries.size(), 4u);
  // Another spec: rebuilt.
  SampleSpec png_only;
  png_only.image_exts = {"jpg"};
  png_only.label_ext = "";
  ASSERT_TRUE(LoadOrBuildTarIndex(paths[0], png_only, "", &built).ok());
  EXPECT_TRUE(built);
  // Rewritten shard with other contents: rebuilt, 6 samples.
  WriteShards(dir.path(), 1, 6);
  struct timespec times[2] = {{0, UTIME_OMIT}, {1800000000, 0}};
  ::utimensat(AT_FDCWD, paths[0].c_str(), times, 0);
  auto rebuilt = LoadOrBuildTarIndex(paths[0], spec, "", &built);
  EXPECT_TRUE(built);
  EXPECT_EQ(rebuilt.value().entries.size(), 6u);
  // A cache directory instead of beside the shard.
  testing::TempDir cache;
  ASSERT_TRUE(LoadOrBuildTarIndex(paths[0], spec, cache.path(), &built).ok());
  EXPECT_TRUE(built);
  EXPECT_EQ(::access(TarIndexPath(paths[0], cache.path()).c_str(), R_OK), 0);
  // A corrupt cache file is ignored.
  testing::WriteFile(paths[0] + ".idx", Text("STKTIDX4 garbage"));
  auto fixed = LoadOrBuildTarIndex(paths[0], spec, "", &built);
  EXPECT_TRUE(built);
  EXPECT_EQ(fixed.value().entries.size(), 6u);
}

TEST(ShardsTest, StreamIsDeterministicForAnyThreadCountAndShufflesPerEpoch) {
  testing::TempDir dir;
  WriteShards(dir.path(), 4, 9, TarFilter::kZstd, ".tar.zst");
  auto src = Open(dir.path() + "/train-*.tar.zst", ShardMode::kAuto);
  EXPECT_EQ(src->size(), -1);
  Epoch ref = RunEpoch(Loader::Create(src, Options(5, 1, true)).value().get());
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  ASSERT_EQ(ref.ids.size(), 36u);
  std::set<int64_t> unique(ref.ids.begin(), ref.ids.end());
  EXPECT_EQ(unique.size(), 36u);
  for (size_t i = 0; i < ref.ids.size(); ++i) {
    const int64_t shard = ref.ids[i] >> 32, ordinal = ref.ids[i] & 0xFFFFFFFF;
    EXPECT_EQ(ref.labels[i], (shard * 9 + ordinal) % 10);
  }
  for (int threads : {2, 4}) {
    Epoch e = RunEpoch(Loader::Create(src, Options(5, threads, true)).value().get());
    EXPECT_EQ(e.ids, ref.ids);
    EXPECT_EQ(e.pixels, ref.pixels);
  }
  auto loader = Loader::Create(src, Options(5, 2, true)).value();
  loader->SetEpoch(1);
  Epoch e1 = RunEpoch(loader.get());
  EXPECT_NE(e1.ids, ref.ids);
  EXPECT_EQ(std::set<int64_t>(e1.ids.begin(), e1.ids.end()), unique);
}

// (position -> id) of one stream epoch drained by `threads` threads claiming
// positions from one counter, as the engine does.
std::vector<int64_t> DrainStream(Source* src, const EpochSpec& spec, int threads) {
  auto reader = src->StartEpoch(spec).value();
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::map<int64_t, int64_t> got;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      SampleScratch scratch;
      for (;;) {
        const int64_t p = next.fetch_add(1);
        SampleData data;
        bool end = false;
        Status s = reader->Read(p, &scratch, &data, &end);
        if (end) return;
        EXPECT_TRUE(s.ok()) << s.ToString();
        EXPECT_GT(data.size, 0u);
        std::lock_guard<std::mutex> l(mu);
        got[p] = data.id;
      }
    });
  }
  for (auto& th : pool) th.join();
  std::vector<int64_t> ids;
  for (const auto& [p, id] : got) {
    EXPECT_EQ(p, static_cast<int64_t>(ids.size()));  // no gap, no position twice
    ids.push_back(id);
  }
  return ids;
}

TEST(ShardsTest, StreamFeedsGiveOneSequenceWhateverTheThreadsAndTiming) {
  testing::TempDir dir;
  // More shards than 2 x concurrent_shards, of different lengths: feeds end,
  // start ahead and are replaced at different times.
  for (int s = 0; s < 9; ++s) {
    WriteShards(dir.path() + "/", 1, 3 + 5 * s, TarFilter::kZstd, "");
    ASSERT_EQ(::rename((dir.path() + "//train-000").c_str(),
                       (dir.path() + "/x-" + std::to_string(s) + ".tar.zst").c_str()), 0);
  }
  for (int buffer : {0, 1, 30}) {
    auto src = Open(dir.path() + "/x-*.tar.zst", ShardMode::kStream, buffer);
    for (bool shuffle : {true, false}) {
      const EpochSpec spec{11, 3, shuffle};
      const std::vector<int64_t> ref = DrainStream(src.get(), spec, 1);
      ASSERT_EQ(ref.size(), 9u * 3 + 5 * 36);
      EXPECT_EQ(std::set<int64_t>(ref.begin(), ref.end()).size(), ref.size());
      for (int threads : {3, 8}) {
        EXPECT_EQ(DrainStream(src.get(), spec, threads), ref) << buffer << shuffle << threads;
      }
    }
  }
}

TEST(ShardsTest, StreamReaderDestroyedMidEpochStopsItsFeeds) {
  testing::TempDir dir;
  WriteShards(dir.path(), 6, 40, TarFilter::kZstd, ".tar.zst");
  auto src = Open(dir.path() + "/train-*.tar.zst", ShardMode::kStream, 4);
  for (int reads : {0, 1, 50}) {  // feeds blocked on full queues, or not yet started
    auto reader = src->StartEpoch(EpochSpec{1, 0, true}).value();
    SampleScratch scratch;
    for (int p = 0; p < reads; ++p) {
      SampleData data;
      bool end = false;
      ASSERT_TRUE(reader->Read(p, &scratch, &data, &end).ok());
      ASSERT_FALSE(end);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the feeds fill up
    reader.reset();  // joins the feeds; a hang here fails the test by its timeout
  }
}

TEST(ShardsTest, CorruptShardInAStream) {
  testing::TempDir dir;
  // Large enough that the damage is met after some members were read.
  auto paths = WriteShards(dir.path(), 3, 40, TarFilter::kGzip, ".tar.gz");
  {  // truncate the middle shard's gzip stream
    std::ifstream f(paths[1], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    bytes.resize(bytes.size() / 2);
    testing::WriteFile(paths[1], bytes);
  }
  auto src = Open(dir.path() + "/train-*.tar.gz", ShardMode::kAuto);
  LoaderOptions o = Options(4, 2, false);
  Epoch raised = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_FALSE(raised.status.ok());
  EXPECT_NE(raised.status.message().find("train-001.tar.gz"), std::string::npos)
      << raised.status.ToString();
  EXPECT_NE(raised.status.message().find("member"), std::string::npos) << raised.status.ToString();

  o.on_error = OnError::kSkip;
  Epoch skipped = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_TRUE(skipped.status.ok()) << skipped.status.ToString();
  EXPECT_EQ(skipped.skipped, 1);  // one error ends the damaged shard
  std::set<int64_t> shards;
  int from_first = 0, from_last = 0;
  for (int64_t id : skipped.ids) {
    shards.insert(id >> 32);
    from_first += (id >> 32) == 0;
    from_last += (id >> 32) == 2;
  }
  EXPECT_EQ(from_first, 40);
  EXPECT_EQ(from_last, 40);  // the stream went on past the damaged shard
  EXPECT_GT(skipped.ids.size(), 80u);  // and kept the damaged shard's first samples
  EXPECT_LT(skipped.ids.size(), 120u);
}

TEST(ShardsTest, CorruptSampleInIndexedModeIsThatSampleOnly) {
  testing::TempDir dir;
  std::vector<TarEntry> entries;
  for (int i = 0; i < 6; ++i) {
    const std::string key = "k" + std::to_string(i);
    entries.push_back({key + ".jpg", i == 2 ? Text("not a jpeg")
                                            : testing::EncodeJpeg(testing::MakePixels(20, 20, i), 20, 20)});
    entries.push_back({key + ".cls", Text(i == 4 ? "four" : std::to_string(i))});
  }
  testing::WriteFile(dir.path() + "/s.tar", MakeTar(entries));
  auto src = Open(dir.path() + "/s.tar", ShardMode::kIndexed);
  ASSERT_EQ(src->size(), 6);
  LoaderOptions o = Options(6, 2, false);
  Epoch raised = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_FALSE(raised.status.ok());
  EXPECT_NE(raised.status.message().find("s.tar: member k2.jpg"), std::string::npos)
      << raised.status.ToString();
  o.on_error = OnError::kSkip;
  Epoch skipped = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_TRUE(skipped.status.ok());
  EXPECT_EQ(skipped.ids.size(), 4u);  // left out, as for folders
  EXPECT_EQ(skipped.skipped, 2);
  for (int64_t id : skipped.ids) EXPECT_TRUE(id != 2 && id != 4) << id;
}

TEST(ShardsTest, BadOptions) {
  testing::TempDir dir;
  WriteShards(dir.path(), 1, 2, TarFilter::kGzip, ".tar.gz");
  ShardOptions o;
  o.patterns = {dir.path() + "/train-000.tar.gz"};
  o.mode = ShardMode::kIndexed;
  EXPECT_EQ(OpenShards(o).status().code(), StatusCode::kInvalidArgument);
  o.mode = ShardMode::kAuto;
  o.spec.image_exts.clear();
  EXPECT_EQ(OpenShards(o).status().code(), StatusCode::kInvalidArgument);
}

// A ustar shard of `n` samples (k<i>.jpg, a JPEG padded with zeros to at
// least `jpg_bytes` bytes; k<i>.cls). `ends[i]` is where sample i's last
// member ends (the end-of-archive blocks follow the last one).
std::vector<uint8_t> UstarShard(int n, size_t jpg_bytes, std::vector<size_t>* ends) {
  std::vector<TarEntry> entries;
  ends->clear();
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i);
    std::vector<uint8_t> jpg = testing::EncodeJpeg(testing::MakePixels(20, 20, i), 20, 20);
    if (jpg.size() < jpg_bytes) jpg.resize(jpg_bytes, 0);
    at += 512 + (jpg.size() + 511) / 512 * 512 + 1024;
    ends->push_back(at);
    entries.push_back({key + ".jpg", std::move(jpg)});
    entries.push_back({key + ".cls", Text(std::to_string(i))});
  }
  return MakeTar(entries, TarFormat::kUstar);
}

// Sets the size field of the ustar header at `at` and redoes its checksum.
void SetDeclaredSize(std::vector<uint8_t>* tar, size_t at, uint64_t size) {
  std::snprintf(reinterpret_cast<char*>(tar->data() + at + 124), 12, "%011llo",
                static_cast<unsigned long long>(size));
  std::memset(tar->data() + at + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += (*tar)[at + i];
  std::snprintf(reinterpret_cast<char*>(tar->data() + at + 148), 8, "%06o", sum);
  (*tar)[at + 155] = ' ';
}

// Issue 32 item 11: in indexed mode a member declaring 900 MiB in a small
// shard got a 900 MiB buffer at its first read (then "shard shorter than its
// index"), and max_sample_bytes was not applied at all. Both are checked
// when the index is built and again before a read allocates.
TEST(ShardsTest, IndexedMembersAreBoundedByTheLimitAndTheFileSize) {
  testing::TempDir dir;
  // k1's label comes first, so its sample is complete when the image member
  // (declaring 900 MiB, with the 2000 bytes the file really has) is read.
  std::vector<uint8_t> jpg = testing::EncodeJpeg(testing::MakePixels(20, 20, 1), 20, 20);
  jpg.resize(2000, 0);
  std::vector<uint8_t> tar = MakeTar({{"k0.jpg", jpg}, {"k0.cls", Text("0")},
                                      {"k1.cls", Text("1")}, {"k1.jpg", jpg},
                                      {"k2.jpg", jpg}, {"k2.cls", Text("2")}},
                                     TarFormat::kUstar);
  const size_t k1_jpg = 512 + 2048 + 1024 + 1024;  // its header
  SetDeclaredSize(&tar, k1_jpg, uint64_t{900} << 20);
  tar.resize(k1_jpg + 512 + 2048);
  std::vector<size_t> ends;
  testing::WriteFile(dir.path() + "/huge.tar", tar);
  auto src = Open(dir.path() + "/huge.tar", ShardMode::kIndexed);
  ASSERT_NE(src, nullptr);
  auto* ra = dynamic_cast<RandomAccessSource*>(src.get());
  ASSERT_NE(ra, nullptr);
  SampleScratch scratch;
  SampleData data;
  ASSERT_TRUE(ra->ReadIndex(0, &scratch, &data).ok());
  for (int64_t i = 1; i < ra->size(); ++i) {
    const Status st = ra->ReadIndex(i, &scratch, &data);
    EXPECT_FALSE(st.ok()) << i;
  }
  const Status st = ra->ReadIndex(1, &scratch, &data);
  EXPECT_NE(st.message().find("k1.jpg"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("huge.tar"), std::string::npos) << st.ToString();
  EXPECT_LT(scratch.bytes.capacity(), size_t{4} << 20);  // was 900 MiB

  // max_sample_bytes applies in indexed mode as in stream mode.
  testing::WriteFile(dir.path() + "/big.tar", UstarShard(2, 5000, &ends));
  ShardOptions o;
  o.patterns = {dir.path() + "/big.tar"};
  o.mode = ShardMode::kIndexed;
  o.spec.max_member_bytes = 4000;
  auto limited = OpenShards(o);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  auto* lra = dynamic_cast<RandomAccessSource*>(limited.value().get());
  const Status over = lra->ReadIndex(0, &scratch, &data);
  EXPECT_FALSE(over.ok());
  EXPECT_NE(over.message().find("max_sample_bytes"), std::string::npos) << over.ToString();
  EXPECT_NE(over.message().find("k0.jpg"), std::string::npos) << over.ToString();
}

// Issue 32 item 18: a shard cut exactly at a member boundary (no
// end-of-archive blocks) read as a complete, shorter shard. In indexed mode
// it is an error after the samples it has (raised, or one skip).
TEST(ShardsTest, ShardWithoutEndOfArchiveBlocksIsAnErrorWhenIndexed) {
  testing::TempDir dir;
  std::vector<size_t> ends;
  std::vector<uint8_t> tar = UstarShard(5, 1000, &ends);
  ASSERT_GT(tar.size(), ends[4] + 1023);
  tar.resize(ends[2]);  // the last two samples are gone
  testing::WriteFile(dir.path() + "/cut.tar", tar);
  auto src = Open(dir.path() + "/cut.tar", ShardMode::kIndexed);
  ASSERT_NE(src, nullptr);
  LoaderOptions o = Options(2, 2, false);
  Epoch raised = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_FALSE(raised.status.ok());
  EXPECT_NE(raised.status.message().find("cut.tar"), std::string::npos) << raised.status.ToString();
  EXPECT_NE(raised.status.message().find("end-of-archive"), std::string::npos)
      << raised.status.ToString();
  o.on_error = OnError::kSkip;
  Epoch skipped = RunEpoch(Loader::Create(src, o).value().get());
  ASSERT_TRUE(skipped.status.ok()) << skipped.status.ToString();
  EXPECT_EQ(skipped.ids.size(), 3u);
  EXPECT_EQ(skipped.skipped, 1);
  // The intact shard, end blocks and all, has no such error.
  testing::WriteFile(dir.path() + "/whole.tar", UstarShard(5, 1000, &ends));
  Epoch whole = RunEpoch(
      Loader::Create(Open(dir.path() + "/whole.tar", ShardMode::kIndexed), Options(2, 2, false))
          .value().get());
  EXPECT_TRUE(whole.status.ok()) << whole.status.ToString();
  EXPECT_EQ(whole.ids.size(), 5u);
}

// ... and in stream mode under a declared length= it is an error too (the
// declared samples would otherwise be made up by repeats): 4 of the 6
// declared samples are there, then the error.
TEST(ShardsTest, ShardWithoutEndOfArchiveBlocksIsAnErrorUnderADeclaredLength) {
  testing::TempDir dir;
  std::vector<size_t> ends;
  std::vector<uint8_t> tar = UstarShard(6, 1000, &ends);
  tar.resize(ends[3]);
  testing::WriteFile(dir.path() + "/cut.tar", tar);
  ShardOptions so;
  so.patterns = {dir.path() + "/cut.tar"};
  so.mode = ShardMode::kStream;
  so.length = 6;
  auto src = OpenShards(so);
  ASSERT_TRUE(src.ok());
  Epoch e = RunEpoch(Loader::Create(src.value(), Options(2, 1, false)).value().get());
  ASSERT_FALSE(e.status.ok());
  EXPECT_NE(e.status.message().find("end-of-archive"), std::string::npos) << e.status.ToString();
  EXPECT_EQ(e.ids.size(), 4u);  // the batches before the one holding the error
  EXPECT_GE(src.value()->truncated_shards(), 1);  // each pass over it counts
}

// Issue 32 item 37: the resume fingerprint hashed absolute paths, so a
// checkpoint could not be resumed with the data moved or mounted elsewhere.
// It identifies the dataset now (names relative to where it lies, sizes,
// the shards' indexes): the same shards in another directory have the same
// fingerprint, other shards another one.
TEST(ShardsTest, FingerprintDoesNotDependOnWhereTheShardsLie) {
  testing::TempDir a, b, c;
  WriteShards(a.path(), 2, 5);
  WriteShards(b.path(), 2, 5);
  WriteShards(c.path(), 2, 6);
  for (ShardMode mode : {ShardMode::kIndexed, ShardMode::kStream}) {
    auto sa = Open(a.path() + "/train-*.tar", mode);
    auto sb = Open(b.path() + "/train-*.tar", mode);
    auto sc = Open(c.path() + "/train-*.tar", mode);
    EXPECT_EQ(sa->Fingerprint(), sb->Fingerprint()) << static_cast<int>(mode);
    EXPECT_NE(sa->Fingerprint(), sc->Fingerprint()) << static_cast<int>(mode);  // other sizes
  }
  // Other shard names are another dataset.
  testing::TempDir d;
  WriteShards(d.path(), 3, 5);
  EXPECT_NE(Open(a.path() + "/train-*.tar", ShardMode::kStream)->Fingerprint(),
            Open(d.path() + "/train-*.tar", ShardMode::kStream)->Fingerprint());
}

}  // namespace
}  // namespace stoker
