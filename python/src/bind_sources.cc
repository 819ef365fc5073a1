// Copyright 2026 The stoker Authors.
//
// Bindings for the sources' common interface (stoker/source.h), the image
// folder (stoker/sources.h) and the sampler spec (stoker/sampler.h). The
// array sources are in bind_arrays.cc, the shards in bind_shards.cc.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
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

// Whether `self`'s C++ value exists: a source whose __init__ raised (pytest
// formats its traceback with the object) or that came from __new__ alone
// has none, and a method reading it would read through null.
bool Constructed(py::handle self) {
  return reinterpret_cast<py::detail::instance*>(self.ptr())
      ->get_value_and_holder()
      .holder_constructed();
}

}  // namespace

void RegisterSources(py::module_& m) {
  py::class_<Source, std::shared_ptr<Source>>(m, "Source")
      .def("__len__",
           [](py::handle self) {
             if (!Constructed(self)) throw py::type_error("the source was not constructed");
             const Source& s = self.cast<const Source&>();
             if (s.size() < 0) throw py::type_error(s.Describe() + " is a stream of unknown length");
             return s.size();
           })
      .def("__repr__",
           [](py::handle self) {
             if (!Constructed(self)) {
               return "<stoker." + py::str(py::type::handle_of(self).attr("__name__"))
                                       .cast<std::string>() +
                      ", not constructed>";
             }
             return self.cast<const Source&>().Describe();
           })
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
          "targets",
          [](const Source& s) {
            py::dict d;
            for (const FieldSpec& f : s.schema().fields) {
              if (f.target == TargetRole::kNone) continue;
              py::dict t;
              t["target"] = TargetRoleName(f.target);
              if (f.target == TargetRole::kBoxes) t["format"] = BoxFormatName(f.box_format);
              if (f.target == TargetRole::kMask) t["ignore_index"] = f.ignore_index;
              if (f.target == TargetRole::kPerBox) t["follows"] = f.follows;
              d[py::str(f.name)] = t;
            }
            return d;
          },
          "The fields that follow the image (masks, boxes and their per-box rows): name ->\n"
          "{'target': 'mask' | 'boxes' | 'per_box', 'format' (boxes), 'ignore_index'\n"
          "(masks), 'follows' (per-box rows)}.")
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
             StatusOr<std::shared_ptr<ImageFolder>> f = WithoutGil([&] {
               return ImageFolder::Open(root);
             });
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
        Status s = WithoutGil([&] { return f.ReadIndex(index, &scratch, &data); });
        if (!s.ok()) Throw(s);
        return py::make_tuple(
            py::bytes(reinterpret_cast<const char*>(data.bytes), data.size), data.label);
      }, py::arg("index"), "(encoded image bytes, label) of image `index`.");

  py::class_<SegmentationFolder, Source, std::shared_ptr<SegmentationFolder>>(
      m, "SegmentationFolder",
      "Images and their segmentation masks (label maps), paired by file stem: VOC, ADE20K and\n"
      "Cityscapes layouts. Both folders are walked recursively; an image's key is its path\n"
      "relative to images_dir without the extension (and without image_suffix at the end of\n"
      "the stem), a mask's likewise with mask_suffix (Cityscapes: image_suffix=\n"
      "\"_leftImg8bit\", mask_suffix=\"_gtFine_labelIds\"; with a suffix only the files\n"
      "whose stem ends with it are taken). Samples in key order. Fields: \"image\" (RGB,\n"
      "the image the transforms apply to) and \"mask\" (target 'mask': decoded as stored to\n"
      "one channel, uint8 or uint16 [H, W], moved by the transforms with its image; palette\n"
      "PNGs give their indices; an RGB mask is an error of its sample naming the file).\n"
      "mask_dtype: \"uint8\" (default) or \"uint16\", the masks' declared depth: masks of a\n"
      "fixed output size then stack into one tensor [B, H, W]; a mask of another depth is an\n"
      "error of its sample. None: each mask as its file holds, delivered as a list.\n"
      "split: a text file of keys, one per line (VOC's ImageSets/Segmentation/train.txt):\n"
      "only these samples, in the file's order (torchvision's VOCSegmentation order), other\n"
      "files of both folders left alone; a listed key without an image or a mask, or listed\n"
      "twice, raises StokerError naming the first five. Without split, raises StokerError\n"
      "naming the keys without a partner on either side (the first five and the count).")
      .def(py::init([](const py::object& images_dir, const py::object& masks_dir,
                       const std::string& image_suffix, const std::string& mask_suffix,
                       const std::optional<std::string>& mask_dtype, const py::object& split) {
             SegmentationFolderOptions o;
             if (!split.is_none()) o.split = FsPath(split);
             o.image_suffix = image_suffix;
             o.mask_suffix = mask_suffix;
             o.mask_dtype = mask_dtype.value_or("");
             if (o.mask_dtype.empty() && mask_dtype.has_value()) {
               throw py::value_error("SegmentationFolder: mask_dtype '': expected \"uint8\", "
                                     "\"uint16\" or None");
             }
             const std::string images = FsPath(images_dir), masks = FsPath(masks_dir);
             StatusOr<std::shared_ptr<SegmentationFolder>> f = WithoutGil([&] {
               return SegmentationFolder::Open(images, masks, o);
             });
             return Unwrap(std::move(f));
           }),
           py::arg("images_dir"), py::arg("masks_dir"), py::arg("image_suffix") = "",
           py::arg("mask_suffix") = "", py::arg("mask_dtype") = std::optional<std::string>("uint8"),
           py::arg("split") = py::none())
      .def("image_path", [](const SegmentationFolder& f, int64_t i) {
             return FsDecode(f.ImagePath(i)); }, py::arg("index"), "The image of sample `index`.")
      .def("mask_path", [](const SegmentationFolder& f, int64_t i) {
             return FsDecode(f.MaskPath(i)); }, py::arg("index"), "The mask of sample `index`.");

  py::class_<CocoSource, Source, std::shared_ptr<CocoSource>>(
      m, "Coco",
      "COCO instances annotations (instances_*.json) over the images in images_dir: one sample\n"
      "per image, in image id order. Fields: \"image\" (RGB, transformed), \"boxes\" float32\n"
      "[N, 4] (target 'boxes', format 'xywh': delivered xyxy in output pixels), \"labels\" int64\n"
      "[N], \"iscrowd\" int64 [N], \"area\" float32 [N] (per-box rows following \"boxes\").\n"
      "labels=\"category_id\" (the default, torchvision's detection references): the\n"
      "annotation's category_id as written (0 is the models' background: a category id 0 is\n"
      "refused); \"1..K\": the category's rank in sorted id order from 1 (0 stays\n"
      "background); \"0..K-1\": from 0. num_classes is the count a model takes (largest label +\n"
      "1: 91 for COCO's ids); categories maps label -> (COCO id, name). crowd=\"drop\" (the\n"
      "default, as torchvision's ConvertCocoPolysToMask) leaves crowd annotations out of the\n"
      "per-box rows; crowd=\"keep\" keeps them, flagged by iscrowd. masks=\"semantic\" adds\n"
      "\"mask\" uint8 [H, W] (uint16 when needed): 0 background, the label (label + 1 for\n"
      "\"0..K-1\") where one non-crowd annotation covers the pixel, ignore_index where a crowd\n"
      "or more than one annotation does; masks=\"instances\" adds \"masks\" uint8 [N, H, W] of\n"
      "0/1 (per-box rows; geometric transforms move each plane like a mask, padded with 0).\n"
      "Polygons are rasterised as pycocotools rasterises them (its frPyObjects and decode,\n"
      "exactly), RLE (list or compressed string) decoded;\n"
      "max_polygon_points (100000) bounds one polygon's points (a larger one is refused,\n"
      "naming its annotation).\n"
      "drop_empty=True leaves out images without annotations. Raises StokerError naming the\n"
      "image or annotation id for a missing file_name, an annotation of an unknown image or\n"
      "category, or a box of negative width or height; a missing image file is an error of\n"
      "its sample when read (skipped and counted under on_error=\"skip\").")
      .def(py::init([](const py::object& images_dir, const py::object& annotations,
                       bool drop_empty, const std::optional<std::string>& masks,
                       int64_t ignore_index, const std::string& labels, const std::string& crowd,
                       const py::object& max_polygon_points) {
             CocoOptions o;
             o.drop_empty = drop_empty;
             o.ignore_index = ignore_index;
             o.max_polygon_points =
                 IntArg("Coco: max_polygon_points", max_polygon_points, 1, INT64_MAX);
             if (masks.has_value() && (masks->empty() || *masks == "none")) {
               throw py::value_error("Coco: masks='" + *masks +
                                     "' (expected None, 'semantic' or 'instances')");
             }
             const Status parsed = ParseCocoOptions(masks.value_or(""), labels, crowd, &o);
             if (!parsed.ok()) Throw(parsed);
             const std::string dir = FsPath(images_dir), json = FsPath(annotations);
             StatusOr<std::shared_ptr<CocoSource>> c = WithoutGil([&] {
               return CocoSource::Open(dir, json, o);
             });
             return Unwrap(std::move(c));
           }),
           py::arg("images_dir"), py::arg("annotations"), py::arg("drop_empty") = false,
           py::arg("masks") = py::none(), py::arg("ignore_index") = 255,
           py::arg("labels") = "category_id", py::arg("crowd") = "drop",
           py::arg("max_polygon_points") = CocoOptions().max_polygon_points)
      .def_property_readonly("category_ids", &CocoSource::category_ids,
                             "The COCO category ids, sorted.")
      .def_property_readonly("category_labels", &CocoSource::category_labels,
                             "The label of each category of category_ids.")
      .def_property_readonly("num_classes", &CocoSource::num_classes,
                             "The num_classes a model takes for these labels (largest + 1).")
      .def_property_readonly(
          "categories",
          [](const CocoSource& c) {
            py::dict d;
            const std::vector<int64_t> ids = c.category_ids();
            const std::vector<int64_t> labels = c.category_labels();
            const std::vector<std::string> names = c.classes();
            for (size_t k = 0; k < ids.size(); ++k) {
              d[py::int_(labels[k])] = py::make_tuple(ids[k], FsDecode(names[k]));
            }
            return d;
          },
          "label -> (COCO category id, name).")
      .def_property_readonly(
          "image_ids",
          [](const CocoSource& c) {
            std::vector<int64_t> ids;
            for (int64_t i = 0; i < c.size(); ++i) ids.push_back(c.image_id(i));
            return ids;
          },
          "The COCO image id of each sample.")
      .def("path", [](const CocoSource& c, int64_t i) { return FsDecode(c.Path(i)); },
           py::arg("index"), "The image file of sample `index`.");

  py::class_<SamplerSpec>(m, "SamplerSpec")
      .def(py::init<>())
      .def_static("weighted", &SamplerSpec::Weighted, py::arg("weights"),
                  py::arg("num_samples") = -1, py::arg("replacement") = true)
      .def_static("class_balanced", &SamplerSpec::ClassBalanced, py::arg("num_samples") = -1,
                  py::arg("replacement") = true)
      .def_static("subset", &SamplerSpec::Subset, py::arg("indices"));
}

}  // namespace stoker::python
