// Copyright 2026 The stoker Authors.
//
// Where tar shards are written: the options and results of the shard writer
// (src/source/shard_writer.h, beside the shard reader and its index), which
// ConvertToShards (stoker/convert.h) drives.
//
// Shards are named DIR/PREFIX-000000.tar (.tar.gz, .tar.zst), written under a
// temporary name and renamed when complete; a new shard starts when the next
// sample would pass max_shard_bytes or max_shard_samples.
//
// Thread-safety: values. Errors: ParseCompression returns InvalidArgument
// naming the accepted names.
#ifndef STOKER_SHARD_WRITER_H_
#define STOKER_SHARD_WRITER_H_

#include <cstdint>
#include <string>

#include "stoker/status.h"

namespace stoker {

enum class Compression { kNone, kGzip, kZstd };

StatusOr<Compression> ParseCompression(const std::string& name);  // "none", "gzip", "zstd"
const char* ShardSuffix(Compression c);                            // ".tar", ".tar.gz", ".tar.zst"

struct ShardWriterOptions {
  std::string dir;
  std::string prefix = "shard";
  Compression compression = Compression::kNone;
  int64_t max_shard_bytes = int64_t{1} << 30;  // 0: no limit
  int64_t max_shard_samples = 0;               // 0: no limit
  bool overwrite = false;
};

struct ShardInfo {
  std::string path;
  int64_t samples = 0;
  int64_t file_bytes = 0;  // on disk (compressed when compressing)
};


}  // namespace stoker

#endif  // STOKER_SHARD_WRITER_H_
