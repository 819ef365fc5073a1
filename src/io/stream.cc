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
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/atomic_file.h"
#include "base/rng.h"
#include "io/file.h"
#include "io/s3.h"

namespace stoker {
namespace {

class FileStream : public ByteStream {
 public:
  FileStream(int fd, std::string path, std::string origin = "")
      : fd_(fd), path_(std::move(path)), origin_(std::move(origin)) {}
  ~FileStream() override { ::close(fd_); }

  Status Read(uint8_t* buf, size_t n, size_t* got) override {
    for (;;) {
      const ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) {
        *got = static_cast<size_t>(r);
        return Status::OK();
      }
      if (errno != EINTR) {
        return IoError(path_ + origin_ + ": read failed: " + std::strerror(errno));
      }
    }
  }
  const std::string& name() const override { return path_; }
  std::string origin() const override { return origin_; }

 private:
  int fd_;
  std::string path_;
  std::string origin_;
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
                                                          const std::string& name,
                                                          const std::string& origin = "") {
  int fd = -1;
  STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd));  // a FIFO is refused, not waited on
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ByteStream>(new FileStream(fd, name, origin));
}

// Marks a cache entry as just used; false when it is not there.
bool TouchEntry(const std::string& path) {
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0) return true;
  return errno != ENOENT && ::access(path.c_str(), R_OK) == 0;  // a read-only cache
}

bool EndsWith(const std::string& n, const char* suffix) {
  const size_t k = std::strlen(suffix);
  return n.size() > k && n.compare(n.size() - k, k, suffix) == 0;
}

bool IsCacheEntryName(const std::string& n) {
  if (n.empty() || n[0] == '.') return false;
  if (EndsWith(n, ".lock") || EndsWith(n, ".meta")) return false;
  const size_t t = n.rfind(".tmp-");  // a fill in progress (AtomicFile's temporary file)
  return t == std::string::npos || AtomicTempOwner(n, std::string_view(n).substr(0, t)) < 0;
}

// An entry's record, `<entry>.meta`: what was downloaded. Its mtime is the
// entry's last validation against the server.
constexpr char kMetaMagic[] = "stoker-cache-entry 1";

std::string MetaText(const RemoteInfo& info) {
  auto clean = [](std::string v) {  // one line each
    for (char& c : v) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return v;
  };
  return std::string(kMetaMagic) + "\nsize " + std::to_string(info.size) + "\netag " +
         clean(info.etag) + "\nlast-modified " + clean(info.last_modified) + "\n";
}

// Reads `<entry>.meta`; false when it is missing or not a record.
bool ReadMeta(const std::string& meta_path, RemoteInfo* info, struct timespec* validated) {
  const int fd = ::open(meta_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  char buf[4096];
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && st.st_size < static_cast<off_t>(sizeof buf)) {
    n = ::read(fd, buf, sizeof buf);
  }
  ::close(fd);
  if (n <= 0) return false;
  const std::string text(buf, static_cast<size_t>(n));
  size_t pos = 0;
  auto line = [&](std::string* out) {
    const size_t end = text.find('\n', pos);
    if (end == std::string::npos) return false;
    *out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  };
  std::string magic, size, etag, lm;
  if (!line(&magic) || magic != kMetaMagic || !line(&size) || !line(&etag) || !line(&lm) ||
      size.rfind("size ", 0) != 0 || etag.rfind("etag ", 0) != 0 ||
      lm.rfind("last-modified ", 0) != 0) {
    return false;
  }
  char* end = nullptr;
  info->size = std::strtoll(size.c_str() + 5, &end, 10);
  if (end == size.c_str() + 5 || *end != '\0' || info->size < 0) return false;
  info->etag = etag.substr(5);
  info->last_modified = lm.substr(14);
  *validated = st.st_mtim;
  return true;
}

// Writes `<entry>.meta` atomically (AtomicWriteFile).
Status WriteMeta(const std::string& meta_path, const RemoteInfo& info) {
  return AtomicWriteFile(meta_path, MetaText(info));
}

// What the cache holds for `path`: kValid (size as recorded), kBad (there,
// but not as downloaded, or without a record), kMissing.
enum class EntryState { kMissing, kBad, kValid };

EntryState CheckEntry(const std::string& path, RemoteInfo* info, struct timespec* validated) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return EntryState::kMissing;
  if (!ReadMeta(path + ".meta", info, validated)) return EntryState::kBad;
  return st.st_size == info->size ? EntryState::kValid : EntryState::kBad;
}

// Whether an entry validated at `validated` must be checked with the server now.
bool ValidationDue(const StreamOptions& o, const struct timespec& validated) {
  if (o.cache_validate_s < 0) return false;
  if (o.cache_validate_s == 0) return true;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec - validated.tv_sec >= o.cache_validate_s;
}

StatusOr<std::unique_ptr<ByteStream>> OpenRemote(const std::string& url,
                                                 const StreamOptions& options) {
  if (IsS3Url(url)) return OpenS3Stream(url, options);
  return OpenHttpStream(url, options);
}

}  // namespace

bool RemoteInfo::SameObject(const RemoteInfo& other) const {
  if (size >= 0 && other.size >= 0 && size != other.size) return false;
  if (!etag.empty() && !other.etag.empty()) return etag == other.etag;
  if (!last_modified.empty() && !other.last_modified.empty()) {
    return last_modified == other.last_modified;
  }
  return true;  // nothing more to compare: the sizes agreed (or are unknown)
}

StatusOr<RemoteInfo> ProbeRemote(const std::string& url, const StreamOptions& options) {
  if (IsS3Url(url)) return ProbeS3(url, options);
  return ProbeHttp(url, options);
}

StatusOr<std::unique_ptr<ByteStream>> OpenFileStream(const std::string& path) {
  return OpenNamedFileStream(path, path);
}

namespace {

// Records a cache open served from an entry of `bytes` (a hit) or a
// download of one.
void CountCacheUse(const StreamOptions& options, int64_t bytes, bool downloaded) {
  ShardCacheCounters* c = options.cache_counters.get();
  if (c == nullptr) return;
  (downloaded ? c->downloads : c->hits).fetch_add(1, std::memory_order_relaxed);
  int64_t seen = c->largest_bytes.load(std::memory_order_relaxed);
  while (bytes > seen &&
         !c->largest_bytes.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

}  // namespace

void ShardCacheCounters::NoteUnvalidated(const std::string& what) {
  const std::string object = what.substr(0, what.find(" ("));
  MutexLock lock(&mu);
  for (const std::string& seen : unvalidated_objects) {
    if (seen.compare(0, object.size(), object) == 0 &&
        (seen.size() == object.size() || seen.compare(object.size(), 2, " (") == 0)) {
      return;  // named once
    }
  }
  if (unvalidated_objects.size() < kMaxUnvalidated) unvalidated_objects.push_back(what);
}

std::vector<std::string> ShardCacheCounters::UnvalidatedObjects() const {
  MutexLock lock(&mu);
  return unvalidated_objects;
}

StatusOr<std::string> FillCache(
    const std::string& url, const StreamOptions& options,
    const std::function<StatusOr<std::unique_ptr<ByteStream>>()>& open,
    const std::function<StatusOr<RemoteInfo>()>& probe) {
  const std::string& dir = options.cache_dir;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    return IoError("cache_dir " + dir + ": cannot create: " + std::strerror(errno));
  }
  const std::string path = CachePath(dir, url);
  const std::string meta = path + ".meta";
  RemoteInfo recorded;
  struct timespec validated;
  // The common case without the lock: a valid entry that needs no word with the server.
  if (CheckEntry(path, &recorded, &validated) == EntryState::kValid &&
      (probe == nullptr || !ValidationDue(options, validated)) && TouchEntry(path)) {
    CountCacheUse(options, recorded.size, /*downloaded=*/false);
    return path;
  }
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
  const EntryState state = CheckEntry(path, &recorded, &validated);
  if (state == EntryState::kValid) {
    // Filled or validated by another process or thread meanwhile, or due a check.
    bool hit = false;
    if (probe == nullptr || !ValidationDue(options, validated)) {
      hit = TouchEntry(path);
    } else {
      auto now = probe();
      if (!now.ok() && now.status().code() != StatusCode::kNotFound) {
        // The server cannot say (unreachable, 5xx): the copy stays in use,
        // counted and named for a warning.
        hit = TouchEntry(path);
        if (hit && options.cache_counters != nullptr) {
          options.cache_counters->unvalidated.fetch_add(1, std::memory_order_relaxed);
          options.cache_counters->NoteUnvalidated(url + " (" + now.status().ToString() + ")");
        }
      } else if (now.ok() && now.value().SameObject(recorded)) {
        (void)WriteMeta(meta, recorded);  // validated now (its mtime)
        hit = TouchEntry(path);
      }
      // Another object, or gone from the server: downloaded again below
      // (which fails as without a cache when the object is gone).
    }
    if (hit) {
      CountCacheUse(options, recorded.size, /*downloaded=*/false);
      return path;
    }
  }
  if (state != EntryState::kMissing) {
    ::unlink(path.c_str());  // readers that have it open keep their copy
    ::unlink(meta.c_str());
  }
  auto stream = open();
  if (!stream.ok()) return stream.status();
  STOKER_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  Status status;
  int64_t bytes = 0;
  std::vector<uint8_t> buf(size_t{1} << 20);
  for (;;) {
    size_t got = 0;
    status = stream.value()->Read(buf.data(), buf.size(), &got);
    if (!status.ok() || got == 0) break;
    status = file.Write(std::string_view(reinterpret_cast<const char*>(buf.data()), got));
    if (!status.ok()) break;
    bytes += static_cast<int64_t>(got);
  }
  if (status.ok()) {
    // The record first: an entry is never there without it (a reader that
    // sees the new record with the old entry finds the sizes differ and
    // waits for this lock).
    RemoteInfo got = stream.value()->info();
    got.size = bytes;
    status = WriteMeta(meta, got);
  }
  if (status.ok()) status = file.Commit();
  if (!status.ok()) return status;  // the temporary file is gone with `file`
  CountCacheUse(options, bytes, /*downloaded=*/true);
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
      ::unlink((e.path + ".meta").c_str());
      total -= e.bytes;
      removed += e.bytes;
    }
  }
  return removed;
}

StatusOr<std::unique_ptr<ByteStream>> OpenStream(const std::string& url,
                                                 const StreamOptions& options) {
  if (!IsRemoteUrl(url)) return OpenFileStream(url);
  if (options.cache_dir.empty()) return OpenRemote(url, options);
  // Another process may evict the entry between the fill and the open: fill again.
  for (int attempt = 0;; ++attempt) {
    auto path = FillCache(
        url, options, [&] { return OpenRemote(url, options); },
        [&] { return ProbeRemote(url, options); });
    if (!path.ok()) return path.status();
    auto stream = OpenNamedFileStream(path.value(), url, " (cache file " + path.value() + ")");
    if (stream.ok() || stream.status().code() != StatusCode::kNotFound || attempt == 2) {
      return stream;
    }
  }
}

}  // namespace stoker
