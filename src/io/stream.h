// Copyright 2026 The stoker Authors.
//
// ByteStream: a sequential byte source (a local file or an http(s):// URL)
// that the tar reader pulls from through libarchive's read callback.
//
//   StreamOptions o; o.cache_dir = "/tmp/shard-cache";
//   auto s = OpenStream("https://host/train-000001.tar", o).value();
//   size_t got; STOKER_RETURN_IF_ERROR(s->Read(buf, sizeof buf, &got));  // got == 0: end
//
// Remote streams retry transient failures (connection errors, 5xx, a
// connection dropped mid-body) with exponential backoff and resume from the
// byte offset reached with an HTTP Range request, so a retried stream yields
// each byte exactly once. With `cache_dir`, a remote shard read to its end is
// kept on disk (written under a temporary name, renamed when complete) and
// later opens read the local copy.
//
// Ownership: the caller owns the returned stream. Thread-safety: a stream is
// used by one thread at a time; distinct streams are independent.
// Errors: NotFound for a missing file or HTTP 404 (the message names the
// path or URL); IoError naming the URL and the last failure once the retries
// are spent; DataLoss when a stream ends before the length it announced.
#ifndef STOKER_IO_STREAM_H_
#define STOKER_IO_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/sources.h"  // StreamOptions
#include "stoker/status.h"

namespace stoker {

// StreamOptions is public (include/stoker/sources.h).

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `n` bytes; `*got == 0` means the end of the stream.
  virtual Status Read(uint8_t* buf, size_t n, size_t* got) = 0;
  // The path or URL, for messages.
  virtual const std::string& name() const = 0;
  // Connections retried so far (remote streams; 0 for files).
  virtual int retries() const { return 0; }
};

// True for http:// and https:// URLs.
bool IsRemoteUrl(const std::string& url);

// Opens a local path or an http(s):// URL.
StatusOr<std::unique_ptr<ByteStream>> OpenStream(const std::string& url,
                                                 const StreamOptions& options);

// A local file.
StatusOr<std::unique_ptr<ByteStream>> OpenFileStream(const std::string& path);

// Bytes held in memory, handed out at most `chunk` bytes per Read (tests,
// the fuzzer).
std::unique_ptr<ByteStream> MemoryStream(std::vector<uint8_t> bytes, std::string name,
                                         size_t chunk = size_t{1} << 20);

// An http(s):// URL through libcurl (stream_http.cc).
StatusOr<std::unique_ptr<ByteStream>> OpenHttpStream(const std::string& url,
                                                     const StreamOptions& options);

// The file under `cache_dir` that caches `url` (a hash of the URL plus its
// basename).
std::string CachePath(const std::string& cache_dir, const std::string& url);

}  // namespace stoker

#endif  // STOKER_IO_STREAM_H_
