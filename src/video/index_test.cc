// Copyright 2026 The stoker Authors.
#include "video/index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "io/cache_file.h"

#include "video/demux.h"
#include "video/test_videos.h"

namespace stoker {
namespace {

VideoIndex Frames(int n, int64_t step = 10) {
  VideoIndex index;
  index.time_base_num = 1;
  index.time_base_den = 100;  // step 10: 10 frames per second
  for (int i = 0; i < n; ++i) index.pts.push_back(i * step);
  index.keyframes = {0};
  return index;
}

TEST(PlanClipFrames, StrideStartsCoverEveryValidStartAndStayInside) {
  const VideoIndex index = Frames(50);
  ClipSpec spec{4, 3, 0, 1, false};  // span 10: starts 0..40
  std::set<int64_t> starts;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    Rng rng(seed);
    const std::vector<int64_t> f = PlanClipFrames(index, spec, 0, &rng);
    ASSERT_EQ(f.size(), 4u);
    for (size_t j = 1; j < f.size(); ++j) EXPECT_EQ(f[j] - f[j - 1], 3);
    EXPECT_GE(f.front(), 0);
    EXPECT_LE(f.back(), 49);
    starts.insert(f.front());
  }
  EXPECT_EQ(starts.size(), 41u);  // 0..40, each drawn
  EXPECT_EQ(*starts.rbegin(), 40);
}

TEST(PlanClipFrames, UniformClipsAreEvenlySpacedAndDrawNothing) {
  const VideoIndex index = Frames(50);
  ClipSpec spec{4, 3, 0, 3, true};
  Rng rng(1);
  const Rng before = rng;
  EXPECT_EQ(PlanClipFrames(index, spec, 0, &rng).front(), 0);
  EXPECT_EQ(PlanClipFrames(index, spec, 1, &rng).front(), 20);
  EXPECT_EQ(PlanClipFrames(index, spec, 2, &rng).front(), 40);
  Rng after = rng, copy = before;
  EXPECT_EQ(after.Next(), copy.Next());  // no draw made
  spec.clips_per_video = 1;
  EXPECT_EQ(PlanClipFrames(index, spec, 0, &rng).front(), 20);  // the middle
}

TEST(PlanClipFrames, AShortVideoRepeatsItsLastFrame) {
  const VideoIndex one = Frames(1);
  Rng rng(3);
  EXPECT_EQ(PlanClipFrames(one, ClipSpec{5, 2, 0, 1, false}, 0, &rng),
            (std::vector<int64_t>{0, 0, 0, 0, 0}));
  const VideoIndex three = Frames(3);
  EXPECT_EQ(PlanClipFrames(three, ClipSpec{4, 1, 0, 1, false}, 0, &rng),
            (std::vector<int64_t>{0, 1, 2, 2}));
}

TEST(PlanClipFrames, FrameRateChoosesTheLastFramePresentedAtOrBeforeEachTime) {
  // Variable frame rate: pts 0, 7, 30, 31, 60, 95 (time base 1/100 s).
  VideoIndex index;
  index.time_base_num = 1;
  index.time_base_den = 100;
  index.pts = {0, 7, 30, 31, 60, 95};
  index.keyframes = {0};
  // 5 frames per second from t0 = 0 (uniform, the range is 95 - 80 = 15: middle 7):
  // times 7, 27, 47, 67, 87 -> frames at pts 7, 7, 31, 60, 60.
  ClipSpec spec{5, 1, 5.0, 1, true};
  Rng rng(0);
  const std::vector<int64_t> f = PlanClipFrames(index, spec, 0, &rng);
  std::vector<int64_t> pts;
  for (int64_t i : f) pts.push_back(index.pts[static_cast<size_t>(i)]);
  EXPECT_EQ(pts, (std::vector<int64_t>{7, 7, 31, 60, 60}));
}

TEST(PlanSeek, TheLastKeyframeAtOrBeforeTheFirstFrame) {
  VideoIndex index = Frames(100);
  index.keyframes = {0, 250, 500, 750};
  EXPECT_EQ(PlanSeek(index, 0), 0u);
  EXPECT_EQ(PlanSeek(index, 249), 0u);
  EXPECT_EQ(PlanSeek(index, 250), 1u);
  EXPECT_EQ(PlanSeek(index, 990), 3u);
}

TEST(BuildVideoIndex, KeyframesAndEveryFrameOfAnH264File) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
  testing::TempDir dir;
  const std::string path = dir.path + "/a.mp4";
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 4, 25), path));
  auto file = VideoFile::Open(path, int64_t{1} << 28);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto index = BuildVideoIndex(file.value().get());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(index.value().pts.size(), 100u);
  EXPECT_EQ(index.value().keyframes.size(), 4u);  // a keyframe every 25 frames
  EXPECT_EQ(index.value().width, 64);
  EXPECT_EQ(index.value().height, 48);
  // 25 fps: frames a 25th of a second apart, in presentation order.
  const double tb = index.value().time_base();
  for (size_t i = 1; i < index.value().pts.size(); ++i) {
    EXPECT_NEAR((index.value().pts[i] - index.value().pts[i - 1]) * tb, 0.04, 1e-6);
  }
}

// A video inside a bigger file (a tar member): the range, read through the
// AVIOContext, indexes as the file itself does, and so does the same bytes in memory.
TEST(VideoFile, AByteRangeOfAFileReadsAsTheVideoItHolds) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
  testing::TempDir dir;
  const std::string path = dir.path + "/a.mp4";
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 2, 10), path));
  std::ifstream in(path, std::ios::binary);
  const std::string video((std::istreambuf_iterator<char>(in)), {});
  const std::string before(1000, 'x'), after(777, 'y');
  const std::string wrapped = dir.path + "/wrapped.bin";
  std::ofstream(wrapped, std::ios::binary) << before << video << after;
  auto plain = VideoFile::Open(path, int64_t{1} << 28);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto want = BuildVideoIndex(plain.value().get());
  ASSERT_TRUE(want.ok());
  const VideoLocation where{wrapped, static_cast<int64_t>(before.size()),
                            static_cast<int64_t>(video.size()), "wrapped.bin: member a.mp4"};
  auto ranged = VideoFile::Open(where, int64_t{1} << 28);
  ASSERT_TRUE(ranged.ok()) << ranged.status().ToString();
  EXPECT_EQ(ranged.value()->path(), "wrapped.bin: member a.mp4");
  auto got = BuildVideoIndex(ranged.value().get());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value().pts, want.value().pts);
  EXPECT_EQ(got.value().keyframes, want.value().keyframes);
  auto mem = VideoFile::OpenMemory(reinterpret_cast<const uint8_t*>(video.data()), video.size(),
                                   "mem", int64_t{1} << 28);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_EQ(BuildVideoIndex(mem.value().get()).value().pts, want.value().pts);
  // A range that runs past the file's end, and an empty one, are named errors.
  VideoLocation past = where;
  past.size += static_cast<int64_t>(after.size()) + 1;
  auto bad = VideoFile::Open(past, int64_t{1} << 28);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("run past the end"), std::string::npos);
  VideoLocation empty = where;
  empty.size = 0;
  EXPECT_NE(VideoFile::Open(empty, 1 << 28).status().message().find("wrapped.bin: member a.mp4"),
            std::string::npos);
}

TEST(VideoFile, BadFilesAreNamedErrors) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
  testing::TempDir dir;
  const std::string audio = dir.path + "/audio.mp4";
  ASSERT_TRUE(testing::MakeVideo("-f lavfi -i sine=duration=1 -c:a aac", audio));
  auto a = VideoFile::Open(audio, int64_t{1} << 28);
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find(audio + ": no video stream"), std::string::npos);
  const std::string empty = dir.path + "/empty.mp4";
  { FILE* f = std::fopen(empty.c_str(), "w"); std::fclose(f); }
  EXPECT_EQ(VideoFile::Open(empty, 100).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(VideoFile::Open(dir.path + "/missing.mp4", 100).status().code(),
            StatusCode::kNotFound);
  const std::string big = dir.path + "/big.mp4";
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 0.2, 25), big));
  auto b = VideoFile::Open(big, 64 * 48 - 1);
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("exceed max_pixels"), std::string::npos);
  EXPECT_TRUE(VideoFile::Open(big, 64 * 48).ok());
}

TEST(VideoIndexCache, ReusedWhileTheFileIsUnchangedAndRebuiltOtherwise) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
  testing::TempDir dir;
  const std::string path = dir.path + "/a.mp4", cache = dir.path + "/idx";
  std::filesystem::create_directories(cache);
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 2, 25), path));
  bool loaded = true;
  auto built = LoadOrBuildVideoIndex(path, int64_t{1} << 28, cache, &loaded);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_FALSE(loaded);
  const std::string entry = VideoIndexPath(cache, path);
  ASSERT_TRUE(std::filesystem::exists(entry));
  auto again = LoadOrBuildVideoIndex(path, int64_t{1} << 28, cache, &loaded);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(loaded);
  EXPECT_EQ(again.value().pts, built.value().pts);
  EXPECT_EQ(again.value().keyframes, built.value().keyframes);
  EXPECT_EQ(again.value().time_base_den, built.value().time_base_den);
  // Another video written at the same path: its own index, not the cached one.
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 3, 10), path));
  auto other = LoadOrBuildVideoIndex(path, int64_t{1} << 28, cache, &loaded);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(loaded);
  EXPECT_EQ(other.value().pts.size(), 75u);
  EXPECT_EQ(other.value().keyframes.size(), 8u);
  // A damaged entry is rebuilt, never an error; a cut one does not decode.
  { std::ofstream f(entry, std::ios::binary | std::ios::trunc); f << "STKVIDX1garbage"; }
  auto fixed = LoadOrBuildVideoIndex(path, int64_t{1} << 28, cache, &loaded);
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(loaded);
  EXPECT_EQ(fixed.value().pts, other.value().pts);
  FileIdentity id;
  ASSERT_TRUE(IdentifyFile(path, &id).ok());
  std::string bytes = EncodeVideoIndex(other.value(), id);
  FileIdentity back;
  ASSERT_TRUE(DecodeVideoIndex(bytes, &back).ok());
  EXPECT_TRUE(back == id);
  for (size_t cut : {size_t{8}, size_t{40}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_EQ(DecodeVideoIndex(bytes.substr(0, cut), &back).status().code(),
              StatusCode::kDataLoss) << cut;
  }
  EXPECT_EQ(DecodeVideoIndex(bytes + "x", &back).status().code(), StatusCode::kDataLoss);
  // max_pixels holds for a cached index too: the file is opened and refused.
  auto big = LoadOrBuildVideoIndex(path, 100, cache, &loaded);
  EXPECT_NE(big.status().message().find("exceed max_pixels"), std::string::npos);
}

}  // namespace
}  // namespace stoker
