// Copyright 2026 The stoker Authors.
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "io/file.h"

namespace stoker {

namespace {

std::atomic<uint64_t> next_id{1};

// A thread's view of the files it checked: a small direct-mapped cache keyed
// by the file's id, valid within the thread's current read burst.
struct SeenSize {
  uint64_t id = 0;     // the MappedFile's id_, 0: empty
  uint64_t burst = 0;  // the thread's burst when stat'ed
  size_t size = 0;     // the size fstat gave
  int reads = 0;       // checks answered from this entry since
};
constexpr size_t kSeenSlots = 8;
thread_local SeenSize seen[kSeenSlots];
thread_local uint64_t burst = 1;

}  // namespace

void MappedFile::NewReadBurst() { ++burst; }

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
  f->id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  return f;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

Status MappedFile::StatRange(size_t offset, size_t length, size_t* now) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    return IoError(path_ + ": cannot stat: " + std::strerror(errno));
  }
  *now = static_cast<size_t>(st.st_size);
  if (offset > *now || length > *now - offset) {
    return DataLossError(path_ + ": the file was truncated to " + std::to_string(*now) +
                         " bytes while mapped (" + std::to_string(size_) +
                         " when opened); bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + length) + ") are gone");
  }
  return Status::OK();
}

Status MappedFile::CheckRange(size_t offset, size_t length) const {
  SeenSize& e = seen[id_ % kSeenSlots];
  if (e.id == id_ && e.burst == burst && e.reads < kRecheckReads && offset <= e.size &&
      length <= e.size - offset) {
    ++e.reads;
    return Status::OK();
  }
  size_t now = 0;
  Status st = StatRange(offset, length, &now);
  if (st.ok()) {
    e = SeenSize{id_, burst, now, 0};
  } else if (e.id == id_) {
    e.id = 0;
  }
  return st;
}

}  // namespace stoker
