// Copyright 2026 The stoker Authors.
//
// A unique_ptr deleter for objects whose destructor joins threads that may
// wait for the GIL (a Loader's workers in a Lambda, a DeviceLoader dropping
// tensors): it deletes with the GIL released when the calling thread holds
// it, so those threads can finish. Thread-safe as `delete` is.
#ifndef STOKER_PYTHON_GIL_RELEASE_DELETE_H_
#define STOKER_PYTHON_GIL_RELEASE_DELETE_H_

#include <pybind11/pybind11.h>

namespace stoker::python {

template <typename T>
struct GilReleaseDelete {
  void operator()(T* object) const {
    if (Py_IsInitialized() && PyGILState_Check()) {
      pybind11::gil_scoped_release release;
      delete object;
    } else {
      delete object;
    }
  }
};

}  // namespace stoker::python

#endif  // STOKER_PYTHON_GIL_RELEASE_DELETE_H_
