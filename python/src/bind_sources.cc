// Copyright 2026 The stoker Authors.
//
// Bindings for the sources' common interface (stoker/source.h), the image
// folder (stoker/sources.h) and the sampler spec (stoker/sampler.h). The
// array sources are in bind_arrays.cc, the shards in bind_shards.cc.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "stoker/sampler.h"
#include "stoker/source.h"
#include "stoker/sources.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

// [(path, label), ...] in index order, as torchvision's ImageFolder.samples.
py::list ImageFolderSamples(const ImageFolder& f) {
  py::list out(f.size());
  const py::object fsdecode = py::module_::import("os").attr("fsdecode");
  for (int64_t i = 0; i < f.size(); ++i) {
    out[static_cast<size_t>(i)] = py::make_tuple(fsdecode(py::bytes(f.Path(i))), f.Label(i));
  }
  return out;
}

}  // namespace

void RegisterSources(py::module_& m) {
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
          "The class names, index = label.")
      .def_property_readonly(
          "fields",
          [](const Source& s) {
            py::dict d;
            for (const FieldSpec& f : s.schema().fields) d[py::str(f.name)] = f.ToString();
            return d;
          },
          "The fields of every sample (records): name -> description, in order.")
      .def_property_readonly(
          "records", [](const Source& s) { return !s.schema().IsImageLabel(); },
          "Whether batches are records (dicts of fields) rather than (images, labels).");

  py::class_<ImageFolder, Source, std::shared_ptr<ImageFolder>>(
      m, "ImageFolder",
      "Images in root/<class>/<file>, as torchvision's ImageFolder finds them: the same\n"
      "classes (sorted sub-folder names), labels and sample order. The files of\n"
      "torchvision's IMG_EXTENSIONS, any case: JPEG (.jpg .jpeg), PNG, WebP, TIFF (.tif\n"
      ".tiff), BMP and PNM (.ppm .pgm); sub-folders walked recursively, symbolic links\n"
      "followed. root may be str, bytes or os.PathLike. Transforms go to stoker.Loader\n"
      "(transforms=, target_transform=), not here. Raises StokerError if root does not\n"
      "exist, has no class folders, or a class has no images.")
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
                                 d[FsDecode(c[i])] = py::int_(i);  // as classes
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

  py::class_<SamplerSpec>(m, "SamplerSpec")
      .def(py::init<>())
      .def_static("weighted", &SamplerSpec::Weighted, py::arg("weights"),
                  py::arg("num_samples") = -1, py::arg("replacement") = true)
      .def_static("class_balanced", &SamplerSpec::ClassBalanced, py::arg("num_samples") = -1,
                  py::arg("replacement") = true)
      .def_static("subset", &SamplerSpec::Subset, py::arg("indices"));
}

}  // namespace stoker::python
