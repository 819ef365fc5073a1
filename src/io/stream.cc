// Copyright 2026 The stoker Authors.
#include "io/stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/rng.h"
#include "io/file.h"

namespace stoker {
namespace {

class FileStream : public ByteStream {
 public:
  FileStream(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileStream() override { ::close(fd_); }

  Status Read(uint8_t* buf, size_t n, size_t* got) override {
    for (;;) {
      const ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) {
        *got = static_cast<size_t>(r);
        return Status::OK();
      }
      if (errno != EINTR) return IoError(path_ + ": read failed: " + std::strerror(errno));
    }
  }
  const std::string& name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
};

class MemoryByteStream : public ByteStream {
 public:
  MemoryByteStream(std::vector<uint8_t> bytes, std::string name, size_t chunk)
      : bytes_(std::move(bytes)), name_(std::move(name)), chunk_(chunk == 0 ? 1 : chunk) {}
  Status Read(uint8_t* buf, size_t n, size_t* got) override {
    *got = std::min({n, chunk_, bytes_.size() - pos_});
    if (*got > 0) std::memcpy(buf, bytes_.data() + pos_, *got);
    pos_ += *got;
    return Status::OK();
  }
  const std::string& name() const override { return name_; }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
  size_t chunk_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<ByteStream> MemoryStream(std::vector<uint8_t> bytes, std::string name,
                                         size_t chunk) {
  return std::make_unique<MemoryByteStream>(std::move(bytes), std::move(name), chunk);
}

bool IsRemoteUrl(const std::string& url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

StatusOr<std::unique_ptr<ByteStream>> OpenFileStream(const std::string& path) {
  int fd = -1;
  STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ByteStream>(new FileStream(fd, path));
}

std::string CachePath(const std::string& cache_dir, const std::string& url) {
  uint64_t h = 0;
  for (unsigned char c : url) h = Mix64(h ^ c);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string base = url.substr(url.find_last_of('/') + 1);
  const size_t q = base.find_first_of("?#");
  if (q != std::string::npos) base.resize(q);
  return cache_dir + "/" + hex + "-" + base;
}

StatusOr<std::unique_ptr<ByteStream>> OpenStream(const std::string& url,
                                                 const StreamOptions& options) {
  if (!IsRemoteUrl(url)) return OpenFileStream(url);
  if (!options.cache_dir.empty()) {
    const std::string cached = CachePath(options.cache_dir, url);
    if (::access(cached.c_str(), R_OK) == 0) return OpenFileStream(cached);
  }
  return OpenHttpStream(url, options);
}

}  // namespace stoker
