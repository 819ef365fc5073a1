// Copyright 2026 The stoker Authors.
//
// ShardWriter: samples into tar shards in the WebDataset layout.
//
// A shard is a POSIX tar (ustar; a pax header only for a member whose name
// does not fit ustar), optionally gzip- or zstd-compressed, written with
// libarchive. A sample is a run of consecutive members KEY.EXT (KEY.jpg,
// KEY.png, KEY.cls ...), samples in the order added. KEY must not contain
// '.' or '/' (WebDataset splits key from extension at the first dot of the
// base name). Members are regular files, mode 0644, owner 0:0, mtime the
// writer's creation time.
//
// Files: DIR/PREFIX-000000.tar, -000001 ... (.tar.gz for gzip, .tar.zst for
// zstd). A shard is written to NAME.tmp-PID, fsync'ed and renamed to NAME
// when complete, so a final name never holds a partial shard: an
// interrupted run leaves at most a temporary file, which the next writer on
// the same DIR and PREFIX removes (when the process that wrote it is gone).
// A new shard is started when the next sample would take the current one
// past `max_shard_bytes` of tar data (uncompressed; a sample larger than
// the limit gets a shard of its own) or when it holds `max_shard_samples`.
//
// Existing output: Create refuses (InvalidArgument) when DIR already holds
// final shards with PREFIX, unless `overwrite`, in which case it deletes them
// first (so no shard of an older, longer run survives).
//
// Ownership: the writer owns the open shard; destroying it before Finish()
// (an error, a cancelled run) deletes the temporary file. Thread-safety: NOT
// thread-safe; one thread adds samples. Errors: IoError naming the file for
// anything the file system or libarchive refuses; InvalidArgument for bad
// options or keys.
#ifndef STOKER_SOURCE_SHARD_WRITER_H_
#define STOKER_SOURCE_SHARD_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "stoker/shard_writer.h"  // Compression, ShardWriterOptions, ShardInfo
#include "stoker/status.h"

struct archive;

namespace stoker {

struct ShardMember {
  std::string ext;  // without the dot: "jpg", "cls"
  const uint8_t* data = nullptr;
  size_t size = 0;
};

class ShardWriter {
 public:
  static StatusOr<std::unique_ptr<ShardWriter>> Create(const ShardWriterOptions& options);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one sample (its members in the given order).
  Status Add(const std::string& key, const std::vector<ShardMember>& members);
  // Completes the last shard. No Add() after it.
  Status Finish();

  // Shards completed so far.
  const std::vector<ShardInfo>& shards() const { return shards_; }
  // The final path of shard `index`.
  std::string ShardPath(int64_t index) const;

 private:
  explicit ShardWriter(const ShardWriterOptions& options);
  Status OpenShard();
  Status CloseShard();
  void AbandonShard();

  ShardWriterOptions options_;
  int64_t mtime_ = 0;
  struct archive* archive_ = nullptr;
  std::unique_ptr<AtomicFile> file_;  // the open shard, renamed into place when finished
  int64_t shard_bytes_ = 0;    // tar bytes in the open shard
  int64_t shard_samples_ = 0;
  bool finished_ = false;
  std::vector<ShardInfo> shards_;
};

// Removes DIR/PREFIX-*.tmp-PID files whose process is gone (or is this one).
// Returns how many were removed.
int RemoveStaleShardTemps(const std::string& dir, const std::string& prefix);

}  // namespace stoker

#endif  // STOKER_SOURCE_SHARD_WRITER_H_
