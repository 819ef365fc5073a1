// Copyright 2026 The stoker Authors.
//
// Video clips (Python stoker.VideoClips): a source whose sample is a clip of
// `clip_len` frames of one video file, decoded with FFmpeg's libraries
// (libavformat, libavcodec, libswscale). src/video/README.md
// describes the index, the seek plan and the threading.
//
//   VideoClipsOptions o;
//   o.root = "kinetics/train";          // one sub-directory per class
//   o.clip_len = 16; o.frame_stride = 4;
//   o.transforms = {MakeTransform("RandomResizedCrop", {224}).value()};
//   auto clips = VideoClips::Open(o).value();
//   // Loader::Create(clips, options): batches hold the record field "video",
//   // uint8 [B, T, 3, H, W] ("TCHW") or [B, 3, T, H, W] ("CTHW"), and "label".
//
// A sample is a record (stoker/record.h) with fields "video" (an array) and
// "label". Sample index i is clip i % clips_per_video of video i / clips_per_video
// (sampling kAll: the videos' clips in order, video by video).
// Which frames a clip holds is drawn from (seed, epoch, video, clip) (the
// Loader's seed and epoch): identical for any thread count, rank or resume.
// Frames are chosen by presentation timestamp, so variable frame rates are
// exact. The transforms run on every frame of a clip with one random draw
// (the same crop, flip and colour change for all its frames).
//
// Ownership: Open returns a shared pointer; the Loader keeps its source alive.
// Thread-safety: immutable after Open() apart from the per-video index cache
// (built once per video under its own lock); reads are thread-safe.
// Errors: Open returns NotFound for a missing root, file or shard, InvalidArgument
// naming the option for bad options, Unimplemented when stoker was built
// without FFmpeg (BuiltWithVideo()). Reads return DataLoss (truncated or
// corrupt file, missing frames), InvalidArgument (no video stream, frames above
// max_pixels), each naming the file: on_error="skip" skips and counts them.
#ifndef STOKER_VIDEO_H_
#define STOKER_VIDEO_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/source.h"
#include "stoker/status.h"
#include "stoker/transforms.h"
#include "stoker/types.h"

namespace stoker {

struct VideoClipsOptions {
  // Either a root with one sub-directory per class (the label is the class's
  // index among the sorted sub-directories; files sorted as ImageFolder's) ...
  std::string root;
  // ... or a list of files (labels -1 unless `labels` gives one per file) ...
  std::vector<std::string> files;
  std::vector<int64_t> labels;
  // ... or tar shards in the webdataset layout (KEY.mp4 + KEY.cls): patterns
  // as Shards takes them (braces, globs), local uncompressed .tar only (each
  // video member is read in place by random access: the shard's tar index
  // gives its offset and size). A sample's video is its first member with one
  // of `extensions`, its label the integer text of `shard_label` ("": -1);
  // class names from a classes.json beside the shards. The tar index is cached
  // as Shards caches it (beside the shard, or in index_dir when given).
  std::vector<std::string> shards;
  std::string shard_label = "cls";
  // File name extensions kept under `root`, and the video members' extensions
  // in shards (lower case, any case matches under root; the dot is optional).
  std::vector<std::string> extensions = {".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v"};

  int clip_len = 16;
  // Every frame_stride-th frame (by presentation order) ...
  int frame_stride = 1;
  // ... or, when > 0, frames at this rate (frames per second): frame k of a
  // clip starting at time t0 is the last frame whose presentation time is at
  // or before t0 + k / frame_rate.
  double frame_rate = 0;
  int clips_per_video = 1;
  // kRandom: each clip starts at a uniformly drawn frame (frame_stride) or
  // time (frame_rate). kUniform: clip c of n starts at the c-th of n evenly
  // spaced starts (no randomness). kAll: torchvision's VideoClips: every clip
  // of each video, clip c starting at frame c * step (frame_rate: at frame
  // c * step of the video resampled to that rate, resampled frame k being the
  // last frame presented at or before first + k / frame_rate); a video shorter
  // than one clip (or unreadable) has none. The epoch is every clip
  // (size() = their total; clips_per_video must be left at 1), and Open reads
  // every video's index to count them.
  // kTorchvisionUniform: torchvision's UniformClipSampler over kAll's clips:
  // of a video's n clips (at `step`), clips_per_video = k of them, clip
  // floor(j * (n - 1) / (k - 1)) for j = 0..k-1 (clip 0 when k = 1; a clip
  // may repeat when n < k), a video without a whole clip giving none. The
  // epoch is k per video that has a clip; Open reads every index, as kAll.
  // (torch computes the spacing in float32, torch.linspace(s, s + n - 1, k)
  // with s the video's first global clip; the exact values here differ from
  // its only where float32 rounding crosses a whole number.)
  enum class Sampling { kRandom, kUniform, kAll, kTorchvisionUniform };
  Sampling sampling = Sampling::kRandom;
  // kAll: frames between the starts of consecutive clips (torchvision's
  // frames_between_clips; in resampled frames under frame_rate).
  int step = 1;

  // Run on every frame with one draw per clip; the list must end in a fixed
  // size (RandomResizedCrop, Resize + CenterCrop, ...). Empty: frames at each
  // video's own size (the field's H and W are declared -1, varying: a list
  // per batch, or padded under collate="pad").
  std::vector<Transform> transforms;
  // The field's element type: uint8 (raw pixels), or float32/float16/bfloat16
  // (v / 255, or Normalize's (v / 255 - mean) / std when the transforms have one).
  DType dtype = DType::kUint8;
  // "TCHW" (frames first) or "CTHW" (channels first, as 3-D convolutions take).
  std::string layout = "TCHW";
  // FFmpeg's decoding threads per clip (AVCodecContext::thread_count). 1
  // (default): the Loader's workers are the parallelism, so workers x codec
  // threads never exceed the workers.
  int codec_threads = 1;
  // Frames above this many pixels are refused before any is decoded.
  int64_t max_pixels = int64_t{1} << 28;
  // A folder for the per-video indexes on disk (created if missing), reused by
  // later runs while the video file is unchanged (its size, mtime, inode,
  // ctime and a hash of its first and last 64 KiB, as the tar index checks).
  // Empty: indexes are kept in memory only, built once per source.
  std::string index_dir;
  // Add a float64 [clip_len] field "time": each frame's presentation time in seconds.
  bool with_times = false;
};

class VideoClips : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<VideoClips>> Open(const VideoClipsOptions& options);

  virtual const VideoClipsOptions& options() const = 0;
  virtual int64_t num_videos() const = 0;
  // Path of video `v` (a shard's member: "SHARD: member NAME").
  virtual const std::string& VideoPath(int64_t v) const = 0;
  // The video sample `index` is a clip of, and which clip of it.
  virtual int64_t VideoOf(int64_t index) const = 0;
  virtual int64_t ClipOf(int64_t index) const = 0;

  // The frames of clip `index` in epoch `epoch` under `seed`, as the Loader
  // reads them: their presentation timestamps (stream time base) and times in
  // seconds. Builds the video's index on first use. Errors name the file.
  struct ClipFrames {
    std::vector<int64_t> pts;
    std::vector<double> seconds;
  };
  virtual StatusOr<ClipFrames> FramesOf(int64_t index, uint64_t seed, int64_t epoch) const = 0;

  // Counters over the source's life (relaxed): video indexes built (by
  // demuxing) and loaded (from index_dir), clips decoded, frames decoded (all
  // the decoder produced, wanted or not) and seeks made. Thread-safe.
  struct Counters {
    int64_t indexes_built = 0;
    int64_t indexes_loaded = 0;
    int64_t clips = 0;
    int64_t frames_decoded = 0;
    int64_t seeks = 0;
  };
  virtual Counters counters() const = 0;
};

// Whether this build reads video (CMake STOKER_WITH_VIDEO: FFmpeg found).
bool BuiltWithVideo();

}  // namespace stoker

#endif  // STOKER_VIDEO_H_
