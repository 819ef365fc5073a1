// Copyright 2026 The stoker Authors.
//
// Local streams and URL handling. HTTP itself is tested against real
// servers (nginx, and one that drops connections) in python/tests/test_shards.py.
#include "io/stream.h"

#include <gtest/gtest.h>

#include "testing/test_images.h"

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

}  // namespace
}  // namespace stoker
