// Copyright 2026 The stoker Authors.
//
// VideoFile: one video file opened with libavformat, its best video stream
// chosen and checked (dimensions, max_pixels). The index (video/index.h) and
// the clip decoder (video/decode.h) read packets through it.
//
// Ownership: owns the AVFormatContext (closed by the destructor).
// Thread-safety: NOT thread-safe; one per reading thread (each clip opens its own).
// Errors: Open returns NotFound (no such file), DataLoss (not a container
// FFmpeg reads: truncated, zero-length, corrupt), InvalidArgument (no video
// stream; frames of no size or above max_pixels), Unimplemented (no decoder
// for the codec), each naming the file.
#ifndef STOKER_VIDEO_DEMUX_H_
#define STOKER_VIDEO_DEMUX_H_

#include <cstdint>
#include <memory>
#include <string>

#include "stoker/status.h"

struct AVFormatContext;
struct AVStream;
struct AVCodec;

namespace stoker {

// FFmpeg's message for an AVERROR code.
std::string AvErrorString(int err);

class VideoFile {
 public:
  static StatusOr<std::unique_ptr<VideoFile>> Open(const std::string& path, int64_t max_pixels);
  ~VideoFile();
  VideoFile(const VideoFile&) = delete;
  VideoFile& operator=(const VideoFile&) = delete;

  AVFormatContext* format() const { return format_; }
  AVStream* stream() const;
  int stream_index() const { return stream_index_; }
  const AVCodec* codec() const { return codec_; }
  const std::string& path() const { return path_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // The stream's time base as a double (seconds per timestamp unit).
  double time_base() const;

 private:
  VideoFile() = default;

  std::string path_;
  AVFormatContext* format_ = nullptr;
  const AVCodec* codec_ = nullptr;
  int stream_index_ = -1;
  int width_ = 0, height_ = 0;
};

}  // namespace stoker

#endif  // STOKER_VIDEO_DEMUX_H_
