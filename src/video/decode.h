// Copyright 2026 The stoker Authors.
//
// DecodeClip: the frames a clip needs, decoded in one forward pass. The seek
// plan: seek once to the last keyframe at or before the clip's first frame
// (none when that is the stream's first keyframe and the file was just
// opened), decode forward, convert each wanted frame to RGB (libswscale,
// SWS_BILINEAR, the video's own size: what PyAV's to_ndarray("rgb24") gives)
// and stop after the clip's last frame; a frame no other frame references
// (a non-reference B-frame) is skipped unless the clip wants it
// (AVCodecContext::skip_frame = AVDISCARD_NONREF for that packet). No GOP is
// decoded twice for a clip;
// should a demuxer's seek land past the keyframe asked for (the first frame
// decoded comes after the clip's first frame), decoding restarts once from the
// stream's first keyframe, and DecodeStats::seeks counts both.
//
// Thread-safety: NOT thread-safe; one ClipDecoder per thread.
// Errors: DataLoss naming the file (a packet the decoder refuses, frames of
// another size than the stream's, a wanted frame that never comes: a
// truncated file), Unimplemented (no decoder), ResourceExhausted (FFmpeg out
// of memory).
#ifndef STOKER_VIDEO_DECODE_H_
#define STOKER_VIDEO_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/image.h"
#include "stoker/status.h"

struct SwsContext;

namespace stoker {

class VideoFile;
struct VideoIndex;

struct DecodeStats {
  int64_t frames_decoded = 0;    // every frame the decoder produced
  int64_t frames_converted = 0;  // wanted frames converted to RGB (each once)
  int64_t frames_delivered = 0;  // sink calls (repeats count)
  int64_t gops_decoded = 0;      // keyframes among the decoded frames
  int64_t seeks = 0;
  // Time (steady clock) in: av_read_frame; av_seek_frame + flush; the
  // decoder's setup, avcodec_send_packet and avcodec_receive_frame;
  // sws_scale; the sink.
  int64_t demux_ns = 0, seek_ns = 0, decode_ns = 0, convert_ns = 0, sink_ns = 0;
};

// Receives wanted frame j (in target order) of a `width` x `height` video as
// packed RGB rows of `rect` (a rectangle of the frame; `rgb` is its first
// pixel, rows `stride` bytes apart, 16 bytes of slack after the last row).
using FrameSink = Status (*)(void* ctx, int j, const uint8_t* rgb, int width, int height,
                             const Rect& rect, ptrdiff_t stride);

// The rectangle ClipDecoder converts for `want` (width 0: the whole frame)
// in a `width` x `height` frame of pixel format `format` (an AVPixelFormat):
// `want` widened to even rows and to columns at multiples of 16 from the
// left edge (or the right edge), so that every pixel libswscale gives for it
// is the one it gives when converting the whole frame (4:2:0 chroma is
// shared by 2 x 2 pixels; the vector converter works in blocks of columns).
// Only for planar 4:2:0 (yuv420p, yuvj420p) of even height, where swscale
// converts without scaling or filtering; every other format (and odd
// heights, which swscale converts with interpolated chroma) gets the
// whole frame.
Rect ConvertRect(const Rect& want, int width, int height, int format);

class ClipDecoder {
 public:
  ClipDecoder() = default;
  ~ClipDecoder();
  ClipDecoder(const ClipDecoder&) = delete;
  ClipDecoder& operator=(const ClipDecoder&) = delete;

  // Decodes the frames presented at `targets` (pts, non-decreasing; repeats
  // are delivered again) from `file`, freshly opened, calling `sink` once per
  // target in order. `codec_threads`: AVCodecContext::thread_count. `want`:
  // the rectangle of each frame the sink reads (width 0: all of it); what is
  // converted is ConvertRect(want, ...), which contains it, or the whole
  // frame when the rectangle saves less than one frame's conversion over the
  // clip (a rectangle's converter is set up again for each new size, which
  // costs about that).
  Status Decode(VideoFile* file, const VideoIndex& index, const std::vector<int64_t>& targets,
                int codec_threads, const Rect& want, FrameSink sink, void* ctx,
                DecodeStats* stats);

  // RGB scratch held (bytes).
  size_t scratch_bytes() const { return rgb_.capacity(); }

 private:
  SwsContext* sws_ = nullptr;       // whole frames
  SwsContext* sws_rect_ = nullptr;  // rectangles (a new size for most clips)
  std::vector<uint8_t> rgb_;
};

}  // namespace stoker

#endif  // STOKER_VIDEO_DECODE_H_
