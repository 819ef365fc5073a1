// Copyright 2026 The stoker Authors.
#include "batch_arrays.h"

#include <pybind11/numpy.h>

#include <utility>
#include <vector>

namespace py = pybind11;

namespace stoker::python {

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

namespace {

py::dtype NumpyDType(DType d) {
  switch (d) {
    case DType::kUint8: return py::dtype::of<uint8_t>();
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat16: return py::dtype("float16");
    case DType::kBFloat16: return py::dtype::of<uint16_t>();  // reinterpreted by the caller
  }
  return py::dtype::of<uint8_t>();
}

}  // namespace

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

}  // namespace stoker::python
