// Copyright 2026 The stoker Authors.
//
// The stoker._C extension module: one register_*() per bound C++ module.
#include <pybind11/pybind11.h>

namespace stoker::python {
void RegisterLoader(pybind11::module_& m);
void RegisterDevice(pybind11::module_& m);
void RegisterArrays(pybind11::module_& m);
void RegisterShards(pybind11::module_& m);
}  // namespace stoker::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "stoker's C++ engine (use the `stoker` package, not this module)";
  stoker::python::RegisterLoader(m);
  stoker::python::RegisterDevice(m);
  stoker::python::RegisterArrays(m);
  stoker::python::RegisterShards(m);
}
