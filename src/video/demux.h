// Copyright 2026 The stoker Authors.
//
// VideoFile: one video opened with libavformat, its best video stream chosen
// and checked (dimensions, max_pixels). The index (video/index.h) and the clip
// decoder (video/decode.h) read packets through it. The video is a whole file,
// or a byte range of one (a member of an uncompressed tar shard: read by pread
// through an AVIOContext, no temporary file), or bytes in memory (the fuzzer).
//
// Ownership: owns the AVFormatContext and the AVIOContext of a range (closed
// by the destructor); OpenMemory's bytes must outlive the VideoFile.
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
struct AVIOContext;

namespace stoker {

// FFmpeg's message for an AVERROR code.
std::string AvErrorString(int err);

// Where a video's bytes are: the file `path`, whole (offset < 0) or the
// `size` bytes at `offset` (a tar member's data). `name` names the video in
// errors (empty: `path`).
struct VideoLocation {
  std::string path;
  int64_t offset = -1;
  int64_t size = 0;
  std::string name;
  const std::string& display() const { return name.empty() ? path : name; }
};

class VideoFile {
 public:
  static StatusOr<std::unique_ptr<VideoFile>> Open(const std::string& path, int64_t max_pixels);
  static StatusOr<std::unique_ptr<VideoFile>> Open(const VideoLocation& where, int64_t max_pixels);
  // `size` bytes at `data` (kept by the caller while the VideoFile lives).
  static StatusOr<std::unique_ptr<VideoFile>> OpenMemory(const uint8_t* data, size_t size,
                                                         const std::string& name,
                                                         int64_t max_pixels);
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

  struct Range;  // the bytes a custom AVIOContext reads (demux.cc)

 private:
  VideoFile();
  // Opens the container (format_ / io_ set up) and picks the stream.
  static StatusOr<std::unique_ptr<VideoFile>> Finish(std::unique_ptr<VideoFile> f,
                                                     int64_t max_pixels);

  std::string path_;
  std::unique_ptr<Range> range_;     // a byte range or memory (null: the whole file)
  AVIOContext* io_ = nullptr;        // over range_
  AVFormatContext* format_ = nullptr;
  const AVCodec* codec_ = nullptr;
  int stream_index_ = -1;
  int width_ = 0, height_ = 0;
};

}  // namespace stoker

#endif  // STOKER_VIDEO_DEMUX_H_
