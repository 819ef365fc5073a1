// Copyright 2026 The stoker Authors.
#include "io/stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "io/s3.h"

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
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0 || IsS3Url(url);
}

namespace {

StatusOr<std::unique_ptr<ByteStream>> OpenNamedFileStream(const std::string& path,
                                                          const std::string& name) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": cannot open: " + std::strerror(err);
    if (err == ENOENT) return NotFoundError(msg);
    return IoError(msg);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ByteStream>(new FileStream(fd, name));
}

// Marks a cache entry as just used; false when it is not there.
bool TouchEntry(const std::string& path) {
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0) return true;
  return errno != ENOENT && ::access(path.c_str(), R_OK) == 0;  // a read-only cache
}

bool IsCacheEntryName(const std::string& n) {
  if (n.empty() || n[0] == '.') return false;
  if (n.size() > 5 && n.compare(n.size() - 5, 5, ".lock") == 0) return false;
  return n.find(".part.") == std::string::npos;  // a fill in progress
}

Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return IoError(path + ": write failed: " + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<ByteStream>> OpenRemote(const std::string& url,
                                                 const StreamOptions& options) {
  if (IsS3Url(url)) return OpenS3Stream(url, options);
  return OpenHttpStream(url, options);
}

}  // namespace

StatusOr<std::unique_ptr<ByteStream>> OpenFileStream(const std::string& path) {
  return OpenNamedFileStream(path, path);
}

StatusOr<std::string> FillCache(
    const std::string& url, const StreamOptions& options,
    const std::function<StatusOr<std::unique_ptr<ByteStream>>()>& open) {
  const std::string& dir = options.cache_dir;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return IoError("cache_dir " + dir + ": cannot create: " + std::strerror(errno));
  }
  const std::string path = CachePath(dir, url);
  if (TouchEntry(path)) return path;
  const std::string lock_path = path + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock_fd < 0) return IoError(lock_path + ": cannot open the cache lock: " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the flock
  } unlock{lock_fd};
  while (::flock(lock_fd, LOCK_EX) != 0) {
    if (errno != EINTR) return IoError(lock_path + ": flock failed: " + std::strerror(errno));
  }
  if (TouchEntry(path)) return path;  // filled by another process or thread meanwhile
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".part." + std::to_string(::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  auto stream = open();
  if (!stream.ok()) return stream.status();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  Status status;
  std::vector<uint8_t> buf(size_t{1} << 20);
  for (;;) {
    size_t got = 0;
    status = stream.value()->Read(buf.data(), buf.size(), &got);
    if (!status.ok() || got == 0) break;
    status = WriteAll(fd, buf.data(), got, tmp);
    if (!status.ok()) break;
  }
  if (::close(fd) != 0 && status.ok()) status = IoError(tmp + ": close failed: " + std::strerror(errno));
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = IoError(path + ": rename failed: " + std::strerror(errno));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  if (options.cache_bytes > 0) EvictCache(dir, options.cache_bytes, path);
  return path;
}

int64_t EvictCache(const std::string& cache_dir, int64_t max_bytes, const std::string& keep) {
  struct Entry {
    struct timespec atime;
    int64_t bytes;
    std::string path;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  DIR* d = ::opendir(cache_dir.c_str());
  if (d == nullptr) return 0;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!IsCacheEntryName(name)) continue;
    const std::string p = cache_dir + "/" + name;
    struct stat st;
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    total += st.st_size;
    entries.push_back(Entry{st.st_atim, st.st_size, p});
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.atime.tv_sec != b.atime.tv_sec) return a.atime.tv_sec < b.atime.tv_sec;
    if (a.atime.tv_nsec != b.atime.tv_nsec) return a.atime.tv_nsec < b.atime.tv_nsec;
    return a.path < b.path;
  });
  int64_t removed = 0;
  for (const Entry& e : entries) {
    if (total <= max_bytes) break;
    if (e.path == keep) continue;
    // An open reader keeps its copy until it closes it (unlink semantics).
    if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) {
      total -= e.bytes;
      removed += e.bytes;
    }
  }
  return removed;
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
  if (options.cache_dir.empty()) return OpenRemote(url, options);
  // Another process may evict the entry between the fill and the open: fill again.
  for (int attempt = 0;; ++attempt) {
    auto path = FillCache(url, options, [&] { return OpenRemote(url, options); });
    if (!path.ok()) return path.status();
    auto stream = OpenNamedFileStream(path.value(), url);
    if (stream.ok() || stream.status().code() != StatusCode::kNotFound || attempt == 2) {
      return stream;
    }
  }
}

}  // namespace stoker
