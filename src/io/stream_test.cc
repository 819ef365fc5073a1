// Copyright 2026 The stoker Authors.
//
// Local streams, URL handling and the node-wide cache. HTTP is tested here
// against a real server on loopback (testing/http_server.h: redirects, the
// cache's validation), and against nginx and a server that drops
// connections in python/tests/test_shards.py.
#include "io/stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "source/tar_reader.h"
#include "testing/http_server.h"
#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker {
namespace {

TEST(StreamTest, FileStreamReadsEverythingThenEnds) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31);
  testing::WriteFile(dir.path() + "/f", bytes);
  auto s = OpenStream(dir.path() + "/f", StreamOptions()).value();
  std::vector<uint8_t> got;
  uint8_t buf[4096];
  for (;;) {
    size_t n = 0;
    ASSERT_TRUE(s->Read(buf, sizeof buf, &n).ok());
    if (n == 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  EXPECT_EQ(got, bytes);
  auto missing = OpenStream(dir.path() + "/nope", StreamOptions());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nope"), std::string::npos);
}

TEST(StreamTest, RemoteUrlsAndCachePaths) {
  EXPECT_TRUE(IsRemoteUrl("http://a/b.tar"));
  EXPECT_TRUE(IsRemoteUrl("https://a/b.tar"));
  EXPECT_FALSE(IsRemoteUrl("/data/http://x"));
  const std::string a = CachePath("/c", "http://h/x/train-001.tar?sig=1");
  EXPECT_EQ(a.rfind("/c/", 0), 0u);
  EXPECT_NE(a.find("-train-001.tar"), std::string::npos);
  EXPECT_EQ(a.find('?'), std::string::npos);
  EXPECT_NE(a, CachePath("/c", "http://other/x/train-001.tar"));
}

TEST(StreamTest, UnreachableServerIsAnErrorNamingTheUrl) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  StreamOptions o;
  o.max_attempts = 2;
  o.backoff_ms = 1;
  o.connect_timeout_s = 2;
  // Port 1 on loopback: connection refused at once.
  auto s = OpenStream("http://127.0.0.1:1/x.tar", o);
  Status st = s.status();
  if (s.ok()) {
    uint8_t buf[16];
    size_t n = 0;
    st = s.value()->Read(buf, sizeof buf, &n);
  }
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("http://127.0.0.1:1/x.tar"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("2 attempts"), std::string::npos) << st.ToString();
}

// A build without libcurl refuses remote URLs, naming the URL and the reason.
TEST(StreamTest, WithoutCurlRemoteUrlsNameTheReason) {
  if (BuiltWithCurl()) GTEST_SKIP() << "stoker was built with libcurl (STOKER_WITH_CURL=ON)";
  for (const std::string url : {"http://127.0.0.1:1/x.tar", "https://example.com/x.tar",
                                "s3://bucket/x.tar"}) {
    auto s = OpenStream(url, StreamOptions());
    ASSERT_FALSE(s.ok()) << url;
    EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented) << s.status().ToString();
    EXPECT_NE(s.status().message().find(url), std::string::npos) << s.status().ToString();
    EXPECT_NE(s.status().message().find("built without libcurl"), std::string::npos)
        << s.status().ToString();
  }
}

// ------------------------------------------------------------------ node-wide cache

std::vector<uint8_t> Body(const std::string& url, size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(url.size() * 7 + i * 13);
  return b;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Cache entries (no locks, no records, no fills in progress) -> size; fails on a
// leftover temporary file (".tmp-").
std::map<std::string, int64_t> Entries(const std::string& dir) {
  std::map<std::string, int64_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == ".." || (n.size() > 5 && n.substr(n.size() - 5) == ".lock")) continue;
    if (n.size() > 5 && n.substr(n.size() - 5) == ".meta") continue;  // an entry's record
    EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n;
    struct stat st;
    if (::stat((dir + "/" + n).c_str(), &st) == 0) out[n] = st.st_size;
  }
  ::closedir(d);
  return out;
}

// The opener the cache calls to download `url`: appends a line to `log` (O_APPEND: whole
// lines from any process), waits so that concurrent fills overlap, serves Body(url).
std::function<StatusOr<std::unique_ptr<ByteStream>>()> CountingOpener(const std::string& url,
                                                                        const std::string& log,
                                                                        size_t n) {
  return [url, log, n]() -> StatusOr<std::unique_ptr<ByteStream>> {
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    const std::string line = url + "\n";
    EXPECT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return MemoryStream(Body(url, n), url, 4096);
  };
}

std::map<std::string, int> CountLines(const std::string& log) {
  std::map<std::string, int> c;
  std::ifstream f(log);
  for (std::string line; std::getline(f, line);) ++c[line];
  return c;
}

TEST(CacheTest, ProcessesAndThreadsDownloadEachObjectOnce) {
  testing::TempDir dir;
  const std::string cache = dir.path() + "/cache", log = dir.path() + "/opens";
  const std::vector<std::string> urls = {"s3://b/a.tar", "s3://b/bb.tar", "http://h/ccc.tar"};
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // 3 threads, each filling every object, in a different order
      bool ok = true;
      std::vector<std::thread> threads;
      std::mutex mu;
      for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < 3; ++i) {
            const std::string& url = urls[(i + t + p) % 3];
            StreamOptions o;
            o.cache_dir = cache;
            auto path = FillCache(url, o, CountingOpener(url, log, 100000));
            const bool good = path.ok() && ReadAll(path.value()) == Body(url, 100000);
            std::lock_guard<std::mutex> l(mu);
            ok = ok && good;
          }
        });
      }
      for (auto& th : threads) th.join();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  const auto opens = CountLines(log);
  EXPECT_EQ(opens.size(), 3u);
  for (const auto& [url, n] : opens) EXPECT_EQ(n, 1) << url;  // 12 threads, one download each
  EXPECT_EQ(Entries(cache).size(), 3u);
}

class FailingStream : public ByteStream {
 public:
  Status Read(uint8_t* buf, size_t n, size_t* got) override {
    if (sent_ >= 5000) return IoError("s3://b/x.tar: connection reset");
    *got = std::min<size_t>(n, 1000);
    std::memset(buf, 1, *got);
    sent_ += *got;
    return Status::OK();
  }
  const std::string& name() const override { return name_; }

 private:
  size_t sent_ = 0;
  std::string name_ = "s3://b/x.tar";
};

TEST(CacheTest, FailedFillLeavesNothingAndTheNextOneFills) {
  testing::TempDir dir;
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  auto failed = FillCache("s3://b/x.tar", o, []() -> StatusOr<std::unique_ptr<ByteStream>> {
    return std::unique_ptr<ByteStream>(new FailingStream);
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("connection reset"), std::string::npos);
  EXPECT_TRUE(Entries(o.cache_dir).empty());  // no entry, no half-written file
  const std::string log = dir.path() + "/opens";
  auto path = FillCache("s3://b/x.tar", o, CountingOpener("s3://b/x.tar", log, 777));
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(ReadAll(path.value()), Body("s3://b/x.tar", 777));
}

TEST(CacheTest, EvictsLeastRecentlyUsedFirstAndSparesTheNewEntry) {
  testing::TempDir dir;
  const std::string cache = dir.path() + "/cache", log = dir.path() + "/opens";
  StreamOptions o;
  o.cache_dir = cache;
  // Four 1000-byte entries, used in the order a, b, c, d; then a again (a hit touches it).
  for (const char* u : {"http://h/a", "http://h/b", "http://h/c", "http://h/d", "http://h/a"}) {
    ASSERT_TRUE(FillCache(u, o, CountingOpener(u, log, 1000)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct access times
  }
  EXPECT_EQ(CountLines(log)["http://h/a"], 1);  // the second use was a hit
  // Bound 2500: b and c (least recently used) go; a, d stay.
  EXPECT_EQ(EvictCache(cache, 2500, ""), 2000);
  std::vector<std::string> left;
  for (const auto& [n, size] : Entries(cache)) left.push_back(n.substr(n.find('-') + 1));
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"a", "d"}));
  // A fill beyond the bound keeps the entry just filled, even when it alone is over it.
  o.cache_bytes = 500;
  auto e = FillCache("http://h/e", o, CountingOpener("http://h/e", log, 1000));
  ASSERT_TRUE(e.ok());
  const auto entries = Entries(cache);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(cache + "/" + entries.begin()->first, e.value());
}

// StreamOptions::cache_counters: each download and each hit counted, the
// largest entry kept.
TEST(CacheTest, CountersCountDownloadsHitsAndTheLargestEntry) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/opens";
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  o.cache_counters = std::make_shared<ShardCacheCounters>();
  ASSERT_TRUE(FillCache("http://h/a", o, CountingOpener("http://h/a", log, 1000)).ok());
  ASSERT_TRUE(FillCache("http://h/b", o, CountingOpener("http://h/b", log, 3000)).ok());
  ASSERT_TRUE(FillCache("http://h/a", o, CountingOpener("http://h/a", log, 1000)).ok());
  EXPECT_EQ(o.cache_counters->downloads.load(), 2);
  EXPECT_EQ(o.cache_counters->hits.load(), 1);
  EXPECT_EQ(o.cache_counters->largest_bytes.load(), 3000);
  // The downloads are the opens of the remote objects.
  auto opens = CountLines(log);
  EXPECT_EQ(opens["http://h/a"] + opens["http://h/b"], 2);
}

// ------------------------------------------------------------------ against a real server

std::string ReadStream(ByteStream* s, Status* status) {
  std::string out;
  char buf[4096];
  for (;;) {
    size_t n = 0;
    *status = s->Read(reinterpret_cast<uint8_t*>(buf), sizeof buf, &n);
    if (!status->ok() || n == 0) return out;
    out.append(buf, n);
  }
}

std::string Fetch(const std::string& url, const StreamOptions& o) {
  auto s = OpenStream(url, o);
  if (!s.ok()) return "(open failed: " + s.status().ToString() + ")";
  Status st;
  std::string body = ReadStream(s.value().get(), &st);
  return st.ok() ? body : "(read failed: " + st.ToString() + ")";
}

int Count(const testing::HttpServer& server, const std::string& method) {
  int n = 0;
  for (const auto& r : server.requests()) n += r.method == method;
  return n;
}

// Issue 32 item 34: a redirect loop ran until the headers grew too large,
// three times over ("Too large response headers"). It now stops after 10
// redirects, at once: "too many redirects".
TEST(HttpTest, RedirectLoopIsTooManyRedirects) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  testing::HttpServer server([](const testing::HttpRequest& r) {
    return testing::HttpResponse{302, {{"Location", r.path}}, ""};
  });
  StreamOptions o;
  o.backoff_ms = 1;
  auto s = OpenStream(server.url("/loop.tar"), o);
  Status st = s.status();
  if (s.ok()) ReadStream(s.value().get(), &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("too many redirects"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("/loop.tar"), std::string::npos) << st.ToString();
  EXPECT_LE(server.requests().size(), 11u);  // one attempt: the request and 10 redirects
}

// Issue 32 item 16: the cache was keyed by URL alone, so an object changed
// on the server was served from the old copy forever. Each open of a cached
// entry now asks the server (HEAD) whether it still has the same object
// (ETag, Last-Modified, size) and downloads it again when not.
TEST(HttpCacheTest, ChangedObjectIsDownloadedAgain) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  std::mutex mu;
  std::string body = "version one", etag = "\"v1\"";
  testing::HttpServer server([&](const testing::HttpRequest& r) {
    std::lock_guard<std::mutex> l(mu);
    return testing::Object(r, body, etag, "Mon, 02 Mar 2026 10:00:00 GMT");
  });
  testing::TempDir dir;
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "version one");
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "version one");
  EXPECT_EQ(Count(server, "GET"), 1);  // the second open was served by the cache
  {
    std::lock_guard<std::mutex> l(mu);
    body = "version TWO";  // same size, new ETag
    etag = "\"v2\"";
  }
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "version TWO");
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "version TWO");
  EXPECT_EQ(Count(server, "GET"), 2);
}

// A server that answers the check (HEAD) with 501 leaves the cached copy in
// use, as documented, but no longer silently: each such open is counted, and
// the object named once, with the check's error.
TEST(HttpCacheTest, ACopyTheServerCannotValidateIsServedCountedAndNamedOnce) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  std::atomic<bool> head_fails{false};
  testing::HttpServer server([&](const testing::HttpRequest& r) {
    if (r.method == "HEAD" && head_fails) return testing::HttpResponse{501, {}, ""};
    return testing::Object(r, "cached body", "\"v1\"", "Mon, 02 Mar 2026 10:00:00 GMT");
  });
  testing::TempDir dir;
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  o.backoff_ms = 1;
  o.cache_counters = std::make_shared<ShardCacheCounters>();
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "cached body");
  EXPECT_EQ(o.cache_counters->unvalidated.load(), 0);
  head_fails = true;
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "cached body");  // still served
  EXPECT_EQ(Fetch(server.url("/s.tar"), o), "cached body");
  EXPECT_EQ(o.cache_counters->unvalidated.load(), 2);
  const std::vector<std::string> named = o.cache_counters->UnvalidatedObjects();
  ASSERT_EQ(named.size(), 1u);  // once per object
  EXPECT_EQ(named[0].rfind(server.url("/s.tar") + " (", 0), 0u) << named[0];
  EXPECT_NE(named[0].find("501"), std::string::npos) << named[0];
  EXPECT_EQ(Count(server, "GET"), 1);
}

// Issue 32 item 17: a cache entry truncated after its download (at a sample
// boundary, say) was served as it was. The entry's size is checked against
// what was downloaded on every open; a short entry is downloaded again.
TEST(HttpCacheTest, TruncatedEntryIsDownloadedAgain) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  const std::string body(300000, 'x');
  testing::HttpServer server([&](const testing::HttpRequest& r) {
    return testing::Object(r, body);  // no validators: only the size can tell
  });
  testing::TempDir dir;
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  const std::string url = server.url("/t.tar");
  ASSERT_EQ(Fetch(url, o).size(), body.size());
  const std::string entry = CachePath(o.cache_dir, url);
  ASSERT_EQ(::truncate(entry.c_str(), 100000), 0);
  EXPECT_EQ(Fetch(url, o).size(), body.size());
  EXPECT_EQ(Count(server, "GET"), 2);
}

// Issue 32 item 17: an error met in a cached shard names the cache file it
// was read from (the damage may be the cache's, not the server's).
TEST(HttpCacheTest, ErrorsInACachedShardNameTheCacheFile) {
  if (!BuiltWithCurl()) GTEST_SKIP() << "stoker was built without libcurl (STOKER_WITH_CURL=OFF)";
  std::vector<testing::TarEntry> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back({"k" + std::to_string(i) + ".jpg", std::vector<uint8_t>(3000, 7)});
    members.push_back({"k" + std::to_string(i) + ".cls", testing::Text("1")});
  }
  const std::vector<uint8_t> tar = testing::MakeTar(members, testing::TarFormat::kUstar);
  const std::string body(tar.begin(), tar.end());
  testing::HttpServer server([&](const testing::HttpRequest& r) {
    return testing::Object(r, body, "\"t1\"");
  });
  testing::TempDir dir;
  StreamOptions o;
  o.cache_dir = dir.path() + "/cache";
  const std::string url = server.url("/c.tar");
  ASSERT_EQ(Fetch(url, o).size(), body.size());
  // Damage the cached copy in place, same size: k2.jpg's header checksum.
  const std::string entry = CachePath(o.cache_dir, url);
  {
    std::fstream f(entry, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(2 * (512 + 3072 + 512 + 512) + 10);  // a sample is 4608 bytes
    f.put('\x55');
  }
  auto reader = ShardSampleReader::Open(url, SampleSpec(), o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Status error;
  for (;;) {
    ShardSample s;
    bool end = false;
    Status st = reader.value()->Next(&s, &end);
    if (!st.ok()) error = st;
    if (end) break;
  }
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find(url), std::string::npos) << error.ToString();
  EXPECT_NE(error.message().find(entry), std::string::npos) << error.ToString();
}

}  // namespace
}  // namespace stoker
