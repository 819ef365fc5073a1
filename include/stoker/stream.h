// Copyright 2026 The stoker Authors.
//
// How remote shards are read (http(s)://, s3://): StreamOptions, the
// node-wide shard cache's counters, and whether this build has libcurl.
// Part of the shard options (stoker/sources.h, ShardOptions::stream),
// implemented by src/io/ (stream.cc, stream_http.cc, s3.cc).
//
// Thread-safety: ShardCacheCounters is shared by every stream of a source
// (atomics, and a mutex for the named objects); the options are values.
#ifndef STOKER_STREAM_H_
#define STOKER_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {

// Whether this build reads http(s):// and s3:// shards (CMake option STOKER_WITH_CURL,
// default on: libcurl). Without it, opening such a URL returns Unimplemented saying
// that stoker was built without libcurl; local shards are unaffected.
bool BuiltWithCurl();

// How remote (http(s)://, s3://) shards are read: retries with exponential
// backoff that resume from the byte reached (HTTP Range), TLS verification,
// the S3 endpoint, and an optional node-wide cache.
// What FillCache (src/io/stream.h) did for the streams sharing it (relaxed
// atomics: statistics).
struct ShardCacheCounters {
  std::atomic<int64_t> downloads{0};      // objects downloaded into the cache
  std::atomic<int64_t> hits{0};           // opens served by a valid entry
  std::atomic<int64_t> largest_bytes{0};  // the largest entry downloaded or served
  // Opens served by an entry whose check against the server was due but got
  // no answer (unreachable, a 5xx such as 501 to HEAD): the copy stays in use,
  // unvalidated. The first kMaxUnvalidated distinct objects are named, "URL
  // (the check's error)", for a warning once per object.
  static constexpr size_t kMaxUnvalidated = 64;
  std::atomic<int64_t> unvalidated{0};
  void NoteUnvalidated(const std::string& what) STOKER_LOCKS_EXCLUDED(mu);
  std::vector<std::string> UnvalidatedObjects() const STOKER_LOCKS_EXCLUDED(mu);

 private:
  mutable Mutex mu;
  std::vector<std::string> unvalidated_objects STOKER_GUARDED_BY(mu);
};

struct StreamOptions {
  // Remote objects are downloaded whole into this node-wide cache and read
  // from it ("" = no cache, stream directly).
  std::string cache_dir;
  // When set, FillCache counts its downloads and hits here.
  std::shared_ptr<ShardCacheCounters> cache_counters;
  // Bound on the bytes under cache_dir (0 = none); LRU eviction.
  int64_t cache_bytes = 0;
  // How long a cache entry is trusted without asking the server: an open
  // more than this many seconds after the entry was last validated sends a
  // HEAD request and downloads the object again when its ETag,
  // Last-Modified or size changed. 0 (default): every open; negative:
  // never (the entry's size is still checked against the download).
  int cache_validate_s = 0;
  // TLS: verify the server's certificate and host name (default), against
  // `ca_file` (PEM) when given, else the system's CAs.
  bool verify = true;
  std::string ca_file;
  // S3: endpoint URL ("" = $AWS_ENDPOINT_URL, else AWS's regional one).
  std::string s3_endpoint;
  // Attempts per remote stream (first try included) and the first backoff;
  // each retry doubles the wait, capped at 5 s.
  int max_attempts = 5;
  int backoff_ms = 100;
  // A transfer making less than 1 byte/s for this long counts as dropped.
  int stall_timeout_s = 30;
  int connect_timeout_s = 15;
  // When set and true, a remote read in progress (or its retry backoff)
  // returns Cancelled within about 0.1 s (Ctrl-C, Loader::Stop).
  std::shared_ptr<const std::atomic<bool>> cancel;
};

}  // namespace stoker

#endif  // STOKER_STREAM_H_
