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
  d["padded_samples"] = s.padded_samples;
  d["boxes_removed"] = s.boxes_removed;
  const VideoStageStats& v = s.video;
  py::dict video;
  video["clips"] = v.clips;
  video["frames_decoded"] = v.frames_decoded;
  video["frames_converted"] = v.frames_converted;
  // Decoded but no clip's frame: the cost of long GOPs (a seek decodes from a keyframe).
  video["frames_unused"] = v.frames_decoded - v.frames_converted;
  video["frames_delivered"] = v.frames_delivered;
  video["gops_decoded"] = v.gops_decoded;
  video["seeks"] = v.seeks;
  video["indexes_built"] = v.indexes_built;
  video["demux_s"] = v.demux_s;
  video["seek_s"] = v.seek_s;
  video["decode_s"] = v.decode_s;
  video["convert_s"] = v.convert_s;
  video["transform_s"] = v.transform_s;
  d["video"] = video;
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

namespace {

std::vector<py::ssize_t> Strides(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = item;
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = s;
    s *= shape[k];
  }
  return strides;
}

// One sample of a variable field: an array of its own shape, text as str,
// bytes as bytes, json parsed.
py::object FieldSample(const FieldLayout& f, const FieldSlot& slot, const py::capsule& owner,
                       const py::object& json_loads) {
  const char* data = reinterpret_cast<const char*>(slot.data);
  switch (f.spec.kind) {
    case FieldKind::kText: {
      PyObject* text =
          PyUnicode_DecodeUTF8(data ? data : "", static_cast<py::ssize_t>(slot.bytes), "strict");
      if (text == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(text);
    }
    case FieldKind::kBytes: return py::bytes(data ? data : "", slot.bytes);
    case FieldKind::kJson: return json_loads(py::bytes(data ? data : "", slot.bytes));
    default: break;
  }
  std::vector<py::ssize_t> shape(slot.dims.begin(), slot.dims.begin() + slot.ndim);
  const py::ssize_t item = static_cast<py::ssize_t>(ElemSize(slot.elem));
  return py::array(py::dtype(ElemTypeName(slot.elem)), shape, Strides(shape, item), slot.data,
                   owner);
}

// A record batch: name -> array [size, ...] (fixed fields, the primary
// image and label; padded fields, with name + "_lengths": int64 [size] of a
// 1-D field's lengths, [size, ndim] of each sample's shape otherwise) or list
// of per-sample values (variable fields).
py::dict RecordArrays(const Batch& b, py::object images, py::array labels,
                      const py::capsule& owner) {
  py::dict d;
  const BatchShape& shape = b.shape();
  if (shape.image && !shape.image_name.empty()) d[py::str(shape.image_name)] = images;
  if (!shape.label_name.empty()) d[py::str(shape.label_name)] = labels;
  py::object json_loads;
  for (int f = 0; f < b.num_fields(); ++f) {
    const FieldLayout& l = b.field(f);
    if (l.fixed) {
      std::vector<py::ssize_t> dims = {static_cast<py::ssize_t>(b.size())};
      for (int64_t x : l.dims) dims.push_back(static_cast<py::ssize_t>(x));
      const py::ssize_t item = static_cast<py::ssize_t>(ElemSize(l.elem));
      d[py::str(l.spec.name)] = py::array(py::dtype(ElemTypeName(l.elem)), dims,
                                          Strides(dims, item), b.field_block(f), owner);
      continue;
    }
    if (l.pad) {
      const PaddedField& p = b.padded_field(f);
      std::vector<py::ssize_t> dims = {static_cast<py::ssize_t>(b.size())};
      for (int k = 0; k < p.ndim; ++k) dims.push_back(static_cast<py::ssize_t>(p.dims[k]));
      const py::ssize_t item = static_cast<py::ssize_t>(ElemSize(p.elem));
      d[py::str(l.spec.name)] = py::array(py::dtype(ElemTypeName(p.elem)), dims,
                                          Strides(dims, item), p.data, owner);
      std::vector<py::ssize_t> ldims = {static_cast<py::ssize_t>(b.size())};
      if (p.ndim != 1) ldims.push_back(static_cast<py::ssize_t>(p.ndim));
      d[py::str(l.spec.name + "_lengths")] = py::array(
          py::dtype::of<int64_t>(), ldims, Strides(ldims, 8), p.lengths.data(), owner);
      continue;
    }
    if (l.spec.kind == FieldKind::kJson && !json_loads) {
      json_loads = py::module_::import("json").attr("loads");
    }
    py::list list(static_cast<size_t>(b.size()));
    for (int i = 0; i < b.size(); ++i) {
      list[static_cast<size_t>(i)] = FieldSample(l, b.field_sample(f, i), owner, json_loads);
    }
    d[py::str(l.spec.name)] = std::move(list);
  }
  return d;
}

}  // namespace

py::tuple BatchArrays(BatchPtr batch) {
  auto* holder = new BatchPtr(std::move(batch));
  py::capsule owner(holder, [](void* p) { delete static_cast<BatchPtr*>(p); });
  const Batch& b = **holder;
  const py::dtype dt = NumpyDType(b.shape().dtype);
  const py::ssize_t item = static_cast<py::ssize_t>(DTypeSize(b.shape().dtype));
  py::object images = py::none();
  if (!b.has_image()) {
  } else if (b.variable()) {
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
  if (b.shape().records) return py::make_tuple(RecordArrays(b, images, labels, owner), ids);
  return py::make_tuple(images, labels, ids);
}

}  // namespace stoker::python
