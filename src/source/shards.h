// Copyright 2026 The stoker Authors.
//
// Shards: a Source over tar shards in the WebDataset convention (see
// tar_reader.h for how members group into samples), local or over HTTP.
//
//   ShardOptions o;
//   o.patterns = {"data/train-{000000..000146}.tar"};
//   auto shards = OpenShards(o).value();   // a Source for Loader::Create
//
// Patterns: brace ranges with zero padding ("{000..146}") and lists
// ("{a,b}"), expanded left to right; then, for local paths, glob(3)
// wildcards (sorted matches), and for s3:// URLs glob wildcards or a
// trailing '/' (every object under the prefix), listed with ListObjectsV2
// (io/s3.h). A pattern that matches nothing is an error.
//
// Two modes:
//  - indexed (default for local uncompressed .tar): every shard is indexed
//    once (tar_index.h) and read by random access; the per-epoch
//    permutation, exactly-once, determinism and on_error="skip" behave as
//    for image folders. size() is the number of samples.
//  - stream (default for .tar.gz/.tgz/.tar.zst and http(s) URLs, or asked
//    for): shards are read sequentially. Shuffled epochs permute the shard
//    order by (seed, epoch), interleave `concurrent_shards` open shards
//    round-robin, and pass samples through a shuffle buffer of
//    `shuffle_buffer` samples driven by Rng(seed, epoch). size() is -1.
//    Sample ids are (shard index << 32) | ordinal in the shard, so a
//    sample's augmentation does not depend on the order.
//
// Remote shards: http(s):// and s3:// URLs (io/stream.h, io/s3.h); with
// cache_dir, each is downloaded once into a cache shared by the node's
// processes and read from there.
//
// Thread-safety: StartEpoch from one thread; the readers' Read is
// thread-safe. In stream mode each shard is read and decompressed by its
// own thread (up to 2 x concurrent_shards at once, each holding at most 16
// samples); only the merge (round-robin, shuffle buffer, reorder window)
// runs under the reader's mutex, one engine thread at a time; samples wait
// in a small reorder window until their position is read. Destroying a
// stream epoch reader stops and joins its shard threads.
// Errors: OpenShards fails on bad options, patterns matching nothing and (in
// indexed mode) shards that cannot be opened. Reading errors name the shard
// and the member. In stream mode a damaged shard yields one error at the
// position where the damage was met and the stream goes on with the next
// shard: on_error="raise" raises it, "skip" counts it.
#ifndef STOKER_SOURCE_SHARDS_H_
#define STOKER_SOURCE_SHARDS_H_

#include <memory>
#include <string>
#include <vector>

#include "io/stream.h"
#include "source/tar_reader.h"
#include "stoker/sources.h"

namespace stoker {

// ShardMode, ShardOptions and OpenShards are public (include/stoker/sources.h).

// Patterns may name at most this many shards (brace expansion is bounded
// before anything is materialised: "{0..9999999}" is an error, not 1.5 GB).
inline constexpr int64_t kMaxShardNames = 1000000;

// Expands brace patterns, local globs and s3:// globs/prefixes (listed
// with `stream`'s endpoint, TLS and retry settings); errors when nothing
// matches. file:///path is a local path; other schemes than http(s) and s3
// are errors.
StatusOr<std::vector<std::string>> ExpandShardPatterns(const std::vector<std::string>& patterns,
                                                       const StreamOptions& stream = {});
// Class names from the classes.json that `stoker convert` writes beside the
// shards, in the first shard's directory (local shards only); none when absent.
// DataLoss when it is not a JSON array of strings.
StatusOr<std::vector<std::string>> ReadShardClasses(const std::vector<std::string>& urls);
// Brace expansion alone ("a{0..2}" -> a0 a1 a2; "{x,y}z" -> xz yz).
StatusOr<std::vector<std::string>> ExpandBraces(const std::string& pattern);

}  // namespace stoker

#endif  // STOKER_SOURCE_SHARDS_H_
