// Copyright 2026 The stoker Authors.
#include "video/decode.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "video/demux.h"
#include "video/index.h"
#include "video/test_videos.h"

namespace stoker {
namespace {

struct Collected {
  std::vector<std::vector<uint8_t>> frames;  // the rectangle's pixels
  std::vector<Rect> rects;                   // the rectangle converted
  static Status Sink(void* p, int j, const uint8_t* rgb, int /*width*/, int /*height*/,
                     const Rect& r, ptrdiff_t stride) {
    auto* c = static_cast<Collected*>(p);
    if (static_cast<int>(c->frames.size()) != j) return InternalError("frames out of order");
    const size_t row = static_cast<size_t>(r.width) * 3;
    std::vector<uint8_t> f(row * r.height);
    for (int y = 0; y < r.height; ++y) std::memcpy(f.data() + y * row, rgb + y * stride, row);
    c->frames.push_back(std::move(f));
    c->rects.push_back(r);
    return Status::OK();
  }
};

// `want`'s pixels in `rect`'s (both inside a frame), rows of want.width * 3 bytes.
std::vector<uint8_t> Cut(const std::vector<uint8_t>& pixels, const Rect& rect, const Rect& want) {
  std::vector<uint8_t> out;
  for (int y = want.y; y < want.bottom(); ++y) {
    const uint8_t* row =
        pixels.data() + (static_cast<size_t>(y - rect.y) * rect.width + (want.x - rect.x)) * 3;
    out.insert(out.end(), row, row + static_cast<size_t>(want.width) * 3);
  }
  return out;
}

// Decodes `targets` of the video at `path`, converting `want` (width 0: all).
Status DecodeFile(const std::string& path, const std::vector<int64_t>& targets, const Rect& want,
                  Collected* out, VideoIndex* index_out = nullptr) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoFile> file, VideoFile::Open(path, 1 << 28));
  STOKER_ASSIGN_OR_RETURN(VideoIndex index, BuildVideoIndex(file.get()));
  if (index_out != nullptr) *index_out = index;
  STOKER_ASSIGN_OR_RETURN(file, VideoFile::Open(path, 1 << 28));
  std::vector<int64_t> pts;
  for (int64_t f : targets) pts.push_back(index.pts[static_cast<size_t>(f)]);
  ClipDecoder decoder;
  DecodeStats stats;
  return decoder.Decode(file.get(), index, pts, 1, want, &Collected::Sink, out, &stats);
}

class DecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
    // 100 frames, a keyframe every 25, B-frames (x264's default): decode order differs
    // from presentation order.
    path_ = dir_.path + "/a.mp4";
    ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 4, 25), path_));
    auto file = VideoFile::Open(path_, int64_t{1} << 28);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto index = BuildVideoIndex(file.value().get());
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    index_ = index.value();
    ASSERT_EQ(index_.pts.size(), 100u);
    ASSERT_EQ(index_.keyframes.size(), 4u);
  }

  Status Decode(const std::vector<int64_t>& targets, Collected* out, DecodeStats* stats,
                int threads = 1) {
    auto file = VideoFile::Open(path_, int64_t{1} << 28);
    if (!file.ok()) return file.status();
    ClipDecoder decoder;
    return decoder.Decode(file.value().get(), index_, targets, threads, Rect{}, &Collected::Sink,
                          out, stats);
  }

  testing::TempDir dir_;
  std::string path_;
  VideoIndex index_;
};

TEST_F(DecodeTest, SeekingGivesTheFramesADecodeFromTheStartGives) {
  Collected all;
  DecodeStats stats;
  ASSERT_TRUE(Decode(index_.pts, &all, &stats).ok());
  ASSERT_EQ(all.frames.size(), 100u);
  EXPECT_EQ(stats.seeks, 0);
  for (int first : {0, 24, 25, 26, 49, 60, 75, 90}) {
    std::vector<int64_t> targets;
    std::vector<int> which;
    for (int j = 0; j < 4; ++j) {
      const int f = std::min(99, first + 3 * j);
      targets.push_back(index_.pts[f]);
      which.push_back(f);
    }
    Collected clip;
    DecodeStats s;
    ASSERT_TRUE(Decode(targets, &clip, &s).ok()) << first;
    ASSERT_EQ(clip.frames.size(), 4u);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(clip.frames[j], all.frames[which[j]]) << first << " " << j;
  }
}

TEST_F(DecodeTest, AClipDecodesFromTheKeyframeBeforeItToItsLastFrameOnly) {
  // Frames 60..72: the keyframe at 50, so frames 50..72 are decoded, once each.
  std::vector<int64_t> targets;
  for (int f = 60; f <= 72; f += 4) targets.push_back(index_.pts[f]);
  Collected clip;
  DecodeStats stats;
  ASSERT_TRUE(Decode(targets, &clip, &stats).ok());
  EXPECT_EQ(stats.seeks, 1);
  // At most frames 50..72, once each; fewer, as unwanted non-reference B-frames are
  // skipped (x264's default GOP has them).
  EXPECT_LE(stats.frames_decoded, 72 - 50 + 1);
  EXPECT_LT(stats.frames_decoded, 72 - 50 + 1);
  EXPECT_GE(stats.frames_decoded, 4);
  // A clip in the first GOP of a fresh file needs no seek.
  Collected first;
  DecodeStats s0;
  ASSERT_TRUE(Decode({index_.pts[2], index_.pts[5]}, &first, &s0).ok());
  EXPECT_EQ(s0.seeks, 0);
  EXPECT_LE(s0.frames_decoded, 6);
  EXPECT_GE(s0.frames_decoded, 2);
}

TEST_F(DecodeTest, RepeatedTargetsAreDeliveredAgainAndThreadsChangeNothing) {
  const std::vector<int64_t> targets = {index_.pts[30], index_.pts[30], index_.pts[99],
                                        index_.pts[99]};
  Collected one, three;
  DecodeStats s1, s3;
  ASSERT_TRUE(Decode(targets, &one, &s1, 1).ok());
  ASSERT_TRUE(Decode(targets, &three, &s3, 3).ok());
  ASSERT_EQ(one.frames.size(), 4u);
  EXPECT_EQ(one.frames[0], one.frames[1]);
  EXPECT_EQ(one.frames[2], one.frames[3]);
  EXPECT_NE(one.frames[0], one.frames[2]);
  EXPECT_EQ(one.frames, three.frames);
}

TEST_F(DecodeTest, AFrameTheFileDoesNotHoldIsDataLoss) {
  // A pts past the end (what a file truncated after its index was built gives).
  Collected clip;
  DecodeStats stats;
  const Status st = Decode({index_.pts[10], index_.pts.back() + 1000}, &clip, &stats);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.ToString();
  EXPECT_NE(st.message().find(path_), std::string::npos);
}

// Converting only a rectangle of each frame gives exactly the pixels of the
// whole frame's conversion there: H.264, MPEG-4 and VP9 (4:2:0; VP9 at an odd
// width), widths that are not multiples of 8, odd offsets and sizes; odd
// heights (VP9 4:2:0) and 4:4:4 (H.264, odd sizes too) convert the whole
// frame (ConvertRect), and still give the same pixels.
TEST(ConvertRectTest, ARectangleHasTheWholeFramesPixels) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test videos";
  testing::TempDir dir;
  struct Video {
    std::string name, codec;
    int w, h;
    bool region;  // ConvertRect converts less than the frame
  };
  const std::vector<Video> videos = {
      {"h264.mp4", "-c:v libx264 -pix_fmt yuv420p", 96, 64, true},
      {"h264_102.mp4", "-c:v libx264 -pix_fmt yuv420p", 102, 58, true},  // not 8k wide
      {"h264_444.mp4", "-c:v libx264 -pix_fmt yuv444p", 96, 64, false},
      {"h264_444_odd.mp4", "-c:v libx264 -pix_fmt yuv444p", 67, 49, false},
      {"mpeg4.mp4", "-c:v mpeg4 -pix_fmt yuv420p", 82, 62, true},
      {"vp9.webm", "-c:v libvpx-vp9 -pix_fmt yuv420p -deadline realtime -cpu-used 8", 99, 70,
       true},
      {"vp9_odd.webm", "-c:v libvpx-vp9 -pix_fmt yuv420p -deadline realtime -cpu-used 8", 77,
       53, false},
  };
  const std::vector<int64_t> frames = {0, 3, 7, 8};
  for (const Video& v : videos) {
    SCOPED_TRACE(v.name);
    const std::string path = dir.path + "/" + v.name;
    ASSERT_TRUE(testing::MakeVideo("-f lavfi -i testsrc=size=" + std::to_string(v.w) + "x" +
                                       std::to_string(v.h) + ":rate=25:duration=0.4 " + v.codec +
                                       " -g 5",
                                   path));
    Collected whole;
    VideoIndex index;
    ASSERT_TRUE(DecodeFile(path, frames, Rect{}, &whole, &index).ok());
    ASSERT_EQ(whole.frames.size(), frames.size());
    ASSERT_EQ(index.width, v.w);
    ASSERT_EQ(index.height, v.h);
    for (const Rect& r : whole.rects) ASSERT_EQ(r, (Rect{0, 0, v.w, v.h}));
    const std::vector<Rect> wants = {
        {0, 0, 1, 1},         {1, 1, 5, 3},          {17, 9, 31, 21},
        {v.w - 7, v.h - 5, 7, 5}, {3, 0, v.w - 3, v.h}, {0, 0, v.w, v.h},
        {v.w / 2 - 1, v.h / 3 + 1, v.w / 2, v.h / 2}, {33, 1, 1, v.h - 2}};
    bool smaller = false;
    for (const Rect& want : wants) {
      SCOPED_TRACE(std::to_string(want.x) + "," + std::to_string(want.y) + " " +
                   std::to_string(want.width) + "x" + std::to_string(want.height));
      Collected part;
      ASSERT_TRUE(DecodeFile(path, frames, want, &part).ok());
      ASSERT_EQ(part.frames.size(), frames.size());
      for (size_t j = 0; j < frames.size(); ++j) {
        const Rect& r = part.rects[j];
        ASSERT_TRUE(r.x <= want.x && r.y <= want.y && r.right() >= want.right() &&
                    r.bottom() >= want.bottom());
        smaller = smaller || r.width * r.height < v.w * v.h;
        EXPECT_EQ(Cut(part.frames[j], r, r), Cut(whole.frames[j], Rect{0, 0, v.w, v.h}, r))
            << "frame " << j;
      }
    }
    EXPECT_EQ(smaller, v.region);
  }
}

// A rectangle's converter is set up for each clip (about one frame's
// conversion), so a clip converts it only when it saves more than that.
TEST(ConvertRectTest, AClipConvertsWholeFramesWhenTheRectangleSavesLessThanOne) {
  if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test video";
  testing::TempDir dir;
  const std::string path = dir.path + "/a.mp4";
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(96, 64, 25, 0.4, 5), path));
  const Rect quarter{0, 0, 24, 64};  // columns 0..31 converted: 2/3 of the frame saved
  Collected one, four;
  ASSERT_TRUE(DecodeFile(path, {3}, quarter, &one).ok());
  ASSERT_TRUE(DecodeFile(path, {0, 3, 3, 7}, quarter, &four).ok());  // 3 distinct frames
  EXPECT_EQ(one.rects.at(0), (Rect{0, 0, 96, 64}));
  EXPECT_EQ(four.rects.at(0), (Rect{0, 0, 32, 64}));
}

}  // namespace
}  // namespace stoker
