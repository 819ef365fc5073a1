// Copyright 2026 The stoker Authors.
//
// http(s) streams through libcurl's multi interface, turned into a pull
// stream: Read() drives the transfer until the write callback has delivered
// bytes. Retries resume with a Range request from the bytes received so
// far; when a server ignores the Range (200 instead of 206) the bytes
// already delivered are discarded from the new body. S3 requests are the
// same transfers, signed by libcurl's CURLOPT_AWS_SIGV4 (see s3.cc). The
// node-wide cache lives in stream.cc (FillCache), above this.
#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "io/stream.h"

namespace stoker {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

class HttpStream : public ByteStream {
 public:
  HttpStream(std::string url, const StreamOptions& o, const RemoteRequest& r)
      : url_(std::move(url)), name_(r.name.empty() ? url_ : r.name), o_(o), request_(r) {}

  ~HttpStream() override {
    EndAttempt();
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
    if (headers_ != nullptr) curl_slist_free_all(headers_);
  }

  Status Init() {
    GlobalInit();
    multi_ = curl_multi_init();
    if (multi_ == nullptr) return ResourceExhaustedError(name_ + ": curl_multi_init failed");
    for (const std::string& h : request_.headers) headers_ = curl_slist_append(headers_, h.c_str());
    return StartAttempt();
  }

  Status Read(uint8_t* out, size_t n, size_t* got) override {
    *got = 0;
    while (pos_ == buf_.size()) {
      if (done_) return Status::OK();
      buf_.clear();
      pos_ = 0;
      STOKER_RETURN_IF_ERROR(Pump());
    }
    const size_t k = std::min(n, buf_.size() - pos_);
    std::memcpy(out, buf_.data() + pos_, k);
    pos_ += k;
    *got = k;
    return Status::OK();
  }

  const std::string& name() const override { return name_; }
  int retries() const override { return retries_; }

 private:
  static size_t OnData(char* data, size_t size, size_t nmemb, void* self_ptr) {
    auto* self = static_cast<HttpStream*>(self_ptr);
    const size_t n = size * nmemb;
    if (self->status_code_ == 0) {
      curl_easy_getinfo(self->easy_, CURLINFO_RESPONSE_CODE, &self->status_code_);
      // A server that ignored our Range sends the whole body again.
      self->discard_ = self->status_code_ == 200 ? self->received_ : 0;
    }
    if (self->status_code_ != 200 && self->status_code_ != 206) {  // error body, kept for messages
      self->error_body_.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody,
                                                                          self->error_body_.size())));
      return n;
    }
    size_t skip = static_cast<size_t>(std::min<int64_t>(self->discard_, static_cast<int64_t>(n)));
    self->discard_ -= static_cast<int64_t>(skip);
    self->buf_.insert(self->buf_.end(), data + skip, data + n);
    self->received_ += static_cast<int64_t>(n - skip);
    return n;
  }

  // libcurl's progress callback: non-zero aborts the transfer
  // (CURLE_ABORTED_BY_CALLBACK) once the reader is cancelled.
  static int OnProgress(void* self_ptr, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const HttpStream*>(self_ptr)->Cancelled() ? 1 : 0;
  }

  Status StartAttempt() {
    easy_ = curl_easy_init();
    if (easy_ == nullptr) return ResourceExhaustedError(name_ + ": curl_easy_init failed");
    status_code_ = 0;
    error_[0] = '\0';
    error_body_.clear();
    curl_easy_setopt(easy_, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy_, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &HttpStream::OnData);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT, static_cast<long>(o_.connect_timeout_s));
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(easy_, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o_.stall_timeout_s));
    curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYPEER, o_.verify ? 1L : 0L);
    curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYHOST, o_.verify ? 2L : 0L);
    if (!o_.ca_file.empty()) curl_easy_setopt(easy_, CURLOPT_CAINFO, o_.ca_file.c_str());
    if (headers_ != nullptr) curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers_);
    if (!request_.aws_sigv4.empty()) {
      curl_easy_setopt(easy_, CURLOPT_AWS_SIGV4, request_.aws_sigv4.c_str());
      curl_easy_setopt(easy_, CURLOPT_USERPWD, request_.user_pwd.c_str());
    }
    if (o_.cancel != nullptr) {  // aborts inside curl_multi_perform too
      curl_easy_setopt(easy_, CURLOPT_XFERINFOFUNCTION, &HttpStream::OnProgress);
      curl_easy_setopt(easy_, CURLOPT_XFERINFODATA, this);
      curl_easy_setopt(easy_, CURLOPT_NOPROGRESS, 0L);
    }
    if (received_ > 0) {
      const std::string range = std::to_string(received_) + "-";
      curl_easy_setopt(easy_, CURLOPT_RANGE, range.c_str());  // copied by libcurl
    }
    if (curl_multi_add_handle(multi_, easy_) != CURLM_OK) {
      return InternalError(name_ + ": curl_multi_add_handle failed");
    }
    return Status::OK();
  }

  void EndAttempt() {
    if (easy_ == nullptr) return;
    curl_multi_remove_handle(multi_, easy_);
    curl_easy_cleanup(easy_);
    easy_ = nullptr;
  }

  // Drives the transfer until bytes arrive, the body ends or it fails for good.
  Status Pump() {
    while (buf_.empty() && !done_) {
      if (Cancelled()) {
        EndAttempt();
        return CancelledError(name_ + ": transfer cancelled");
      }
      int running = 0;
      if (curl_multi_perform(multi_, &running) != CURLM_OK) {
        return IoError(name_ + ": curl_multi_perform failed");
      }
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
        if (msg->msg != CURLMSG_DONE) continue;
        STOKER_RETURN_IF_ERROR(Finished(msg->data.result));
      }
      if (buf_.empty() && !done_ && running > 0) {
        curl_multi_poll(multi_, nullptr, 0, 100, nullptr);  // 0.1 s: see Cancelled()
      }
    }
    return Status::OK();
  }

  // One attempt ended with `result`: done, retry, or fail.
  Status Finished(CURLcode result) {
    long code = status_code_;
    if (code == 0) curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &code);
    std::string reason;
    if (result == CURLE_OK && (code == 200 || code == 206)) {
      EndAttempt();
      done_ = true;
      return Status::OK();
    }
    if (result == CURLE_OK && code == 416 && received_ > 0) {  // resumed exactly at the end
      EndAttempt();
      done_ = true;
      return Status::OK();
    }
    if (result == CURLE_OK) {
      reason = "HTTP " + std::to_string(code) + ServerError();
      const bool transient = code >= 500 || code == 408 || code == 429;
      if (!transient) {
        EndAttempt();
        if (code == 404 || code == 410) return NotFoundError(name_ + ": " + reason + " (not found)");
        if ((code == 401 || code == 403) && !request_.denied_hint.empty()) {
          return IoError(name_ + ": " + reason + " (access denied; " + request_.denied_hint + ")");
        }
        return IoError(name_ + ": " + reason);
      }
    } else if (result == CURLE_ABORTED_BY_CALLBACK) {
      EndAttempt();
      return CancelledError(name_ + ": transfer cancelled");
    } else {
      reason = error_[0] ? std::string(error_) : curl_easy_strerror(result);
      if (result == CURLE_UNSUPPORTED_PROTOCOL || result == CURLE_URL_MALFORMAT) {
        EndAttempt();
        return InvalidArgumentError(name_ + ": " + reason);
      }
      if (result == CURLE_PEER_FAILED_VERIFICATION || result == CURLE_SSL_CACERT_BADFILE) {
        EndAttempt();  // retrying cannot help
        return IoError(name_ + ": TLS certificate not trusted: " + reason + " (CA file: " +
                       (o_.ca_file.empty() ? std::string("the system's") : o_.ca_file) +
                       "; pass ca_file= for a private CA, or verify=False)");
      }
    }
    EndAttempt();
    if (++attempts_ >= o_.max_attempts) {
      return IoError(name_ + ": " + reason + " (gave up after " + std::to_string(attempts_) +
                     " attempts, " + std::to_string(received_) + " bytes received)");
    }
    ++retries_;
    const int64_t wait_ms =
        std::min<int64_t>(5000, int64_t{o_.backoff_ms} << std::min(attempts_ - 1, 20));
    for (int64_t slept = 0; slept < wait_ms; slept += 50) {
      if (Cancelled()) return CancelledError(name_ + ": transfer cancelled");
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min<int64_t>(50, wait_ms - slept)));
    }
    return StartAttempt();
  }

  bool Cancelled() const {
    return o_.cancel != nullptr && o_.cancel->load(std::memory_order_relaxed);
  }

  // The server's error code and message from an XML error body (S3), or
  // the start of a text body; "" when there is none.
  std::string ServerError() const {
    auto tag = [&](const char* name) {
      const std::string open = std::string("<") + name + ">", close = std::string("</") + name + ">";
      const size_t a = error_body_.find(open);
      if (a == std::string::npos) return std::string();
      const size_t b = error_body_.find(close, a);
      if (b == std::string::npos) return std::string();
      return error_body_.substr(a + open.size(), b - a - open.size());
    };
    const std::string code = tag("Code"), message = tag("Message");
    if (code.empty()) return "";
    return ": " + code + (message.empty() ? "" : " (" + message + ")");
  }

  static constexpr size_t kMaxErrorBody = 4096;

  const std::string url_;
  const std::string name_;
  const StreamOptions o_;
  const RemoteRequest request_;
  curl_slist* headers_ = nullptr;
  std::string error_body_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
  char error_[CURL_ERROR_SIZE];
  long status_code_ = 0;
  std::vector<uint8_t> buf_;  // received, handed out from pos_
  size_t pos_ = 0;
  int64_t received_ = 0;      // body bytes received over all attempts
  int64_t discard_ = 0;
  bool done_ = false;
  int attempts_ = 0;
  int retries_ = 0;
};

}  // namespace

bool BuiltWithCurl() { return true; }

StatusOr<std::unique_ptr<ByteStream>> OpenHttpStream(const std::string& url,
                                                     const StreamOptions& options,
                                                     const RemoteRequest& request) {
  std::unique_ptr<HttpStream> s(new HttpStream(url, options, request));
  STOKER_RETURN_IF_ERROR(s->Init());
  return std::unique_ptr<ByteStream>(std::move(s));
}

}  // namespace stoker
