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
  std::vector<std::vector<uint8_t>> frames;
  static Status Sink(void* p, int j, const uint8_t* rgb, int w, int h, ptrdiff_t stride) {
    auto* c = static_cast<Collected*>(p);
    if (static_cast<int>(c->frames.size()) != j) return InternalError("frames out of order");
    std::vector<uint8_t> f(static_cast<size_t>(w) * h * 3);
    for (int y = 0; y < h; ++y) std::memcpy(f.data() + y * w * 3, rgb + y * stride, w * 3);
    c->frames.push_back(std::move(f));
    return Status::OK();
  }
};

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
    return decoder.Decode(file.value().get(), index_, targets, threads, &Collected::Sink, out,
                          stats);
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

}  // namespace
}  // namespace stoker
