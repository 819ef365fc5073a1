// Copyright 2026 The stoker Authors.
//
// MappedFile: a whole file mapped read-only (PROT_READ, MAP_SHARED). The
// pages are the page cache's own: no copy, no private memory, and the
// kernel reads them in on first touch.
//
// Ownership: the object owns the mapping and unmaps it when destroyed; the
// file descriptor is closed right after mapping. Pointers into data() stay
// valid while the object lives.
// Thread-safety: immutable after Open(); data() may be read from any thread.
// Errors: NotFound when the file does not exist, IoError for anything else
// the OS refuses (including mmap), InvalidArgument for a non-regular file.
// A file truncated by someone else while mapped raises SIGBUS on access to
// the pages past its new end, as for any mapping: callers check a range with
// CheckRange() right before reading it. The check is an
// fstat of the descriptor kept open, amortised per thread: a thread re-stats
// a file on its first check after it waited (NewReadBurst(), which the
// loader's workers call whenever they waited for work or a free batch slot),
// every kRecheckReads checks of that file after, and whenever the range ends
// past the size it saw last. A truncation between a thread's last fstat and
// its read (within one burst of reads without a wait) is not caught. An fstat
// per read cost ~20 % of the CPU of reading 1 KB rows (bench/memmap_bench.py).
#ifndef STOKER_IO_MAPPED_FILE_H_
#define STOKER_IO_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "stoker/status.h"

namespace stoker {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // OK when [offset, offset + length) is still inside the file as this
  // thread last saw it (see above: an fstat on the first check after a wait,
  // then every kRecheckReads checks); DataLoss naming the file when it was
  // truncated below that. Thread-safe.
  Status CheckRange(size_t offset, size_t length) const;

  // The calling thread may have waited: its next CheckRange of every file
  // re-stats it. Cheap (a thread-local counter).
  static void NewReadBurst();
  static constexpr int kRecheckReads = 64;

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
  int fd_ = -1;  // the mapped file, for CheckRange()
  uint64_t id_ = 0;  // unique per object (keys the threads' CheckRange caches)
  Status StatRange(size_t offset, size_t length, size_t* now) const;
};

}  // namespace stoker

#endif  // STOKER_IO_MAPPED_FILE_H_
