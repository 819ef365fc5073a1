// Copyright 2026 The stoker Authors.
#include "video/demux.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/log.h>
}

#include <sys/stat.h>

#include <mutex>
#include <string>

namespace stoker {

std::string AvErrorString(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

namespace {

void QuietLogs() {
  // FFmpeg prints every concealed error on stderr; stoker reports errors as
  // Status values naming the file. Once per process.
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_FATAL); });
}

}  // namespace

VideoFile::~VideoFile() {
  if (format_ != nullptr) avformat_close_input(&format_);
}

AVStream* VideoFile::stream() const { return format_->streams[stream_index_]; }

double VideoFile::time_base() const { return av_q2d(stream()->time_base); }

StatusOr<std::unique_ptr<VideoFile>> VideoFile::Open(const std::string& path,
                                                     int64_t max_pixels) {
  QuietLogs();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFoundError(path + ": no such file");
  if (st.st_size == 0) return DataLossError(path + ": empty file (0 bytes)");
  std::unique_ptr<VideoFile> f(new VideoFile());
  f->path_ = path;
  int err = avformat_open_input(&f->format_, path.c_str(), nullptr, nullptr);
  if (err < 0) {
    f->format_ = nullptr;  // freed by avformat_open_input on failure
    return DataLossError(path + ": not a video FFmpeg can read (" + AvErrorString(err) + ")");
  }
  err = avformat_find_stream_info(f->format_, nullptr);
  if (err < 0) {
    return DataLossError(path + ": cannot read the streams (" + AvErrorString(err) + ")");
  }
  const AVCodec* codec = nullptr;
  err = av_find_best_stream(f->format_, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (err == AVERROR_STREAM_NOT_FOUND) {
    return InvalidArgumentError(path + ": no video stream");
  }
  if (err == AVERROR_DECODER_NOT_FOUND || (err >= 0 && codec == nullptr)) {
    return UnimplementedError(path + ": FFmpeg has no decoder for its video codec");
  }
  if (err < 0) return DataLossError(path + ": " + AvErrorString(err));
  f->stream_index_ = err;
  f->codec_ = codec;
  const AVCodecParameters* par = f->stream()->codecpar;
  f->width_ = par->width;
  f->height_ = par->height;
  if (f->width_ <= 0 || f->height_ <= 0) {
    return InvalidArgumentError(path + ": the video stream has no frame size (" +
                                std::to_string(f->width_) + "x" + std::to_string(f->height_) +
                                ")");
  }
  if (static_cast<int64_t>(f->width_) * f->height_ > max_pixels) {
    return InvalidArgumentError(path + ": frames of " + std::to_string(f->width_) + "x" +
                                std::to_string(f->height_) + " exceed max_pixels (" +
                                std::to_string(max_pixels) + ")");
  }
  // Only the video stream's packets are read (the index and the decoder).
  for (unsigned i = 0; i < f->format_->nb_streams; ++i) {
    if (static_cast<int>(i) != f->stream_index_) f->format_->streams[i]->discard = AVDISCARD_ALL;
  }
  return f;
}

}  // namespace stoker
