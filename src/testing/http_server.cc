// Copyright 2026 The stoker Authors.
#include "testing/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace stoker::testing {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

HttpServer::HttpServer(Handler handler) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd_, 16);
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

HttpServer::~HttpServer() {
  stop_.store(true);
  thread_.join();
  ::close(fd_);
}

std::string HttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<HttpRequest> HttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void HttpServer::Serve() {
  while (!stop_.load()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;  // wakes every 50 ms to see stop_
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    HandleConnection(c);
    ::close(c);
  }
}

void HttpServer::HandleConnection(int fd) {
  std::string head;
  char buf[8192];
  while (head.find("\r\n\r\n") == std::string::npos) {
    pollfd q{fd, POLLIN, 0};
    if (::poll(&q, 1, 5000) != 1) return;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  HttpRequest r;
  size_t line_end = head.find("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
  r.method = line.substr(0, sp1);
  r.path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t pos = line_end + 2; pos < head.size();) {
    const size_t end = head.find("\r\n", pos);
    if (end == std::string::npos || end == pos) break;
    const std::string h = head.substr(pos, end - pos);
    const size_t colon = h.find(':');
    if (colon != std::string::npos) {
      std::string name = h.substr(0, colon);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      size_t v = colon + 1;
      while (v < h.size() && h[v] == ' ') ++v;
      r.headers[name] = h.substr(v);
    }
    pos = end + 2;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(r);
  }
  const HttpResponse resp = handler_(r);
  std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + Reason(resp.status) + "\r\n";
  for (const auto& [name, value] : resp.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n";
  if (r.method != "HEAD") out += resp.body;
  WriteAll(fd, out);
  ::shutdown(fd, SHUT_WR);
}

HttpResponse Object(const HttpRequest& request, const std::string& body, const std::string& etag,
                    const std::string& last_modified) {
  HttpResponse resp;
  if (!etag.empty()) resp.headers.emplace_back("ETag", etag);
  if (!last_modified.empty()) resp.headers.emplace_back("Last-Modified", last_modified);
  const std::string range = request.header("range");
  if (range.rfind("bytes=", 0) == 0) {
    const size_t start = std::strtoull(range.c_str() + 6, nullptr, 10);
    if (start >= body.size()) {
      resp.status = 416;
      return resp;
    }
    resp.status = 206;
    resp.headers.emplace_back("Content-Range", "bytes " + std::to_string(start) + "-" +
                                                   std::to_string(body.size() - 1) + "/" +
                                                   std::to_string(body.size()));
    resp.body = body.substr(start);
    return resp;
  }
  resp.body = body;
  return resp;
}

}  // namespace stoker::testing
