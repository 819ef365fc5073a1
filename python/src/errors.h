// Copyright 2026 The stoker Authors.
//
// Status -> Python exception, shared by the binding files: InvalidArgument
// raises ValueError, WrongType TypeError, NotFound FileNotFoundError,
// anything else stoker.StokerError. Call with the GIL held. Also the Ctrl-C
// poll of the waits that release the GIL, and file system paths.
#ifndef STOKER_PYTHON_ERRORS_H_
#define STOKER_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <cxxabi.h>

#include <functional>
#include <memory>
#include <type_traits>
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

// The Status for `error`, raised by a Python callable (a Lambda) that a
// worker called: its message "raised Type: message" and the traceback,
// remembered for __cause__ (RememberPythonError); Cancelled for a
// BaseException that is no Exception (KeyboardInterrupt, SystemExit,
// GeneratorExit) or a MemoryError -- no bad sample: on_error="skip" does not
// skip it and the iterator re-raises it -- else InvalidArgument. GIL held.
Status CallableErrorStatus(pybind11::error_already_set error);

// `fn` shared by the copies of a C++ callback that calls it; the last copy
// drops the reference with the GIL held, on whichever thread drops it (or
// leaks it when the interpreter is gone or going).
std::shared_ptr<pybind11::object> SharedCallable(pybind11::object fn);

// A path argument (str with surrogate escapes, bytes or os.PathLike) as the
// bytes the file system uses; and such bytes as str (os.fsdecode).
std::string FsPath(const pybind11::object& path);
pybind11::str FsDecode(const std::string& path);

// Threads and interpreter shutdown. Once the interpreter
// finalises, CPython ends any other thread that takes the GIL with
// pthread_exit, whose forced unwind aborts the process ("terminate called
// without an active exception") when it crosses a destructor (pybind11's
// gil_scoped_release) or a catch (...) (a worker's sample). So a thread that
// must take the GIL does it through these: a thread that would be ended
// parks for good instead (the process is exiting), without the GIL.
bool PythonFinalizing();
[[noreturn]] void ParkForever();
// Takes the GIL back for `state` (PyEval_RestoreThread), or parks.
void RestoreThreadOrPark(PyThreadState* state);

// Runs f() with the GIL released and takes it back after (RestoreThreadOrPark):
// gil_scoped_release for calls that may still be running when the
// interpreter shuts down (a daemon thread's next()).
template <typename F>
auto WithoutGil(F&& f) -> decltype(f()) {
  PyThreadState* state = PyEval_SaveThread();
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      RestoreThreadOrPark(state);
    } else {
      auto result = f();
      RestoreThreadOrPark(state);
      return result;
    }
  } catch (...) {
    RestoreThreadOrPark(state);
    throw;
  }
}

// Runs f() with the GIL held, from a thread that does not hold it (a worker,
// a poll): Cancelled without calling f once the interpreter shuts down, and
// a park if it starts shutting down meanwhile. f runs inside the acquired
// scope, so a forced unwind from inside f (Python code that released the GIL
// and takes it back at shutdown) parks too, before the scope's destructor.
template <typename F>
Status WithGil(F&& f) {
  if (PythonFinalizing()) return CancelledError("the Python interpreter is shutting down");
  try {
    pybind11::gil_scoped_acquire acquire;
    try {
      return f();
    } catch (abi::__forced_unwind&) {
      ParkForever();
    }
  } catch (abi::__forced_unwind&) {
    ParkForever();
  }
}

// A thread-local mark for the stoker worker threads while they run a Python
// callable (stoker.Lambda): the Loader's methods refuse to run there
// (RuntimeError "called from a worker thread"), where they would wait for
// the worker itself.
class InWorkerCallable {
 public:
  InWorkerCallable() : previous_(active_) { active_ = true; }
  ~InWorkerCallable() { active_ = previous_; }
  InWorkerCallable(const InWorkerCallable&) = delete;
  InWorkerCallable& operator=(const InWorkerCallable&) = delete;
  static bool active() { return active_; }

 private:
  static thread_local bool active_;
  const bool previous_;
};
// Raises RuntimeError naming `what` when called inside a worker's callable.
void RefuseInWorkerThread(const char* what);

// Ctrl-C while a call waits with the GIL released: fn() is the poll that
// Loader::Next and DeviceLoader::Next call every kMs milliseconds; it takes
// the GIL and runs Python's signal handlers, and when one raised
// (KeyboardInterrupt) returns Cancelled so the wait ends at once. After the
// call, with the GIL held, RaiseIfSignalled() raises that exception. During
// interpreter shutdown it returns Cancelled without the GIL (WithGil).
class SignalPoll {
 public:
  static constexpr int kMs = 50;
  std::function<Status()> fn() {
    return [this]() -> Status {
      return WithGil([this]() -> Status {
        if (PyErr_CheckSignals() != 0) {
          signalled_ = true;
          return CancelledError("interrupted by a signal");
        }
        return Status::OK();
      });
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
