// Copyright 2026 The stoker Authors.
//
// Bindings for the GPU feeder (include/stoker/device_loader.h) and its
// stage (include/stoker/device.h). DeviceLoader does the feeding in C++;
// the Python side (stoker/_device.py) only passes torch's current stream and
// an allocator callback that makes torch tensors, so device memory comes
// from PyTorch's caching allocator and returns to it when the tensor dies.
// Without CUDA (build, driver or device) the constructors raise
// stoker.StokerError with the reason; nothing here runs for device="cpu".
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <vector>

#include "batch_arrays.h"
#include "errors.h"
#include "stoker/batch.h"
#include "stoker/device.h"
#include "gil_release_delete.h"
#include "stoker/device_host.h"
#include "stoker/device_loader.h"
#include "stoker/loader.h"
#include "stoker/record.h"
#include "stoker/transforms.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

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
  if (!dt.ok()) Throw(dt.status());
  o.dtype = dt.value();
  StatusOr<Layout> l = ParseLayout(layout);
  if (!l.ok()) Throw(l.status());
  o.layout = l.value();
  o.normalize = normalize;
  o.mean = mean;
  o.std = std;
  o.augment = AugmentFrom(augment);
  return o;
}

// A shared Python object that may be dropped without the GIL (after the
// interpreter is gone it is leaked, not touched).
std::shared_ptr<py::object> Shared(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// DeviceLoader's allocator from a Python callable (bytes, stream) -> an
// object with data_ptr() (a torch tensor); the allocation's owner keeps it
// alive. A Python exception becomes the Status's message and the
// StokerError's __cause__.
DeviceAllocator PythonAllocator(py::object fn) {
  return [fn = Shared(std::move(fn))](size_t bytes, uintptr_t stream)
             -> StatusOr<DeviceAllocation> {
    py::gil_scoped_acquire gil;
    try {
      py::object t = (*fn)(bytes, stream);
      void* ptr = reinterpret_cast<void*>(t.attr("data_ptr")().cast<uintptr_t>());
      return DeviceAllocation{ptr, Shared(std::move(t))};
    } catch (py::error_already_set& e) {
      std::string message = "the device allocator raised " + std::string(e.what());
      RememberPythonError(message, std::move(e));
      return InternalError(std::move(message));
    }
  };
}

// A record DeviceBatch's fields for DeviceLoader.next(), in the order a
// CPU record batch has them (batch_arrays.cc): the primary image and label,
// then each field, a padded one followed by its lengths.
py::list RecordEntries(const DeviceBatch& b) {
  py::list out;
  if (!b.image_name.empty()) out.append(py::make_tuple(b.image_name, "image"));
  if (!b.label_name.empty()) out.append(py::make_tuple(b.label_name, "label"));
  py::dict host;
  if (b.host != nullptr) host = BatchArrays(b.host)[0].cast<py::dict>();
  // Without a host batch every field is on the device (DeviceBatch::fields
  // in order); with one, its layouts say which are.
  const int count = b.host != nullptr ? b.host->num_fields() : static_cast<int>(b.fields.size());
  size_t next = 0;
  for (int f = 0; f < count; ++f) {
    if (b.host != nullptr && !b.host->field(f).fixed && !b.host->field(f).pad) {
      const std::string& name = b.host->field(f).spec.name;
      out.append(py::make_tuple(name, "host", host[py::str(name)]));
      continue;
    }
    const DeviceField& d = b.fields[next++];
    py::object owner = py::none();
    if (d.owner != nullptr) owner = *std::static_pointer_cast<py::object>(d.owner);
    py::tuple shape(d.dims.size());
    for (size_t k = 0; k < d.dims.size(); ++k) shape[k] = d.dims[k];
    out.append(py::make_tuple(d.name, "device", owner, ElemTypeName(d.elem), shape));
    if (d.padded) {
      const std::string lengths = d.name + "_lengths";
      out.append(py::make_tuple(lengths, "host", host[py::str(lengths)]));
    }
  }
  return out;
}

// DeviceLoader's holder: its destructor stops the Loader (joining workers
// that may wait for the GIL in a Lambda) and drops tensors (which take it).
using DeviceLoaderHolder = std::unique_ptr<DeviceLoader, GilReleaseDelete<DeviceLoader>>;

}  // namespace

void RegisterDevice(py::module_& m) {
  py::class_<BatchAllocator, std::shared_ptr<BatchAllocator>>(m, "BatchAllocator")
      .def_property_readonly("name", &BatchAllocator::name);

  m.def("built_with_cuda", &BuiltWithCuda);
  m.def("parse_device", [](const std::string& d) {
    StatusOr<int> i = ParseDevice(d);
    if (!i.ok()) Throw(i.status());
    return i.value();
  }, py::arg("device"));
  m.def("check_cuda_device", [](int index) {
    Status s = WithoutGil([&] { return CheckCudaDevice(index); });
    if (!s.ok()) Throw(s);
  }, py::arg("index"),
        "Raises stoker.StokerError, naming the reason, unless CUDA device `index` is usable.");

  py::class_<DeviceStage>(m, "DeviceStage")
      .def(py::init([](int device, const std::string& dtype, const std::string& layout,
                       bool normalize, std::array<float, 3> mean, std::array<float, 3> std,
                       py::dict augment, uint64_t seed, int batch_size, int height, int width) {
             DeviceOptions o = OptionsFrom(dtype, layout, normalize, mean, std, augment);
             o.device = device;
             o.seed = seed;
             o.batch_size = batch_size;
             StatusOr<std::unique_ptr<DeviceStage>> stage = WithoutGil([&] {
               return DeviceStage::Create(o, height, width);
             });
             if (!stage.ok()) Throw(stage.status());
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
             StatusOr<DeviceTicket> t = WithoutGil([&] {
               return s.Launch(batch, reinterpret_cast<void*>(out),
                               reinterpret_cast<int64_t*>(labels_out), alloc_stream);
             });
             if (!t.ok()) Throw(t.status());
             return reinterpret_cast<uintptr_t>(t.value().done);
           },
           py::arg("images"), py::arg("out"), py::arg("labels_out"), py::arg("alloc_stream"),
           "Enqueues the batch's copy and conversion; returns a ticket for handoff().")
      .def("handoff",
           [](DeviceStage& s, uintptr_t ticket, uintptr_t stream) {
             Status st = s.Handoff(DeviceTicket{reinterpret_cast<void*>(ticket)}, stream);
             if (!st.ok()) Throw(st);
           },
           py::arg("ticket"), py::arg("stream"))
      .def("synchronize", [](DeviceStage& s) {
        Status st = WithoutGil([&] { return s.Synchronize(); });
        if (!st.ok()) Throw(st);
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
          if (!size.ok()) Throw(size.status());
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
          if (!st.ok()) Throw(st);
          return out;
        },
        py::arg("images"), py::arg("ids"), py::arg("epoch"), py::arg("dtype"), py::arg("layout"),
        py::arg("normalize"), py::arg("mean"), py::arg("std"), py::arg("augment"),
        py::arg("seed"));

  m.def("pinned_allocator", [](int device) -> std::shared_ptr<BatchAllocator> {
    StatusOr<std::shared_ptr<BatchAllocator>> a = PinnedBatchAllocator(device);
    if (!a.ok()) Throw(a.status());
    return std::move(a).value();
  }, py::arg("device"), "Page-locked batch memory for Loader(allocator=...).");

  m.attr("HOST_DEVICE") = kHostDevice;
  py::class_<DeviceLoader, DeviceLoaderHolder>(
      m, "DeviceLoader",
      "The GPU feeder (stoker/device_loader.h): a Loader whose batches are copied and\n"
      "converted on the device, one batch ahead, and handed to the consumer's stream.\n"
      "options: the device output's LoaderOptions (a Normalize runs on the device);\n"
      "device: CUDA index or HOST_DEVICE (the host fallback); allocate(nbytes, stream):\n"
      "returns an object with data_ptr() (a torch tensor) of at least nbytes, usable on\n"
      "that stream.")
      .def(py::init([](std::shared_ptr<Source> source, const LoaderOptions& options, int device,
                       py::dict augment, py::object allocate) {
             DeviceLoaderOptions d;
             d.device = device;
             d.augment = AugmentFrom(augment);
             d.allocate = PythonAllocator(std::move(allocate));
             StatusOr<std::unique_ptr<DeviceLoader>> l = WithoutGil([&] {
               return DeviceLoader::Create(std::move(source), options, d);
             });
             if (!l.ok()) Throw(l.status());
             return DeviceLoaderHolder(l.value().release());
           }),
           py::arg("source"), py::arg("options"), py::arg("device"), py::arg("augment"),
           py::arg("allocate"))
      .def("start",
           [](DeviceLoader& l) {
             Status s = WithoutGil([&] { return l.Start(); });
             if (!s.ok()) Throw(s);
           })
      .def("next",
           [](DeviceLoader& l, uintptr_t stream) -> py::object {
             RefuseInWorkerThread("next()");
             DeviceBatch b;
             bool end = false;
             SignalPoll poll;
             // WithoutGil: a daemon thread may be in here at interpreter exit.
             Status s = WithoutGil(
                 [&] { return l.Next(&b, &end, stream, poll.fn(), SignalPoll::kMs); });
             poll.RaiseIfSignalled();
             if (!s.ok()) ThrowIterationStatus(s);
             if (end) return py::none();
             // The owners are the allocator's objects (PythonAllocator).
             py::object images = py::none();  // none: a record without an image
             if (b.images_owner != nullptr) {
               images = *std::static_pointer_cast<py::object>(b.images_owner);
             }
             py::object labels = *std::static_pointer_cast<py::object>(b.labels_owner);
             py::array_t<int64_t> ids(static_cast<py::ssize_t>(b.ids.size()));
             if (!b.ids.empty()) {
               std::memcpy(ids.mutable_data(), b.ids.data(), sizeof(int64_t) * b.ids.size());
             }
             py::tuple dims = py::make_tuple(b.dims[0], b.dims[1], b.dims[2], b.dims[3]);
             if (!b.records) return py::make_tuple(images, labels, ids, dims);
             return py::make_tuple(images, labels, ids, dims, RecordEntries(b));
           },
           py::arg("stream"),
           "The next batch handed off to `stream`, as (images, labels, ids, dims): the\n"
           "allocator's objects for the images (dims, the options' dtype) and the int64\n"
           "labels, ids as numpy; None at the end of the epoch. Records add a fifth item,\n"
           "the fields in order: (name, 'image'), (name, 'label'), (name, 'device',\n"
           "object or None, dtype name, shape) for a field on the device, (name, 'host',\n"
           "value) for one on the host (a list of per-sample values, or a padded field's\n"
           "lengths), values sharing the host batch's memory.")
      .def("stop",
           [](DeviceLoader& l) {
             Status s = WithoutGil([&] { return l.Stop(); });
             if (!s.ok()) Throw(s);
           })
      .def("state", &DeviceLoader::state, "A batch launched ahead is not consumed yet.")
      .def("batches_left", &DeviceLoader::num_batches_left,
           "A batch launched ahead is not delivered yet.")
      .def("output_dims", &DeviceLoader::output_dims, py::arg("n"))
      .def_property_readonly("loader", &DeviceLoader::loader, py::return_value_policy::reference_internal,
                             "The host Loader (uint8 NHWC batches).")
      .def_property_readonly("stage", &DeviceLoader::stage, py::return_value_policy::reference_internal,
                             "The DeviceStage (copy stream, kernels).");
}

}  // namespace stoker::python
