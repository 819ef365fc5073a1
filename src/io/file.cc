// Copyright 2026 The stoker Authors.
#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stoker {
namespace {

Status ErrnoStatus(const std::string& path, const char* what, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT) return NotFoundError(msg);
  return IoError(msg);
}

}  // namespace

Status OpenRegularFile(const std::string& path, int* fd_out, size_t* size,
                       StatusCode not_regular) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ErrnoStatus(path, "cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(not_regular, path + ": not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *fd_out = fd;
  if (size != nullptr) *size = static_cast<size_t>(st.st_size);
  return Status::OK();
}

Status ReadFileInto(const std::string& path, std::vector<uint8_t>* buffer, size_t* size) {
  int fd = -1;
  size_t want = 0;
  STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd, &want));
  if (buffer->size() < want) buffer->resize(want);
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::read(fd, buffer->data() + got, want - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(path, "read failed", err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != want) {
    return DataLossError(path + ": file shrank while being read (" + std::to_string(got) +
                         " of " + std::to_string(want) + " bytes)");
  }
  *size = got;
  return Status::OK();
}

}  // namespace stoker
