// Copyright 2026 The stoker Authors.
#include "source/shard_records.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "source/npy.h"
#include "source/npy_records.h"
#include "source/tar_reader.h"

namespace stoker {
namespace {

// The last dot-separated part of an extension ("depth.png" -> "png").
std::string LastPart(const std::string& ext) {
  const size_t dot = ext.rfind('.');
  return dot == std::string::npos ? ext : ext.substr(dot + 1);
}

FieldKind KindOfExtension(const std::string& ext) {
  static const char* const kImage[] = {"jpg", "jpeg", "png", "webp", "tif",
                                       "tiff", "bmp", "ppm", "pgm", "pbm"};
  static const char* const kText[] = {"txt", "text", "caption"};
  static const char* const kLabel[] = {"cls", "cls2", "class", "count",
                                       "index", "inx", "id", "label"};
  const std::string e = LastPart(AsciiLower(ext));
  for (const char* x : kImage) if (e == x) return FieldKind::kImage;
  for (const char* x : kText) if (e == x) return FieldKind::kText;
  for (const char* x : kLabel) if (e == x) return FieldKind::kLabel;
  if (e == "json") return FieldKind::kJson;
  if (e == "npy") return FieldKind::kArray;
  return FieldKind::kBytes;
}

// A declared image dtype and shape: uint8 or uint16, [H, W, C] with C 1..4.
Status CheckDeclaredImage(const ShardField& f) {
  if (!f.declared) return Status::OK();
  if (f.dtype != ElemType::kUint8 && f.dtype != ElemType::kUint16) {
    return InvalidArgumentError("field '" + f.name + "': an image decodes to uint8 or uint16, "
                                "not " + ElemTypeName(f.dtype));
  }
  if (f.shape.size() != 3 || f.shape[2] < 1 || f.shape[2] > 4 || f.shape[0] < 1 ||
      f.shape[1] < 1) {
    return InvalidArgumentError("field '" + f.name + "': an image's shape is (height, width, "
                                "channels) with 1 to 4 channels");
  }
  return Status::OK();
}

// A declared dtype and shape whose bytes (the dimensions but -1 times the
// element size) do not fit in 63 bits is refused: the product would wrap and
// pass every size check after it.
Status CheckDeclaredBytes(const ShardField& f) {
  if (!f.declared) return Status::OK();
  int64_t bytes = static_cast<int64_t>(ElemSize(f.dtype));
  for (int64_t d : f.shape) {
    if (d < 0) continue;
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      std::string shape;
      for (int64_t e : f.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
      return InvalidArgumentError("field '" + f.name + "': the declared shape (" + shape +
                                  ") of " + ElemTypeName(f.dtype) +
                                  " is more bytes than a 64-bit size holds");
    }
  }
  return Status::OK();
}

// A field's target role (ShardField::target) onto its spec, checked against
// its kind.
Status ApplyTarget(const ShardField& f, FieldKind kind, FieldSpec* spec) {
  spec->target = f.target;
  spec->box_format = f.box_format;
  spec->ignore_index = f.ignore_index;
  if (f.target == TargetRole::kNone) return Status::OK();
  auto fail = [&](const std::string& why) {
    return InvalidArgumentError("field '" + f.name + "' (target \"" +
                                TargetRoleName(f.target) + "\"): " + why);
  };
  if (f.ignore_index < 0 || f.ignore_index > 65535) {
    return fail("ignore_index " + std::to_string(f.ignore_index) + " is outside 0..65535");
  }
  switch (f.target) {
    case TargetRole::kMask:
      if (kind == FieldKind::kImage) {
        if (f.mode_set && f.mode == ImageMode::kRGB) {
          return fail("a mask is decoded as stored (one channel), not in mode \"rgb\"");
        }
        spec->image_mode = ImageMode::kNative;
        return Status::OK();
      }
      if (kind != FieldKind::kArray) return fail("a mask is an image or a .npy member");
      if (f.declared && ((f.dtype != ElemType::kUint8 && f.dtype != ElemType::kUint16) ||
                         f.shape.size() != 2)) {
        return fail("a .npy mask is uint8 or uint16 [height, width]");
      }
      return Status::OK();
    case TargetRole::kBoxes:
      if (kind != FieldKind::kArray && kind != FieldKind::kJson) {
        return fail("boxes are a .npy or a .json member");
      }
      if (f.declared && (f.dtype != ElemType::kFloat32 || f.shape.size() != 2 ||
                         f.shape[1] != 4)) {
        return fail("boxes are float32 [N, 4]");
      }
      *spec = [&] {
        FieldSpec s = ArrayField(f.name, ElemType::kFloat32, {-1, 4});
        s.target = f.target;
        s.box_format = f.box_format;
        s.ignore_index = f.ignore_index;
        return s;
      }();
      return Status::OK();
    case TargetRole::kPerBox:
      if (kind != FieldKind::kArray) return fail("per-box rows are a .npy member");
      spec->follows = f.follows.empty() ? "boxes" : f.follows;
      return Status::OK();
    case TargetRole::kKeypoints:
      if (kind != FieldKind::kArray) return fail("keypoints are a .npy member");
      return Status::OK();
    case TargetRole::kNone:
      break;
  }
  return Status::OK();
}

bool IsNpy(const uint8_t* data, size_t size) {
  return size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0;
}

// A JSON list of boxes, each a list of 4 numbers, into `storage` as float32
// [N, 4], described by `v`.
Status JsonBoxes(const uint8_t* data, size_t size, std::vector<uint8_t>* storage,
                 FieldValue* v) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr,
                                                   /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) {
    return InvalidArgumentError("a boxes member is a .npy array or a JSON list of "
                                "[x, y, w, h]-style lists of 4 numbers");
  }
  storage->resize(doc.size() * 4 * sizeof(float));
  float* out = reinterpret_cast<float*>(storage->data());
  for (size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& box = doc[i];
    if (!box.is_array() || box.size() != 4) {
      return InvalidArgumentError("box " + std::to_string(i) + " of the JSON member is not "
                                  "a list of 4 numbers");
    }
    for (size_t c = 0; c < 4; ++c) {
      if (!box[c].is_number()) {
        return InvalidArgumentError("box " + std::to_string(i) + " of the JSON member is "
                                    "not a list of 4 numbers");
      }
      out[i * 4 + c] = static_cast<float>(box[c].get<double>());
    }
  }
  static const uint64_t kEmpty = 0;
  v->data = doc.empty() ? reinterpret_cast<const uint8_t*>(&kEmpty) : storage->data();
  v->size = storage->size();
  v->dtype = ElemType::kFloat32;
  v->ndim = 2;
  v->dims[0] = static_cast<int64_t>(doc.size());
  v->dims[1] = 4;
  return Status::OK();
}

}  // namespace

std::string AsciiLower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

StatusOr<FieldKind> ShardFieldKind(const ShardField& field) {
  if (field.exts.empty()) {
    return InvalidArgumentError("field '" + field.name + "' names no member extension");
  }
  const FieldKind kind = KindOfExtension(field.exts.front());
  for (const std::string& e : field.exts) {
    if (e.empty() || e.front() == '.' || e.back() == '.') {
      return InvalidArgumentError("field '" + field.name + "': extension '" + e +
                                  "' (write extensions without dots around them: \"jpg\")");
    }
    if (KindOfExtension(e) != kind) {
      return InvalidArgumentError("field '" + field.name + "': extensions '" +
                                  field.exts.front() + "' (" + FieldKindName(kind) + ") and '" +
                                  e + "' (" + FieldKindName(KindOfExtension(e)) +
                                  ") decode to different kinds");
    }
  }
  return kind;
}

StatusOr<Schema> ShardSchema(const std::vector<ShardField>& fields) {
  if (fields.empty()) return InvalidArgumentError("fields: no field given");
  Schema schema;
  for (const ShardField& f : fields) {
    STOKER_ASSIGN_OR_RETURN(FieldKind kind, ShardFieldKind(f));
    if (f.declared && kind != FieldKind::kArray && kind != FieldKind::kImage &&
        kind != FieldKind::kBytes) {
      return InvalidArgumentError("field '" + f.name + "': a dtype and shape are declared "
                                  "for .npy, image and raw (bytes) members only, not " +
                                  FieldKindName(kind));
    }
    if (f.big_endian && !(f.declared && kind == FieldKind::kBytes)) {
      return InvalidArgumentError("field '" + f.name + "': a byte order is declared for raw "
                                  "members only (.npy members carry their own)");
    }
    if (f.mode_set && kind != FieldKind::kImage) {
      return InvalidArgumentError("field '" + f.name + "': a mode is given for image fields "
                                  "only, not " + FieldKindName(kind));
    }
    FieldSpec spec;
    STOKER_RETURN_IF_ERROR(CheckDeclaredBytes(f));
    switch (kind) {
      case FieldKind::kImage:
        STOKER_RETURN_IF_ERROR(CheckDeclaredImage(f));
        spec = ImageField(f.name, f.mode_set ? f.mode : ImageMode::kNative);
        if (f.declared) {
          spec.dtype = f.dtype;
          spec.dtype_known = true;
          spec.shape = f.shape;
          spec.shape_known = true;
        }
        break;
      case FieldKind::kLabel: spec = LabelField(f.name); break;
      case FieldKind::kText: spec = TextField(f.name); break;
      case FieldKind::kJson: spec = JsonField(f.name); break;
      case FieldKind::kArray:
        if (f.declared) {
          for (int64_t d : f.shape) {
            if (d < -1) {
              return InvalidArgumentError("field '" + f.name + "': a declared shape has no "
                                          "negative dimensions but -1 (one that varies)");
            }
          }
          spec = ArrayField(f.name, f.dtype, f.shape);
          break;
        }
        spec = ArrayField(f.name, ElemType::kUint8, {});
        spec.dtype_known = false;  // each member's header says
        spec.shape_known = false;
        spec.shape.clear();
        break;
      case FieldKind::kBytes:
        if (f.declared) {  // raw elements
          int varying = 0;
          for (int64_t d : f.shape) {
            if (d < -1) {
              return InvalidArgumentError("field '" + f.name + "': a declared shape has no "
                                          "negative dimensions but -1 (one that varies)");
            }
            varying += d == -1;
          }
          if (varying > 1 || f.shape.size() > static_cast<size_t>(kMaxFieldDims)) {
            return InvalidArgumentError("field '" + f.name + "': a raw member's shape has at "
                                        "most " + std::to_string(kMaxFieldDims) +
                                        " dimensions, at most one of them -1 (it follows from "
                                        "the member's size)");
          }
          spec = ArrayField(f.name, f.dtype, f.shape);
          break;
        }
        spec = BytesField(f.name);
        break;
      default: spec = BytesField(f.name); break;
    }
    STOKER_RETURN_IF_ERROR(ApplyTarget(f, kind, &spec));
    schema.fields.push_back(std::move(spec));
  }
  for (const FieldSpec& spec : schema.fields) {
    if (spec.target != TargetRole::kPerBox) continue;
    const int b = schema.Find(spec.follows);
    if (b < 0 || schema.fields[static_cast<size_t>(b)].target != TargetRole::kBoxes) {
      return InvalidArgumentError("field '" + spec.name + "': per-box rows follow the boxes "
                                  "field '" + spec.follows + "', which is not a field with "
                                  "target \"boxes\"");
    }
  }
  // The primary image: "image", else the first image field whose mode is not
  // set to native; it is RGB (transformed) unless its mode says otherwise.
  int primary = -1;
  for (size_t k = 0; k < fields.size(); ++k) {
    const ShardField& f = fields[k];
    if (schema.fields[k].kind != FieldKind::kImage) continue;
    if (f.mode_set && f.mode != ImageMode::kRGB) continue;
    if (f.target == TargetRole::kMask) continue;
    if (primary < 0 || (f.name == "image" && fields[static_cast<size_t>(primary)].name != "image")) {
      primary = static_cast<int>(k);
    }
  }
  if (primary >= 0) {
    const ShardField& f = fields[static_cast<size_t>(primary)];
    if (f.declared) {
      return InvalidArgumentError("field '" + f.name + "' is the transformed (primary) image: "
                                  "its size and dtype are the loader's output, not declared "
                                  "(declare them on other image fields, or give it "
                                  "\"mode\": \"native\")");
    }
    schema.fields[static_cast<size_t>(primary)].image_mode = ImageMode::kRGB;
    schema.fields[static_cast<size_t>(primary)].dtype_known = true;
    schema.fields[static_cast<size_t>(primary)].dtype = ElemType::kUint8;
  }
  STOKER_RETURN_IF_ERROR(CheckSchema(schema));
  return schema;
}

std::vector<ShardMemberFormat> ShardMemberFormats(const std::vector<ShardField>& fields) {
  std::vector<ShardMemberFormat> formats(fields.size());
  for (size_t k = 0; k < fields.size(); ++k) {
    const ShardField& f = fields[k];
    formats[k].raw = f.declared && !f.exts.empty() &&
                     KindOfExtension(f.exts.front()) == FieldKind::kBytes;
    formats[k].big_endian = formats[k].raw && f.big_endian;
  }
  return formats;
}

namespace {

// A raw member as an array of `spec`'s dtype and shape (one -1 follows from
// the size); big-endian elements are swapped into `copy`.
Status ReadRawMember(const FieldSpec& spec, bool big_endian, FieldValue* v,
                     std::vector<uint8_t>* copy) {
  const size_t elem = ElemSize(spec.dtype);
  size_t known = elem;  // bytes of the declared dimensions
  int varying = -1;
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    if (spec.shape[d] < 0) {
      varying = static_cast<int>(d);
    } else if (__builtin_mul_overflow(known, static_cast<size_t>(spec.shape[d]), &known)) {
      return InvalidArgumentError("the declared shape overflows");
    }
  }
  const std::string declared = std::string(ElemTypeName(spec.dtype)) + " " + [&] {
    std::string s = "[";
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      s += (d ? ", " : "") + (spec.shape[d] < 0 ? std::string("-1") : std::to_string(spec.shape[d]));
    }
    return s + "]";
  }();
  if (varying < 0 ? v->size != known : (known == 0 ? v->size != 0 : v->size % known != 0)) {
    return DataLossError("a raw member of " + std::to_string(v->size) +
                         " bytes, the declared " + declared + " is " +
                         (varying < 0 ? std::to_string(known) + " bytes"
                                      : "a multiple of " + std::to_string(known) + " bytes"));
  }
  v->dtype = spec.dtype;
  v->ndim = static_cast<int>(spec.shape.size());
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    v->dims[d] = static_cast<int>(d) == varying
                     ? static_cast<int64_t>(known == 0 ? 0 : v->size / known)
                     : spec.shape[d];
  }
  if (big_endian && elem > 1) {
    copy->assign(v->data, v->data + v->size);
    for (size_t i = 0; i + elem <= copy->size(); i += elem) {
      std::reverse(copy->begin() + static_cast<ptrdiff_t>(i),
                   copy->begin() + static_cast<ptrdiff_t>(i + elem));
    }
    v->data = copy->data();
  }
  return Status::OK();
}

}  // namespace

Status FillShardRecord(const Schema& schema, const uint8_t* bytes, const size_t* starts,
                       const int64_t* sizes, bool allow_negative_labels,
                       SampleScratch* scratch, SampleData* out,
                       const std::vector<ShardMemberFormat>* formats) {
  const size_t nf = schema.fields.size();
  const int image = schema.image();
  const int label = schema.label();
  scratch->fields.resize(nf);
  out->bytes = nullptr;
  out->size = 0;
  out->pixels = nullptr;
  out->label = -1;
  for (size_t f = 0; f < nf; ++f) {
    const FieldSpec& spec = schema.fields[f];
    FieldValue& v = scratch->fields[f];
    v = FieldValue();
    v.data = bytes + starts[f];
    v.size = static_cast<size_t>(sizes[f]);
    if (scratch->field_members.size() == nf) v.member = scratch->field_members[f];
    auto fail = [&](const std::string& why) {
      return DataLossError(FieldContext(spec.name, v) + ": " + why);
    };
    switch (spec.kind) {
      case FieldKind::kArray: {
        if (formats != nullptr && f < formats->size() && (*formats)[f].raw) {
          if (scratch->field_bytes.size() < nf) scratch->field_bytes.resize(nf);
          Status st = ReadRawMember(spec, (*formats)[f].big_endian, &v, &scratch->field_bytes[f]);
          if (!st.ok()) return fail(st.message());
          break;
        }
        if (spec.target == TargetRole::kBoxes && !IsNpy(v.data, v.size)) {
          // Boxes in a JSON member: [[a, b, c, d], ...] -> float32 [N, 4].
          if (scratch->field_bytes.size() < nf) scratch->field_bytes.resize(nf);
          Status st = JsonBoxes(v.data, v.size, &scratch->field_bytes[f], &v);
          if (!st.ok()) return fail(st.message());
          break;
        }
        NpyHeader h;
        Status st = ParseNpyHeader(v.data, v.size, &h);
        if (!st.ok()) return fail("not a .npy array: " + st.message());
        if (h.fortran_order && h.shape.size() > 1) {
          return fail("a Fortran-order array (save with np.ascontiguousarray)");
        }
        if (h.shape.size() > static_cast<size_t>(kMaxFieldDims)) {
          return fail("more than " + std::to_string(kMaxFieldDims) + " dimensions");
        }
        auto elem = NpyElemType(h);
        if (!elem.ok()) return fail(elem.status().message());
        v.dtype = elem.value();
        v.ndim = static_cast<int>(h.shape.size());
        for (size_t d = 0; d < h.shape.size(); ++d) v.dims[d] = h.shape[d];
        v.data += h.data_offset;
        v.size = static_cast<size_t>(h.data_bytes);
        break;
      }
      case FieldKind::kLabel: {
        auto l = ParseLabel(v.data, v.size, allow_negative_labels);
        if (!l.ok()) return fail(l.status().message());
        v.dtype = ElemType::kInt64;
        v.i = l.value();
        if (static_cast<int>(f) == label) out->label = v.i;
        break;
      }
      case FieldKind::kImage:
        if (static_cast<int>(f) == image) {
          out->bytes = v.data;
          out->size = v.size;
        }
        break;
      default:
        break;
    }
  }
  out->fields = scratch->fields.data();
  out->num_fields = static_cast<int>(nf);
  return Status::OK();
}

}  // namespace stoker
