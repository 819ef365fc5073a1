// Copyright 2026 The stoker Authors.
//
// Bindings for the transforms, from their declarations
// (stoker/transform_schema.h): _C.Transform(name, args, kwargs) binds and
// checks a call's arguments as MakeTransform does, and transform_schemas()
// describes every declaration, from which python/stoker/_transforms.py
// makes one class per transform (stoker.RandomCrop, ...). Python values
// become ArgValues here, and only here. Also Lambda's Python callable as a
// SampleCallback.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "stoker/transform_schema.h"
#include "stoker/transforms.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

// A Python value as an ArgValue, with its repr for messages: None, bools
// (numpy's too), enums by their value (InterpolationMode.BILINEAR ->
// 'bilinear', PIL's Resampling.BILINEAR -> 2, AutoAugmentPolicy.IMAGENET
// -> 'imagenet'), integers and reals (numpy scalars, 0-d tensors), strings,
// sequences (lists, tuples, arrays, tensors) element by element; anything
// else is kOther.
ArgValue ToArg(py::handle h) {
  const py::object o = py::reinterpret_borrow<py::object>(h);
  const std::string repr = py::repr(o);
  if (o.is_none()) return ArgValue();
  if (py::isinstance<py::bool_>(o) ||
      py::isinstance(o, py::module_::import("numpy").attr("bool_"))) {
    return ArgValue(py::bool_(o).cast<bool>()).set_repr(repr);
  }
  if (py::isinstance(o, py::module_::import("enum").attr("Enum"))) {
    return ToArg(o.attr("value")).set_repr(repr);
  }
  if (py::isinstance<py::str>(o)) return ArgValue(o.cast<std::string>()).set_repr(repr);
  const py::module_ numbers = py::module_::import("numbers");
  if (py::isinstance(o, numbers.attr("Integral"))) {
    // Beyond int64 (2**63, 10**30): saturated, so the parameter's range check
    // refuses it by its repr (a ValueError naming the argument), never a
    // cast error.
    const py::int_ i(o);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow != 0) {
      return ArgValue(overflow > 0 ? std::numeric_limits<int64_t>::max()
                                   : std::numeric_limits<int64_t>::min())
          .set_repr(repr);
    }
    return ArgValue(static_cast<int64_t>(v)).set_repr(repr);
  }
  if (py::isinstance(o, numbers.attr("Real"))) {
    return ArgValue(py::float_(o).cast<double>()).set_repr(repr);
  }
  if (py::hasattr(o, "__len__") && py::hasattr(o, "__getitem__") && !py::isinstance<py::bytes>(o)) {
    if (py::hasattr(o, "ndim") && py::int_(o.attr("ndim")).cast<int>() == 0) {
      // A 0-d array or tensor: its number.
      py::object item = o.attr("item")();
      return ToArg(item).set_repr(repr);
    }
    std::vector<ArgValue> list;
    for (py::handle e : py::iter(o)) list.push_back(ToArg(e));
    return ArgValue(std::move(list)).set_repr(repr);
  }
  if (py::hasattr(o, "ndim") && py::hasattr(o, "item")) return ToArg(o.attr("item")());
  return ArgValue::Other(repr);
}

py::object ToPython(const ArgValue& v) {
  switch (v.type()) {
    case ArgValue::Type::kNone: return py::none();
    case ArgValue::Type::kBool: return py::bool_(v.as_bool());
    case ArgValue::Type::kInt: return py::int_(v.as_int());
    case ArgValue::Type::kFloat: return py::float_(v.as_double());
    case ArgValue::Type::kString: return py::str(v.as_string());
    case ArgValue::Type::kList: {
      py::list l;
      for (const ArgValue& e : v.as_list()) l.append(ToPython(e));
      return py::tuple(l);
    }
    case ArgValue::Type::kOther: break;
  }
  return py::none();
}

py::dict SchemaDict(const TransformSchema& s) {
  py::list params;
  for (const ParamSchema& p : s.params) {
    py::dict d;
    d["name"] = p.name;
    d["annotation"] = p.annotation;
    d["required"] = p.required;
    d["keyword_only"] = p.keyword_only;
    d["default"] = ToPython(p.default_value);
    d["accepts"] = p.accepts;
    params.append(d);
  }
  py::dict d;
  d["name"] = s.name;
  d["doc"] = s.doc;
  d["stage"] = TransformStageName(s.stage);
  d["section"] = s.section;
  d["torchvision"] = s.torchvision;
  d["python"] = s.python;
  d["needs_boxes"] = s.needs_boxes;
  d["params"] = params;
  return d;
}

// One call of the callable on a sample's image, with the GIL held (see
// PythonCallback).
Status CallOnSample(const py::object& fn, bool pass_seed, uint8_t* rgb, int width, int height,
                    uint64_t seed) {
  const size_t bytes = static_cast<size_t>(width) * height * 3;
  InWorkerCallable mark;  // the loader's methods refuse to run in here
  try {
    py::array_t<uint8_t> image({py::ssize_t{height}, py::ssize_t{width}, py::ssize_t{3}});
    std::memcpy(image.mutable_data(), rgb, bytes);
    const py::object seed_arg = pass_seed ? py::object(py::int_(seed)) : py::object();
    PyObject* result = nullptr;
    try {
      // The C API, not pybind11's call: no frame between here and CPython
      // holds Python objects that an unwind would release.
      result = pass_seed ? PyObject_CallFunctionObjArgs(fn.ptr(), image.ptr(), seed_arg.ptr(),
                                                        nullptr)
                         : PyObject_CallOneArg(fn.ptr(), image.ptr());
    } catch (abi::__forced_unwind&) {
      // The callable released the GIL (a sleep, a wait) and took it back
      // while the interpreter shut down: park here, before anything
      // releases a Python object without the GIL.
      ParkForever();
    }
    if (result == nullptr) throw py::error_already_set();
    py::object out = py::reinterpret_steal<py::object>(result);
    if (out.is_none()) {
      std::memcpy(rgb, image.data(), bytes);
      return Status::OK();
    }
    const std::string want = "it must return None (the image changed in place) or a uint8 "
                             "numpy array of shape (" + std::to_string(height) + ", " +
                             std::to_string(width) + ", 3), the shape it was given";
    if (!py::isinstance<py::array>(out) &&
        (py::hasattr(out, "__array__") || py::hasattr(out, "__array_interface__"))) {
      out = py::module_::import("numpy").attr("asarray")(out);  // a tensor, a PIL image
    }
    if (!py::isinstance<py::array>(out)) {
      return InvalidArgumentError(
          "returned " + std::string(py::str(py::type::of(out).attr("__name__"))) + ": " + want);
    }
    py::array a = py::reinterpret_borrow<py::array>(out);
    const bool shape_ok = a.ndim() == 3 && a.shape(0) == height && a.shape(1) == width &&
                          a.shape(2) == 3;
    if (!a.dtype().is(py::dtype::of<uint8_t>()) || !shape_ok) {
      return InvalidArgumentError("returned an array of dtype " +
                                  std::string(py::str(a.dtype())) + " and shape " +
                                  std::string(py::str(py::tuple(a.attr("shape")))) + ": " +
                                  want);
    }
    auto packed = py::array_t<uint8_t, py::array::c_style>::ensure(a);
    if (!packed) throw py::error_already_set();
    std::memcpy(rgb, packed.data(), bytes);
    return Status::OK();
  } catch (py::error_already_set& e) {
    return CallableErrorStatus(std::move(e));
  }
}

// A Python callable as a SampleCallback (stoker.Lambda). Each call takes the
// GIL, copies the image into a fresh writable uint8 [H, W, 3] array (the
// callable may keep it: it owns its memory), calls fn(image) -- or
// fn(image, seed) with `pass_seed` -- and copies back the array it returns
// (or anything numpy.asarray takes: a CPU tensor, a PIL image), or the image
// it was given when it returns None. A Python exception, or a
// result of another type, dtype or shape, fails the sample with a message
// naming the exception (type, message and traceback) or what came back; a
// KeyboardInterrupt, SystemExit, GeneratorExit or MemoryError fails it as
// Cancelled, which is never skipped. The GIL is taken through WithGil
// (errors.h): at interpreter shutdown the worker parks instead of dying.
SampleCallback PythonCallback(py::object fn, bool pass_seed) {
  // The reference is dropped with the GIL held (SharedCallable).
  std::shared_ptr<py::object> callable = SharedCallable(std::move(fn));
  return [callable, pass_seed](uint8_t* rgb, int width, int height,
                                     uint64_t seed) -> Status {
    return WithGil([&] { return CallOnSample(*callable, pass_seed, rgb, width, height, seed); });
  };
}

}  // namespace

void RegisterTransforms(py::module_& m) {
  py::class_<Transform>(
      m, "Transform",
      "One transform: its declaration and its arguments (stoker/transforms.h). Made by\n"
      "the stoker.<Name> classes, which pass their call's arguments here.")
      .def(py::init([](const std::string& name, const py::tuple& args, const py::dict& kwargs) {
             std::vector<ArgValue> positional;
             for (py::handle a : args) positional.push_back(ToArg(a));
             KeywordArgs keywords;
             for (auto item : kwargs) {
               keywords.emplace_back(py::str(item.first), ToArg(item.second));
             }
             return Unwrap(MakeTransform(name, positional, keywords));
           }),
           py::arg("name"), py::arg("args") = py::tuple(), py::arg("kwargs") = py::dict(),
           "Transform `name` from a call's positional `args` and keyword `kwargs`, checked "
           "against its declaration (ValueError or TypeError naming the argument).")
      .def_static("callback",
                  [](py::object fn, const std::string& name, bool pass_seed) {
                    if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
                    return Transform::Callback(PythonCallback(std::move(fn), pass_seed),
                                               name);
                  },
                  py::arg("fn"), py::arg("name"), py::arg("pass_seed") = false,
                  "A Python callable run per sample on the uint8 [H, W, 3] image (stoker.Lambda).")
      .def_property_readonly("name", [](const Transform& t) { return std::string(t.name()); },
                             "The declared name (\"RandomCrop\").")
      .def_property_readonly("stage",
                             [](const Transform& t) {
                               return t.schema ? TransformStageName(t.schema->stage) : "";
                             },
                             "Where it runs: geometry, image, warp, convert or tensor.")
      .def_property_readonly(
          "normalize",
          [](const Transform& t) -> py::object {
            if (t.name() != "Normalize") return py::none();
            return py::make_tuple(py::make_tuple(t.mean[0], t.mean[1], t.mean[2]),
                                  py::make_tuple(t.std[0], t.std[1], t.std[2]));
          },
          "Normalize's (mean, std), each an RGB triple; None for any other transform.")
      .def_property_readonly("random_geometry", &Transform::random_geometry)
      .def_property_readonly("photometric", &Transform::photometric)
      .def("__repr__", &Transform::ToString);

  m.def("transform_schemas",
        [] {
          py::list out;
          for (const TransformSchema* s : TransformSchemas()) out.append(SchemaDict(*s));
          return out;
        },
        "Every transform declaration: name, doc, stage, section, torchvision (the README's "
        "note), python (whether stoker makes a class of it) and params (name, annotation, "
        "required, default, accepts).");
  m.def("transform_sections",
        [] {
          py::list out;
          for (const auto& [name, intro] : TransformSections()) {
            out.append(py::make_tuple(name, intro));
          }
          return out;
        },
        "The declarations' families, in order: (section, introduction).");
  m.def("torchvision_notes",
        [] {
          py::dict out;
          for (const TorchvisionNote& n : TorchvisionNotes()) out[py::str(n.name)] = n.instead;
          return out;
        },
        "torchvision transforms stoker does not provide -> what to use instead.");
}

}  // namespace stoker::python
