// Copyright 2026 The stoker Authors.
//
// Status -> Python exception, shared by the binding files: InvalidArgument
// raises ValueError, NotFound FileNotFoundError, anything else
// stoker.StokerError. Call with the GIL held.
#ifndef STOKER_PYTHON_ERRORS_H_
#define STOKER_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <string>

#include "stoker/status.h"

namespace stoker::python {

[[noreturn]] void Throw(const Status& s);

// An error met while iterating: stoker.StokerError, with the Python
// exception remembered for its message (RememberPythonError) as __cause__.
[[noreturn]] void ThrowIterationStatus(const Status& s);

// Remembers `error`, raised by a Python callable called from C++, for the
// Status whose message contains `message`. Call with the GIL held.
void RememberPythonError(const std::string& message, pybind11::error_already_set error);

}  // namespace stoker::python

#endif  // STOKER_PYTHON_ERRORS_H_
