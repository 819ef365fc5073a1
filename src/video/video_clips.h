// Copyright 2026 The stoker Authors.
//
// VideoClipsImpl: the implementation of stoker::VideoClips
// (include/stoker/video.h). A clip is a record {"video", "label"[, "time"]}:
// the engine's record path carries it through batch memory (a stacked block
// when the transforms end in a fixed size), skip, ranks, resume and the
// consumer's assembly unchanged. What the source does per clip (ReadClip):
//   1. the video's index (video/index.h), built once and kept (IndexOf);
//   2. the clip's frames, PlanClipFrames with Rng(seed, epoch, sample, kClipSalt);
//   3. one forward decode of those frames (video/decode.h, ClipDecoder);
//   4. each frame through a SampleProcessor (the engine's geometry plan,
//      resampler, photometric ops and PixelWriter), every frame with a copy
//      of one Rng(seed, epoch, sample, kTransformSalt): one crop, flip and
//      colour draw for the whole clip; written NCHW into the field's frame t
//      (TCHW), or planes scattered to [C, T, H, W] (CTHW).
// The epoch reader (ClipReader) is the RandomAccessSource's reader (order,
// sampler, ranks, resume offset) with the epoch's seed and epoch passed to
// ReadClip; ReadIndex reads a clip as epoch 0 under seed 0.
//
// Thread-safety: ReadClip is thread-safe: per-thread state (decoder,
// processor) comes from a pool under a mutex; each video's index is built
// under that video's own mutex, once. Errors: as stoker/video.h.
#ifndef STOKER_VIDEO_VIDEO_CLIPS_H_
#define STOKER_VIDEO_VIDEO_CLIPS_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "ops/convert.h"
#include "program/sample_processor.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"
#include "stoker/video.h"
#include "video/decode.h"
#include "video/demux.h"
#include "video/index.h"

namespace stoker {

class VideoClipsImpl final : public VideoClips {
 public:
  static StatusOr<std::shared_ptr<VideoClipsImpl>> Create(const VideoClipsOptions& options);

  int64_t size() const override {
    return all_ ? clip_offsets_.back() : num_videos() * options_.clips_per_video;
  }
  int64_t VideoOf(int64_t index) const override;
  int64_t ClipOf(int64_t index) const override;
  std::string Describe() const override;
  std::vector<std::string> classes() const override { return classes_; }
  Schema schema() const override { return schema_; }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    return ReadClip(index, 0, 0, scratch, out);
  }
  std::string NameOf(int64_t index) const override;
  std::vector<int64_t> Labels() const override;
  uint64_t SampleStamp(int64_t index) const override;
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec& spec) override;
  // Random clip starts, or transforms with random parameters.
  bool SamplesVaryByEpoch() const override;

  const VideoClipsOptions& options() const override { return options_; }
  int64_t num_videos() const override { return static_cast<int64_t>(paths_.size()); }
  const std::string& VideoPath(int64_t v) const override { return paths_[static_cast<size_t>(v)]; }
  StatusOr<ClipFrames> FramesOf(int64_t index, uint64_t seed, int64_t epoch) const override;
  Counters counters() const override;

  // Clip `index` as epoch `epoch` under `seed` reads it. Thread-safe.
  Status ReadClip(int64_t index, uint64_t seed, int64_t epoch, SampleScratch* scratch,
                  SampleData* out) const;

 private:
  struct VideoSlot {
    Mutex mu;
    bool built STOKER_GUARDED_BY(mu) = false;
    Status status STOKER_GUARDED_BY(mu);
    std::shared_ptr<const VideoIndex> index STOKER_GUARDED_BY(mu);
  };
  struct Worker {
    ClipDecoder decoder;
    std::unique_ptr<SampleProcessor> processor;
    std::vector<uint8_t> frame;  // one converted frame (CTHW's planes before the scatter)
  };

  explicit VideoClipsImpl(const VideoClipsOptions& options);
  // `*built` (when given) is set when this call built (or loaded) the index.
  StatusOr<std::shared_ptr<const VideoIndex>> IndexOf(int64_t video, bool* built = nullptr) const;
  // The clip's frames as indices into the video's pts.
  std::vector<int64_t> PlanFrames(const VideoIndex& index, int64_t sample, uint64_t seed,
                                  int64_t epoch) const;
  std::unique_ptr<Worker> TakeWorker() const;
  void ReturnWorker(std::unique_ptr<Worker> w) const;

  // Lists the shards' video members (options_.shards).
  Status ListShards();

  // sampling kAll and kTorchvisionUniform: every video's index, its clips
  // counted (clip_counts_), its samples' offsets (clip_offsets_).
  Status CountClips();

  VideoClipsOptions options_;
  ClipSpec clip_;
  bool all_ = false;                   // sampling kAll or kTorchvisionUniform: clips at `step`
  int pick_ = 0;                       // kTorchvisionUniform: clips_per_video, else 0
  std::vector<int64_t> clip_offsets_;  // all_: video v's samples are [v], [v + 1)
  std::vector<int64_t> clip_counts_;   // all_: video v's clips at `step`
  std::vector<std::string> paths_;       // what errors and NameOf call each video
  std::vector<VideoLocation> where_;     // where its bytes are (a file, or a tar member)
  std::vector<std::string> bad_;         // a shard entry that could not be indexed: its error
  std::vector<std::string> stamp_path_;  // the file SampleStamp stamps (the shard)
  std::vector<int64_t> labels_;
  std::vector<std::string> classes_;
  Schema schema_;
  int out_height_ = 0, out_width_ = 0;  // 0: each video's own size
  bool cthw_ = false;                  // layout CTHW
  ProcessorConfig processor_config_;
  std::unique_ptr<PixelWriter> writer_;  // the fixed output size's (null: per clip)
  std::unique_ptr<VideoSlot[]> slots_;
  mutable Mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Worker>> pool_ STOKER_GUARDED_BY(pool_mu_);
  mutable std::atomic<int64_t> indexes_built_{0}, indexes_loaded_{0}, clips_{0}, frames_decoded_{0}, seeks_{0};
};

}  // namespace stoker

#endif  // STOKER_VIDEO_VIDEO_CLIPS_H_
