// Copyright 2026 The stoker Authors.
//
// Status and StatusOr<T>: errors as values throughout the engine. Both are
// [[nodiscard]]: ignoring a returned error is a compile warning; say
// `IgnoreError()` when that is meant.
//
// A Status is either OK or carries a code and a human-readable message. The
// message of an error that concerns one sample names the sample (file path,
// shard member) and the reason, because it is what the user finally reads.
// Exceptions are thrown only at the Python boundary.
//
// Thread-safety: a Status is a value; distinct objects may be used from
// distinct threads without synchronisation.
#ifndef STOKER_STATUS_H_
#define STOKER_STATUS_H_

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace stoker {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // the caller passed something unusable
  kNotFound = 2,         // a file or directory does not exist
  kDataLoss = 3,         // corrupt or truncated input data
  kUnimplemented = 4,    // valid input that stoker does not support
  kIoError = 5,          // the operating system refused a read
  kResourceExhausted = 6,  // a configured limit was exceeded
  kCancelled = 7,        // the operation was stopped on request
  kInternal = 8,         // a bug in stoker
  kWrongType = 9,        // an argument of the wrong type (Python: TypeError)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK. Cheap: holds no allocation.
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

  // Explicitly drops an error (e.g. best-effort clean-up).
  void IgnoreError() const {}

  // Returns a copy whose message is "<prefix>: <message>". OK stays OK.
  Status WithContext(const std::string& prefix) const;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;
};

inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status DataLossError(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status IoError(std::string m) {
  return Status(StatusCode::kIoError, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status CancelledError(std::string m) {
  return Status(StatusCode::kCancelled, std::move(m));
}
inline Status InternalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}
inline Status WrongTypeError(std::string m) {
  return Status(StatusCode::kWrongType, std::move(m));
}

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& s) : v_(s) {}  // NOLINT: implicit by design
  StatusOr(Status&& s) : v_(std::move(s)) {}  // NOLINT
  StatusOr(const T& v) : v_(v) {}  // NOLINT
  StatusOr(T&& v) : v_(std::move(v)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const {
    return ok() ? Status::OK() : std::get<Status>(v_);
  }
  // Precondition: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace stoker

#define STOKER_CONCAT_INNER_(a, b) a##b
#define STOKER_CONCAT_(a, b) STOKER_CONCAT_INNER_(a, b)

// Returns from the current function when `expr` is not OK.
#define STOKER_RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::stoker::Status _st = (expr);                     \
    if (!_st.ok()) return _st;                         \
  } while (0)

// `lhs = value of expr`, or return its error.
#define STOKER_ASSIGN_OR_RETURN(lhs, expr) \
  STOKER_ASSIGN_OR_RETURN_IMPL_(STOKER_CONCAT_(_statusor_, __LINE__), lhs, expr)
#define STOKER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

#endif  // STOKER_STATUS_H_
