// Copyright 2026 The stoker Authors.
//
// Status -> Python exception, shared by the binding files: InvalidArgument
// raises ValueError, NotFound FileNotFoundError, anything else
// stoker.StokerError. Call with the GIL held.
#ifndef STOKER_PYTHON_ERRORS_H_
#define STOKER_PYTHON_ERRORS_H_

#include "stoker/status.h"

namespace stoker::python {

[[noreturn]] void Throw(const Status& s);

}  // namespace stoker::python

#endif  // STOKER_PYTHON_ERRORS_H_
