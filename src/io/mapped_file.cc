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
  ::close(fd);
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace stoker
