// Copyright 2026 The stoker Authors.
//
// Status -> Python exception, shared by the binding files: InvalidArgument
// raises ValueError, WrongType TypeError, NotFound FileNotFoundError,
// anything else stoker.StokerError. Call with the GIL held. Also the Ctrl-C
// poll of the waits that release the GIL, and file system paths.
#ifndef STOKER_PYTHON_ERRORS_H_
#define STOKER_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <string>
#include <utility>

#include "stoker/status.h"

namespace stoker::python {

// Adds stoker.StokerError to `m`; before any Throw.
void RegisterErrors(pybind11::module_& m);

[[noreturn]] void Throw(const Status& s);

// The value of `v`, or the Python exception for its error.
template <typename T>
T Unwrap(StatusOr<T> v) {
  if (!v.ok()) Throw(v.status());
  return std::move(v).value();
}

// An error met while iterating: stoker.StokerError, with the Python
// exception remembered for its message (RememberPythonError) as __cause__.
[[noreturn]] void ThrowIterationStatus(const Status& s);

// Remembers `error`, raised by a Python callable called from C++, for the
// Status whose message contains `message`. Call with the GIL held.
void RememberPythonError(const std::string& message, pybind11::error_already_set error);

// A path argument (str with surrogate escapes, bytes or os.PathLike) as the
// bytes the file system uses; and such bytes as str (os.fsdecode).
std::string FsPath(const pybind11::object& path);
pybind11::str FsDecode(const std::string& path);

// Ctrl-C while a call waits with the GIL released: fn() is the poll that
// Loader::Next and DeviceLoader::Next call every kMs milliseconds; it takes
// the GIL and runs Python's signal handlers, and when one raised
// (KeyboardInterrupt) returns Cancelled so the wait ends at once. After the
// call, with the GIL held, RaiseIfSignalled() raises that exception.
class SignalPoll {
 public:
  static constexpr int kMs = 50;
  std::function<Status()> fn() {
    return [this]() -> Status {
      pybind11::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        signalled_ = true;
        return CancelledError("interrupted by a signal");
      }
      return Status::OK();
    };
  }
  void RaiseIfSignalled() const {
    if (signalled_) throw pybind11::error_already_set();
  }

 private:
  bool signalled_ = false;
};

}  // namespace stoker::python

#endif  // STOKER_PYTHON_ERRORS_H_
