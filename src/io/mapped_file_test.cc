// Copyright 2026 The stoker Authors.
//
// MappedFile::CheckRange: a truncation is caught once the reading thread
// starts a new read burst, after kRecheckReads checks within one, on a
// thread that never checked the file, and for a range past the size seen.
#include "io/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "testing/test_images.h"

namespace stoker {
namespace {

constexpr size_t kSize = 1 << 16;

struct Mapped {
  testing::TempDir dir;
  std::string path = dir.path() + "/x.bin";
  std::unique_ptr<MappedFile> file;
  Mapped() {
    testing::WriteFile(path, std::vector<uint8_t>(kSize, 7));
    file = MappedFile::Open(path).value();
  }
};

TEST(MappedFileTest, TruncationIsCaughtAtTheNextBurst) {
  Mapped m;
  MappedFile::NewReadBurst();
  ASSERT_TRUE(m.file->CheckRange(kSize - 16, 16).ok());
  ASSERT_EQ(::truncate(m.path.c_str(), kSize / 2), 0);
  MappedFile::NewReadBurst();  // what a worker does after waiting
  Status st = m.file->CheckRange(kSize - 16, 16);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_NE(st.message().find("truncated to 32768"), std::string::npos) << st.ToString();
  EXPECT_TRUE(m.file->CheckRange(0, kSize / 2).ok());
}

TEST(MappedFileTest, TruncationIsCaughtWithinAtMostRecheckReadsOfOneBurst) {
  Mapped m;
  MappedFile::NewReadBurst();
  ASSERT_TRUE(m.file->CheckRange(0, 16).ok());
  ASSERT_EQ(::truncate(m.path.c_str(), kSize / 2), 0);
  int ok = 0;
  Status st;
  for (int i = 0; i <= MappedFile::kRecheckReads && st.ok(); ++i) {
    st = m.file->CheckRange(kSize - 16, 16);  // never touched: the cache alone answers
    if (st.ok()) ++ok;
  }
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_LE(ok, MappedFile::kRecheckReads);
}

TEST(MappedFileTest, AnotherThreadStatsItself) {
  Mapped m;
  MappedFile::NewReadBurst();
  ASSERT_TRUE(m.file->CheckRange(kSize - 16, 16).ok());
  ASSERT_EQ(::truncate(m.path.c_str(), kSize / 2), 0);
  Status other;
  std::thread t([&] { other = m.file->CheckRange(kSize - 16, 16); });
  t.join();
  EXPECT_EQ(other.code(), StatusCode::kDataLoss) << other.ToString();
}

TEST(MappedFileTest, ARangePastTheSizeSeenIsStatedAgain) {
  Mapped m;
  MappedFile::NewReadBurst();
  ASSERT_EQ(::truncate(m.path.c_str(), kSize / 2), 0);
  ASSERT_FALSE(m.file->CheckRange(kSize - 16, 16).ok());
  ASSERT_EQ(::truncate(m.path.c_str(), kSize), 0);  // grown back (zeros)
  EXPECT_TRUE(m.file->CheckRange(kSize - 16, 16).ok());
  EXPECT_TRUE(m.file->CheckRange(0, kSize).ok());
}

}  // namespace
}  // namespace stoker
