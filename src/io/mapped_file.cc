// Copyright 2026 The stoker Authors.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/file.h"

namespace stoker {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = -1;
  size_t size = 0;
  STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd, &size, StatusCode::kInvalidArgument));
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = size;
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return IoError(path + ": cannot map: " + std::strerror(err));
    }
    f->data_ = static_cast<const uint8_t*>(p);
  }
  f->fd_ = fd;  // kept for CheckRange()
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

Status MappedFile::CheckRange(size_t offset, size_t length) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    return IoError(path_ + ": cannot stat: " + std::strerror(errno));
  }
  const size_t now = static_cast<size_t>(st.st_size);
  if (offset > now || length > now - offset) {
    return DataLossError(path_ + ": the file was truncated to " + std::to_string(now) +
                         " bytes while mapped (" + std::to_string(size_) +
                         " when opened); bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + length) + ") are gone");
  }
  return Status::OK();
}

}  // namespace stoker
