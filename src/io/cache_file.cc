// Copyright 2026 The stoker Authors.
#include "io/cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "base/rng.h"
#include "io/file.h"

namespace stoker {
namespace {

constexpr size_t kFingerprintSpan = 64 << 10;

uint64_t HashBytes(uint64_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, std::min<size_t>(8, n - i));
    h = Mix64(h ^ w) + i;
  }
  return h;
}

}  // namespace

Status IdentifyFile(const std::string& path, FileIdentity* id) {
  int fd = -1;
  STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd));  // names FIFOs: "not a regular file"
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(path + ": cannot stat: " + std::strerror(err));
  }
  id->size = static_cast<uint64_t>(st.st_size);
  id->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  id->ino = static_cast<uint64_t>(st.st_ino);
  id->ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  std::vector<uint8_t> buf(kFingerprintSpan);
  uint64_t h = Mix64(id->size);
  const off_t tail = static_cast<off_t>(
      id->size > kFingerprintSpan ? id->size - kFingerprintSpan : 0);
  for (off_t off : {off_t{0}, tail}) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n > 0) h = HashBytes(h, buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  id->fingerprint = h;
  return Status::OK();
}

bool WriteFileAtomically(const std::string& path, const std::string& bytes) {
  return AtomicWriteFile(path, bytes).ok();
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

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutIdentity(std::string* out, const FileIdentity& id) {
  PutU64(out, id.size);
  PutU64(out, static_cast<uint64_t>(id.mtime_ns));
  PutU64(out, id.ino);
  PutU64(out, static_cast<uint64_t>(id.ctime_ns));
  PutU64(out, id.fingerprint);
}

bool ByteCursor::Get(uint64_t* v) {
  if (s_.size() - pos_ < 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= uint64_t{static_cast<uint8_t>(s_[pos_ + i])} << (8 * i);
  pos_ += 8;
  return true;
}

bool ByteCursor::Get32(uint32_t* v) {
  if (s_.size() - pos_ < 4) return false;
  *v = 0;
  for (int i = 0; i < 4; ++i) *v |= uint32_t{static_cast<uint8_t>(s_[pos_ + i])} << (8 * i);
  pos_ += 4;
  return true;
}

bool ByteCursor::GetString(uint32_t n, std::string* out) {
  if (s_.size() - pos_ < n) return false;
  out->assign(s_, pos_, n);
  pos_ += n;
  return true;
}

bool ByteCursor::GetIdentity(FileIdentity* id) {
  uint64_t mtime = 0, ctime = 0;
  if (!Get(&id->size) || !Get(&mtime) || !Get(&id->ino) || !Get(&ctime) ||
      !Get(&id->fingerprint)) {
    return false;
  }
  id->mtime_ns = static_cast<int64_t>(mtime);
  id->ctime_ns = static_cast<int64_t>(ctime);
  return true;
}

}  // namespace stoker
