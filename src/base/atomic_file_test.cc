// Copyright 2026 The stoker Authors.
#include "base/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace stoker {
namespace {

std::string Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::set<std::string> List(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  if (d != nullptr) ::closedir(d);
  return names;
}

class AtomicWriteFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stoker_atomic_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(AtomicWriteFileTest, WritesAndReplacesLeavingNoTemporary) {
  const std::string p = dir_ + "/out.json";
  ASSERT_TRUE(AtomicWriteFile(p, "first").ok());
  EXPECT_EQ(Read(p), "first");
  ASSERT_TRUE(AtomicWriteFile(p, "second, longer", /*sync=*/true).ok());
  EXPECT_EQ(Read(p), "second, longer");
  EXPECT_EQ(List(dir_), std::set<std::string>{"out.json"});
}

// A symlink planted at the path is replaced by the file; its target is
// left as it was.
TEST_F(AtomicWriteFileTest, ASymlinkAtThePathIsReplacedNotFollowed) {
  const std::string target = dir_ + "/precious", p = dir_ + "/trace.json";
  { std::ofstream(target) << "keep me"; }
  ASSERT_EQ(::symlink(target.c_str(), p.c_str()), 0);
  ASSERT_TRUE(AtomicWriteFile(p, "trace").ok());
  EXPECT_EQ(Read(target), "keep me");
  struct stat st;
  ASSERT_EQ(::lstat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(Read(p), "trace");
}

TEST_F(AtomicWriteFileTest, AMissingDirectoryIsAnErrorNamingThePath) {
  const std::string p = dir_ + "/no/such/dir/t.json";
  const Status s = AtomicWriteFile(p, "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
  EXPECT_TRUE(List(dir_).empty());
}

TEST_F(AtomicWriteFileTest, AStreamedFileAppearsOnlyWhenCommitted) {
  const std::string p = dir_ + "/shard.tar";
  ASSERT_TRUE(AtomicWriteFile(p, "old").ok());
  {
    StatusOr<AtomicFile> f = AtomicFile::Create(p, 0644);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE(f.value().Write("new ").ok());
    ASSERT_TRUE(f.value().Write("bytes").ok());
    EXPECT_EQ(Read(p), "old");  // readers see the old file until the commit
    EXPECT_EQ(List(dir_).size(), 2u);
    EXPECT_EQ(AtomicTempOwner(f.value().temp_path().substr(dir_.size() + 1), "shard.tar"),
              ::getpid());
    AtomicFile moved = std::move(f).value();  // the temporary file goes with a move
    ASSERT_TRUE(moved.Commit(/*sync=*/true).ok());
    EXPECT_EQ(moved.fd(), -1);
    EXPECT_FALSE(moved.Commit().ok());  // once only
  }
  EXPECT_EQ(Read(p), "new bytes");
  EXPECT_EQ(List(dir_), std::set<std::string>{"shard.tar"});
  {
    StatusOr<AtomicFile> f = AtomicFile::Create(p);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f.value().Write("abandoned").ok());
  }  // destroyed uncommitted: its temporary file is removed, the file kept
  EXPECT_EQ(Read(p), "new bytes");
  EXPECT_EQ(List(dir_), std::set<std::string>{"shard.tar"});
}

TEST(AtomicTempOwnerTest, ReadsThePidOfATemporaryFileOfThatNameOnly) {
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-123.7", "a.tar"), 123);
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-2147483646", "a.tar"), 2147483646);  // no serial
  EXPECT_EQ(AtomicTempOwner("b.tar.tmp-123.7", "a.tar"), -1);   // another file's
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-12x.7", "a.tar"), -1);
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-123.", "a.tar"), -1);
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-", "a.tar"), -1);
  EXPECT_EQ(AtomicTempOwner("a.tar.tmp-99999999999", "a.tar"), -1);  // not a pid
  EXPECT_EQ(AtomicTempOwner("a.tar", "a.tar"), -1);
}

}  // namespace
}  // namespace stoker
