// Copyright 2026 The stoker Authors.
#include "args.h"

#include <cmath>
#include <string>

namespace py = pybind11;

namespace stoker::python {

std::string TypeAndRepr(const py::handle& v) {
  return py::str(py::type::of(v).attr("__name__")).cast<std::string>() + " " +
         py::repr(v).cast<std::string>();
}

bool IsBool(const py::handle& v) {
  return py::isinstance<py::bool_>(v) ||
         py::isinstance(v, py::module_::import("numpy").attr("bool_"));
}

namespace {

// v as a Python int (operator.index), or a TypeError naming `name`. A bool,
// or a scalar of a bool dtype (numpy, torch), is not an integer here.
py::int_ Integral(const std::string& name, const py::handle& v) {
  bool is_bool = IsBool(v);
  if (!is_bool && py::hasattr(v, "dtype")) {
    const std::string dtype = py::str(v.attr("dtype")).cast<std::string>();
    is_bool = dtype == "bool" || dtype == "torch.bool";
  }
  PyObject* index = is_bool ? nullptr : PyNumber_Index(v.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    throw py::type_error(name + " must be an int, got " + TypeAndRepr(v));
  }
  return py::reinterpret_steal<py::int_>(index);
}

std::string Text(const py::handle& i) { return py::str(i).cast<std::string>(); }

py::int_ Checked(const std::string& name, const py::handle& v, const py::int_& lo,
                 const py::int_& hi) {
  py::int_ i = Integral(name, v);
  if (i < lo) {
    throw py::value_error(name + " must be >= " + Text(lo) + ", got " + Text(i));
  }
  if (i > hi) {
    throw py::value_error(name + " must be <= " + Text(hi) + ", got " + Text(i));
  }
  return i;
}

}  // namespace

int64_t IntArg(const std::string& name, const py::handle& v, int64_t lo, int64_t hi) {
  return Checked(name, v, py::int_(lo), py::int_(hi)).cast<int64_t>();
}

uint64_t Uint64Arg(const std::string& name, const py::handle& v) {
  return Checked(name, v, py::int_(0), py::int_(UINT64_MAX)).cast<uint64_t>();
}

bool BoolArg(const std::string& name, const py::handle& v) {
  if (!IsBool(v)) throw py::type_error(name + " must be True or False, got " + TypeAndRepr(v));
  return PyObject_IsTrue(v.ptr()) == 1;
}

double FiniteArg(const std::string& name, const py::handle& v) {
  const bool number = !IsBool(v) && (py::isinstance<py::int_>(v) ||
                                     py::isinstance<py::float_>(v) ||
                                     py::isinstance(v, py::module_::import("numpy").attr("number")));
  double d = number ? PyFloat_AsDouble(v.ptr()) : NAN;
  if (PyErr_Occurred()) {
    PyErr_Clear();
    d = NAN;
  }
  if (!std::isfinite(d)) {
    throw py::value_error(name + " must be a finite number, got " +
                          py::repr(v).cast<std::string>());
  }
  return d;
}

}  // namespace stoker::python
