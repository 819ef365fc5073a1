// Copyright 2026 The stoker Authors.
#include "testing/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace stoker::testing {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Parses the request head (up to the blank line). False when malformed.
bool ParseRequest(const std::string& head, HttpRequest* r) {
  const size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t a = line.find(' '), b = line.rfind(' ');
  if (a == std::string::npos || b == a) return false;
  r->method = line.substr(0, a);
  r->path = line.substr(a + 1, b - a - 1);
  const size_t q = r->path.find('?');
  if (q != std::string::npos) r->path.resize(q);
  for (size_t pos = eol + 2; pos < head.size();) {
    const size_t end = head.find("\r\n", pos);
    if (end == std::string::npos || end == pos) break;
    const std::string h = head.substr(pos, end - pos);
    pos = end + 2;
    const size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string name = h.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t v = h.find_first_not_of(' ', colon + 1);
    r->headers[name] = v == std::string::npos ? std::string() : h.substr(v);
  }
  return true;
}

}  // namespace

HttpServer::HttpServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks a free port
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 ||
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "HttpServer: bind/listen on 127.0.0.1: %s\n", std::strerror(errno));
    std::abort();
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    std::fprintf(stderr, "HttpServer: eventfd: %s\n", std::strerror(errno));
    std::abort();
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

HttpServer::~HttpServer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes a blocked recv/send
  }
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) != sizeof one) std::abort();
  if (acceptor_.joinable()) acceptor_.join();
  std::map<uint64_t, std::thread> workers;
  {
    MutexLock lock(&mu_);
    workers.swap(workers_);
  }
  for (auto& [id, t] : workers) t.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::string HttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<HttpRequest> HttpServer::requests() const {
  MutexLock lock(&mu_);
  return requests_;
}

int64_t HttpServer::request_count() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(requests_.size());
}

void HttpServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::vector<std::thread> done;
    MutexLock lock(&mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    for (uint64_t id : finished_) {
      done.push_back(std::move(workers_[id]));
      workers_.erase(id);
    }
    finished_.clear();
    open_fds_.push_back(fd);
    const uint64_t id = next_worker_++;
    workers_[id] = std::thread([this, fd, id] {
      Serve(fd);
      MutexLock lock(&mu_);
      open_fds_.erase(std::find(open_fds_.begin(), open_fds_.end(), fd));
      ::close(fd);  // under the lock: the destructor never shuts down a reused number
      finished_.push_back(id);
    });
    lock.Unlock();
    for (std::thread& t : done) t.join();  // threads that have returned from Serve
    lock.Lock();
  }
}

void HttpServer::Serve(int fd) {
  std::string head;
  char buf[8192];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0 || head.size() > (64 << 10)) return;
    head.append(buf, static_cast<size_t>(k));
  }
  HttpRequest r;
  HttpResponse resp;
  if (!ParseRequest(head, &r)) {
    resp.status = 400;
  } else {
    {
      MutexLock lock(&mu_);
      requests_.push_back(r);
    }
    resp = handler_(r);
  }
  std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + Reason(resp.status) + "\r\n";
  for (const auto& [name, value] : resp.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n";
  if (r.method != "HEAD") out += resp.body;
  SendAll(fd, out.data(), out.size());
  ::shutdown(fd, SHUT_WR);
}

HttpResponse Object(const HttpRequest& request, const std::string& body, const std::string& etag,
                    const std::string& last_modified) {
  HttpResponse resp;
  if (!etag.empty()) resp.headers.emplace_back("ETag", etag);
  if (!last_modified.empty()) resp.headers.emplace_back("Last-Modified", last_modified);
  const std::string range = request.header("range");
  long long first = 0, last = -1;
  if (std::sscanf(range.c_str(), "bytes=%lld-%lld", &first, &last) >= 1) {
    const long long size = static_cast<long long>(body.size());
    if (last < 0 || last >= size) last = size - 1;
    if (first < 0 || first >= size || first > last) {
      resp.status = 416;
      resp.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
      return resp;
    }
    resp.status = 206;
    resp.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" +
                                                   std::to_string(last) + "/" +
                                                   std::to_string(size));
    resp.body = body.substr(static_cast<size_t>(first), static_cast<size_t>(last - first + 1));
    return resp;
  }
  resp.body = body;
  return resp;
}

StatusOr<std::unique_ptr<HttpServer>> ServeFiles(const std::string& root) {
  struct stat st{};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return IoError("ServeFiles: not a folder: " + root);
  }
  return std::make_unique<HttpServer>([root](const HttpRequest& r) {
    HttpResponse not_found{404, {}, ""};
    if ((r.method != "GET" && r.method != "HEAD") || r.path.find("..") != std::string::npos) {
      return not_found;
    }
    const std::string path = root + r.path;
    struct stat fst{};
    if (::stat(path.c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) return not_found;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) return not_found;
    return Object(r, bytes.str());
  });
}

}  // namespace stoker::testing
