// Copyright 2026 The stoker Authors.
#include "testing/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>

namespace stoker::testing {
namespace {

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

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Request {
  std::string method, path;
  bool has_range = false;
  int64_t range_first = 0, range_last = -1;  // -1: to the end
};

// Parses the request head (up to the blank line). False when malformed.
bool ParseRequest(const std::string& head, Request* r) {
  const size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t a = line.find(' '), b = line.rfind(' ');
  if (a == std::string::npos || b == a) return false;
  r->method = line.substr(0, a);
  r->path = line.substr(a + 1, b - a - 1);
  const size_t q = r->path.find('?');
  if (q != std::string::npos) r->path.resize(q);
  for (size_t pos = eol; pos != std::string::npos && pos + 2 < head.size();) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string h = head.substr(pos + 2, next == std::string::npos ? std::string::npos
                                                                           : next - pos - 2);
    pos = next;
    const size_t colon = h.find(':');
    if (colon == std::string::npos || Lower(h.substr(0, colon)) != "range") continue;
    std::string v = h.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    long long first = 0, last = -1;
    if (std::sscanf(v.c_str(), "bytes=%lld-%lld", &first, &last) >= 1) {
      r->has_range = true;
      r->range_first = first;
      r->range_last = last;
    }
  }
  return true;
}

void Respond(int fd, const char* status, int64_t length, const std::string& extra) {
  const std::string head = std::string("HTTP/1.1 ") + status + "\r\nContent-Length: " +
                           std::to_string(length) + "\r\n" + extra +
                           "Connection: close\r\n\r\n";
  SendAll(fd, head.data(), head.size());
}

}  // namespace

StatusOr<std::unique_ptr<HttpFileServer>> HttpFileServer::Start(const std::string& root) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks a free port
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return IoError("bind/listen on 127.0.0.1: " + why);
  }
  const int wake = ::eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    ::close(fd);
    return IoError(std::string("eventfd: ") + std::strerror(errno));
  }
  std::unique_ptr<HttpFileServer> server(new HttpFileServer(root, fd, wake, ntohs(addr.sin_port)));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

HttpFileServer::HttpFileServer(std::string root, int listen_fd, int wake_fd, int port)
    : root_(std::move(root)), listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port) {}

HttpFileServer::~HttpFileServer() {
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

std::string HttpFileServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void HttpFileServer::AcceptLoop() {
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

void HttpFileServer::Serve(int fd) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0 || head.size() > (64 << 10)) return;
    head.append(buf, static_cast<size_t>(k));
  }
  requests_.fetch_add(1, std::memory_order_relaxed);
  Request r;
  if (!ParseRequest(head, &r) || (r.method != "GET" && r.method != "HEAD")) {
    Respond(fd, "400 Bad Request", 0, "");
    return;
  }
  const int file = r.path.find("..") == std::string::npos
                       ? ::open((root_ + r.path).c_str(), O_RDONLY | O_CLOEXEC)
                       : -1;
  struct stat st{};
  if (file < 0 || ::fstat(file, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (file >= 0) ::close(file);
    Respond(fd, "404 Not Found", 0, "");
    return;
  }
  const int64_t size = st.st_size;
  int64_t first = 0, last = size - 1;
  if (r.has_range) {
    first = r.range_first;
    if (r.range_last >= 0) last = std::min(r.range_last, size - 1);
    if (first >= size || first > last) {
      ::close(file);
      Respond(fd, "416 Range Not Satisfiable", 0,
              "Content-Range: bytes */" + std::to_string(size) + "\r\n");
      return;
    }
    Respond(fd, "206 Partial Content", last - first + 1,
            "Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                std::to_string(size) + "\r\n");
  } else {
    Respond(fd, "200 OK", size, "");
  }
  if (r.method == "GET") {
    for (int64_t at = first; at <= last;) {
      const ssize_t k = ::pread(file, buf, static_cast<size_t>(std::min<int64_t>(
                                               sizeof buf, last - at + 1)), at);
      if (k <= 0 || !SendAll(fd, buf, static_cast<size_t>(k))) break;
      at += k;
    }
  }
  ::close(file);
}

}  // namespace stoker::testing
