// Copyright 2026 The stoker Authors.
//
// The record schema's value types (stoker/record.h).
#include "stoker/record.h"

#include <cctype>
#include <string>
#include <unordered_set>

namespace stoker {

size_t ElemSize(ElemType t) {
  switch (t) {
    case ElemType::kBool:
    case ElemType::kInt8:
    case ElemType::kUint8: return 1;
    case ElemType::kInt16:
    case ElemType::kUint16:
    case ElemType::kFloat16:
    case ElemType::kBFloat16: return 2;
    case ElemType::kInt32:
    case ElemType::kUint32:
    case ElemType::kFloat32: return 4;
    case ElemType::kInt64:
    case ElemType::kUint64:
    case ElemType::kFloat64: return 8;
  }
  return 0;
}

const char* ElemTypeName(ElemType t) {
  switch (t) {
    case ElemType::kBool: return "bool";
    case ElemType::kInt8: return "int8";
    case ElemType::kInt16: return "int16";
    case ElemType::kInt32: return "int32";
    case ElemType::kInt64: return "int64";
    case ElemType::kUint8: return "uint8";
    case ElemType::kUint16: return "uint16";
    case ElemType::kUint32: return "uint32";
    case ElemType::kUint64: return "uint64";
    case ElemType::kFloat16: return "float16";
    case ElemType::kFloat32: return "float32";
    case ElemType::kFloat64: return "float64";
    case ElemType::kBFloat16: return "bfloat16";
  }
  return "?";
}

StatusOr<ElemType> ParseElemType(std::string_view name) {
  static const std::pair<const char*, ElemType> kNames[] = {
      {"bool", ElemType::kBool},       {"b1", ElemType::kBool},
      {"int8", ElemType::kInt8},       {"i1", ElemType::kInt8},
      {"int16", ElemType::kInt16},     {"i2", ElemType::kInt16},
      {"int32", ElemType::kInt32},     {"i4", ElemType::kInt32},
      {"int64", ElemType::kInt64},     {"i8", ElemType::kInt64},
      {"uint8", ElemType::kUint8},     {"u1", ElemType::kUint8},
      {"uint16", ElemType::kUint16},   {"u2", ElemType::kUint16},
      {"uint32", ElemType::kUint32},   {"u4", ElemType::kUint32},
      {"uint64", ElemType::kUint64},   {"u8", ElemType::kUint64},
      {"float16", ElemType::kFloat16}, {"f2", ElemType::kFloat16},
      {"float32", ElemType::kFloat32}, {"f4", ElemType::kFloat32},
      {"float64", ElemType::kFloat64}, {"f8", ElemType::kFloat64},
      {"bfloat16", ElemType::kBFloat16},
  };
  std::string_view n = name;
  if (!n.empty() && (n[0] == '<' || n[0] == '|' || n[0] == '=')) n.remove_prefix(1);
  for (const auto& [s, t] : kNames) {
    if (n == s) return t;
  }
  return InvalidArgumentError("unknown element type '" + std::string(name) +
                              "' (expected a numpy dtype name: bool, int8..int64, "
                              "uint8..uint64, float16, float32, float64)");
}

ElemType ElemTypeOf(DType d) {
  switch (d) {
    case DType::kUint8: return ElemType::kUint8;
    case DType::kFloat32: return ElemType::kFloat32;
    case DType::kFloat16: return ElemType::kFloat16;
    case DType::kBFloat16: return ElemType::kBFloat16;
  }
  return ElemType::kUint8;
}

const char* FieldKindName(FieldKind k) {
  switch (k) {
    case FieldKind::kImage: return "image";
    case FieldKind::kArray: return "array";
    case FieldKind::kLabel: return "label";
    case FieldKind::kScalar: return "scalar";
    case FieldKind::kText: return "text";
    case FieldKind::kBytes: return "bytes";
    case FieldKind::kJson: return "json";
  }
  return "?";
}

StatusOr<FieldKind> ParseFieldKind(std::string_view name) {
  for (FieldKind k : {FieldKind::kImage, FieldKind::kArray, FieldKind::kLabel, FieldKind::kScalar,
                      FieldKind::kText, FieldKind::kBytes, FieldKind::kJson}) {
    if (name == FieldKindName(k)) return k;
  }
  return InvalidArgumentError("unknown field kind '" + std::string(name) +
                              "' (expected image, array, label, scalar, text, bytes or json)");
}

const char* TargetRoleName(TargetRole r) {
  switch (r) {
    case TargetRole::kNone: return "none";
    case TargetRole::kMask: return "mask";
    case TargetRole::kBoxes: return "boxes";
    case TargetRole::kKeypoints: return "keypoints";
    case TargetRole::kPerBox: return "per_box";
  }
  return "?";
}

StatusOr<TargetRole> ParseTargetRole(std::string_view name) {
  for (TargetRole r : {TargetRole::kNone, TargetRole::kMask, TargetRole::kBoxes,
                       TargetRole::kKeypoints, TargetRole::kPerBox}) {
    if (name == TargetRoleName(r)) return r;
  }
  return InvalidArgumentError("unknown target '" + std::string(name) +
                              "' (expected none, mask, boxes, keypoints or per_box)");
}

const char* BoxFormatName(BoxFormat f) {
  switch (f) {
    case BoxFormat::kXYXY: return "xyxy";
    case BoxFormat::kXYWH: return "xywh";
    case BoxFormat::kCXCYWH: return "cxcywh";
  }
  return "?";
}

StatusOr<BoxFormat> ParseBoxFormat(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (BoxFormat f : {BoxFormat::kXYXY, BoxFormat::kXYWH, BoxFormat::kCXCYWH}) {
    if (lower == BoxFormatName(f)) return f;
  }
  return InvalidArgumentError("unknown box format '" + std::string(name) +
                              "' (expected xyxy, xywh or cxcywh)");
}

bool FieldSpec::fixed() const {
  switch (kind) {
    case FieldKind::kLabel:
    case FieldKind::kScalar: return true;
    case FieldKind::kText:
    case FieldKind::kBytes:
    case FieldKind::kJson: return false;
    case FieldKind::kImage:
    case FieldKind::kArray: break;
  }
  if (!dtype_known || !shape_known) return false;
  for (int64_t d : shape) {
    if (d < 0) return false;
  }
  return true;
}

size_t FieldSpec::sample_bytes() const {
  size_t n = ElemSize(dtype);
  if (kind == FieldKind::kLabel || kind == FieldKind::kScalar) return n;
  for (int64_t d : shape) n *= static_cast<size_t>(d < 0 ? 0 : d);
  return n;
}

std::string FieldSpec::ToString() const {
  std::string s = name + ": " + FieldKindName(kind);
  if (kind == FieldKind::kImage) {
    s += image_mode == ImageMode::kRGB ? " RGB" : " native";
  }
  if (kind == FieldKind::kArray || kind == FieldKind::kScalar ||
      (kind == FieldKind::kImage && image_mode == ImageMode::kNative)) {
    s += std::string(" ") + (dtype_known ? ElemTypeName(dtype) : "any-dtype");
  }
  if ((kind == FieldKind::kArray || kind == FieldKind::kImage) && shape_known && !shape.empty()) {
    s += " [";
    for (size_t i = 0; i < shape.size(); ++i) {
      s += (i ? ", " : "") + (shape[i] < 0 ? std::string("*") : std::to_string(shape[i]));
    }
    s += "]";
  } else if (kind == FieldKind::kArray && !shape_known) {
    s += " [any shape]";
  }
  return s;
}

FieldSpec ImageField(std::string name, ImageMode mode) {
  FieldSpec f;
  f.name = std::move(name);
  f.kind = FieldKind::kImage;
  f.image_mode = mode;
  f.shape_known = false;  // encoded: each image has its own size
  f.dtype_known = mode == ImageMode::kRGB;  // native: uint8 or uint16, as each file holds
  return f;
}

FieldSpec LabelField(std::string name) {
  FieldSpec f;
  f.name = std::move(name);
  f.kind = FieldKind::kLabel;
  f.dtype = ElemType::kInt64;
  return f;
}

FieldSpec ArrayField(std::string name, ElemType dtype, std::vector<int64_t> shape) {
  FieldSpec f;
  f.name = std::move(name);
  f.kind = FieldKind::kArray;
  f.dtype = dtype;
  f.shape = std::move(shape);
  return f;
}

FieldSpec ScalarField(std::string name, ElemType dtype) {
  FieldSpec f;
  f.name = std::move(name);
  f.kind = FieldKind::kScalar;
  f.dtype = dtype;
  return f;
}

namespace {
FieldSpec ByteField(std::string name, FieldKind kind) {
  FieldSpec f;
  f.name = std::move(name);
  f.kind = kind;
  f.dtype = ElemType::kUint8;
  f.shape = {-1};
  return f;
}
}  // namespace

FieldSpec TextField(std::string name) { return ByteField(std::move(name), FieldKind::kText); }
FieldSpec BytesField(std::string name) { return ByteField(std::move(name), FieldKind::kBytes); }
FieldSpec JsonField(std::string name) { return ByteField(std::move(name), FieldKind::kJson); }

int Schema::Find(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Schema::image() const {
  int first = -1;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    if (f.kind != FieldKind::kImage || f.image_mode != ImageMode::kRGB) continue;
    if (f.name == "image") return static_cast<int>(i);
    if (first < 0) first = static_cast<int>(i);
  }
  return first;
}

int Schema::label() const {
  int first = -1;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].kind != FieldKind::kLabel) continue;
    if (fields[i].name == "label") return static_cast<int>(i);
    if (first < 0) first = static_cast<int>(i);
  }
  return first;
}

bool Schema::IsImageLabel() const {
  return fields.size() == 2 && image() >= 0 && label() >= 0;
}

bool Schema::SameFields(const Schema& other) const {
  if (fields.size() != other.fields.size()) return false;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& a = fields[i];
    const FieldSpec& b = other.fields[i];
    if (a.name != b.name || a.kind != b.kind || a.image_mode != b.image_mode ||
        a.dtype_known != b.dtype_known) {
      return false;
    }
    if (a.dtype_known && a.dtype != b.dtype) return false;
    // An RGB image's size is the transforms' business (raw or encoded alike).
    if (a.kind == FieldKind::kImage && a.image_mode == ImageMode::kRGB) continue;
    if (a.shape_known != b.shape_known || (a.shape_known && a.shape != b.shape)) return false;
  }
  return true;
}

std::string Schema::ToString() const {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? "; " : "") + fields[i].ToString();
  return s + "}";
}

Schema Schema::ImageLabel() {
  Schema s;
  s.fields = {ImageField("image"), LabelField("label")};
  return s;
}

Status CheckSchema(const Schema& schema) {
  if (schema.fields.empty()) return InvalidArgumentError("a record needs at least one field");
  std::unordered_set<std::string> names;
  for (const FieldSpec& f : schema.fields) {
    if (f.name.empty()) return InvalidArgumentError("a field has no name");
    if (!names.insert(f.name).second) {
      return InvalidArgumentError("field '" + f.name + "' is declared twice");
    }
    if (f.shape.size() > static_cast<size_t>(kMaxFieldDims)) {
      return InvalidArgumentError("field '" + f.name + "' has more than " +
                                  std::to_string(kMaxFieldDims) + " dimensions");
    }
    for (int64_t d : f.shape) {
      if (d < -1) return InvalidArgumentError("field '" + f.name + "' has a negative dimension");
    }
    if (f.kind == FieldKind::kLabel && f.dtype != ElemType::kInt64) {
      return InvalidArgumentError("field '" + f.name + "': labels are int64");
    }
    if (f.kind == FieldKind::kScalar && f.dtype != ElemType::kInt64 &&
        f.dtype != ElemType::kFloat64) {
      return InvalidArgumentError("field '" + f.name + "': scalars are int64 or float64");
    }
    if (f.kind == FieldKind::kArray && f.dtype_known && f.dtype == ElemType::kBFloat16) {
      return InvalidArgumentError("field '" + f.name + "': bfloat16 arrays are not read");
    }
  }
  return Status::OK();
}

bool IsValidUtf8(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < static_cast<size_t>(len)) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

}  // namespace stoker
