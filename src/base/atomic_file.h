// Copyright 2026 The stoker Authors.
//
// Files written so that a reader sees the old one or the new one, never a
// part: the bytes go to a temporary file of its own beside `path`, named
// `<path>.tmp-<pid>.<serial>` and created exclusively (a name no other writer,
// thread or process, uses), which is then renamed over `path`.
// AtomicWriteFile writes a whole file at once; AtomicFile is the same for a
// writer that streams (a shard, a download). A symlink at `path` is
// replaced, not followed (its target is left alone); an existing file is
// replaced. On any failure (a full disk, a missing directory) the temporary
// file is removed and `path` is left as it was.
//
// Thread-safety: a function of its arguments; several writers of one path
// race only for the last rename (each writes its own temporary file).
// Errors: IoError naming the path and the system's reason.
#ifndef STOKER_BASE_ATOMIC_FILE_H_
#define STOKER_BASE_ATOMIC_FILE_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "stoker/status.h"

namespace stoker {

// A temporary file that becomes `path` on Commit(). Destroyed uncommitted (or
// after a failed Commit), it closes and removes its temporary file. Movable,
// not copyable; one thread at a time.
class AtomicFile {
 public:
  // Creates the temporary file beside `path`, with `mode` (before umask).
  static StatusOr<AtomicFile> Create(const std::string& path, int mode = 0666);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // The temporary file's descriptor, for writing (-1 once committed).
  int fd() const { return fd_; }
  const std::string& temp_path() const { return temp_; }
  const std::string& path() const { return path_; }
  // Writes all of `bytes` at the descriptor's offset (EINTR retried; a full
  // disk is IoError).
  Status Write(std::string_view bytes);
  // fsync (with `sync`), close and rename over `path`. On failure the
  // temporary file is removed and `path` left as it was.
  Status Commit(bool sync = false);

 private:
  AtomicFile(std::string path, std::string temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  void Abandon();

  std::string path_, temp_;
  int fd_ = -1;
};

// The process that made `name` with AtomicFile, when `name` is such a
// temporary file of `final_name` (`<final_name>.tmp-<pid>[.<serial>]`), else -1:
// for removing what a crashed writer left.
pid_t AtomicTempOwner(std::string_view name, std::string_view final_name);

// `sync`: fsync the file before the rename (its contents survive a crash).
Status AtomicWriteFile(const std::string& path, std::string_view bytes, bool sync = false);

}  // namespace stoker

#endif  // STOKER_BASE_ATOMIC_FILE_H_
