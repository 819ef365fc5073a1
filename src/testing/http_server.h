// Copyright 2026 The stoker Authors.
//
// HttpServer: a real HTTP/1.1 server on the loopback interface for tests.
// The client side under test (libcurl, io/stream.h) talks to it over TCP as
// to any server. Each connection carries one request ("Connection: close"),
// answered by a handler:
//
//   testing::HttpServer server([](const testing::HttpRequest& r) {
//     return testing::HttpResponse{200, {{"ETag", "\"v1\""}}, "body"};
//   });
//   OpenStream(server.url("/x.tar"), o);
//
// Answers for the usual cases: Object() (a stored object: GET, HEAD,
// "Range: bytes=A-" and "bytes=A-B" give 206 with Content-Range, 416 past
// the end) and ServeFiles() (a server whose handler answers Object() for the
// files under one directory; 404 for a missing file or a path with "..").
//
// Ownership: the server owns its listening socket (a port the kernel picked,
// so parallel test processes never collide), its threads and the
// connections; the destructor stops accepting, shuts every connection down
// and joins every thread.
// Thread-safety: each connection is served on its own thread, so a client
// that reads one response slowly never holds up another; the handler must
// therefore be safe to call concurrently. url(), requests() and
// request_count() may be called from any thread.
// Errors: the constructor aborts when the loopback socket cannot be set up
// (a test cannot go on without it); ServeFiles returns IoError instead.
#ifndef STOKER_TESTING_HTTP_SERVER_H_
#define STOKER_TESTING_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker::testing {

struct HttpRequest {
  std::string method;  // "GET", "HEAD"
  std::string path;    // without the query
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added
  std::string body;  // not sent for HEAD; Content-Length still gives its size
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  explicit HttpServer(Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" + path.
  std::string url(const std::string& path = "") const;
  // Every request so far, in arrival order, and their number.
  std::vector<HttpRequest> requests() const;
  int64_t request_count() const;

 private:
  void AcceptLoop();
  void Serve(int fd);

  const Handler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: written once by the destructor to end AcceptLoop
  int port_ = 0;
  mutable Mutex mu_;
  std::vector<HttpRequest> requests_ STOKER_GUARDED_BY(mu_);
  bool stopping_ STOKER_GUARDED_BY(mu_) = false;
  std::vector<int> open_fds_ STOKER_GUARDED_BY(mu_);  // connections being served
  // One thread per connection; a thread that is done lists its id in
  // `finished_` and the acceptor joins it before serving the next one.
  std::map<uint64_t, std::thread> workers_ STOKER_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ STOKER_GUARDED_BY(mu_);
  uint64_t next_worker_ STOKER_GUARDED_BY(mu_) = 0;
  std::thread acceptor_;  // started last in the constructor, joined first in the destructor
};

// The response for a stored object `body` with validators `etag` and
// `last_modified` ("" for none): 200; 206 with Content-Range for
// "Range: bytes=A-" or "bytes=A-B"; 416 for a range starting past the end.
HttpResponse Object(const HttpRequest& request, const std::string& body,
                    const std::string& etag = "", const std::string& last_modified = "");

// A server answering Object() for the files under `root` (404 for a missing
// file, a folder or a path holding ".."). IoError when `root` is not a folder.
StatusOr<std::unique_ptr<HttpServer>> ServeFiles(const std::string& root);

}  // namespace stoker::testing

#endif  // STOKER_TESTING_HTTP_SERVER_H_
