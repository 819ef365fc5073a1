// Copyright 2026 The stoker Authors.
//
// Remote streams in a build without libcurl (CMake STOKER_WITH_CURL=OFF): every
// http(s):// URL, and so every s3:// object (s3.cc signs and opens through
// OpenHttpStream; a cache's check of a remote object probes through ProbeHttp),
// fails with Unimplemented naming the URL and the reason. Local
// shards and the node-wide cache's bookkeeping (stream.cc) are unaffected.
#include <memory>
#include <string>

#include "io/stream.h"

namespace stoker {

bool BuiltWithCurl() { return false; }

namespace {

Status WithoutCurl(const std::string& url, const RemoteRequest& request) {
  const std::string& name = request.name.empty() ? url : request.name;
  return UnimplementedError(name + ": stoker was built without libcurl (STOKER_WITH_CURL=OFF), "
                            "so it cannot read http(s):// or s3:// shards; rebuild with libcurl");
}

}  // namespace

StatusOr<std::unique_ptr<ByteStream>> OpenHttpStream(const std::string& url,
                                                     const StreamOptions&,
                                                     const RemoteRequest& request) {
  return WithoutCurl(url, request);
}

StatusOr<RemoteInfo> ProbeHttp(const std::string& url, const StreamOptions&,
                               const RemoteRequest& request) {
  return WithoutCurl(url, request);
}

}  // namespace stoker
