// Copyright 2026 The stoker Authors.
//
// The index of an uncompressed local tar shard: for each sample, the offset
// and size of its image member's data, its label and its key. Built once by
// reading the shard through ShardSampleReader and cached on disk, so that
// the shard can then be read by random access (pread of one member).
//
// Cache: `X.tar.idx` beside the shard (or `$TMPDIR/<hash>-X.tar.idx` when
// the shard's directory is not writable), or `cache_dir/<hash>-X.tar.idx`
// when `cache_dir` is given. A cache file records the shard's size,
// modification time, inode, ctime, a hash of its first and last 64 KiB and
// the sample spec, and is rebuilt when any differs (a shard rewritten with
// the same size and mtime still gets a new ctime).
// A sample that cannot be indexed (damaged member, no image) is kept as a
// bad entry, so that reading it is an error of that sample alone (skipped
// under on_error="skip"); damage that ends the tar ends the index there, as do a member declaring
// more bytes than the shard holds and a shard without its end-of-archive
// blocks (both bad entries). Format (little-endian): "STKTIDX5", u64 shard size, i64
// mtime ns, u64 inode, i64 ctime ns, u64 fingerprint, u32 + bytes of the sample spec, u64 sample count, then per sample i64 offset, i64 size, i64
// label, u32 key length, u32 member length, key bytes, member bytes, u32 record
// field count and per field i64 offset, i64 size (records: SampleSpec::fields),
// u32 length and bytes of the field suffixes.
//
// Thread-safety: LoadOrBuildTarIndex may run for different shards at once;
// two processes building the same index write distinct temporary files and
// rename them, so a reader never sees a partial index.
// Errors: the shard's own errors (naming shard and member); failing to write
// the cache is not an error (the index is then rebuilt next time).
#ifndef STOKER_SOURCE_TAR_INDEX_H_
#define STOKER_SOURCE_TAR_INDEX_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "source/tar_reader.h"

namespace stoker {

// offset -1 (size 0): a sample that could not be indexed; `member` then
// holds the error message (a damaged member, a sample without an image).
struct TarIndexEntry {
  int64_t offset = 0;
  int64_t size = 0;
  int64_t label = -1;
  std::string key;
  std::string member;
  // Records (SampleSpec::fields): each field's member data, in field order
  // (offset, size); empty for image + label specs. offset/size above are
  // the first field's.
  std::vector<std::pair<int64_t, int64_t>> fields;
  // Records: each field's member name past `key` (".txt"), in field order,
  // each followed by '\0' (tar names hold no NUL).
  std::string field_suffixes;
};

struct TarIndex {
  uint64_t shard_size = 0;
  int64_t shard_mtime_ns = 0;
  // Also checked before a cached index is used: a shard rewritten with the
  // same size and mtime has another ctime (and usually inode and content).
  uint64_t shard_ino = 0;
  int64_t shard_ctime_ns = 0;
  uint64_t shard_fingerprint = 0;  // hash of the first and last 64 KiB
  std::string spec;  // the SampleSpec it was built with ("jpg;png;|cls")
  std::vector<TarIndexEntry> entries;
};

// Where the index of `shard` is cached (see above).
std::string TarIndexPath(const std::string& shard, const std::string& cache_dir);

// Loads the cached index when it matches the shard, else builds it from the
// shard and tries to cache it. `*built` tells which happened.
StatusOr<TarIndex> LoadOrBuildTarIndex(const std::string& shard, const SampleSpec& spec,
                                       const std::string& cache_dir, bool* built = nullptr);

// Encodes / decodes the on-disk format (exposed for tests and the fuzzer).
std::string EncodeTarIndex(const TarIndex& index);
StatusOr<TarIndex> DecodeTarIndex(const std::string& bytes);

}  // namespace stoker

#endif  // STOKER_SOURCE_TAR_INDEX_H_
