// Copyright 2026 The stoker Authors.
//
// Checked arguments from Python, for bindings that take py::object so that a
// wrong value gets a TypeError or ValueError naming the argument and the value
// (never pybind11's signature dump, never a silent coercion of 2.5 or "8").
// The messages are python/stoker/_args.py's. Call with the GIL held.
#ifndef STOKER_PYTHON_ARGS_H_
#define STOKER_PYTHON_ARGS_H_

#include <pybind11/pybind11.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "errors.h"
#include "stoker/choice.h"

namespace stoker::python {

// "int 5", "NoneType None": what a wrong argument was.
std::string TypeAndRepr(const pybind11::handle& v);

// True for a Python or numpy bool.
bool IsBool(const pybind11::handle& v);

// An integer (int, numpy or torch integer scalar: anything with __index__;
// not a bool) in [lo, hi]: TypeError "<name> must be an int, got float 2.5",
// ValueError "<name> must be >= lo, got x" / "<= hi".
int64_t IntArg(const std::string& name, const pybind11::handle& v, int64_t lo, int64_t hi);
// The same in [0, 2**64 - 1] (seeds).
uint64_t Uint64Arg(const std::string& name, const pybind11::handle& v);

// True or False (also numpy's): TypeError "<name> must be True or False, got ...".
bool BoolArg(const std::string& name, const pybind11::handle& v);

// A finite int or float (not a bool): ValueError "<name> must be a finite
// number, got ...".
double FiniteArg(const std::string& name, const pybind11::handle& v);

// One of a choice table's names (stoker/choice.h): TypeError for a non-str,
// ValueError (the table's message) for an unknown name.
template <class E, size_t N>
E ChoiceArg(const std::string& option, const pybind11::handle& v,
            const std::array<Choice<E>, N>& table) {
  if (!pybind11::isinstance<pybind11::str>(v)) {
    throw pybind11::type_error(option + " must be one of " + ChoiceNames(table) + ", got " +
                               TypeAndRepr(v));
  }
  return Unwrap(ParseChoice(option, v.cast<std::string>(), table));
}

}  // namespace stoker::python

#endif  // STOKER_PYTHON_ARGS_H_
