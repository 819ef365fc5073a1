// Copyright 2026 The stoker Authors.
//
// Bindings for the GPU stage (include/stoker/device.h). The Python side
// (stoker/_device.py) allocates every device tensor with torch, so device
// memory comes from PyTorch's caching allocator and returns to it when the
// tensor dies; it passes raw pointers and torch's stream handles here.
// Without CUDA (build, driver or device) the constructors raise
// stoker.StokerError with the reason; nothing here runs for device="cpu".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <vector>

#include "stoker/batch.h"
#include "stoker/device.h"
#include "stoker/device_host.h"
#include "stoker/transforms.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

[[noreturn]] void Raise(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) throw py::value_error(s.message());
  py::object error = py::module_::import("stoker._C").attr("StokerError");
  PyErr_SetString(error.ptr(), s.message().c_str());
  throw py::error_already_set();
}

// The batch behind an images array that Loader.next() returned: its base is
// the capsule owning the BatchPtr (bind_loader.cc). Checked, not assumed.
BatchPtr BatchOf(const py::array& images) {
  PyObject* base = py::handle(images).attr("base").ptr();
  if (base == nullptr || !PyCapsule_CheckExact(base) || PyCapsule_GetName(base) != nullptr) {
    throw py::value_error("not a stoker batch (an images array from Loader.next())");
  }
  auto* holder = static_cast<BatchPtr*>(PyCapsule_GetPointer(base, nullptr));
  if (holder == nullptr || *holder == nullptr || (*holder)->images() != images.data()) {
    throw py::value_error("not a stoker batch (an images array from Loader.next())");
  }
  return *holder;
}

DeviceAugment AugmentFrom(const py::dict& d) {
  DeviceAugment a;
  for (auto item : d) {
    const std::string key = py::str(item.first);
    const py::handle v = item.second;
    if (key == "flip_p") a.flip_p = v.cast<double>();
    else if (key == "crop_height") a.crop_height = v.cast<int>();
    else if (key == "crop_width") a.crop_width = v.cast<int>();
    else if (key == "pad") a.pad = v.cast<int>();
    else if (key == "brightness") a.brightness = v.cast<float>();
    else if (key == "contrast") a.contrast = v.cast<float>();
    else if (key == "saturation") a.saturation = v.cast<float>();
    else if (key == "degrees") a.degrees = v.cast<float>();
    else if (key == "translate") a.translate = v.cast<float>();
    else if (key == "scale_min") a.scale_min = v.cast<float>();
    else if (key == "scale_max") a.scale_max = v.cast<float>();
    else throw py::value_error("unknown device augmentation '" + key + "'");
  }
  return a;
}

DeviceOptions OptionsFrom(const std::string& dtype, const std::string& layout, bool normalize,
                          const std::array<float, 3>& mean, const std::array<float, 3>& std,
                          const py::dict& augment) {
  DeviceOptions o;
  StatusOr<DType> dt = ParseDType(dtype);
  if (!dt.ok()) Raise(dt.status());
  o.dtype = dt.value();
  StatusOr<Layout> l = ParseLayout(layout);
  if (!l.ok()) Raise(l.status());
  o.layout = l.value();
  o.normalize = normalize;
  o.mean = mean;
  o.std = std;
  o.augment = AugmentFrom(augment);
  return o;
}

}  // namespace

void RegisterDevice(py::module_& m) {
  py::class_<BatchAllocator, std::shared_ptr<BatchAllocator>>(m, "BatchAllocator")
      .def_property_readonly("name", &BatchAllocator::name);

  m.def("built_with_cuda", &BuiltWithCuda);
  m.def("parse_device", [](const std::string& d) {
    StatusOr<int> i = ParseDevice(d);
    if (!i.ok()) Raise(i.status());
    return i.value();
  });
  m.def("check_cuda_device", [](int index) {
    Status s;
    {
      py::gil_scoped_release release;
      s = CheckCudaDevice(index);
    }
    if (!s.ok()) Raise(s);
  }, "Raises stoker.StokerError, naming the reason, unless CUDA device `index` is usable.");

  py::class_<DeviceStage>(m, "DeviceStage")
      .def(py::init([](int device, const std::string& dtype, const std::string& layout,
                       bool normalize, std::array<float, 3> mean, std::array<float, 3> std,
                       py::dict augment, uint64_t seed, int batch_size, int height, int width) {
             DeviceOptions o = OptionsFrom(dtype, layout, normalize, mean, std, augment);
             o.device = device;
             o.seed = seed;
             o.batch_size = batch_size;
             StatusOr<std::unique_ptr<DeviceStage>> stage = [&] {
               py::gil_scoped_release release;
               return DeviceStage::Create(o, height, width);
             }();
             if (!stage.ok()) Raise(stage.status());
             return std::move(stage).value();
           }),
           py::arg("device"), py::arg("dtype"), py::arg("layout"), py::arg("normalize"),
           py::arg("mean"), py::arg("std"), py::arg("augment"), py::arg("seed"),
           py::arg("batch_size"), py::arg("height"), py::arg("width"))
      .def_property_readonly("host_allocator", &DeviceStage::host_allocator)
      .def_property_readonly("copy_stream", &DeviceStage::copy_stream)
      .def("output_dims", &DeviceStage::output_dims, py::arg("n"))
      .def("launch",
           [](DeviceStage& s, const py::array& images, uintptr_t out, uintptr_t labels_out,
              uintptr_t alloc_stream) {
             BatchPtr batch = BatchOf(images);
             StatusOr<DeviceTicket> t = [&] {
               py::gil_scoped_release release;
               return s.Launch(batch, reinterpret_cast<void*>(out),
                               reinterpret_cast<int64_t*>(labels_out), alloc_stream);
             }();
             if (!t.ok()) Raise(t.status());
             return reinterpret_cast<uintptr_t>(t.value().done);
           },
           py::arg("images"), py::arg("out"), py::arg("labels_out"), py::arg("alloc_stream"),
           "Enqueues the batch's copy and conversion; returns a ticket for handoff().")
      .def("handoff",
           [](DeviceStage& s, uintptr_t ticket, uintptr_t stream) {
             Status st = s.Handoff(DeviceTicket{reinterpret_cast<void*>(ticket)}, stream);
             if (!st.ok()) Raise(st);
           },
           py::arg("ticket"), py::arg("stream"))
      .def("synchronize", [](DeviceStage& s) {
        Status st;
        {
          py::gil_scoped_release release;
          st = s.Synchronize();
        }
        if (!st.ok()) Raise(st);
      });

  // The device kernel's code run on the host, for tests and for checking a
  // GPU run: uint8 NHWC images + sample ids -> the stage's output.
  m.def("_device_reference",
        [](py::array_t<uint8_t, py::array::c_style> images, py::array_t<int64_t> ids,
           int64_t epoch, const std::string& dtype, const std::string& layout, bool normalize,
           std::array<float, 3> mean, std::array<float, 3> std, py::dict augment,
           uint64_t seed) {
          if (images.ndim() != 4 || images.shape(3) != 3 || ids.size() != images.shape(0)) {
            throw py::value_error("images must be [n, H, W, 3] uint8 and ids [n]");
          }
          DeviceOptions o = OptionsFrom(dtype, layout, normalize, mean, std, augment);
          o.seed = seed;
          const int n = static_cast<int>(images.shape(0)), h = static_cast<int>(images.shape(1)),
                    w = static_cast<int>(images.shape(2));
          StatusOr<std::array<int, 2>> size = DeviceOutputSize(o, h, w);
          if (!size.ok()) Raise(size.status());
          const int oh = size.value()[0], ow = size.value()[1];
          std::vector<int64_t> id_list(n);
          for (int i = 0; i < n; ++i) id_list[i] = ids.at(i);
          std::vector<py::ssize_t> shape = o.layout == Layout::kNCHW
                                               ? std::vector<py::ssize_t>{n, 3, oh, ow}
                                               : std::vector<py::ssize_t>{n, oh, ow, 3};
          py::array out(o.dtype == DType::kFloat32 ? py::dtype::of<float>()
                                                   : py::dtype::of<uint16_t>(),
                        shape);
          Status st = TransformOnHost(o, images.data(), n, h, w, id_list.data(), epoch,
                                      out.mutable_data());
          if (!st.ok()) Raise(st);
          return out;
        },
        py::arg("images"), py::arg("ids"), py::arg("epoch"), py::arg("dtype"), py::arg("layout"),
        py::arg("normalize"), py::arg("mean"), py::arg("std"), py::arg("augment"),
        py::arg("seed"));

  m.def("_normalize_params",
        [](const Transform& t) -> py::object {
          if (t.kind != Transform::Kind::kNormalize) return py::none();
          return py::make_tuple(t.mean, t.std);
        },
        py::arg("transform"), "(mean, std) of a Normalize transform, else None.");

  m.def("pinned_allocator", [](int device) -> std::shared_ptr<BatchAllocator> {
    StatusOr<std::shared_ptr<BatchAllocator>> a = PinnedBatchAllocator(device);
    if (!a.ok()) Raise(a.status());
    return std::move(a).value();
  }, py::arg("device"), "Page-locked batch memory for Loader(allocator=...).");
}

}  // namespace stoker::python
