// Copyright 2026 The stoker Authors.
//
// Bindings for sources, transforms and the Loader. Every call that can block
// releases the GIL. Batches cross into Python without a copy: the numpy
// arrays' base object is a capsule that owns a reference to the batch, and
// the batch buffer returns to the pool when the last array (or tensor made
// from it) dies.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "stoker/augment.h"
#include "errors.h"
#include "gil_release_delete.h"
#include "stoker/decode.h"
#include "stoker/diagnose.h"
#include "stoker/loader.h"
#include "stoker/sources.h"

namespace py = pybind11;

namespace stoker::python {

PyObject* g_stoker_error = nullptr;

// Raises the Python exception matching `s`.
namespace {

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

}  // namespace

[[noreturn]] void Throw(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: SetErrorAndThrow(PyExc_ValueError, s.message());
    case StatusCode::kNotFound: SetErrorAndThrow(PyExc_FileNotFoundError, s.message());
    default: SetErrorAndThrow(g_stoker_error, s.message());
  }
}

// A path argument: str (surrogate escapes allowed), bytes or os.PathLike, as
// the bytes the file system uses.
std::string FsPath(const py::object& path) {
  return py::module_::import("os").attr("fsencode")(path).cast<std::string>();
}

// A file system path for Python: str, with surrogate escapes for bytes that
// are not UTF-8 (os.fsdecode).
py::str FsDecode(const std::string& path) {
  return py::module_::import("os").attr("fsdecode")(py::bytes(path)).cast<py::str>();
}

namespace {

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

void RememberPythonError(const std::string& message, py::error_already_set error) {
  std::deque<CallbackError>& errors = CallbackErrors();
  if (errors.size() >= 32) errors.pop_front();
  errors.push_back(CallbackError{message, std::move(error)});
}

// Errors met while iterating concern the data, whatever their code: they
// all raise stoker.StokerError, whose message names the sample; when a
// Python callable's exception caused it, that exception is its __cause__.
[[noreturn]] void ThrowIterationStatus(const Status& s) {
  std::deque<CallbackError>& errors = CallbackErrors();
  for (auto it = errors.begin(); it != errors.end(); ++it) {
    if (s.message().find(it->message) == std::string::npos) continue;
    py::error_already_set cause = std::move(it->error);
    errors.erase(it);
    py::raise_from(cause, g_stoker_error, s.message().c_str());
    throw py::error_already_set();
  }
  SetErrorAndThrow(g_stoker_error, s.message());
}

namespace {

template <typename T>
T Unwrap(StatusOr<T> v) {
  if (!v.ok()) Throw(v.status());
  return std::move(v).value();
}

py::dict StageDict(const StageStats& s) {
  py::dict d;
  d["images"] = s.images;
  d["batches"] = s.batches;
  d["skipped"] = s.skipped;
  d["skipped_files"] = s.skipped_files;
  d["seconds"] = s.seconds;
  d["images_per_sec"] = s.images_per_sec();
  d["read_s"] = s.read_s;
  d["decode_s"] = s.decode_s;
  d["augment_s"] = s.augment_s;
  d["callback_s"] = s.callback_s;
  d["worker_wait_s"] = s.worker_wait_s;
  d["consumer_wait_s"] = s.consumer_wait_s;
  d["bytes_read"] = s.bytes_read;
  return d;
}

py::dtype NumpyDType(DType d) {
  switch (d) {
    case DType::kUint8: return py::dtype::of<uint8_t>();
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat16: return py::dtype("float16");
    case DType::kBFloat16: return py::dtype::of<uint16_t>();  // reinterpreted by the caller
  }
  return py::dtype::of<uint8_t>();
}

// (images, labels, ids) as numpy arrays sharing the batch's memory. A
// variable-size batch (collate="list") gives a list of per-sample arrays as
// images, each [3, H, W] or [H, W, 3]; all share the one capsule, so the
// buffer returns to the pool when the last of them (and labels, ids) dies.
py::tuple BatchArrays(BatchPtr batch) {
  auto* holder = new BatchPtr(std::move(batch));
  py::capsule owner(holder, [](void* p) { delete static_cast<BatchPtr*>(p); });
  const Batch& b = **holder;
  const py::dtype dt = NumpyDType(b.shape().dtype);
  const py::ssize_t item = static_cast<py::ssize_t>(DTypeSize(b.shape().dtype));
  py::object images;
  if (b.variable()) {
    py::list list(static_cast<size_t>(b.size()));
    for (int i = 0; i < b.size(); ++i) {
      const auto dims = b.sample_dims(i);
      std::vector<py::ssize_t> shape(dims.begin(), dims.end());
      std::vector<py::ssize_t> strides(3);
      strides[2] = item;
      for (int k = 1; k >= 0; --k) strides[k] = strides[k + 1] * shape[k + 1];
      list[static_cast<size_t>(i)] = py::array(dt, shape, strides, b.sample(i), owner);
    }
    images = std::move(list);
  } else {
    const auto dims = b.image_dims();
    std::vector<py::ssize_t> shape(dims.begin(), dims.end());
    std::vector<py::ssize_t> strides(4);
    strides[3] = item;
    for (int i = 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    images = py::array(dt, shape, strides, b.images(), owner);
  }
  py::array labels(py::dtype::of<int64_t>(), {static_cast<py::ssize_t>(b.size())},
                   {static_cast<py::ssize_t>(8)}, b.labels(), owner);
  py::array ids(py::dtype::of<int64_t>(), {static_cast<py::ssize_t>(b.size())},
                {static_cast<py::ssize_t>(8)}, b.ids(), owner);
  return py::make_tuple(images, labels, ids);
}

// [(path, label), ...] in index order, as torchvision's ImageFolder.samples.
py::list ImageFolderSamples(const ImageFolder& f) {
  py::list out(f.size());
  const py::object fsdecode = py::module_::import("os").attr("fsdecode");
  for (int64_t i = 0; i < f.size(); ++i) {
    out[static_cast<size_t>(i)] = py::make_tuple(fsdecode(py::bytes(f.Path(i))), f.Label(i));
  }
  return out;
}

// True while the interpreter is shutting down: a worker thread must not take
// the GIL then (CPython would end the thread inside PyGILState_Ensure).
bool PythonFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// A Python callable as a SampleCallback (stoker.Lambda). Each call takes the
// GIL, copies the image into a fresh writable uint8 [H, W, 3] array (the
// callable may keep it: it owns its memory), calls fn(image) -- or
// fn(image, seed) with `pass_seed` -- and copies back the array it returns
// (or anything numpy.asarray takes: a CPU tensor, a PIL image), or the image
// it was given when it returns None. A Python exception, or a
// result of another type, dtype or shape, fails the sample with a message
// naming the exception (type, message and traceback) or what came back.
SampleCallback PythonCallback(py::object fn, bool pass_seed) {
  // The reference is dropped with the GIL held, on whichever thread drops
  // the last copy of the Transform.
  std::shared_ptr<py::object> callable(new py::object(std::move(fn)), [](py::object* o) {
    if (!Py_IsInitialized()) {
      (void)o->release();  // the interpreter is gone: leak the reference
      delete o;
      return;
    }
    py::gil_scoped_acquire acquire;
    delete o;
  });
  return [callable, pass_seed](uint8_t* rgb, int width, int height,
                                     uint64_t seed) -> Status {
    if (PythonFinalizing()) return CancelledError("the Python interpreter is shutting down");
    const size_t bytes = static_cast<size_t>(width) * height * 3;
    py::gil_scoped_acquire acquire;
    try {
      py::array_t<uint8_t> image({py::ssize_t{height}, py::ssize_t{width}, py::ssize_t{3}});
      std::memcpy(image.mutable_data(), rgb, bytes);
      py::object out = pass_seed ? (*callable)(image, py::int_(seed)) : (*callable)(image);
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
      // what(): "Type: message", then the traceback.
      std::string message = "raised " + std::string(e.what());
      RememberPythonError(message, std::move(e));
      return InvalidArgumentError(std::move(message));
    }
  };
}

// Loader's holder: joins the worker threads with the GIL released, so a
// worker waiting for the GIL in a Lambda can finish its sample.
using LoaderHolder = std::unique_ptr<Loader, GilReleaseDelete<Loader>>;

}  // namespace

void RegisterLoader(py::module_& m) {
  static py::exception<std::runtime_error> exc(m, "StokerError", PyExc_RuntimeError);
  exc.attr("__doc__") =
      "stoker's error (a RuntimeError): a file that cannot be read or decoded (the\n"
      "message names it), a damaged shard, an unusable device.";
  g_stoker_error = exc.ptr();

  py::class_<Source, std::shared_ptr<Source>>(m, "Source")
      .def("__len__",
           [](const Source& s) {
             if (s.size() < 0) throw py::type_error(s.Describe() + " is a stream of unknown length");
             return s.size();
           })
      .def("__repr__", &Source::Describe)
      .def_property_readonly(
          "classes",
          [](const Source& s) {
            // Names that are not UTF-8 (a Latin-1 folder name) come back as
            // os.fsdecode makes them, never a UnicodeDecodeError.
            std::vector<py::str> out;
            for (const std::string& c : s.classes()) out.push_back(FsDecode(c));
            return out;
          },
          "The class names, index = label.");

  py::class_<ImageFolder, Source, std::shared_ptr<ImageFolder>>(
      m, "ImageFolder",
      "Images in root/<class>/<file>, as torchvision's ImageFolder finds them: the same\n"
      "classes (sorted sub-folder names), labels and sample order. JPEG and PNG files;\n"
      "sub-folders walked recursively, symbolic links followed. root may be str, bytes or\n"
      "os.PathLike. Raises StokerError if root does not exist, has no class folders, or a\n"
      "class has no images.")
      .def(py::init([](const py::object& root_arg) {
             const std::string root = FsPath(root_arg);
             StatusOr<std::shared_ptr<ImageFolder>> f = [&] {
               py::gil_scoped_release release;
               return ImageFolder::Open(root);
             }();
             return Unwrap(std::move(f));
           }),
           py::arg("root"))
      .def_property_readonly(
          "root", [](const ImageFolder& f) { return FsDecode(f.root()); },
          "The folder it was opened on.")
      .def("path", [](const ImageFolder& f, int64_t i) { return FsDecode(f.Path(i)); },
           py::arg("index"), "The file of sample `index`.")
      .def("label", &ImageFolder::Label, py::arg("index"), "The label of sample `index`.")
      // torchvision.datasets.ImageFolder's surface: samples (= imgs), targets,
      // class_to_idx, len() and [i] (here the encoded bytes and the label).
      .def_property_readonly("samples", &ImageFolderSamples)
      .def_property_readonly("imgs", &ImageFolderSamples)
      .def_property_readonly("targets",
                             [](const ImageFolder& f) {
                               py::list out(f.size());
                               for (int64_t i = 0; i < f.size(); ++i) {
                                 out[static_cast<size_t>(i)] = py::int_(f.Label(i));
                               }
                               return out;
                             })
      .def_property_readonly("class_to_idx",
                             [](const ImageFolder& f) {
                               py::dict d;
                               const std::vector<std::string> c = f.classes();
                               for (size_t i = 0; i < c.size(); ++i) {
                                 d[py::str(c[i])] = py::int_(i);
                               }
                               return d;
                             })
      .def("__getitem__", [](const ImageFolder& f, int64_t index) {
        if (index < 0) index += f.size();
        if (index < 0 || index >= f.size()) {
          throw py::index_error("index " + std::to_string(index) + " out of range for " +
                                std::to_string(f.size()) + " images");
        }
        SampleScratch scratch;
        SampleData data;
        Status s;
        {
          py::gil_scoped_release release;
          s = f.ReadIndex(index, &scratch, &data);
        }
        if (!s.ok()) Throw(s);
        return py::make_tuple(
            py::bytes(reinterpret_cast<const char*>(data.bytes), data.size), data.label);
      }, py::arg("index"), "(encoded image bytes, label) of image `index`.");

  py::class_<Transform>(m, "Transform")
      .def_static("random_resized_crop", &Transform::RandomResizedCrop)
      .def_static("resize",
                  [](int size, int max_size) {
                    Transform t = Transform::Resize(size);
                    t.max_size = max_size;
                    return t;
                  },
                  py::arg("size"), py::arg("max_size") = 0)
      .def_static("resize_hw", py::overload_cast<int, int>(&Transform::Resize))
      .def_static("center_crop", &Transform::CenterCrop)
      .def_static("random_horizontal_flip", &Transform::RandomHorizontalFlip)
      .def_static("normalize", &Transform::Normalize)
      .def_static("random_vertical_flip", &Transform::RandomVerticalFlip)
      .def_static("color_jitter", &Transform::ColorJitter)
      .def_static("random_grayscale", &Transform::RandomGrayscale)
      .def_static("random_autocontrast", &Transform::RandomAutocontrast)
      .def_static("random_equalize", &Transform::RandomEqualize)
      .def_static("random_posterize", &Transform::RandomPosterize)
      .def_static("random_solarize", &Transform::RandomSolarize)
      .def_static("random_adjust_sharpness", &Transform::RandomAdjustSharpness)
      .def_static("trivial_augment_wide", &Transform::TrivialAugmentWide)
      .def_static("rand_augment", &Transform::RandAugment)
      .def_static("auto_augment", &Transform::AutoAugment)
      .def_static("random_erasing", &Transform::RandomErasing)
      .def_static("gaussian_blur", &Transform::GaussianBlur)
      .def_static("random_crop", &Transform::RandomCrop)
      .def_static("random_rotation", &Transform::RandomRotation)
      .def_static("random_affine", &Transform::RandomAffine)
      .def_static("random_perspective", &Transform::RandomPerspective)
      .def_static("callback",
                  [](py::object fn, const std::string& name, bool pass_seed) {
                    if (!PyCallable_Check(fn.ptr())) throw py::type_error("fn must be callable");
                    return Transform::Callback(PythonCallback(std::move(fn), pass_seed),
                                               name);
                  },
                  py::arg("fn"), py::arg("name"), py::arg("pass_seed") = false,
                  "A Python callable run per sample on the uint8 [H, W, 3] image (stoker.Lambda).")
      .def_property_readonly("name",
                             [](const Transform& t) {
                               const std::string s = t.ToString();
                               return s.substr(0, s.find('('));
                             })
      .def_property_readonly("random_geometry", &Transform::random_geometry)
      .def_property_readonly("photometric", &Transform::photometric)
      .def("__repr__", &Transform::ToString);

  // Testing hooks for the photometric and policy ops (include/stoker/augment.h).
  auto rgb_copy = [](py::array_t<uint8_t, py::array::c_style> image) {
    if (image.ndim() != 3 || image.shape(2) != 3) throw py::value_error("need [H, W, 3]");
    py::array_t<uint8_t> out({image.shape(0), image.shape(1), py::ssize_t{3}});
    std::memcpy(out.mutable_data(), image.data(), static_cast<size_t>(image.size()));
    return out;
  };
  m.def("_color_op",
        [rgb_copy](const std::string& op, py::array_t<uint8_t, py::array::c_style> image,
                   double arg) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyColorOp(op, arg, static_cast<int>(out.shape(1)),
                                        static_cast<int>(out.shape(0)), out.mutable_data());
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("arg") = 0.0,
        "Applies one photometric op with a fixed parameter to an RGB [H, W, 3] uint8 array.");
  m.def("_aug_op",
        [rgb_copy](const std::string& name, py::array_t<uint8_t, py::array::c_style> image,
                   double magnitude, std::array<int, 3> fill) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyPolicyOp(
              name, magnitude,
              {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
               static_cast<uint8_t>(fill[2])},
              static_cast<int>(out.shape(1)), static_cast<int>(out.shape(0)), out.mutable_data());
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("magnitude"),
        py::arg("fill") = std::array<int, 3>{0, 0, 0},
        "torchvision's _apply_op(img, op, magnitude, NEAREST, fill) on an RGB uint8 array.");
  m.def("_aug_magnitudes",
        [](int num_bins, bool wide, int width, int height) {
          // [ops, num_bins]: the magnitude table (NaN for ops without one).
          const std::vector<double> v = PolicyMagnitudes(num_bins, wide, width, height);
          py::array_t<double> out({PolicyOpCount(), num_bins});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("num_bins"), py::arg("wide"), py::arg("width"), py::arg("height"));
  m.def("_sample_aug_policy",
        [](const Transform& t, int width, int height, uint64_t seed, int n) {
          // Per draw and op: (op index, signed magnitude); rows of num_ops (1 for TA).
          const int k = t.kind == Transform::Kind::kTrivialAugmentWide ? 1
                        : t.kind == Transform::Kind::kAutoAugment ? 2
                                                                  : t.num_ops;
          const std::vector<double> v = SamplePolicy(t, width, height, seed, n, k);
          py::array_t<double> out({n, k, 2});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("width"), py::arg("height"), py::arg("seed"),
        py::arg("n"));
  m.def("_warp_op",
        [rgb_copy](const std::string& op, py::array_t<uint8_t, py::array::c_style> image,
                   std::vector<double> params, int interpolation, std::array<int, 3> fill) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyWarpOp(
              op, params, interpolation,
              {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
               static_cast<uint8_t>(fill[2])},
              static_cast<int>(out.shape(1)), static_cast<int>(out.shape(0)), out.mutable_data());
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("params"), py::arg("interpolation") = 0,
        py::arg("fill") = std::array<int, 3>{0, 0, 0},
        "F.rotate / F.affine / F.perspective with fixed parameters on an RGB uint8 array.");
  m.def("_sample_warp",
        [](const Transform& t, int width, int height, uint64_t seed, int n) {
          int k = 0;
          const std::vector<double> v = SampleWarp(t, width, height, seed, n, &k);
          py::array_t<double> out({n, k});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("width"), py::arg("height"), py::arg("seed"),
        py::arg("n"));
  m.def("_sample_color_jitter",
        [](const Transform& t, uint64_t seed, int n) {
          // Per draw: the permutation (4 values) then the four factors (NaN when off).
          const std::vector<double> v = SampleColorJitter(t, seed, n);
          py::array_t<double> out({n, 8});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("seed"), py::arg("n"));

  // Testing hooks: the decoder and the RandomResizedCrop sampler on their own.
  m.def("_decode",
        [](py::bytes data, int64_t max_pixels) {
          std::string bytes = data;
          Decoder decoder(max_pixels);
          DecodedImage r;
          Status s = decoder.Decode(reinterpret_cast<const uint8_t*>(bytes.data()),
                                    bytes.size(), &r);
          if (!s.ok()) Throw(s);
          py::array_t<uint8_t> out({r.height, r.width, 3});
          for (int y = 0; y < r.height; ++y) {
            std::memcpy(out.mutable_data(y, 0, 0), r.pixels + y * r.stride,
                        static_cast<size_t>(r.width) * 3);
          }
          return out;
        },
        py::arg("data"), py::arg("max_pixels") = int64_t{1} << 28,
        "Decodes JPEG, PNG, WebP, TIFF, BMP or PNM bytes to an RGB [H, W, 3] uint8 array (for tests).");
  m.def("_sample_random_resized_crop",
        [](int width, int height, const Transform& t, uint64_t seed, int n) {
          py::array_t<int32_t> out({n, 4});
          for (int i = 0; i < n; ++i) {
            const CropBox r =
                SampleRandomResizedCropBox(width, height, t, seed, static_cast<uint64_t>(i));
            int32_t* o = out.mutable_data(i, 0);
            o[0] = r.top; o[1] = r.left; o[2] = r.height; o[3] = r.width;
          }
          return out;
        },
        py::arg("width"), py::arg("height"), py::arg("transform"), py::arg("seed"), py::arg("n"),
        "n crops (top, left, height, width) as torchvision's get_params returns them (for tests).");

  m.def("diagnose",
        [](Loader& loader, py::object step, int batches) {
          // The step runs with the GIL; the first Python error stops calling
          // it and is raised when the diagnosis returns.
          std::unique_ptr<py::error_already_set> error;
          auto call = [&](const BatchPtr& batch) {
            py::gil_scoped_acquire acquire;
            if (error || step.is_none()) return;
            try {
              step(BatchArrays(batch));
            } catch (py::error_already_set& e) {
              error = std::make_unique<py::error_already_set>(std::move(e));
            }
          };
          DiagnoseOptions options;
          options.batches = batches;
          StatusOr<Diagnosis> result = [&] {
            py::gil_scoped_release release;
            return Diagnose(&loader, call, options);
          }();
          if (error) throw std::move(*error);
          if (!result.ok()) ThrowIterationStatus(result.status());
          const Diagnosis& d = result.value();
          py::list modes;
          for (const ModeResult& mr : d.modes) {
            py::dict row;
            row["mode"] = mr.name;
            row["stage"] = mr.stage;
            row["images_per_sec"] = mr.images_per_sec;
            row["ratio_to_previous"] = mr.ratio_to_previous;
            modes.append(row);
          }
          py::dict out;
          out["modes"] = modes;
          out["stages"] = StageDict(d.pipeline_stats.total);
          out["data_bound"] = d.data_bound;
          out["bottleneck"] = d.bottleneck;
          out["cost_factor"] = d.cost_factor;
          out["verdict"] = d.verdict;
          out["table"] = FormatDiagnosis(d);
          return out;
        },
        py::arg("loader"), py::arg("step"), py::arg("batches"));

  py::class_<SamplerSpec>(m, "SamplerSpec")
      .def(py::init<>())
      .def_static("weighted", &SamplerSpec::Weighted, py::arg("weights"),
                  py::arg("num_samples") = -1, py::arg("replacement") = true)
      .def_static("class_balanced", &SamplerSpec::ClassBalanced, py::arg("num_samples") = -1,
                  py::arg("replacement") = true)
      .def_static("subset", &SamplerSpec::Subset, py::arg("indices"));

  py::class_<LoaderOptions>(
      m, "LoaderOptions",
      "A Loader's options (stoker/loader.h), for Loader(source, options) and\n"
      "DeviceLoader(source, options, ...).")
      .def(py::init([](int batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       std::vector<Transform> transforms, int threads, int prefetch,
                       const std::string& dtype, const std::string& layout,
                       const std::string& on_error, bool dct_scaling, int64_t max_pixels,
                       bool auto_threads, bool auto_prefetch, int max_threads, int max_prefetch,
                       std::shared_ptr<BatchAllocator> allocator, const SamplerSpec& sampler,
                       const std::string& cache, size_t cache_bytes, int rank, int world_size,
                       int local_world_size, const std::string& collate) {
             LoaderOptions o;
             if (collate == "batch") o.collate = LoaderOptions::Collate::kBatch;
             else if (collate == "list") o.collate = LoaderOptions::Collate::kList;
             else throw py::value_error("collate must be 'batch' or 'list', got '" + collate + "'");
             o.sampler = sampler;
             if (cache == "decoded") o.cache_kind = LoaderOptions::CacheKind::kDecoded;
             else if (cache == "output") o.cache_kind = LoaderOptions::CacheKind::kOutput;
             else if (!cache.empty()) {
               throw py::value_error("cache must be None, 'decoded' or 'output', got '" + cache +
                                     "'");
             }
             o.cache_bytes = cache.empty() ? 0 : cache_bytes;
             o.batch_size = batch_size;
             o.shuffle = shuffle;
             o.seed = seed;
             o.drop_last = drop_last;
             o.transforms = std::move(transforms);
             o.threads = threads;
             o.prefetch = prefetch;
             o.dtype = Unwrap(ParseDType(dtype));
             o.layout = Unwrap(ParseLayout(layout));
             if (on_error == "raise") o.on_error = OnError::kRaise;
             else if (on_error == "skip") o.on_error = OnError::kSkip;
             else throw py::value_error("on_error must be 'raise' or 'skip', got '" + on_error + "'");
             o.dct_scaling = dct_scaling;
             o.max_pixels = max_pixels;
             o.auto_threads = auto_threads;
             o.auto_prefetch = auto_prefetch;
             o.max_threads = max_threads;
             o.max_prefetch = max_prefetch;
             o.allocator = std::move(allocator);  // null: host memory
             o.rank = rank;
             o.world_size = world_size;
             o.local_world_size = local_world_size;
             return o;
           }),
           py::arg("batch_size"), py::arg("shuffle"), py::arg("seed"),
           py::arg("drop_last"), py::arg("transforms"), py::arg("threads"), py::arg("prefetch"),
           py::arg("dtype"), py::arg("layout"), py::arg("on_error"), py::arg("dct_scaling"),
           py::arg("max_pixels"), py::arg("auto_threads") = false,
           py::arg("auto_prefetch") = false, py::arg("max_threads") = 0,
           py::arg("max_prefetch") = 8, py::arg("allocator") = nullptr,
           py::arg("sampler") = SamplerSpec(), py::arg("cache") = "", py::arg("cache_bytes") = 0,
           py::arg("rank") = 0, py::arg("world_size") = 1, py::arg("local_world_size") = 1,
           py::arg("collate") = "batch");

  py::class_<Loader, LoaderHolder>(m, "Loader")
      .def(py::init([](std::shared_ptr<Source> source, const LoaderOptions& options) {
             return LoaderHolder(Unwrap(Loader::Create(std::move(source), options)).release());
           }),
           py::arg("source"), py::arg("options"))
      .def("__len__", &Loader::num_batches)
      .def_property_readonly("num_samples", &Loader::num_samples)
      .def_property_readonly("height", &Loader::height)
      .def_property_readonly("width", &Loader::width)
      .def_property_readonly("epoch", &Loader::epoch)
      .def("set_epoch", &Loader::SetEpoch, py::arg("epoch"))
      .def("start",
           [](Loader& l) {
             Status s;
             {
               py::gil_scoped_release release;
               s = l.Start();
             }
             if (!s.ok()) Throw(s);
           })
      .def("next",
           [](Loader& l) -> py::object {
             BatchPtr batch;
             bool end = false;
             Status s;
             SignalPoll poll;
             {
               py::gil_scoped_release release;
               s = l.Next(&batch, &end, poll.fn(), SignalPoll::kMs);
             }
             poll.RaiseIfSignalled();
             if (!s.ok()) ThrowIterationStatus(s);
             if (end) return py::none();
             return BatchArrays(std::move(batch));
           },
           "The next batch as (images, labels, ids) numpy arrays, or None at the end; with "
           "collate='list', images is a list of per-sample arrays.")
      .def("stop", &Loader::Stop, py::call_guard<py::gil_scoped_release>())
      .def("state",
           [](const Loader& l) {
             const LoaderState st = l.state();
             return py::make_tuple(st.epoch, st.consumed, st.world_size);
           })
      .def("resume",
           [](Loader& l, int64_t epoch, int64_t consumed, int world_size) {
             LoaderState st;
             st.epoch = epoch;
             st.consumed = consumed;
             st.world_size = world_size;
             Status s;
             {
               py::gil_scoped_release release;
               s = l.Resume(st);
             }
             if (!s.ok()) Throw(s);
           },
           py::arg("epoch"), py::arg("consumed"), py::arg("world_size"))
      .def_property_readonly("fingerprint",
                             [](const Loader& l) {
                               // 63 bits: a plain non-negative int for any checkpoint format
                               return static_cast<int64_t>(l.source()->Fingerprint() >> 1);
                             })
      .def_property_readonly("random_access",
                             [](const Loader& l) { return l.source()->random_access(); })
      .def("stats", [](const Loader& l) {
        const LoaderStats s = l.stats();
        py::dict d = StageDict(s.total);
        d["epoch"] = StageDict(s.epoch);
        d["current_epoch"] = s.current_epoch;
        d["threads"] = s.threads;
        d["prefetch"] = s.prefetch;
        d["tuning"] = s.tuning;
        d["tuning_changes"] = s.tuning_changes;
        d["batch_buffers"] = s.batch_buffers;
        d["batch_buffer_bytes"] = s.batch_buffer_bytes;
        d["batch_region_allocations"] = s.batch_region_allocations;
        d["scratch_bytes"] = s.scratch_bytes;
        d["scratch_budget"] = s.scratch_budget;
        d["scratch_releases"] = s.scratch_releases;
        d["rank"] = s.rank;
        d["world_size"] = s.world_size;
        d["local_world_size"] = s.local_world_size;
        d["cores"] = s.cores;
        d["padded_samples"] = s.padded_samples;
        d["prefetch_discarded_batches"] = s.prefetch_discarded_batches;
        d["truncated_shards"] = s.truncated_shards;
        if (l.options().cache_bytes > 0) {
          py::dict c;
          c["kind"] = l.options().cache_kind == LoaderOptions::CacheKind::kOutput ? "output"
                                                                                 : "decoded";
          c["hits"] = s.cache_hits;
          c["misses"] = s.cache_misses;
          const int64_t lookups = s.cache_hits + s.cache_misses;
          c["hit_rate"] = lookups > 0 ? static_cast<double>(s.cache_hits) / lookups : 0.0;
          c["evicted"] = s.cache_evicted;
          c["entries"] = s.cache_entries;
          c["bytes"] = s.cache_bytes;
          c["capacity"] = s.cache_capacity;
          c["advice"] = s.cache_advice;
          d["cache"] = c;
        }
        return d;
      });
}

}  // namespace stoker::python
