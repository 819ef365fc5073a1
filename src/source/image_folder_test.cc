// Copyright 2026 The stoker Authors.
#include "source/image_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

const std::vector<uint8_t> kBytes = {1, 2, 3};

TEST(ImageFolderTest, ClassesSortedAndLabelsAssigned) {
  TempDir dir;
  const std::string r = dir.path();
  for (const char* c : {"zebra", "ant", "Mole"}) MakeDirs(r + "/" + c);
  WriteFile(r + "/zebra/b.jpg", kBytes);
  WriteFile(r + "/zebra/a.JPEG", kBytes);
  WriteFile(r + "/ant/x.png", kBytes);
  WriteFile(r + "/Mole/m.Jpg", kBytes);
  WriteFile(r + "/ant/notes.txt", kBytes);   // not an image: ignored
  WriteFile(r + "/stray.jpg", kBytes);       // not in a class: ignored
  auto f = ImageFolder::Open(r + "/");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto& folder = *f.value();
  // Byte order: upper case sorts before lower case, as Python's sorted().
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"Mole", "ant", "zebra"}));
  ASSERT_EQ(folder.size(), 4);
  EXPECT_EQ(folder.Path(0), r + "/Mole/m.Jpg");
  EXPECT_EQ(folder.Label(0), 0);
  EXPECT_EQ(folder.Path(1), r + "/ant/x.png");
  EXPECT_EQ(folder.Label(1), 1);
  EXPECT_EQ(folder.Path(2), r + "/zebra/a.JPEG");
  EXPECT_EQ(folder.Path(3), r + "/zebra/b.jpg");
  EXPECT_EQ(folder.Label(3), 2);
}

TEST(ImageFolderTest, KeepsEveryTorchvisionExtensionInAnyCase) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/bmp_only");
  MakeDirs(r + "/mixed");
  WriteFile(r + "/bmp_only/a.BMP", kBytes);
  WriteFile(r + "/bmp_only/b.bmp", kBytes);
  const std::vector<std::string> names = {"a.jpg", "b.JPEG", "c.png",  "d.ppm", "e.Bmp",
                                          "f.PGM", "g.tif",  "h.TIFF", "i.webp"};
  for (const std::string& n : names) WriteFile(r + "/mixed/" + n, kBytes);
  // Not in torchvision's IMG_EXTENSIONS: skipped as torchvision skips them.
  WriteFile(r + "/mixed/j.pbm", kBytes);
  WriteFile(r + "/mixed/k.gif", kBytes);
  WriteFile(r + "/mixed/l.webp.txt", kBytes);
  auto f = ImageFolder::Open(r);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto& folder = *f.value();
  ASSERT_EQ(folder.size(), 2 + static_cast<int64_t>(names.size()));
  EXPECT_EQ(folder.Path(0), r + "/bmp_only/a.BMP");
  EXPECT_EQ(folder.Label(1), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(folder.Path(2 + static_cast<int64_t>(i)), r + "/mixed/" + names[i]);
    EXPECT_EQ(folder.Label(2 + static_cast<int64_t>(i)), 1);
  }
}

TEST(ImageFolderTest, RecursesAndFollowsSymlinksWithoutLooping) {
  TempDir dir, other;
  const std::string r = dir.path();
  MakeDirs(r + "/cat/sub/deeper");
  WriteFile(r + "/cat/z.jpg", kBytes);
  WriteFile(r + "/cat/sub/a.jpg", kBytes);
  WriteFile(r + "/cat/sub/deeper/q.png", kBytes);
  MakeDirs(other.path() + "/linked");
  WriteFile(other.path() + "/linked/l.jpg", kBytes);
  ASSERT_EQ(::symlink((other.path() + "/linked").c_str(), (r + "/cat/link").c_str()), 0);
  ASSERT_EQ(::symlink((r + "/cat").c_str(), (r + "/cat/sub/loop").c_str()), 0);  // a cycle
  WriteFile(other.path() + "/file.jpg", kBytes);
  ASSERT_EQ(::symlink((other.path() + "/file.jpg").c_str(), (r + "/cat/sym.jpg").c_str()), 0);
  auto f = ImageFolder::Open(r);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<std::string> paths;
  for (int64_t i = 0; i < f.value()->size(); ++i) paths.push_back(f.value()->Path(i));
  // torchvision's order: sorted(os.walk(...)) -> directories by path, files sorted within.
  EXPECT_EQ(paths, (std::vector<std::string>{r + "/cat/sym.jpg", r + "/cat/z.jpg",
                                             r + "/cat/link/l.jpg", r + "/cat/sub/a.jpg",
                                             r + "/cat/sub/deeper/q.png"}));
}

TEST(ImageFolderTest, ReadIndexReturnsBytesAndLabel) {
  TempDir dir;
  MakeDirs(dir.path() + "/a");
  MakeDirs(dir.path() + "/b");
  WriteFile(dir.path() + "/a/1.jpg", {9, 8, 7, 6});
  WriteFile(dir.path() + "/b/2.jpg", {5});
  auto f = ImageFolder::Open(dir.path()).value();
  SampleScratch scratch;
  SampleData s;
  ASSERT_TRUE(f->ReadIndex(1, &scratch, &s).ok());
  EXPECT_EQ(s.label, 1);
  EXPECT_EQ(s.id, 1);
  ASSERT_EQ(s.size, 1u);
  EXPECT_EQ(s.bytes[0], 5);
  ASSERT_TRUE(f->ReadIndex(0, &scratch, &s).ok());
  EXPECT_EQ(s.size, 4u);
  EXPECT_EQ(std::vector<uint8_t>(s.bytes, s.bytes + s.size), (std::vector<uint8_t>{9, 8, 7, 6}));
  EXPECT_EQ(f->ReadIndex(2, &scratch, &s).code(), StatusCode::kInvalidArgument);
}

TEST(ImageFolderTest, FileDeletedAfterListingNamesThePath) {
  TempDir dir;
  MakeDirs(dir.path() + "/a");
  WriteFile(dir.path() + "/a/gone.jpg", kBytes);
  auto f = ImageFolder::Open(dir.path()).value();
  ASSERT_EQ(::unlink((dir.path() + "/a/gone.jpg").c_str()), 0);
  SampleScratch scratch;
  SampleData s;
  Status st = f->ReadIndex(0, &scratch, &s);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("gone.jpg"), std::string::npos) << st.message();
}

// Reads a file without read permission. Root ignores permissions, so under
// root the read runs in a child process that drops to user "nobody".
TEST(ImageFolderTest, UnreadableFileIsAnIoError) {
  TempDir dir;
  MakeDirs(dir.path() + "/a");
  WriteFile(dir.path() + "/a/secret.jpg", kBytes);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir.path() + "/a").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir.path() + "/a/secret.jpg").c_str(), 0), 0);
  auto f = ImageFolder::Open(dir.path()).value();
  auto check = [&]() -> bool {
    SampleScratch scratch;
    SampleData s;
    Status st = f->ReadIndex(0, &scratch, &s);
    return st.code() == StatusCode::kIoError &&
           st.message().find("secret.jpg") != std::string::npos &&
           st.message().find("Permission denied") != std::string::npos;
  };
  if (::geteuid() != 0) {
    EXPECT_TRUE(check());
    return;
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    ::_exit(check() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: wrong status, 2: could not drop privileges";
}

TEST(ImageFolderTest, ClearErrorsForBadRoots) {
  TempDir dir;
  EXPECT_EQ(ImageFolder::Open(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ImageFolder::Open(dir.path()).status().code(), StatusCode::kInvalidArgument);
  MakeDirs(dir.path() + "/empty_class");
  MakeDirs(dir.path() + "/full");
  WriteFile(dir.path() + "/full/a.jpg", kBytes);
  Status st = ImageFolder::Open(dir.path()).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("empty_class"), std::string::npos) << st.message();
}

TEST(ImageFolderTest, HasImageExtension) {
  EXPECT_TRUE(HasImageExtension("a.jpg"));
  EXPECT_TRUE(HasImageExtension("a.JPEG"));
  EXPECT_TRUE(HasImageExtension("a.PnG"));
  EXPECT_FALSE(HasImageExtension("a.gif"));
  EXPECT_FALSE(HasImageExtension("jpg"));
  EXPECT_FALSE(HasImageExtension("a.jpg.txt"));
}

TEST(EpochPermutationTest, IsAPermutationDrawnFromSeedAndEpoch) {
  auto p = EpochPermutation(1000, 42, 3);
  std::set<uint32_t> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), 1000u);
  EXPECT_EQ(*s.rbegin(), 999u);
  EXPECT_EQ(p, EpochPermutation(1000, 42, 3));
  EXPECT_NE(p, EpochPermutation(1000, 42, 4));
  EXPECT_NE(p, EpochPermutation(1000, 43, 3));
}

// Issue 32 item 37: the resume fingerprint hashed absolute paths, so a run
// resumed with the data at another path was refused as "another dataset".
// The same folder anywhere has the same fingerprint; another folder's names
// (a file renamed, a class added) give another one.
TEST(ImageFolderTest, FingerprintIdentifiesTheDatasetNotItsPath) {
  TempDir dir;
  auto make = [&](const std::string& root, const char* extra) {
    for (const char* f : {"cat/a.jpg", "cat/b.jpg", "dog/c.png", extra}) {
      if (f == nullptr) continue;
      const std::string p = root + "/" + f;
      MakeDirs(p.substr(0, p.find_last_of('/')));
      WriteFile(p, kBytes);
    }
    return ImageFolder::Open(root).value()->Fingerprint();
  };
  const uint64_t here = make(dir.path() + "/a/train", nullptr);
  EXPECT_EQ(make(dir.path() + "/elsewhere/deeper/train", nullptr), here);
  EXPECT_EQ(make(dir.path() + "/b/renamed_root", nullptr), here);
  EXPECT_NE(make(dir.path() + "/c/train", "dog/d.png"), here);
  EXPECT_NE(make(dir.path() + "/d/train", "bird/e.png"), here);
}

}  // namespace
}  // namespace stoker
