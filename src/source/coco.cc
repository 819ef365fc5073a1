// Copyright 2026 The stoker Authors.
#include "source/coco.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "codec/decoder.h"
#include "io/file.h"
#include "source/coco_masks.h"
#include "source/image_folder.h"

namespace stoker {
namespace {

using Json = nlohmann::json;

bool IsInt(const Json& j) { return j.is_number_integer() || j.is_number_unsigned(); }

}  // namespace

Status ParseCocoOptions(const std::string& masks, const std::string& labels,
                        const std::string& crowd, CocoOptions* options) {
  using Masks = CocoOptions::Masks;
  using Labels = CocoOptions::Labels;
  const auto choice = [](const char* name, const std::string& value, const char* expected) {
    return InvalidArgumentError(std::string("Coco: ") + name + "='" + value + "' (expected " +
                                expected + ")");
  };
  if (masks.empty() || masks == "none") {
    options->masks = Masks::kNone;
  } else if (masks == "semantic") {
    options->masks = Masks::kSemantic;
  } else if (masks == "instances") {
    options->masks = Masks::kInstances;
  } else {
    return choice("masks", masks, "None, 'semantic' or 'instances'");
  }
  if (labels == "category_id") {
    options->labels = Labels::kCategoryId;
  } else if (labels == "1..K") {
    options->labels = Labels::kFrom1;
  } else if (labels == "0..K-1") {
    options->labels = Labels::kFrom0;
  } else {
    return choice("labels", labels, "'category_id', '1..K' or '0..K-1'");
  }
  if (crowd != "drop" && crowd != "keep") return choice("crowd", crowd, "'drop' or 'keep'");
  options->drop_crowd = crowd == "drop";
  return Status::OK();
}

StatusOr<std::shared_ptr<CocoSource>> CocoSource::Open(const std::string& images_dir,
                                                       const std::string& annotations_json,
                                                       const CocoOptions& options) {
  std::shared_ptr<CocoSourceImpl> src(new CocoSourceImpl());
  src->dir_ = TrimTrailingSlashes(images_dir);
  src->json_ = annotations_json;
  src->options_ = options;
  auto fail = [&](const std::string& why) {
    return InvalidArgumentError("Coco(" + annotations_json + "): " + why);
  };
  if (options.ignore_index < 0 || options.ignore_index > 65535) {
    return fail("ignore_index " + std::to_string(options.ignore_index) + " is outside 0..65535");
  }
  if (options.max_polygon_points < 1) {
    return fail("max_polygon_points must be >= 1, got " +
                std::to_string(options.max_polygon_points));
  }
  std::vector<uint8_t> text;
  size_t n = 0;
  STOKER_RETURN_IF_ERROR(ReadFileInto(annotations_json, &text, &n));
  const Json doc = Json::parse(text.begin(), text.begin() + static_cast<ptrdiff_t>(n), nullptr,
                               /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail("not a valid JSON document");
  if (!doc.is_object()) return fail("the document is not a JSON object");
  for (const char* key : {"images", "annotations", "categories"}) {
    if (!doc.contains(key) || !doc[key].is_array()) {
      return fail(std::string("no \"") + key + "\" list (a COCO instances file has images, "
                  "annotations and categories)");
    }
  }
  // Categories in sorted id order, with their labels.
  std::map<int64_t, std::string> cats;
  for (const Json& c : doc["categories"]) {
    if (!c.is_object() || !c.contains("id") || !IsInt(c["id"])) {
      return fail("a category without an integer id: " + c.dump().substr(0, 80));
    }
    const int64_t id = c["id"].get<int64_t>();
    const std::string name =
        c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "";
    if (!cats.emplace(id, name).second) return fail("category id " + std::to_string(id) + " twice");
  }
  using Labels = CocoOptions::Labels;
  if (options.labels == Labels::kCategoryId && !cats.empty() && cats.begin()->first <= 0) {
    return fail("category id " + std::to_string(cats.begin()->first) + " (\"" +
                cats.begin()->second + "\") as a label would be " +
                (cats.begin()->first == 0 ? "the background of torchvision's detection models"
                                          : "negative") +
                "; use labels=\"1..K\" (sorted ids from 1) or \"0..K-1\"");
  }
  std::unordered_map<int64_t, int64_t> label_of;
  for (const auto& [id, name] : cats) {
    const auto rank = static_cast<int64_t>(src->category_ids_.size());
    const int64_t label = options.labels == Labels::kCategoryId ? id
                          : options.labels == Labels::kFrom1    ? rank + 1
                                                                : rank;
    label_of[id] = label;
    src->category_ids_.push_back(id);
    src->category_labels_.push_back(label);
    src->names_.push_back(name);
  }
  src->semantic_offset_ = options.labels == Labels::kFrom0 ? 1 : 0;
  const int64_t top = src->num_classes() - 1 + src->semantic_offset_;  // the mask's largest value
  if (options.masks == CocoOptions::Masks::kSemantic && options.ignore_index <= top) {
    return fail("ignore_index " + std::to_string(options.ignore_index) + " would be a class: " +
                "the semantic mask holds values up to " + std::to_string(top));
  }
  if (options.masks == CocoOptions::Masks::kSemantic && top > 65535) {
    return fail("category id " + std::to_string(src->category_ids_.back()) +
                " does not fit a uint16 semantic mask; use labels=\"1..K\"");
  }
  src->wide_ = options.ignore_index > 255 || top > 255;
  // Images, in id order.
  std::map<int64_t, CocoSourceImpl::Image> images;
  for (const Json& im : doc["images"]) {
    if (!im.is_object() || !im.contains("id") || !IsInt(im["id"])) {
      return fail("an image without an integer id: " + im.dump().substr(0, 80));
    }
    CocoSourceImpl::Image image;
    image.id = im["id"].get<int64_t>();
    const std::string what = "image id " + std::to_string(image.id);
    if (!im.contains("file_name") || !im["file_name"].is_string() ||
        im["file_name"].get<std::string>().empty()) {
      return fail(what + " has no file_name");
    }
    image.file = im["file_name"].get<std::string>();
    if (im.contains("height") && IsInt(im["height"])) image.height = im["height"].get<int>();
    if (im.contains("width") && IsInt(im["width"])) image.width = im["width"].get<int>();
    if (options.masks != CocoOptions::Masks::kNone &&
        (image.height <= 0 || image.width <= 0)) {
      return fail(what + " (" + image.file + ") has no positive height and width: masks "
                  "need them");
    }
    if (!images.emplace(image.id, image).second) return fail(what + " appears twice");
  }
  // Annotations, grouped by image in file order.
  std::map<int64_t, std::vector<const Json*>> by_image;
  for (const Json& a : doc["annotations"]) {
    if (!a.is_object() || !a.contains("image_id") || !IsInt(a["image_id"])) {
      return fail("an annotation without an integer image_id: " + a.dump().substr(0, 80));
    }
    const std::string what =
        "annotation id " + (a.contains("id") ? a["id"].dump() : std::string("(none)"));
    const int64_t image_id = a["image_id"].get<int64_t>();
    if (!images.count(image_id)) {
      return fail(what + " is of image id " + std::to_string(image_id) +
                  ", which is not in \"images\"");
    }
    if (!a.contains("category_id") || !IsInt(a["category_id"]) ||
        !label_of.count(a["category_id"].get<int64_t>())) {
      return fail(what + " (image id " + std::to_string(image_id) + ") has category_id " +
                  (a.contains("category_id") ? a["category_id"].dump() : std::string("(none)")) +
                  ", which is not in \"categories\"");
    }
    by_image[image_id].push_back(&a);
  }
  for (auto& [id, image] : images) {
    auto it = by_image.find(id);
    const std::vector<const Json*> none;
    const std::vector<const Json*>& anns = it == by_image.end() ? none : it->second;
    if (anns.empty() && options.drop_empty) continue;
    // Dropped crowds go after the kept annotations: the per-box fields are
    // [begin, kept), the semantic mask reads them all.
    const auto crowd_of = [](const Json& a) -> int64_t {
      return a.contains("iscrowd") && IsInt(a["iscrowd"]) ? a["iscrowd"].get<int64_t>() : 0;
    };
    std::vector<const Json*> ordered(anns.begin(), anns.end());
    if (options.drop_crowd) {
      std::stable_partition(ordered.begin(), ordered.end(),
                            [&](const Json* a) { return crowd_of(*a) == 0; });
    }
    image.begin = src->labels_.size();
    image.kept = image.begin;
    for (const Json* ap : ordered) {
      const Json& a = *ap;
      const std::string what = "annotation id " + (a.contains("id") ? a["id"].dump() : "(none)") +
                               " (image id " + std::to_string(id) + ")";
      if (!a.contains("bbox") || !a["bbox"].is_array() || a["bbox"].size() != 4) {
        return fail(what + ": bbox is not a list of 4 numbers");
      }
      float box[4];
      for (int c = 0; c < 4; ++c) {
        const Json& v = a["bbox"][static_cast<size_t>(c)];
        if (!v.is_number()) return fail(what + ": bbox is not a list of 4 numbers");
        box[c] = static_cast<float>(v.get<double>());
      }
      if (!(box[2] >= 0) || !(box[3] >= 0)) {
        return fail(what + ": bbox [" + a["bbox"][0].dump() + ", " + a["bbox"][1].dump() + ", " +
                    a["bbox"][2].dump() + ", " + a["bbox"][3].dump() +
                    "] has a negative width or height");
      }
      src->boxes_.insert(src->boxes_.end(), box, box + 4);
      src->labels_.push_back(label_of.at(a["category_id"].get<int64_t>()));
      const int64_t crowd = crowd_of(a);
      src->iscrowd_.push_back(crowd);
      if (!options.drop_crowd || crowd == 0) ++image.kept;
      src->area_.push_back(a.contains("area") && a["area"].is_number()
                               ? static_cast<float>(a["area"].get<double>())
                               : box[2] * box[3]);
      if (options.masks == CocoOptions::Masks::kNone) continue;
      CocoSourceImpl::Segmentation seg;
      const Json* s = a.contains("segmentation") ? &a["segmentation"] : nullptr;
      if (s == nullptr || s->is_null()) {
        // No segmentation: covers nothing.
      } else if (s->is_array()) {
        for (const Json& poly : *s) {
          if (!poly.is_array() || poly.size() % 2 != 0) {
            return fail(what + ": a polygon is not a list of x, y coordinate pairs");
          }
          if (static_cast<int64_t>(poly.size() / 2) > options.max_polygon_points) {
            return fail(what + ": a polygon has " + std::to_string(poly.size() / 2) +
                        " points, more than max_polygon_points (" +
                        std::to_string(options.max_polygon_points) + "; raise it to read it)");
          }
          std::vector<double> xy;
          xy.reserve(poly.size());
          for (const Json& v : poly) {
            if (!v.is_number()) return fail(what + ": a polygon coordinate is not a number");
            const double c = v.get<double>();
            if (!(std::abs(c) <= kMaxPolygonCoordinate)) {
              return fail(what + ": a polygon coordinate is " + v.dump() + " (at most " +
                          std::to_string(static_cast<int64_t>(kMaxPolygonCoordinate)) +
                          " pixels from the origin)");
            }
            xy.push_back(c);
          }
          seg.polygons.push_back(std::move(xy));
        }
      } else if (s->is_object() && s->contains("counts") && s->contains("size")) {
        const Json& size = (*s)["size"];
        if (!size.is_array() || size.size() != 2 || !IsInt(size[0]) || !IsInt(size[1]) ||
            size[0].get<int64_t>() != image.height || size[1].get<int64_t>() != image.width) {
          return fail(what + ": RLE size " + size.dump() + " is not the image's [height, width] [" +
                      std::to_string(image.height) + ", " + std::to_string(image.width) + "]");
        }
        const Json& counts = (*s)["counts"];
        seg.is_rle = true;
        if (counts.is_string()) {
          auto c = DecodeRleString(counts.get<std::string>());
          if (!c.ok()) return fail(what + ": " + c.status().message());
          seg.rle = std::move(c).value();
        } else if (counts.is_array()) {
          for (const Json& v : counts) {
            if (!IsInt(v) || v.get<int64_t>() < 0 || v.get<int64_t>() > UINT32_MAX) {
              return fail(what + ": RLE counts hold " + v.dump());
            }
            seg.rle.push_back(static_cast<uint32_t>(v.get<int64_t>()));
          }
        } else {
          return fail(what + ": RLE counts are neither a list nor a string");
        }
        uint64_t sum = 0;
        for (uint32_t c : seg.rle) sum += c;
        if (sum != static_cast<uint64_t>(image.height) * static_cast<uint64_t>(image.width)) {
          return fail(what + ": RLE counts sum to " + std::to_string(sum) + ", not " +
                      std::to_string(image.height) + " x " + std::to_string(image.width));
        }
      } else {
        return fail(what + ": segmentation is neither polygons nor RLE");
      }
      src->segs_.push_back(std::move(seg));
    }
    image.end = src->labels_.size();
    src->images_.push_back(image);
  }
  if (src->images_.empty()) return fail("no images" + std::string(options.drop_empty ? " with annotations" : ""));
  // Fields.
  FieldSpec boxes = ArrayField("boxes", ElemType::kFloat32, {-1, 4});
  boxes.target = TargetRole::kBoxes;
  boxes.box_format = BoxFormat::kXYWH;
  auto per_box = [](const char* name, ElemType t) {
    FieldSpec f = ArrayField(name, t, {-1});
    f.target = TargetRole::kPerBox;
    f.follows = "boxes";
    return f;
  };
  src->schema_.fields = {ImageField("image"), boxes, per_box("labels", ElemType::kInt64),
                         per_box("iscrowd", ElemType::kInt64), per_box("area", ElemType::kFloat32)};
  if (options.masks == CocoOptions::Masks::kSemantic) {
    FieldSpec m = ArrayField("mask", src->wide_ ? ElemType::kUint16 : ElemType::kUint8, {-1, -1});
    m.target = TargetRole::kMask;
    m.ignore_index = options.ignore_index;
    src->schema_.fields.push_back(std::move(m));
  } else if (options.masks == CocoOptions::Masks::kInstances) {
    FieldSpec m = ArrayField("masks", ElemType::kUint8, {-1, -1, -1});
    m.target = TargetRole::kPerBox;
    m.follows = "boxes";
    src->schema_.fields.push_back(std::move(m));
  }
  STOKER_RETURN_IF_ERROR(CheckSchema(src->schema_));
  return std::shared_ptr<CocoSource>(std::move(src));
}

std::string CocoSourceImpl::Describe() const {
  return "Coco(" + dir_ + ", " + json_ + ", " + std::to_string(size()) + " images, " +
         std::to_string(labels_.size()) + " annotations, " +
         std::to_string(category_ids_.size()) + " categories)";
}

std::string CocoSourceImpl::NameOf(int64_t index) const {
  return Path(index) + " (image id " + std::to_string(image_id(index)) + ")";
}

namespace {

// One annotation's 0/1 mask (h x w, row-major) into `inst` (zeroed first).
Status Rasterise(const std::vector<std::vector<double>>& polygons, const std::vector<uint32_t>& rle,
                 bool is_rle, int h, int w, uint8_t* inst) {
  std::memset(inst, 0, static_cast<size_t>(h) * static_cast<size_t>(w));
  if (is_rle) return RleToMask(rle, h, w, inst);
  for (const std::vector<double>& p : polygons) {
    STOKER_RETURN_IF_ERROR(RleToMask(PolygonToRle(p, h, w), h, w, inst));
  }
  return Status::OK();
}

// One annotation painted 1 into `plane` (h x w, all zero before and, for
// the caller, after: it clears what it reads), and the extent painted.
Status PaintAnnotation(const CocoSourceImpl::Segmentation& s, int h, int w, uint8_t* plane,
                       RleExtent* extent) {
  *extent = RleExtent();
  if (s.is_rle) {
    STOKER_RETURN_IF_ERROR(RleToMask(s.rle, h, w, plane));
    *extent = ExtentOfRle(s.rle, h);
    return Status::OK();
  }
  for (const std::vector<double>& p : s.polygons) {
    const std::vector<uint32_t> counts = PolygonToRle(p, h, w);
    STOKER_RETURN_IF_ERROR(RleToMask(counts, h, w, plane));
    extent->Merge(ExtentOfRle(counts, h));
  }
  return Status::OK();
}

// The semantic mask (torchvision's segmentation reference): label + offset where
// exactly one non-crowd annotation covers a pixel, `ignore` where two or more
// do or a crowd does, 0 elsewhere. Each annotation is painted into `plane`
// and read back only over its own extent (the rectangle its runs cover), so
// the cost is the annotations' areas, not their count times the image's.
template <typename T>
Status Semantic(const CocoSourceImpl::Segmentation* segs, const int64_t* labels, int64_t offset,
                const int64_t* crowd, size_t n, int h, int w, T ignore, T* out,
                std::vector<uint8_t>* cover, std::vector<uint8_t>* plane) {
  const size_t pixels = static_cast<size_t>(h) * static_cast<size_t>(w);
  cover->assign(pixels, 0);
  std::fill(out, out + pixels, T{0});
  if (plane->size() != pixels) plane->assign(pixels, 0);  // zero between annotations
  for (const bool crowds : {false, true}) {
    for (size_t a = 0; a < n; ++a) {
      if ((crowd[a] != 0) != crowds) continue;
      RleExtent e;
      const Status st = PaintAnnotation(segs[a], h, w, plane->data(), &e);
      if (!st.ok()) {
        plane->assign(pixels, 0);
        return st.WithContext("annotation " + std::to_string(a) + " of the image");
      }
      const T value = static_cast<T>(labels[a] + offset);
      for (int y = e.y0; y < e.y1; ++y) {
        uint8_t* row = plane->data() + static_cast<size_t>(y) * static_cast<size_t>(w);
        for (int x = e.x0; x < e.x1; ++x) {
          if (!row[x]) continue;
          row[x] = 0;
          const size_t p = static_cast<size_t>(y) * static_cast<size_t>(w) + x;
          if (crowds) {
            out[p] = ignore;
          } else if ((*cover)[p]++ == 0) {
            out[p] = value;
          } else {
            (*cover)[p] = 2;
          }
        }
      }
    }
    if (crowds) break;
    for (size_t p = 0; p < pixels; ++p) {
      if ((*cover)[p] >= 2) out[p] = ignore;
    }
  }
  return Status::OK();
}

}  // namespace

Status CocoSourceImpl::Masks(const Image& im, std::vector<uint8_t>* bytes) const {
  const size_t pixels = static_cast<size_t>(im.height) * static_cast<size_t>(im.width);
  if (options_.masks == CocoOptions::Masks::kInstances) {  // one per box: the kept ones
    const size_t n = im.kept - im.begin;
    bytes->resize(n * pixels);
    for (size_t a = 0; a < n; ++a) {
      const Segmentation& s = segs_[im.begin + a];
      Status st = Rasterise(s.polygons, s.rle, s.is_rle, im.height, im.width,
                            bytes->data() + a * pixels);
      if (!st.ok()) return st.WithContext("annotation " + std::to_string(a) + " of the image");
    }
    return Status::OK();
  }
  const size_t n = im.end - im.begin;  // crowds too: they mark ignored pixels
  thread_local std::vector<uint8_t> cover, plane;
  const Segmentation* segs = segs_.data() + im.begin;
  if (wide_) {
    bytes->resize(pixels * 2);
    return Semantic<uint16_t>(segs, &labels_[im.begin], semantic_offset_, &iscrowd_[im.begin], n,
                              im.height, im.width, static_cast<uint16_t>(options_.ignore_index),
                              reinterpret_cast<uint16_t*>(bytes->data()), &cover, &plane);
  }
  bytes->resize(pixels);
  return Semantic<uint8_t>(segs, &labels_[im.begin], semantic_offset_, &iscrowd_[im.begin], n,
                           im.height, im.width, static_cast<uint8_t>(options_.ignore_index),
                           bytes->data(), &cover, &plane);
}

// Before any mask is rasterised from it (a 1 KB file may declare 16000 x
// 16000): the declared size must be the image's own, read from its header.
// Boxes in another frame would be wrong without masks too. A header the
// decoder cannot read is left to the decode, which names the problem.
Status CocoSourceImpl::CheckDeclaredSize(const Image& im, const uint8_t* data, size_t size) const {
  if (im.width <= 0 || im.height <= 0) return Status::OK();  // not declared (masks need it)
  thread_local ImageDecoder decoder;
  ImageHeader header;
  if (!decoder.Open(data, size, &header).ok()) return Status::OK();
  if (header.width == im.width && header.height == im.height) return Status::OK();
  return InvalidArgumentError(
      "the annotations declare " + std::to_string(im.width) + "x" + std::to_string(im.height) +
      " (width x height) for image id " + std::to_string(im.id) + ", the file is " +
      std::to_string(header.width) + "x" + std::to_string(header.height) +
      ": its boxes and masks would be in another frame");
}

Status CocoSourceImpl::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  const Image& im = images_[static_cast<size_t>(index)];
  const size_t nf = schema_.fields.size();
  scratch->fields.resize(nf);
  scratch->field_bytes.resize(1);
  size_t size = 0;
  STOKER_RETURN_IF_ERROR(ReadFileInto(Path(index), &scratch->bytes, &size));
  STOKER_RETURN_IF_ERROR(CheckDeclaredSize(im, scratch->bytes.data(), size));
  const int64_t n = static_cast<int64_t>(im.kept - im.begin);  // the per-box rows
  static const uint64_t kEmpty = 0;
  auto array = [&](size_t f, const void* data, size_t elem, ElemType t, int ndim, int64_t d1) {
    FieldValue& v = scratch->fields[f];
    v = FieldValue();
    v.data = n > 0 ? static_cast<const uint8_t*>(data) : reinterpret_cast<const uint8_t*>(&kEmpty);
    v.dtype = t;
    v.ndim = ndim;
    v.dims[0] = n;
    v.dims[1] = d1;
    v.size = static_cast<size_t>(n) * elem * static_cast<size_t>(ndim == 2 ? d1 : 1);
  };
  scratch->fields[0] = FieldValue();
  array(1, boxes_.data() + im.begin * 4, 4, ElemType::kFloat32, 2, 4);
  array(2, labels_.data() + im.begin, 8, ElemType::kInt64, 1, 0);
  array(3, iscrowd_.data() + im.begin, 8, ElemType::kInt64, 1, 0);
  array(4, area_.data() + im.begin, 4, ElemType::kFloat32, 1, 0);
  if (nf > 5) {
    std::vector<uint8_t>& bytes = scratch->field_bytes[0];
    STOKER_RETURN_IF_ERROR(Masks(im, &bytes));
    FieldValue& v = scratch->fields[5];
    v = FieldValue();
    v.data = bytes.empty() ? reinterpret_cast<const uint8_t*>(&kEmpty) : bytes.data();
    if (options_.masks == CocoOptions::Masks::kInstances) {
      v.dtype = ElemType::kUint8;
      v.ndim = 3;
      v.dims[0] = n;
      v.dims[1] = im.height;
      v.dims[2] = im.width;
      v.size = static_cast<size_t>(n) * static_cast<size_t>(im.height) * static_cast<size_t>(im.width);
    } else {
      v.dtype = wide_ ? ElemType::kUint16 : ElemType::kUint8;
      v.ndim = 2;
      v.dims[0] = im.height;
      v.dims[1] = im.width;
      v.size = static_cast<size_t>(im.height) * static_cast<size_t>(im.width) * (wide_ ? 2 : 1);
    }
  }
  *out = SampleData();
  out->id = index;
  out->bytes = scratch->bytes.data();
  out->size = size;
  out->fields = scratch->fields.data();
  out->num_fields = static_cast<int>(nf);
  return Status::OK();
}

}  // namespace stoker
