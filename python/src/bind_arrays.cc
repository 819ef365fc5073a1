// Copyright 2026 The stoker Authors.
//
// Bindings for the array sources: stoker.Npy (memory-mapped .npy) and
// stoker.HDF5. Opening releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "errors.h"
#include "stoker/sources.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterArrays(py::module_& m) {
  m.def("built_with_hdf5", &BuiltWithHdf5,
        "Whether this build reads HDF5 (CMake STOKER_WITH_HDF5); without it stoker.HDF5 "
        "raises, naming the reason.");
  py::class_<NpySource, Source, std::shared_ptr<NpySource>>(m, "Npy", R"doc(
Images from a memory-mapped .npy file, labels from another; or records of several arrays.

Npy({"x": "features.npy", "y": "targets.npy"}): records, one array field per .npy file,
  in the dict's order. Each array is C order, little-endian, any numpy dtype (bool,
  int8..int64, uint8..uint64, float16/32/64), shape [N, ...], every one with the same N.
  Sample i is row i of each array (read from the mapping, copied once into the batch);
  batches are dicts name -> tensor [batch, ...].

images: uint8 [N, H, W, C] or [N, C, H, W], C 3 (RGB) or 1 (grey, made RGB), C order.
  [N, H, W, 3] is served without a copy (the page cache's pages); NCHW and grey
  samples are interleaved per sample. The decode step is skipped; the transforms
  apply as to decoded images.
labels: path of a 1-D .npy of N numbers (bool, any int or uint, float holding
  integers), or None (every label -1).
layout: None (read from the shape; last dimension 1 or 3 means NHWC), "NHWC" or "NCHW".)doc")
      .def(py::init([](const std::string& images, const std::optional<std::string>& labels,
                       const std::optional<std::string>& layout) {
             StatusOr<std::shared_ptr<NpySource>> s = WithoutGil([&] {
               return NpySource::Open(images, labels.value_or(""), layout.value_or(""));
             });
             if (!s.ok()) Throw(s.status());
             return std::move(s).value();
           }),
           py::arg("images"), py::arg("labels") = py::none(), py::arg("layout") = py::none())
      .def(py::init([](const py::dict& fields) {
             std::vector<std::pair<std::string, std::string>> f;
             for (const auto& [k, v] : fields) {
               f.emplace_back(py::str(k).cast<std::string>(), FsPath(py::reinterpret_borrow<py::object>(v)));
             }
             StatusOr<std::shared_ptr<NpySource>> s = WithoutGil([&] {
               return NpySource::OpenFields(f);
             });
             if (!s.ok()) Throw(s.status());
             return std::move(s).value();
           }),
           py::arg("fields"))
      .def_property_readonly("height", &NpySource::height)
      .def_property_readonly("width", &NpySource::width)
      .def_property_readonly("channels", &NpySource::channels)
      .def_property_readonly("layout", [](const NpySource& s) { return s.nchw() ? "NCHW" : "NHWC"; })
      .def_property_readonly("zero_copy", &NpySource::zero_copy);

  py::class_<Hdf5Source, Source, std::shared_ptr<Hdf5Source>>(m, "HDF5", R"doc(
Samples from datasets of an HDF5 file: an image and a label, or records of named fields.

images: name of a uint8 [N, H, W, 3] dataset (raw pixels, decode skipped) or of a 1-D
  dataset of variable-length uint8 (h5py.vlen_dtype(np.uint8)) holding encoded JPEG/PNG
  files (decoded in parallel by the engine).
labels: name of a 1-D dataset of N integers (or integral floats), or None (labels -1).
fields: records instead of images/labels: a dict field name -> dataset path, e.g.
  {"image": "images", "label": "labels", "emb": "features", "caption": "captions"}.
  Every dataset is [N, ...] with one N. Numeric datasets (bool, int8..int64,
  uint8..uint64, float16/32/64) are array fields of their per-sample shape (stacked:
  batch[name] is [batch, ...]); 1-D variable-length uint8 datasets are bytes fields;
  string datasets (h5py.string_dtype(), fixed or variable length) are text fields (str,
  checked UTF-8). A field "image" of uint8 [N, H, W, 3] or variable-length uint8 is the
  image the transforms apply to, a field "label" of 1-D integers the label. Batches are
  dicts name -> tensor (or list for bytes and text). {"dataset": path, "kind": "json"}
  makes a string dataset a json field (one JSON document per sample, checked to parse,
  delivered parsed): per-sample metadata. HDF5 attributes (attrs) are not read.
max_sample_bytes (fields= only; default 256 MiB) bounds a sample's bytes before anything is
read: a fixed-size field (or the fixed-size fields together) whose shape and dtype exceed it
is refused here, naming it (compressed chunks of zeros can declare gigabytes per sample); a
variable-length one is its sample's error (skippable with on_error="skip").

The serial HDF5 library is not thread-safe: stoker serialises its HDF5 calls with one
mutex (a sample's datasets are read under one acquisition). The file is read for its
shapes and labels and closed again here; reads open it lazily in the reading process
(and reopen it after a fork).)doc")
      .def(py::init([](const std::string& path, const std::string& images,
                       const std::optional<std::string>& labels,
                       const std::optional<py::dict>& fields,
                       const std::optional<py::object>& max_sample_bytes) {
             if (max_sample_bytes.has_value() && !fields.has_value()) {
               throw py::value_error("HDF5: max_sample_bytes goes with fields=");
             }
             const int64_t max_bytes =
                 max_sample_bytes.has_value()
                     ? IntArg("max_sample_bytes", *max_sample_bytes, 1, INT64_MAX)
                     : int64_t{256} << 20;
             if (fields.has_value()) {
               if (images != "images" || labels != std::optional<std::string>("labels")) {
                 throw py::value_error("HDF5: give either fields= or images=/labels=, not both");
               }
               std::vector<std::pair<std::string, std::string>> f;
               std::vector<std::string> json;
               for (const auto& [k, v] : *fields) {
                 // {"dataset": path, "kind": "json" | "text"}: a string dataset's kind.
                 if (py::isinstance<py::str>(k) && py::isinstance<py::dict>(v)) {
                   py::dict d = py::reinterpret_borrow<py::dict>(v);
                   const std::string name = k.cast<std::string>();
                   for (auto item : d) {
                     const std::string key = py::str(item.first);
                     if (key != "dataset" && key != "kind") {
                       throw py::value_error("HDF5 fields['" + name + "']: unknown key '" + key +
                                             "' (give 'dataset' and 'kind')");
                     }
                   }
                   if (!d.contains("dataset") || !py::isinstance<py::str>(d["dataset"])) {
                     throw py::type_error("HDF5 fields['" + name + "']: 'dataset' must be the "
                                          "dataset's path (a str)");
                   }
                   const std::string kind =
                       d.contains("kind") ? py::str(d["kind"]).cast<std::string>() : "text";
                   if (kind == "json") {
                     json.push_back(name);
                   } else if (kind != "text") {
                     throw py::value_error("HDF5 fields['" + name + "']: kind must be 'text' "
                                           "or 'json', got '" + kind + "'");
                   }
                   f.emplace_back(name, d["dataset"].cast<std::string>());
                   continue;
                 }
                 if (!py::isinstance<py::str>(k) || !py::isinstance<py::str>(v)) {
                   throw py::type_error("HDF5 fields: expected a dict of str field name -> str "
                                        "dataset path, got " +
                                        py::repr(k).cast<std::string>() + ": " +
                                        py::repr(v).cast<std::string>());
                 }
                 f.emplace_back(k.cast<std::string>(), v.cast<std::string>());
               }
               StatusOr<std::shared_ptr<Hdf5Source>> s = WithoutGil([&] {
                 return Hdf5Source::OpenFields(path, f, json, max_bytes);
               });
               if (!s.ok()) Throw(s.status());
               return std::move(s).value();
             }
             StatusOr<std::shared_ptr<Hdf5Source>> s = WithoutGil([&] {
               return Hdf5Source::Open(path, images, labels.value_or(""));
             });
             if (!s.ok()) Throw(s.status());
             return std::move(s).value();
           }),
           py::arg("path"), py::arg("images") = "images", py::arg("labels") = "labels",
           py::arg("fields") = py::none(), py::arg("max_sample_bytes") = py::none())
      .def_property_readonly("raw", &Hdf5Source::raw);
}

}  // namespace stoker::python
