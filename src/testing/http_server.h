// Copyright 2026 The stoker Authors.
//
// A real HTTP/1.1 server on loopback for the C++ tests of the remote
// streams (libcurl on one side, a socket on the other): each connection
// carries one request, answered by a handler and closed
// ("Connection: close").
//
//   testing::HttpServer server([](const testing::HttpRequest& r) {
//     return testing::HttpResponse{200, {{"ETag", "\"v1\""}}, "body"};
//   });
//   OpenStream(server.url("/x.tar"), o);
//
// Object(): the usual answer for a stored object (Range requests give 206,
// HEAD gives the headers without the body).
//
// Thread-safety: the handler runs on the server's one thread, a connection
// at a time; requests() may be called from any thread. The destructor stops
// the thread (a connection in progress is finished first).
#ifndef STOKER_TESTING_HTTP_SERVER_H_
#define STOKER_TESTING_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace stoker::testing {

struct HttpRequest {
  std::string method;  // "GET", "HEAD"
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  explicit HttpServer(Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const;
  // Every request so far, in arrival order.
  std::vector<HttpRequest> requests() const;

 private:
  void Serve();
  void HandleConnection(int fd);

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<HttpRequest> requests_;
  std::thread thread_;
};

// The response for a stored object `body` with validators `etag` and
// `last_modified` ("" for none): 200, or 206 for "Range: bytes=N-"; HEAD
// gets the headers alone.
HttpResponse Object(const HttpRequest& request, const std::string& body,
                    const std::string& etag = "", const std::string& last_modified = "");

}  // namespace stoker::testing

#endif  // STOKER_TESTING_HTTP_SERVER_H_
