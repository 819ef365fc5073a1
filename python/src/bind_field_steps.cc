// Copyright 2026 The stoker Authors.
//
// Binding of a record's field steps (stoker/loader.h FieldStep): a Python
// callable as a FieldCallback (stoker.Lambda(fn, fields=[...])). Each call
// takes the GIL (WithGil, errors.h), gives fn a dict name -> value of its
// fields (arrays as fresh writable numpy arrays it may keep, text as str,
// bytes as bytes, json parsed, labels and scalars as int/float; added fields
// absent), and reads back the dict it returns (or the one it was given, when
// it returns None): each value converted by its field's kind into the
// worker's storage. An exception or a value of the wrong type fails the
// sample naming the field; KeyboardInterrupt, SystemExit, GeneratorExit and
// MemoryError fail it as Cancelled (never skipped).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "errors.h"
#include "stoker/loader.h"
#include "stoker/record.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

std::string TypeName(const py::handle& o) {
  return py::str(py::type::of(o).attr("__name__"));
}

// One value as Python sees it.
py::object ToPython(const FieldSpec& spec, const FieldValue& v, const py::object& json_loads) {
  const char* data = reinterpret_cast<const char*>(v.data ? v.data : reinterpret_cast<const uint8_t*>(""));
  switch (spec.kind) {
    case FieldKind::kText: {
      PyObject* t = PyUnicode_DecodeUTF8(data, static_cast<py::ssize_t>(v.size), "strict");
      if (t == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(t);
    }
    case FieldKind::kBytes: return py::bytes(data, v.size);
    case FieldKind::kJson: return json_loads(py::bytes(data, v.size));
    case FieldKind::kLabel: return py::int_(v.i);
    case FieldKind::kScalar:
      if (v.dtype == ElemType::kFloat64) return py::float_(v.f);
      return py::int_(v.i);
    default: break;
  }
  std::vector<py::ssize_t> shape(v.dims.begin(), v.dims.begin() + v.ndim);
  py::array a(py::dtype(ElemTypeName(v.dtype)), shape);  // owns its memory
  if (v.raw && v.ndim == 3 && v.stride != 0) {  // raw pixels: rows at a stride
    const size_t row = static_cast<size_t>(v.dims[1] * v.dims[2]) * ElemSize(v.dtype);
    for (int64_t y = 0; y < v.dims[0]; ++y) {
      std::memcpy(static_cast<uint8_t*>(a.mutable_data()) + row * y, v.data + v.stride * y, row);
    }
  } else if (v.size > 0) {
    std::memcpy(a.mutable_data(), v.data, std::min<size_t>(v.size, a.nbytes()));
  }
  return a;
}

// `o` as field `spec`'s value, its bytes in `storage`. Errors name nothing:
// the caller adds the field.
Status FromPython(const FieldSpec& spec, const py::handle& o, FieldValue* v,
                  std::vector<uint8_t>* storage, const py::object& json_dumps) {
  auto hold = [&](const char* p, size_t n) {
    storage->assign(p, p + n);
    *v = FieldValue();
    v->data = storage->data();
    v->size = n;
    v->dtype = ElemType::kUint8;
  };
  switch (spec.kind) {
    case FieldKind::kText: {
      if (!py::isinstance<py::str>(o)) {
        return InvalidArgumentError("a text field, and the Lambda returned " + TypeName(o));
      }
      py::ssize_t n = 0;
      const char* p = PyUnicode_AsUTF8AndSize(o.ptr(), &n);
      if (p == nullptr) throw py::error_already_set();
      hold(p, static_cast<size_t>(n));
      return Status::OK();
    }
    case FieldKind::kBytes: {
      if (!py::isinstance<py::bytes>(o) && !PyByteArray_Check(o.ptr())) {
        return InvalidArgumentError("a bytes field, and the Lambda returned " + TypeName(o));
      }
      const std::string b = py::bytes(py::reinterpret_borrow<py::object>(o));
      hold(b.data(), b.size());
      return Status::OK();
    }
    case FieldKind::kJson: {
      const std::string b = py::str(json_dumps(o));
      hold(b.data(), b.size());
      return Status::OK();
    }
    case FieldKind::kLabel:
    case FieldKind::kScalar: {
      const bool real = spec.kind == FieldKind::kScalar && spec.dtype == ElemType::kFloat64;
      if (PyBool_Check(o.ptr()) || !(py::isinstance<py::int_>(o) || (real && py::isinstance<py::float_>(o)) ||
                                     py::hasattr(o, "__index__"))) {
        return InvalidArgumentError(std::string("a ") + (real ? "float" : "integer") +
                                    " field, and the Lambda returned " + TypeName(o));
      }
      *v = FieldValue();
      v->dtype = real ? ElemType::kFloat64 : ElemType::kInt64;
      if (real) v->f = py::cast<double>(o);
      else v->i = py::cast<int64_t>(py::reinterpret_borrow<py::object>(o).attr("__index__")());
      return Status::OK();
    }
    default: break;
  }
  // An array: anything numpy.asarray takes (a CPU tensor too).
  py::object obj = py::reinterpret_borrow<py::object>(o);
  if (!py::isinstance<py::array>(obj)) {
    if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj) || obj.is_none()) {
      return InvalidArgumentError("an array field, and the Lambda returned " + TypeName(obj));
    }
    obj = py::module_::import("numpy").attr("asarray")(obj);
  }
  auto a = py::array::ensure(obj, py::array::c_style);
  if (!a) throw py::error_already_set();
  auto elem = ParseElemType(std::string(py::str(a.dtype().attr("name"))));
  if (!elem.ok()) {
    return InvalidArgumentError("the Lambda returned an array of dtype " +
                                std::string(py::str(a.dtype())) + ", which no field holds");
  }
  if (a.ndim() > kMaxFieldDims) {
    return InvalidArgumentError("the Lambda returned an array of " + std::to_string(a.ndim()) +
                                " dimensions (at most " + std::to_string(kMaxFieldDims) + ")");
  }
  hold(static_cast<const char*>(a.data()), static_cast<size_t>(a.nbytes()));
  v->dtype = elem.value();
  v->ndim = static_cast<int>(a.ndim());
  for (int k = 0; k < v->ndim; ++k) v->dims[static_cast<size_t>(k)] = a.shape(k);
  return Status::OK();
}

// One call of fn with the GIL held.
Status CallOnFields(const py::object& fn, const FieldSpec* specs, FieldValue* values,
                    std::vector<uint8_t>* storage, int n, int given, const uint64_t* seed) {
  InWorkerCallable mark;  // the loader's methods refuse to run in here
  try {
    py::module_ json = py::module_::import("json");
    const py::object loads = json.attr("loads"), dumps = json.attr("dumps");
    py::dict d;
    for (int k = 0; k < given; ++k) d[py::str(specs[k].name)] = ToPython(specs[k], values[k], loads);
    PyObject* result = nullptr;
    try {
      if (seed != nullptr) {  // rng=True: fn(d, seed); stoker.Lambda wraps the seed
        py::int_ s(*seed);
        result = PyObject_CallFunctionObjArgs(fn.ptr(), d.ptr(), s.ptr(), nullptr);
      } else {
        result = PyObject_CallOneArg(fn.ptr(), d.ptr());
      }
    } catch (abi::__forced_unwind&) {
      ParkForever();  // see CallOnSample (bind_transforms.cc)
    }
    if (result == nullptr) throw py::error_already_set();
    py::object out = py::reinterpret_steal<py::object>(result);
    if (out.is_none()) out = d;
    if (!py::isinstance<py::dict>(out)) {
      return InvalidArgumentError("returned " + TypeName(out) + ": it must return a dict of "
                                  "its fields (or None after changing the dict it was given)");
    }
    py::dict r = py::reinterpret_borrow<py::dict>(out);
    for (auto item : r) {
      bool known = false;
      for (int k = 0; k < n && !known; ++k) known = py::str(item.first).equal(py::str(specs[k].name));
      if (!known) {
        return InvalidArgumentError("returned the key " + std::string(py::repr(item.first)) +
                                    ", which is not among its fields= or adds=");
      }
    }
    for (int k = 0; k < n; ++k) {
      const py::str key(specs[k].name);
      if (!r.contains(key)) {
        if (k >= given) {
          return InvalidArgumentError("did not return '" + specs[k].name +
                                      "', a field it adds");
        }
        continue;
      }
      Status st = FromPython(specs[k], r[key], &values[k], &storage[k], dumps);
      if (!st.ok()) return st.WithContext("field '" + specs[k].name + "'");
    }
    return Status::OK();
  } catch (py::error_already_set& e) {
    return CallableErrorStatus(std::move(e));
  }
}

// An added field's spec from (name, kind, dtype, shape): kind "array" (dtype
// a numpy name, shape with -1 where it varies; no shape: any shape), "text",
// "bytes", "json", "label", "scalar" (dtype int64 or float64).
FieldSpec AddedSpec(const std::string& name, const std::string& kind, const std::string& dtype,
                    const std::optional<std::vector<int64_t>>& shape) {
  auto k = ParseFieldKind(kind);
  if (!k.ok()) throw py::value_error("Lambda: adds['" + name + "']: " + k.status().message());
  FieldSpec spec;
  switch (k.value()) {
    case FieldKind::kText: return TextField(name);
    case FieldKind::kBytes: return BytesField(name);
    case FieldKind::kJson: return JsonField(name);
    case FieldKind::kLabel: return LabelField(name);
    case FieldKind::kScalar:
    case FieldKind::kArray: {
      auto e = ParseElemType(dtype);
      if (!e.ok()) {
        throw py::value_error("Lambda: adds['" + name + "']: dtype '" + dtype +
                              "': " + e.status().message());
      }
      if (k.value() == FieldKind::kScalar) return ScalarField(name, e.value());
      spec = ArrayField(name, e.value(), shape.value_or(std::vector<int64_t>()));
      if (!shape) {
        spec.shape_known = false;
        spec.shape.clear();
      }
      return spec;
    }
    default: break;
  }
  throw py::value_error("Lambda: adds['" + name + "']: a field step cannot add an " + kind +
                        " field");
}

}  // namespace

void RegisterFieldSteps(py::module_& m) {
  py::class_<FieldStep>(m, "FieldStep",
                        "A Python function on some fields of each record (stoker.Lambda with "
                        "fields=): stoker/loader.h FieldStep.")
      .def(py::init([](py::object fn, const std::string& name,
                       const std::vector<std::string>& fields,
                       const std::vector<std::tuple<std::string, std::string, std::string,
                                                    std::optional<std::vector<int64_t>>>>& adds,
                       bool rng) {
             if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
             FieldStep step;
             step.name = name;
             step.fields = fields;
             step.rng = rng;
             for (const auto& [n, kind, dtype, shape] : adds) {
               step.adds.push_back(AddedSpec(n, kind, dtype, shape));
             }
             const int given = static_cast<int>(fields.size());
             std::shared_ptr<py::object> callable = SharedCallable(std::move(fn));
             step.callback = std::make_shared<const FieldCallback>(
                 [callable, given, rng](const FieldSpec* specs, FieldValue* values,
                                        std::vector<uint8_t>* storage, int n,
                                        uint64_t seed) -> Status {
                   return WithGil([&] {
                     return CallOnFields(*callable, specs, values, storage, n, given,
                                         rng ? &seed : nullptr);
                   });
                 });
             return step;
           }),
           py::arg("fn"), py::arg("name"), py::arg("fields"), py::arg("adds"),
           py::arg("rng") = false)
      .def_readonly("name", &FieldStep::name)
      .def_readonly("fields", &FieldStep::fields);
}

}  // namespace stoker::python
