// Copyright 2026 The stoker Authors.
#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace stoker {

StatusOr<AtomicFile> AtomicFile::Create(const std::string& path, int mode) {
  static std::atomic<uint64_t> serial{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + std::to_string(::getpid()) + "." + std::to_string(serial++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return IoError(path + ": cannot create a file beside it: " + std::strerror(errno));
  return AtomicFile(path, std::move(tmp), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_) {
  other.fd_ = -1;
  other.temp_.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Abandon();
    path_ = std::move(other.path_);
    temp_ = std::move(other.temp_);
    fd_ = other.fd_;
    other.fd_ = -1;
    other.temp_.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

Status AtomicFile::Write(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError(path_ + ": cannot write: " + std::strerror(w < 0 ? errno : ENOSPC));
    done += static_cast<size_t>(w);
  }
  return Status::OK();
}

Status AtomicFile::Commit(bool sync) {
  if (fd_ < 0) return InternalError(path_ + ": committed twice");
  int err = 0;
  if (sync && ::fsync(fd_) != 0) err = errno;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && ::rename(temp_.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) {
    Abandon();
    return IoError(path_ + ": cannot write: " + std::strerror(err));
  }
  temp_.clear();
  return Status::OK();
}

pid_t AtomicTempOwner(std::string_view name, std::string_view final_name) {
  const std::string_view head = ".tmp-";
  if (name.size() <= final_name.size() + head.size() ||
      name.substr(0, final_name.size()) != final_name ||
      name.substr(final_name.size(), head.size()) != head) {
    return -1;
  }
  std::string_view rest = name.substr(final_name.size() + head.size());
  const size_t dot = rest.find('.');
  std::string_view pid = rest.substr(0, dot);
  if (dot != std::string_view::npos) {
    const std::string_view serial = rest.substr(dot + 1);
    if (serial.empty() || serial.find_first_not_of("0123456789") != std::string_view::npos) {
      return -1;
    }
  }
  if (pid.empty() || pid.size() > 10 ||
      pid.find_first_not_of("0123456789") != std::string_view::npos) {
    return -1;
  }
  const long long value = std::stoll(std::string(pid));
  return value > INT32_MAX ? -1 : static_cast<pid_t>(value);
}

Status AtomicWriteFile(const std::string& path, std::string_view bytes, bool sync) {
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  STOKER_RETURN_IF_ERROR(file.Write(bytes));
  return file.Commit(sync);
}

}  // namespace stoker
