// Copyright 2026 The stoker Authors.
//
// Status -> Python exception (errors.h), stoker.StokerError, and the paths
// that cross into Python.
#include "errors.h"

#include <chrono>
#include <deque>
#include <thread>
#include <string>
#include <utility>

namespace py = pybind11;

namespace stoker::python {

PyObject* g_stoker_error = nullptr;

namespace {

// The interpreter's main thread (which finalises it): it is never ended, so
// it must not park either (RestoreThreadOrPark).
unsigned long g_main_thread = 0;  // NOLINT(runtime/int): PyThread_get_thread_ident's type

// Messages name files, and file names need not be UTF-8: bytes that are not
// become surrogate escapes (as os.fsdecode makes them), never an empty or
// unraisable message.
[[noreturn]] void SetErrorAndThrow(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "surrogateescape");
  if (text == nullptr) {
    PyErr_Clear();
    PyErr_SetString(type, "(undecodable message)");
  } else {
    PyErr_SetObject(type, text);
    Py_DECREF(text);
  }
  throw py::error_already_set();
}

// Exceptions raised by Python callables (stoker.Lambda) in worker threads,
// with the message their sample's error Status carries, so that the
// StokerError raised for that Status can name the user's exception as its
// __cause__. Used with the GIL held only; bounded; deliberately leaked (its
// objects must not be released after the interpreter is gone).
struct CallbackError {
  std::string message;
  py::error_already_set error;
};
std::deque<CallbackError>& CallbackErrors() {
  static auto* errors = new std::deque<CallbackError>();
  return *errors;
}

}  // namespace

void RegisterErrors(py::module_& m) {
  g_main_thread = py::module_::import("threading")
                      .attr("main_thread")()
                      .attr("ident")
                      .cast<unsigned long>();  // NOLINT(runtime/int)
  m.def("refuse_in_worker_thread", [](const std::string& what) {
          RefuseInWorkerThread(what.c_str());
        }, py::arg("what"),
        "Raises RuntimeError naming `what` when called from a loader's worker thread "
        "running a Python callable (a Lambda): the loader's methods cannot run there.");
  m.def("park_forever", [] { WithoutGil([] { ParkForever(); }); },
        "Sleeps for good without the GIL (at interpreter exit, a thread still iterating a "
        "loader: it then runs no more Python while the interpreter finalises).");
  static py::exception<std::runtime_error> exc(m, "StokerError", PyExc_RuntimeError);
  exc.attr("__doc__") =
      "stoker's error (a RuntimeError): a file that cannot be read or decoded (the\n"
      "message names it), a damaged shard, an unusable device.";
  g_stoker_error = exc.ptr();
}

[[noreturn]] void Throw(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: SetErrorAndThrow(PyExc_ValueError, s.message());
    case StatusCode::kWrongType: SetErrorAndThrow(PyExc_TypeError, s.message());
    case StatusCode::kNotFound: SetErrorAndThrow(PyExc_FileNotFoundError, s.message());
    default: SetErrorAndThrow(g_stoker_error, s.message());
  }
}

Status CallableErrorStatus(py::error_already_set error) {
  // what(): "Type: message", then the traceback.
  std::string message = "raised " + std::string(error.what());
  const bool interrupt = !error.matches(PyExc_Exception) || error.matches(PyExc_MemoryError);
  RememberPythonError(message, std::move(error));
  if (interrupt) return CancelledError(std::move(message));
  return InvalidArgumentError(std::move(message));
}

std::shared_ptr<py::object> SharedCallable(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* o) {
    if (!Py_IsInitialized() || (PythonFinalizing() && !PyGILState_Check())) {
      (void)o->release();  // the interpreter is gone or going: leak the reference
      delete o;
      return;
    }
    py::gil_scoped_acquire acquire;
    delete o;
  });
}

void RememberPythonError(const std::string& message, py::error_already_set error) {
  std::deque<CallbackError>& errors = CallbackErrors();
  if (errors.size() >= 32) errors.pop_front();
  errors.push_back(CallbackError{message, std::move(error)});
}

// Errors met while iterating concern the data, whatever their code: they
// all raise stoker.StokerError, whose message names the sample; when a
// Python callable's exception caused it, that exception is its __cause__,
// except an interrupt or a MemoryError, which is raised itself.
[[noreturn]] void ThrowIterationStatus(const Status& s) {
  std::deque<CallbackError>& errors = CallbackErrors();
  for (auto it = errors.begin(); it != errors.end(); ++it) {
    if (s.message().find(it->message) == std::string::npos) continue;
    py::error_already_set cause = std::move(it->error);
    errors.erase(it);
    if (s.code() == StatusCode::kCancelled &&
        (!cause.matches(PyExc_Exception) || cause.matches(PyExc_MemoryError))) {
      // An interrupt (KeyboardInterrupt, SystemExit, GeneratorExit) or a
      // MemoryError raised by a Lambda (which fails its sample as Cancelled):
      // itself, with a note naming the sample, not a StokerError.
      py::object value = cause.value();
      if (py::hasattr(value, "add_note")) {
        value.attr("add_note")("stoker: raised by a Python callable on a worker thread; " +
                               s.message());
      }
      cause.restore();
      throw py::error_already_set();
    }
    py::raise_from(cause, g_stoker_error, s.message().c_str());
    throw py::error_already_set();
  }
  SetErrorAndThrow(g_stoker_error, s.message());
}

bool PythonFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void ParkForever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void RestoreThreadOrPark(PyThreadState* state) {
  if (PythonFinalizing() && PyThread_get_thread_ident() != g_main_thread) ParkForever();
  try {
    PyEval_RestoreThread(state);  // may end the thread if shutdown began meanwhile
  } catch (abi::__forced_unwind&) {
    ParkForever();
  }
}

thread_local bool InWorkerCallable::active_ = false;

void RefuseInWorkerThread(const char* what) {
  if (!InWorkerCallable::active()) return;
  PyErr_SetString(PyExc_RuntimeError,
                  (std::string(what) + " called from a worker thread (inside a Lambda or other "
                   "Python callable the loader runs per sample): a worker cannot wait for the "
                   "loader it works for; iterate, close or restore a loader from the training "
                   "loop's threads only").c_str());
  throw py::error_already_set();
}

std::string FsPath(const py::object& path) {
  return py::module_::import("os").attr("fsencode")(path).cast<std::string>();
}

py::str FsDecode(const std::string& path) {
  return py::module_::import("os").attr("fsdecode")(py::bytes(path)).cast<py::str>();
}

}  // namespace stoker::python
