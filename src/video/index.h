// Copyright 2026 The stoker Authors.
//
// VideoIndex: what a clip's plan needs from a video, read once per video by
// demuxing its packets (no decoding): every frame's presentation timestamp in
// presentation order, and the keyframes' timestamps (where decoding can
// start). Packets FFmpeg marks to be discarded (before an MP4 edit list's
// start) are left out, as the decoder leaves their frames out.
//
// PlanClipFrames turns an index, the clip options and a random stream into
// the frames of one clip (indices into `pts`); PlanSeek names the keyframe
// decoding starts from.
//
// Thread-safety: plain values and pure functions.
// Errors: BuildVideoIndex returns DataLoss naming the file for a stream with
// no frames, a packet without timestamps, decode timestamps that go backwards,
// frames sharing a presentation timestamp (zero duration, repeated timestamps),
// and for read errors other than the end.
#ifndef STOKER_VIDEO_INDEX_H_
#define STOKER_VIDEO_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"
#include "stoker/status.h"

namespace stoker {

class VideoFile;

struct VideoIndex {
  int time_base_num = 1, time_base_den = 1;  // seconds per pts unit, as a fraction
  int width = 0, height = 0;
  std::vector<int64_t> pts;        // every frame, ascending, unique
  std::vector<int64_t> keyframes;  // keyframe packets' pts, ascending, unique
  double time_base() const { return static_cast<double>(time_base_num) / time_base_den; }
  size_t bytes() const { return (pts.size() + keyframes.size()) * sizeof(int64_t); }
};

// Reads every packet of the file's video stream (the file is left at its
// end: seek before decoding).
StatusOr<VideoIndex> BuildVideoIndex(VideoFile* file);

// The on-disk index cache (VideoClipsOptions::index_dir): the index of the
// video at `path` from `index_dir` when an entry made from this very file is
// there (its FileIdentity: size, mtime, inode, ctime and a hash of its first
// and last 64 KiB, as the tar index checks), else built (BuildVideoIndex)
// and written there atomically. `index_dir` empty: always built, nothing
// written. `*loaded` says which. A cache entry that is unreadable, corrupt
// or stale is rebuilt; failing to write one is not an error.
// Entry: CachePath(index_dir, path) + ".vidx". Format (little-endian):
// "STKVIDX1", the FileIdentity (5 x u64), u32 time base num and den, u32
// width and height, u64 frame count and each pts, u64 keyframe count and
// each pts.
StatusOr<VideoIndex> LoadOrBuildVideoIndex(const std::string& path, int64_t max_pixels,
                                           const std::string& index_dir, bool* loaded);
// The same for a video anywhere (a tar member: the entry is keyed by the
// shard's path and the member's offset, and checked against the shard's identity).
struct VideoLocation;
StatusOr<VideoIndex> LoadOrBuildVideoIndex(const VideoLocation& where, int64_t max_pixels,
                                           const std::string& index_dir, bool* loaded);
std::string VideoIndexPath(const std::string& index_dir, const std::string& path);
// Encoded entry, and its decoding (DataLoss for anything malformed: bad
// magic, short, counts beyond the bytes, unsorted timestamps, no frames).
struct FileIdentity;
std::string EncodeVideoIndex(const VideoIndex& index, const FileIdentity& id);
StatusOr<VideoIndex> DecodeVideoIndex(const std::string& bytes, FileIdentity* id);

struct ClipSpec {
  int clip_len = 16;
  int frame_stride = 1;
  double frame_rate = 0;  // > 0: by time
  int clips_per_video = 1;
  bool uniform = false;
  // sampling "all" (torchvision's VideoClips): every clip, `step` frames
  // apart (torchvision's frames_between_clips); clips_per_video is then
  // CountAllClips, and `clip` in PlanClipFrames is the clip's number.
  bool all = false;
  int step = 1;
};

// sampling "all": how many clips a video has, as torchvision's VideoClips
// counts them (unfold with size clip_len, step `step`, dilation frame_stride,
// over the video's frames; with frame_rate over the frames resampled to that
// rate: resampled frame k is the last frame presented at or before
// first + k / frame_rate). A video shorter than one clip has none.
int64_t CountAllClips(const VideoIndex& index, const ClipSpec& spec);

// The frames (indices into index.pts, non-decreasing, clip_len of them) of
// clip `clip` of a video. frame_stride: every frame_stride-th frame from a
// start frame drawn in [0, n - span] (random) or evenly spaced (uniform:
// clip c of k starts at c * (n - span) / (k - 1), one clip at the middle);
// frame_rate: frame j is the last frame presented at or before
// t0 + j / frame_rate, t0 drawn likewise in the video's time range (in pts
// units). A video shorter than the clip starts at its first frame and
// repeats its last. `rng` is drawn from only under random sampling.
// spec.all: clip c starts at (resampled) frame c * step; frame j is
// (resampled) frame c * step + j * frame_stride.
std::vector<int64_t> PlanClipFrames(const VideoIndex& index, const ClipSpec& spec, int clip,
                                    Rng* rng);

// The keyframe (an index into index.keyframes) decoding starts from for a
// clip whose first frame is presented at `first_pts`: the last keyframe at or
// before it (0 when none is).
size_t PlanSeek(const VideoIndex& index, int64_t first_pts);

}  // namespace stoker

#endif  // STOKER_VIDEO_INDEX_H_
