// Copyright 2026 The stoker Authors.
//
// ByteStream: a sequential byte source (a local file, an http(s):// URL or
// an s3:// object, see s3.h) that the tar reader pulls from through
// libarchive's read callback.
//
//   StreamOptions o; o.cache_dir = "/tmp/shard-cache";
//   auto s = OpenStream("https://host/train-000001.tar", o).value();
//   size_t got; STOKER_RETURN_IF_ERROR(s->Read(buf, sizeof buf, &got));  // got == 0: end
//
// Remote streams retry transient failures (connection errors, 5xx, a
// connection dropped mid-body) with exponential backoff and resume from the
// byte offset reached with an HTTP Range request, so a retried stream yields
// each byte exactly once.
//
// With `cache_dir`, the cache is shared by every process on the node: the
// first open of a remote object downloads it whole into the cache (under an
// flock(2) on `<entry>.lock`, written under a temporary name and renamed when
// complete) and every open, in this or any other process, then reads the
// local copy; a process that finds the lock held waits for the fill and
// reads its result. `cache_bytes` bounds the cache: after a fill, the least
// recently used entries (by access time, touched on each hit) are removed
// until the total fits (the entry just filled is kept).
//
// Cache entries are validated, not trusted: `<entry>.meta` records the bytes
// downloaded and the object's ETag and Last-Modified. Every open compares
// the entry's size with it (an entry cut short or grown since, or one
// without a record, is downloaded again), and an open more than
// `cache_validate_s` seconds after the entry's last validation (default 0:
// every open) asks the server with a HEAD request whether it still has the
// same object (the ETag, else Last-Modified, and the size must match);
// another object is downloaded again. A server that cannot be reached keeps
// the cached copy in use; one that answers 404/410 makes the open fail as
// without a cache. Errors met while reading a cached entry name the cache
// file (ByteStream::origin).
//
// Ownership: the caller owns the returned stream. Thread-safety: a stream is
// used by one thread at a time; distinct streams are independent.
// Errors: NotFound for a missing file or HTTP 404 (the message names the
// path or URL); IoError naming the URL and the last failure once the retries
// are spent (an untrusted TLS certificate names the CA file in use, and
// HTTP 401/403 is not retried and carries the server's error code and, for
// S3, the credential source); DataLoss when a stream ends before the length
// it announced.
#ifndef STOKER_IO_STREAM_H_
#define STOKER_IO_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/cache_file.h"     // CachePath
#include "stoker/stream.h"  // StreamOptions
#include "stoker/status.h"

namespace stoker {

// StreamOptions is public (include/stoker/stream.h).

// An object's validators and size as a server reports them (ETag,
// Last-Modified; size -1 when unknown). Two infos name the same object when
// their ETags match (when both have one), else their Last-Modified (when
// both have one), and their sizes (when both are known).
struct RemoteInfo {
  std::string etag;
  std::string last_modified;
  int64_t size = -1;
  bool SameObject(const RemoteInfo& other) const;
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `n` bytes; `*got == 0` means the end of the stream.
  virtual Status Read(uint8_t* buf, size_t n, size_t* got) = 0;
  // The path or URL, for messages.
  virtual const std::string& name() const = 0;
  // Connections retried so far (remote streams; 0 for files).
  virtual int retries() const { return 0; }
  // Where the bytes come from when that is not name(), as text to append to
  // it in messages (" (cache file /c/1f..-x.tar)"); "" otherwise.
  virtual std::string origin() const { return ""; }
  // What the server said about the object (remote streams, once the first
  // response arrived); empty for files.
  virtual RemoteInfo info() const { return {}; }
};


// True for http://, https:// and s3:// URLs.
bool IsRemoteUrl(const std::string& url);

// Opens a local path, an http(s):// URL or an s3:// object.
StatusOr<std::unique_ptr<ByteStream>> OpenStream(const std::string& url,
                                                 const StreamOptions& options);

// A local file.
StatusOr<std::unique_ptr<ByteStream>> OpenFileStream(const std::string& path);

// Bytes held in memory, handed out at most `chunk` bytes per Read (tests,
// the fuzzer).
std::unique_ptr<ByteStream> MemoryStream(std::vector<uint8_t> bytes, std::string name,
                                         size_t chunk = size_t{1} << 20);

// How a remote request is signed and named (S3; empty for plain HTTP).
struct RemoteRequest {
  std::string name;       // shown in messages instead of the URL ("s3://b/k")
  std::string aws_sigv4;  // CURLOPT_AWS_SIGV4, e.g. "aws:amz:us-east-1:s3"
  std::string user_pwd;   // "ACCESS_KEY:SECRET" for the signature
  std::vector<std::string> headers;  // extra request headers (signed)
  std::string denied_hint;           // appended to 401/403 messages
};

// An http(s):// URL through libcurl (stream_http.cc), signed as `request`
// says. Does not use the cache. Follows at most 10 redirects ("too many
// redirects" after that, not retried). An object that changes on the server
// between two attempts (another ETag) is DataLoss, not a spliced body.
StatusOr<std::unique_ptr<ByteStream>> OpenHttpStream(const std::string& url,
                                                     const StreamOptions& options,
                                                     const RemoteRequest& request = {});

// A HEAD request for `url` (one attempt): the object's validators and size.
// NotFound for 404/410, IoError for anything else that is not 200.
StatusOr<RemoteInfo> ProbeHttp(const std::string& url, const StreamOptions& options,
                               const RemoteRequest& request = {});
// The same for an http(s):// or s3:// URL.
StatusOr<RemoteInfo> ProbeRemote(const std::string& url, const StreamOptions& options);

// CachePath (the file under a cache_dir that caches a URL): io/cache_file.h.

// Reads a whole remote object (`url` for messages and the cache key) into
// `cache_dir` unless a valid entry is there (see above), holding the entry's
// lock; then evicts down to `options.cache_bytes`. Returns the local path.
// `open` opens the remote stream; `probe` (may be null: no server
// validation, the size check alone) asks the server about the object.
StatusOr<std::string> FillCache(
    const std::string& url, const StreamOptions& options,
    const std::function<StatusOr<std::unique_ptr<ByteStream>>()>& open,
    const std::function<StatusOr<RemoteInfo>()>& probe = nullptr);

// Removes least recently used entries under `cache_dir` until their total
// is at most `max_bytes`, sparing `keep`. Returns the bytes removed.
int64_t EvictCache(const std::string& cache_dir, int64_t max_bytes, const std::string& keep);

}  // namespace stoker

#endif  // STOKER_IO_STREAM_H_
