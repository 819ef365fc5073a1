// Copyright 2026 The stoker Authors.
#include "video/video_clips.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stoker/diagnose.h"
#include "stoker/loader.h"
#include "stoker/transform_schema.h"
#include "video/test_videos.h"

namespace stoker {
namespace {

// Every delivered clip's "video" bytes by sample id, and the ids in order.
struct Clips {
  std::vector<int64_t> ids;
  std::map<int64_t, std::vector<uint8_t>> video;
  Status status;
};

Clips RunEpoch(Loader* loader) {
  Clips out;
  out.status = loader->Start();
  if (!out.status.ok()) return out;
  for (;;) {
    BatchPtr batch;
    bool end = false;
    out.status = loader->Next(&batch, &end);
    if (!out.status.ok() || end) break;
    const int f = batch->FindField("video");
    for (int i = 0; i < batch->size(); ++i) {
      const FieldSlot& s = batch->field_sample(f, i);
      out.ids.push_back(batch->ids()[i]);
      out.video[batch->ids()[i]].assign(s.data, s.data + s.bytes);
    }
  }
  loader->Stop();
  return out;
}

class VideoClipsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveFfmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make the test videos";
    for (const char* c : {"/jump", "/run"}) std::filesystem::create_directories(dir_.path + c);
    ASSERT_TRUE(testing::MakeVideo(testing::H264Args(64, 48, 25, 3, 25), dir_.path + "/jump/a.mp4"));
    ASSERT_TRUE(testing::MakeVideo(testing::H264Args(48, 64, 25, 2, 10), dir_.path + "/jump/b.mkv"));
    ASSERT_TRUE(testing::MakeVideo(
        "-f lavfi -i testsrc=size=40x30:rate=20:duration=3 -c:v mpeg4 -g 15", dir_.path + "/run/c.mp4"));
  }

  std::vector<Transform> Augment() {
    return {MakeTransform("RandomResizedCrop", {int64_t{24}}).value(),
            MakeTransform("RandomHorizontalFlip", {}).value()};
  }

  LoaderOptions Options(int threads) {
    LoaderOptions o;
    o.batch_size = 2;
    o.threads = threads;
    o.shuffle = true;
    o.seed = 11;
    o.dtype = DType::kUint8;
    return o;
  }

  testing::TempDir dir_;
};

TEST_F(VideoClipsTest, FolderLabelsShapesAndTheSameClipsForAnyThreadCount) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 5;
  vo.frame_stride = 3;
  vo.clips_per_video = 2;
  vo.transforms = Augment();
  auto clips = VideoClips::Open(vo);
  ASSERT_TRUE(clips.ok()) << clips.status().ToString();
  EXPECT_EQ(clips.value()->size(), 6);
  EXPECT_EQ(clips.value()->classes(), (std::vector<std::string>{"jump", "run"}));
  EXPECT_EQ(clips.value()->Labels(), (std::vector<int64_t>{0, 0, 0, 0, 1, 1}));
  const Schema schema = clips.value()->schema();
  ASSERT_EQ(schema.fields.size(), 2u);
  EXPECT_EQ(schema.fields[0].shape, (std::vector<int64_t>{5, 3, 24, 24}));
  EXPECT_TRUE(schema.fields[0].fixed());

  std::vector<Clips> runs;
  for (int threads : {1, 3}) {
    auto loader = Loader::Create(clips.value(), Options(threads));
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.value()->SetEpoch(epoch);
      runs.push_back(RunEpoch(loader.value().get()));
      ASSERT_TRUE(runs.back().status.ok()) << runs.back().status.ToString();
      ASSERT_EQ(runs.back().ids.size(), 6u);
    }
  }
  EXPECT_EQ(runs[0].ids, runs[2].ids);
  EXPECT_EQ(runs[0].video, runs[2].video);  // epoch 0: 1 thread == 3 threads
  EXPECT_EQ(runs[1].video, runs[3].video);  // epoch 1
  EXPECT_NE(runs[0].video, runs[1].video);  // another epoch draws other clips
  for (const auto& [id, bytes] : runs[0].video) EXPECT_EQ(bytes.size(), 5u * 3 * 24 * 24);
}

TEST_F(VideoClipsTest, EveryFrameOfAClipGetsTheSameCropAndFlip) {
  // A still picture (SMPTE bars), coded losslessly: every decoded frame is the same, so a
  // clip's output frames are equal exactly when they share one crop and flip.
  const std::string still = dir_.path + "/still.mkv";
  ASSERT_TRUE(testing::MakeVideo(
      "-f lavfi -i smptebars=size=96x64:rate=10:duration=3 -c:v libx264 -qp 0 -pix_fmt yuv444p",
      still));
  VideoClipsOptions vo;
  vo.files = {still};
  vo.clip_len = 6;
  vo.frame_stride = 4;
  vo.clips_per_video = 8;
  vo.transforms = Augment();
  auto clips = VideoClips::Open(vo);
  ASSERT_TRUE(clips.ok()) << clips.status().ToString();
  auto loader = Loader::Create(clips.value(), Options(2));
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  const Clips got = RunEpoch(loader.value().get());
  ASSERT_TRUE(got.status.ok()) << got.status.ToString();
  const size_t frame = 3 * 24 * 24;
  std::set<std::string> firsts;  // each clip's first frame
  for (const auto& [id, bytes] : got.video) {
    const std::vector<uint8_t> first(bytes.begin(), bytes.begin() + frame);
    for (int t = 1; t < 6; ++t) {
      EXPECT_TRUE(std::equal(first.begin(), first.end(), bytes.begin() + t * frame))
          << "clip " << id << " frame " << t;
    }
    firsts.insert(std::string(first.begin(), first.end()));
  }
  EXPECT_GT(firsts.size(), 4u);  // ... while clips draw crops of their own
}

TEST_F(VideoClipsTest, RanksSplitTheClipsAndResumeContinuesTheEpoch) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 3;
  vo.clips_per_video = 4;  // 12 clips
  vo.transforms = Augment();
  auto clips = VideoClips::Open(vo).value();
  LoaderOptions o = Options(2);
  o.batch_size = 3;
  auto whole = Loader::Create(clips, o).value();
  const Clips all = RunEpoch(whole.get());
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  ASSERT_EQ(all.ids.size(), 12u);
  std::map<int64_t, std::vector<uint8_t>> ranks;
  for (int r = 0; r < 2; ++r) {
    LoaderOptions ro = o;
    ro.rank = r;
    ro.world_size = 2;
    const Clips part = RunEpoch(Loader::Create(clips, ro).value().get());
    ASSERT_TRUE(part.status.ok()) << part.status.ToString();
    EXPECT_EQ(part.ids.size(), 6u);
    ranks.insert(part.video.begin(), part.video.end());
  }
  EXPECT_EQ(ranks, all.video);  // each clip once, with the pixels of the single-rank run

  // Resume after 2 batches: the rest of the epoch, the same clips.
  auto first = Loader::Create(clips, o).value();
  ASSERT_TRUE(first->Start().ok());
  for (int b = 0; b < 2; ++b) {
    BatchPtr batch;
    bool end = false;
    ASSERT_TRUE(first->Next(&batch, &end).ok());
  }
  const LoaderState state = first->state();
  first->Stop();
  auto second = Loader::Create(clips, o).value();
  ASSERT_TRUE(second->Resume(state).ok());
  const Clips rest = RunEpoch(second.get());
  ASSERT_TRUE(rest.status.ok()) << rest.status.ToString();
  EXPECT_EQ(rest.ids, std::vector<int64_t>(all.ids.begin() + 6, all.ids.end()));
  for (int64_t id : rest.ids) EXPECT_EQ(rest.video.at(id), all.video.at(id));
}

TEST_F(VideoClipsTest, BadFilesRaiseNamingTheFileOrAreSkippedAndCounted) {
  const std::string audio = dir_.path + "/run/audio.mp4";
  ASSERT_TRUE(testing::MakeVideo("-f lavfi -i sine=duration=1 -c:a aac", audio));
  { FILE* f = std::fopen((dir_.path + "/run/empty.mp4").c_str(), "w"); std::fclose(f); }
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 3;
  vo.transforms = Augment();
  auto clips = VideoClips::Open(vo).value();
  ASSERT_EQ(clips->size(), 5);
  LoaderOptions o = Options(2);
  o.shuffle = false;
  o.batch_size = 1;
  const Clips raised = RunEpoch(Loader::Create(clips, o).value().get());
  EXPECT_FALSE(raised.status.ok());
  EXPECT_NE(raised.status.message().find("audio.mp4: no video stream"), std::string::npos)
      << raised.status.ToString();
  o.on_error = OnError::kSkip;
  auto loader = Loader::Create(clips, o).value();
  const Clips skipped = RunEpoch(loader.get());
  ASSERT_TRUE(skipped.status.ok()) << skipped.status.ToString();
  EXPECT_EQ(skipped.ids.size(), 3u);
  EXPECT_EQ(loader->stats().total.skipped, 2);
}

TEST_F(VideoClipsTest, TheCachesRefuseClipsDrawnAnewEachEpoch) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 2;
  vo.transforms = Augment();
  LoaderOptions o = Options(1);
  o.cache_bytes = 1 << 20;
  auto random = Loader::Create(VideoClips::Open(vo).value(), o);
  EXPECT_EQ(random.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(random.status().message().find("draws each sample anew every epoch"),
            std::string::npos) << random.status().ToString();
  vo.sampling = VideoClipsOptions::Sampling::kUniform;  // still random crops
  EXPECT_FALSE(Loader::Create(VideoClips::Open(vo).value(), o).ok());
  vo.transforms = {MakeTransform("Resize", {ArgValue(std::vector<ArgValue>{int64_t{8}, int64_t{8}})}).value()};
  auto fixed = Loader::Create(VideoClips::Open(vo).value(), o);
  EXPECT_TRUE(fixed.ok()) << fixed.status().ToString();  // the same clip every epoch
}

TEST_F(VideoClipsTest, TheDecodeVideoStageCountsEachClipsWork) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 5;
  vo.frame_stride = 3;  // a 13-frame span: no video is shorter, so no frame repeats
  vo.clips_per_video = 2;
  vo.transforms = Augment();
  auto clips = VideoClips::Open(vo).value();
  // The source's counters are compared with an epoch's stage: without the
  // next epoch's clips decoded ahead, which the source counts when they are
  // decoded (possibly before this epoch's snapshot is read) and the stage
  // with the next epoch.
  LoaderOptions lo = Options(2);
  lo.prefetch_next_epoch = false;
  auto loader = Loader::Create(clips, lo).value();
  for (int epoch = 0; epoch < 2; ++epoch) {
    const VideoClips::Counters before = clips->counters();
    const Clips run = RunEpoch(loader.get());
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    const LoaderStats ls = loader->stats();
    const StageStats& s = ls.epoch;
    const VideoStageStats& v = s.video;
    const VideoClips::Counters after = clips->counters();
    EXPECT_EQ(v.clips, 6);
    EXPECT_EQ(v.clips, s.images);
    EXPECT_EQ(v.frames_delivered, 6 * 5);
    EXPECT_EQ(v.frames_converted, v.frames_delivered);  // no repeats
    EXPECT_GE(v.frames_decoded, v.frames_converted);
    // The source's own counters saw the same clips decode.
    EXPECT_EQ(v.frames_decoded, after.frames_decoded - before.frames_decoded);
    EXPECT_EQ(v.seeks, after.seeks - before.seeks);
    EXPECT_LE(v.seeks, 2 * v.clips);
    // Each clip's decoding starts at a keyframe; a 13-frame span crosses at
    // most one more (GOPs of 10, 15 and 25 frames).
    EXPECT_GE(v.gops_decoded, v.clips);
    EXPECT_LE(v.gops_decoded, 3 * v.clips);
    EXPECT_EQ(v.indexes_built, epoch == 0 ? 3 : 0);  // kept in memory across epochs
    EXPECT_EQ(ls.total.video.indexes_built, 3);
    EXPECT_EQ(ls.total.video.clips, 6 * (epoch + 1));
    // The clip's time is split out of the read: seek, decode and conversion
    // are the decode stage, its transforms augment, demuxing stays read.
    EXPECT_GT(v.decode_s, 0);
    EXPECT_GT(v.convert_s, 0);
    EXPECT_GT(v.transform_s, 0);
    EXPECT_GT(v.demux_s, 0);
    EXPECT_NEAR(s.decode_s, v.seek_s + v.decode_s + v.convert_s, 1e-6);
    EXPECT_GE(s.augment_s + 1e-6, v.transform_s);
    EXPECT_GE(s.read_s + 1e-6, v.demux_s);
  }
}

TEST_F(VideoClipsTest, ARepeatedFrameIsDeliveredAgainNotDecodedAgain) {
  const std::string one = dir_.path + "/one.mp4";
  ASSERT_TRUE(testing::MakeVideo(testing::H264Args(32, 24, 25, 1, 25) + " -frames:v 1", one));
  VideoClipsOptions vo;
  vo.files = {one};
  vo.clip_len = 4;
  auto clips = VideoClips::Open(vo).value();
  SampleScratch scratch;
  SampleData sample;
  ASSERT_TRUE(clips->ReadIndex(0, &scratch, &sample).ok());
  ASSERT_NE(sample.video, nullptr);
  EXPECT_EQ(sample.video->frames_delivered, 4);
  EXPECT_EQ(sample.video->frames_converted, 1);
  EXPECT_EQ(sample.video->frames_decoded, 1);
  EXPECT_EQ(sample.video->gops_decoded, 1);
  EXPECT_EQ(sample.video->indexes_built, 1);
  ASSERT_TRUE(clips->ReadIndex(0, &scratch, &sample).ok());
  EXPECT_EQ(sample.video->indexes_built, 0);
}

TEST_F(VideoClipsTest, DiagnoseNamesTheDecodeVideoStage) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 8;
  vo.frame_stride = 2;
  vo.clips_per_video = 4;
  vo.transforms = Augment();
  auto loader = Loader::Create(VideoClips::Open(vo).value(), Options(2)).value();
  DiagnoseOptions d;
  d.batches = 3;
  d.agree = 1;
  auto r = Diagnose(loader.get(), [](const BatchPtr&) {}, d);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r.value().modes.size(), 5u);
  EXPECT_EQ(r.value().modes[3].stage, "fields");  // decoded clips from memory
  EXPECT_EQ(r.value().modes[4].stage, "decode-video");
  EXPECT_GT(r.value().pipeline_stats.total.video.clips, 0);
  const std::string text = FormatDiagnosis(r.value());
  EXPECT_NE(text.find("decode-video stage: demux"), std::string::npos) << text;
  // An instant step waits for clips: decoding them is the bottleneck, not storage.
  EXPECT_TRUE(r.value().data_bound) << text;
  EXPECT_EQ(r.value().bottleneck, "decode-video") << text;
  EXPECT_NE(r.value().verdict.find("frames decoded for"), std::string::npos) << text;
}

TEST_F(VideoClipsTest, TuneSweepsCodecThreadsOnAClipSource) {
  VideoClipsOptions vo;
  vo.root = dir_.path;
  vo.clip_len = 4;
  vo.transforms = Augment();
  TuneOptions t;
  t.threads = {1};
  t.prefetch = {1};
  t.batch_sizes = {2};
  t.codec_threads = {1, 2};
  t.seconds = 0.05;
  t.warmup_batches = 1;
  t.include_auto = false;
  auto results = Tune(VideoClips::Open(vo).value(), Options(1), t);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results.value().size(), 2u);
  EXPECT_EQ(results.value()[0].codec_threads, 1);
  EXPECT_EQ(results.value()[1].codec_threads, 2);
  EXPECT_GT(results.value()[1].images, 0);
  const std::string table = FormatTune(results.value(), Recommend(results.value(), 0));
  EXPECT_NE(table.find("threads=1 prefetch=1 batch=2 codec=2"), std::string::npos) << table;
  // Within 5% of each other, 1 x 1 uses fewer cores than 1 x 2.
  std::vector<TuneResult> tie = results.value();
  tie[0].images_per_sec = tie[1].images_per_sec = 10;
  EXPECT_EQ(Recommend(tie, 0).index, 0);
}

TEST(VideoClipsOptionsTest, BadOptionsNameTheOption) {
  VideoClipsOptions o;
  o.files = {"/nonexistent.mp4"};
  o.clip_len = 0;
  EXPECT_NE(VideoClips::Open(o).status().message().find("clip_len must be"), std::string::npos);
  o.clip_len = 4;
  o.layout = "THWC";
  EXPECT_NE(VideoClips::Open(o).status().message().find("layout must be"), std::string::npos);
  o.layout = "TCHW";
  o.frame_rate = 10;
  o.frame_stride = 2;
  EXPECT_NE(VideoClips::Open(o).status().message().find("not both"), std::string::npos);
  o.frame_stride = 1;
  o.transforms = {MakeTransform("ColorJitter", {0.5}).value()};
  EXPECT_NE(VideoClips::Open(o).status().message().find("fixed"), std::string::npos);
  o.transforms.clear();
  o.root = "/nonexistent-root";
  EXPECT_NE(VideoClips::Open(o).status().message().find("not both"), std::string::npos);
  o.files.clear();
  EXPECT_EQ(VideoClips::Open(o).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stoker
