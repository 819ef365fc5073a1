// Copyright 2026 The stoker Authors.
//
// HttpFileServer: a real HTTP/1.1 server on the loopback interface for
// tests, serving the files under one directory. The client side under test
// (libcurl, io/stream.h) talks to it over TCP as to any server.
//
//   auto server = HttpFileServer::Start(dir.path()).value();
//   options.patterns = {server->url() + "/train-{000..011}.tar"};
//
// What it speaks: GET and HEAD; "Range: bytes=A-" and "bytes=A-B" (206 with
// Content-Range; 416 past the end); 404 for a missing file or a path with
// "..". Every response carries Content-Length and "Connection: close" (one
// request per connection). Each connection is served on its own thread, so
// a client that reads one response slowly never holds up another.
//
// Ownership: the server owns its listening socket (a port the kernel picked,
// so parallel test processes never collide), its threads and the
// connections; the destructor stops accepting, shuts every connection down
// and joins every thread.
// Thread-safety: url() and requests() may be called from any thread.
// Errors: Start returns IoError when the socket cannot be set up.
#ifndef STOKER_TESTING_HTTP_SERVER_H_
#define STOKER_TESTING_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker::testing {

class HttpFileServer {
 public:
  static StatusOr<std::unique_ptr<HttpFileServer>> Start(const std::string& root);
  ~HttpFileServer();
  HttpFileServer(const HttpFileServer&) = delete;
  HttpFileServer& operator=(const HttpFileServer&) = delete;

  // "http://127.0.0.1:PORT" (no trailing slash).
  std::string url() const;
  // Requests answered so far (any status).
  int64_t requests() const { return requests_.load(std::memory_order_relaxed); }

 private:
  HttpFileServer(std::string root, int listen_fd, int wake_fd, int port);
  void AcceptLoop();
  void Serve(int fd);

  const std::string root_;
  const int listen_fd_;
  const int wake_fd_;  // eventfd: written once by the destructor to end AcceptLoop
  const int port_;
  std::atomic<int64_t> requests_{0};
  Mutex mu_;
  bool stopping_ STOKER_GUARDED_BY(mu_) = false;
  std::vector<int> open_fds_ STOKER_GUARDED_BY(mu_);  // connections being served
  // One thread per connection; a thread that is done lists its id in
  // `finished_` and the acceptor joins it before serving the next one.
  std::map<uint64_t, std::thread> workers_ STOKER_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ STOKER_GUARDED_BY(mu_);
  uint64_t next_worker_ STOKER_GUARDED_BY(mu_) = 0;
  std::thread acceptor_;  // started last in Start(), joined first in the destructor
};

}  // namespace stoker::testing

#endif  // STOKER_TESTING_HTTP_SERVER_H_
