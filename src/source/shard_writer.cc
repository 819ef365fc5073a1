// Copyright 2026 The stoker Authors.
#include "source/shard_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace stoker {
namespace {

Status Errno(const std::string& path, const char* what) {
  return IoError(path + ": " + what + ": " + std::strerror(errno));
}

Status ArchiveError(struct archive* a, const std::string& path, const char* what) {
  const char* msg = archive_error_string(a);
  return IoError(path + ": " + what + ": " + (msg != nullptr ? msg : "libarchive error"));
}

// "PREFIX-" followed by 6+ digits and a known suffix: a final shard name.
bool IsFinalShardName(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size() + 1, prefix + "-") != 0) return false;
  size_t i = prefix.size() + 1, digits = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i, ++digits;
  const std::string rest = name.substr(i);
  return digits >= 6 && (rest == ".tar" || rest == ".tar.gz" || rest == ".tar.zst");
}

bool ValidKey(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (c == '.' || c == '/' || c == '\0') return false;
  }
  return true;
}

int64_t TarBytes(size_t size) { return 512 + static_cast<int64_t>((size + 511) / 512 * 512); }

}  // namespace

StatusOr<Compression> ParseCompression(const std::string& name) {
  if (name == "none") return Compression::kNone;
  if (name == "gzip") return Compression::kGzip;
  if (name == "zstd") return Compression::kZstd;
  return InvalidArgumentError("compression must be none, gzip or zstd, got '" + name + "'");
}

const char* ShardSuffix(Compression c) {
  switch (c) {
    case Compression::kGzip: return ".tar.gz";
    case Compression::kZstd: return ".tar.zst";
    case Compression::kNone: break;
  }
  return ".tar";
}

int RemoveStaleShardTemps(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  const std::string head = prefix + "-";
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, head.size(), head) != 0) continue;
    const size_t t = name.rfind(".tmp-");
    if (t == std::string::npos) continue;
    const pid_t pid = AtomicTempOwner(name, std::string_view(name).substr(0, t));
    if (pid < 0) continue;
    const bool gone = pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
    if (gone && ::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

ShardWriter::ShardWriter(const ShardWriterOptions& options)
    : options_(options), mtime_(static_cast<int64_t>(std::time(nullptr))) {}

ShardWriter::~ShardWriter() { AbandonShard(); }

StatusOr<std::unique_ptr<ShardWriter>> ShardWriter::Create(const ShardWriterOptions& options) {
  if (options.dir.empty()) return InvalidArgumentError("no output directory given");
  if (!ValidKey(options.prefix) || options.prefix.find('-') != std::string::npos) {
    // A '-' would let one prefix's names match another's pattern.
    return InvalidArgumentError("shard prefix must be non-empty without '.', '/' or '-', got '" +
                                options.prefix + "'");
  }
  if (options.max_shard_bytes < 0 || options.max_shard_samples < 0) {
    return InvalidArgumentError("shard limits must be non-negative");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return IoError(options.dir + ": cannot create directory: " + ec.message());
  if (!std::filesystem::is_directory(options.dir, ec)) {
    return InvalidArgumentError(options.dir + ": not a directory");
  }
  RemoveStaleShardTemps(options.dir, options.prefix);
  std::vector<std::string> existing;
  for (const auto& e : std::filesystem::directory_iterator(options.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (IsFinalShardName(name, options.prefix)) existing.push_back(e.path().string());
  }
  if (ec) return IoError(options.dir + ": cannot list: " + ec.message());
  if (!existing.empty()) {
    if (!options.overwrite) {
      return InvalidArgumentError(options.dir + " already holds " +
                                  std::to_string(existing.size()) + " shard(s) named " +
                                  options.prefix + "-NNNNNN.tar*; pass --overwrite to replace "
                                  "them, or choose another directory or --prefix");
    }
    for (const std::string& p : existing) {
      if (::unlink(p.c_str()) != 0) return Errno(p, "cannot remove");
    }
  }
  return std::unique_ptr<ShardWriter>(new ShardWriter(options));
}

std::string ShardWriter::ShardPath(int64_t index) const {
  char num[32];
  std::snprintf(num, sizeof num, "%06lld", static_cast<long long>(index));
  return options_.dir + "/" + options_.prefix + "-" + num + ShardSuffix(options_.compression);
}

Status ShardWriter::OpenShard() {
  const std::string final_path = ShardPath(static_cast<int64_t>(shards_.size()));
  StatusOr<AtomicFile> file = AtomicFile::Create(final_path, 0644);
  if (!file.ok()) return file.status();
  file_ = std::make_unique<AtomicFile>(std::move(file).value());
  archive_ = archive_write_new();
  if (archive_ == nullptr) return InternalError("archive_write_new failed");
  int r = archive_write_set_format_pax_restricted(archive_);
  if (r == ARCHIVE_OK) {
    switch (options_.compression) {
      case Compression::kGzip: r = archive_write_add_filter_gzip(archive_); break;
      case Compression::kZstd: r = archive_write_add_filter_zstd(archive_); break;
      case Compression::kNone: r = archive_write_add_filter_none(archive_); break;
    }
  }
  if (r == ARCHIVE_OK) r = archive_write_open_fd(archive_, file_->fd());
  if (r != ARCHIVE_OK) return ArchiveError(archive_, file_->temp_path(), "cannot start the archive");
  shard_bytes_ = 0;
  shard_samples_ = 0;
  return Status::OK();
}

Status ShardWriter::CloseShard() {
  const std::string final_path = ShardPath(static_cast<int64_t>(shards_.size()));
  if (archive_write_close(archive_) != ARCHIVE_OK) {
    return ArchiveError(archive_, file_->temp_path(), "cannot finish the archive");
  }
  archive_write_free(archive_);
  archive_ = nullptr;
  struct stat st;
  const int64_t size = ::fstat(file_->fd(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  const Status committed = file_->Commit(/*sync=*/true);
  file_.reset();
  if (!committed.ok()) return committed;
  shards_.push_back(ShardInfo{final_path, shard_samples_, size});
  return Status::OK();
}

void ShardWriter::AbandonShard() {
  if (archive_ != nullptr) {
    archive_write_free(archive_);  // may write a trailer to the temp file: deleted below
    archive_ = nullptr;
  }
  file_.reset();  // removes an unfinished shard's temporary file
}

Status ShardWriter::Add(const std::string& key, const std::vector<ShardMember>& members) {
  if (finished_) return InternalError("ShardWriter::Add after Finish");
  if (!ValidKey(key)) {
    return InvalidArgumentError("sample key '" + key + "' is empty or holds '.' or '/'");
  }
  int64_t bytes = 0;
  for (const ShardMember& m : members) bytes += TarBytes(m.size);
  if (archive_ != nullptr && shard_samples_ > 0 &&
      ((options_.max_shard_bytes > 0 && shard_bytes_ + bytes > options_.max_shard_bytes) ||
       (options_.max_shard_samples > 0 && shard_samples_ >= options_.max_shard_samples))) {
    Status s = CloseShard();
    if (!s.ok()) {
      AbandonShard();
      return s;
    }
  }
  if (archive_ == nullptr) {
    Status s = OpenShard();
    if (!s.ok()) {
      AbandonShard();
      return s;
    }
  }
  struct archive_entry* entry = archive_entry_new();
  Status status;
  for (const ShardMember& m : members) {
    archive_entry_clear(entry);
    archive_entry_set_pathname(entry, (key + "." + m.ext).c_str());
    archive_entry_set_size(entry, static_cast<la_int64_t>(m.size));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_mtime(entry, mtime_, 0);
    if (archive_write_header(archive_, entry) != ARCHIVE_OK) {
      status = ArchiveError(archive_, file_->temp_path(), "cannot write a member header");
      break;
    }
    size_t done = 0;
    while (done < m.size) {
      const la_ssize_t n = archive_write_data(archive_, m.data + done, m.size - done);
      if (n <= 0) {
        status = ArchiveError(archive_, file_->temp_path(), "cannot write member data");
        break;
      }
      done += static_cast<size_t>(n);
    }
    if (!status.ok()) break;
  }
  archive_entry_free(entry);
  if (!status.ok()) {
    AbandonShard();
    return status;
  }
  shard_bytes_ += bytes;
  ++shard_samples_;
  return Status::OK();
}

Status ShardWriter::Finish() {
  if (finished_) return Status::OK();
  finished_ = true;
  if (archive_ == nullptr) return Status::OK();
  Status s = CloseShard();
  if (!s.ok()) AbandonShard();
  return s;
}

}  // namespace stoker
