// Copyright 2026 The stoker Authors.
//
// S3 and S3-compatible object stores: s3://bucket/key URLs read as streams
// (the http stream of stream_http.cc, signed with AWS Signature V4 by
// libcurl's CURLOPT_AWS_SIGV4), and prefixes and glob patterns listed with
// ListObjectsV2 (every page, following continuation tokens).
//
//   auto s = OpenStream("s3://bucket/train/train-000001.tar", StreamOptions()).value();
//   auto urls = ExpandS3Pattern("s3://bucket/train/train-*.tar", StreamOptions()).value();
//
// Configuration, resolved on each open, as the AWS CLI does:
//  - credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//    else the profile AWS_PROFILE (or "default") from the credentials file
//    (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials, section [NAME])
//    or the config file (AWS_CONFIG_FILE, else ~/.aws/config, section
//    [profile NAME] or [default]); else none, and requests go unsigned
//    (public buckets). An AWS_PROFILE that names no profile is an error.
//  - region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` in the
//    config file, else us-east-1.
//  - endpoint: StreamOptions::s3_endpoint, AWS_ENDPOINT_URL_S3,
//    AWS_ENDPOINT_URL, the profile's `endpoint_url`; custom endpoints are
//    addressed path-style (ENDPOINT/bucket/key), AWS virtual-host style
//    (https://bucket.s3.REGION.amazonaws.com/key; path-style for buckets
//    with dots).
//
// Retries, backoff and Range resume are the http stream's. Errors name the
// s3:// URL (bucket and key); a 401/403 carries S3's error code and says
// which credential source, region and endpoint were used.
// Thread-safety: the functions are thread-safe (they read the environment
// and the files on each call).
#ifndef STOKER_IO_S3_H_
#define STOKER_IO_S3_H_

#include <memory>
#include <string>
#include <vector>

#include "io/stream.h"
#include "stoker/status.h"

namespace stoker {

// True for s3:// URLs.
bool IsS3Url(const std::string& url);

struct S3Location {
  std::string bucket;
  std::string key;  // may be empty or a prefix
};
// "s3://bucket/key" -> {bucket, key}; InvalidArgument without a bucket.
StatusOr<S3Location> ParseS3Url(const std::string& url);

struct S3Config {
  std::string endpoint;  // "" = AWS
  std::string region;
  std::string access_key, secret_key, session_token;  // empty: unsigned requests
  std::string source;  // where the credentials came from, for messages
};
// Resolves the configuration as described above; `endpoint` overrides.
StatusOr<S3Config> ResolveS3Config(const std::string& endpoint);

// AWS's URI encoding: unreserved characters kept, the rest %XX; '/' is
// kept when `keep_slash`.
std::string S3UriEncode(const std::string& s, bool keep_slash);
// The http(s) URL of an object (or of the bucket, with an empty key).
std::string S3HttpUrl(const S3Config& config, const S3Location& where);
// How requests for `name` are signed (empty signing without credentials).
RemoteRequest S3Request(const S3Config& config, const std::string& name);

// A signed HEAD request for an s3:// object (ProbeHttp).
StatusOr<RemoteInfo> ProbeS3(const std::string& url, const StreamOptions& options);

// An s3:// object as a stream.
StatusOr<std::unique_ptr<ByteStream>> OpenS3Stream(const std::string& url,
                                                   const StreamOptions& options);

// Every key under `prefix` in `bucket` (all pages), in S3's order.
StatusOr<std::vector<std::string>> ListS3Keys(const std::string& bucket,
                                              const std::string& prefix,
                                              const StreamOptions& options);

// "s3://b/p/x-*.tar" (glob(3) wildcards, '*' not crossing '/') or
// "s3://b/p/" (every object under the prefix) -> sorted object URLs;
// NotFound when nothing matches. Other URLs are returned as they are.
StatusOr<std::vector<std::string>> ExpandS3Pattern(const std::string& pattern,
                                                   const StreamOptions& options);

}  // namespace stoker

#endif  // STOKER_IO_S3_H_
