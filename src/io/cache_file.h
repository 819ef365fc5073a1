// Copyright 2026 The stoker Authors.
//
// What on-disk caches of derived data (the tar index, the video index) share:
// the identity of the file a cache entry was derived from, an atomic write,
// little-endian encoding, and where an entry lives in a cache folder.
//
// FileIdentity: size and mtime, which a rewrite can keep (touch -r,
// os.utime), plus the inode, the ctime (no user can set it) and a hash of
// the first and last 64 KiB. A cache entry recording all five is used only
// while all five still match.
//
// Thread-safety: functions of their arguments; WriteFileAtomically may run
// for one path from several threads or processes (each writes its own
// temporary file and renames it, so a reader never sees a partial file).
// Errors: IdentifyFile returns the open/stat error naming the path;
// WriteFileAtomically returns false (a cache that cannot be written is
// rebuilt next time, never an error).
#ifndef STOKER_IO_CACHE_FILE_H_
#define STOKER_IO_CACHE_FILE_H_

#include <cstdint>
#include <string>

#include "stoker/status.h"

namespace stoker {

struct FileIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t ino = 0;
  int64_t ctime_ns = 0;
  uint64_t fingerprint = 0;  // the first and last 64 KiB, hashed
  bool operator==(const FileIdentity&) const = default;
};

Status IdentifyFile(const std::string& path, FileIdentity* id);

// Writes `bytes` to `path` through a temporary file and a rename.
bool WriteFileAtomically(const std::string& path, const std::string& bytes);

// The file under `cache_dir` that caches `url` (a hash of the URL plus its
// basename, query and fragment dropped).
std::string CachePath(const std::string& cache_dir, const std::string& url);

// Little-endian integers appended to a string ...
void PutU64(std::string* out, uint64_t v);
void PutU32(std::string* out, uint32_t v);
void PutIdentity(std::string* out, const FileIdentity& id);

// ... and read back from one, after a header of `start` bytes; every Get
// fails (false) rather than read past the end.
class ByteCursor {
 public:
  ByteCursor(const std::string& s, size_t start) : s_(s), pos_(start) {}
  bool Get(uint64_t* v);
  bool Get32(uint32_t* v);
  bool GetString(uint32_t n, std::string* out);
  bool GetIdentity(FileIdentity* id);
  bool done() const { return pos_ == s_.size(); }

 private:
  const std::string& s_;
  size_t pos_;
};

}  // namespace stoker

#endif  // STOKER_IO_CACHE_FILE_H_
