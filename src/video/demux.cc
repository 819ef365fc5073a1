// Copyright 2026 The stoker Authors.
#include "video/demux.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
}

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

// The bytes a custom AVIOContext reads: `size` bytes from `offset` of the file
// `fd` (pread), or of `mem`.
struct VideoFile::Range {
  int fd = -1;
  const uint8_t* mem = nullptr;
  int64_t offset = 0;
  int64_t size = 0;
  int64_t pos = 0;  // within the range
  ~Range() {
    if (fd >= 0) ::close(fd);
  }

  static int Read(void* opaque, uint8_t* buf, int want) {
    auto* r = static_cast<Range*>(opaque);
    const int64_t n = std::min<int64_t>(want, r->size - r->pos);
    if (n <= 0) return AVERROR_EOF;
    if (r->mem != nullptr) {
      std::memcpy(buf, r->mem + r->pos, static_cast<size_t>(n));
      r->pos += n;
      return static_cast<int>(n);
    }
    for (;;) {
      const ssize_t got = ::pread(r->fd, buf, static_cast<size_t>(n), r->offset + r->pos);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return AVERROR(errno);
      if (got == 0) return AVERROR_EOF;  // the file is shorter than the range
      r->pos += got;
      return static_cast<int>(got);
    }
  }

  static int64_t Seek(void* opaque, int64_t where, int whence) {
    auto* r = static_cast<Range*>(opaque);
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return r->size;
    int64_t to = where;
    if (whence == SEEK_CUR) to = r->pos + where;
    else if (whence == SEEK_END) to = r->size + where;
    else if (whence != SEEK_SET) return AVERROR(EINVAL);
    if (to < 0 || to > r->size) return AVERROR(EINVAL);
    r->pos = to;
    return to;
  }
};

VideoFile::VideoFile() = default;

VideoFile::~VideoFile() {
  if (format_ != nullptr) avformat_close_input(&format_);
  if (io_ != nullptr) {
    av_freep(&io_->buffer);
    avio_context_free(&io_);
  }
}

AVStream* VideoFile::stream() const { return format_->streams[stream_index_]; }

double VideoFile::time_base() const { return av_q2d(stream()->time_base); }

StatusOr<std::unique_ptr<VideoFile>> VideoFile::Open(const std::string& path,
                                                     int64_t max_pixels) {
  return Open(VideoLocation{path, -1, 0, ""}, max_pixels);
}

StatusOr<std::unique_ptr<VideoFile>> VideoFile::Open(const VideoLocation& where,
                                                     int64_t max_pixels) {
  QuietLogs();
  const std::string& path = where.display();
  struct stat st;
  if (::stat(where.path.c_str(), &st) != 0) return NotFoundError(where.path + ": no such file");
  const int64_t bytes = where.offset < 0 ? static_cast<int64_t>(st.st_size) : where.size;
  if (bytes == 0) return DataLossError(path + ": empty file (0 bytes)");
  std::unique_ptr<VideoFile> f(new VideoFile());
  f->path_ = path;
  if (where.offset >= 0) {
    if (where.size < 0 || where.offset > static_cast<int64_t>(st.st_size) - where.size) {
      return DataLossError(path + ": the member's " + std::to_string(where.size) +
                           " bytes at offset " + std::to_string(where.offset) +
                           " run past the end of " + where.path);
    }
    f->range_ = std::make_unique<Range>();
    f->range_->fd = ::open(where.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f->range_->fd < 0) {
      return NotFoundError(where.path + ": cannot open (" + std::strerror(errno) + ")");
    }
    f->range_->offset = where.offset;
    f->range_->size = where.size;
  }
  return Finish(std::move(f), max_pixels);
}

StatusOr<std::unique_ptr<VideoFile>> VideoFile::OpenMemory(const uint8_t* data, size_t size,
                                                           const std::string& name,
                                                           int64_t max_pixels) {
  QuietLogs();
  if (size == 0) return DataLossError(name + ": empty file (0 bytes)");
  std::unique_ptr<VideoFile> f(new VideoFile());
  f->path_ = name;
  f->range_ = std::make_unique<Range>();
  f->range_->mem = data;
  f->range_->size = static_cast<int64_t>(size);
  return Finish(std::move(f), max_pixels);
}

StatusOr<std::unique_ptr<VideoFile>> VideoFile::Finish(std::unique_ptr<VideoFile> f,
                                                       int64_t max_pixels) {
  const std::string path = f->path_;
  int err = 0;
  if (f->range_ != nullptr) {
    constexpr int kBuffer = 64 << 10;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kBuffer));
    if (buffer == nullptr) return ResourceExhaustedError(path + ": av_malloc failed");
    f->io_ = avio_alloc_context(buffer, kBuffer, 0, f->range_.get(), &Range::Read, nullptr,
                                &Range::Seek);
    if (f->io_ == nullptr) {
      av_free(buffer);
      return ResourceExhaustedError(path + ": avio_alloc_context failed");
    }
    f->format_ = avformat_alloc_context();
    if (f->format_ == nullptr) return ResourceExhaustedError(path + ": out of memory");
    f->format_->pb = f->io_;
    f->format_->flags |= AVFMT_FLAG_CUSTOM_IO;
    err = avformat_open_input(&f->format_, nullptr, nullptr, nullptr);
  } else {
    err = avformat_open_input(&f->format_, path.c_str(), nullptr, nullptr);
  }
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
