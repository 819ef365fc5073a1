// Copyright 2026 The stoker Authors.
//
// Records: a sample is a record of named fields, each of one kind. A Source
// declares its fields once (Source::schema(), stoker/source.h); every sample
// it reads carries one value per field (FieldValue, in SampleData). Today's
// (image, label) sample is the schema ImageLabel(): the engine keeps its fast
// path for the primary image and label, and any other field travels beside
// them through every stage (reading, processing, batch memory, batch
// assembly, caches, ranks, resume, skip).
//
// Kinds:
//   kImage   encoded bytes (every decoder stoker has) or raw pixels. Mode kRGB
//            (the default) converts to 8-bit RGB; the primary image (below)
//            runs the loader's transforms, any other RGB image field is an
//            untransformed uint8 [H, W, 3] array. kNative decodes what the file
//            holds (grey 1, grey + alpha 2, RGB 3, RGBA 4 channels; uint8, or
//            uint16 for 16-bit PNG and TIFF; ImageDecoder::DecodeNative) into an
//            untransformed [H, W, C] array: fixed when dtype and shape are
//            known, else each sample's own (a list per batch).
//   kArray   any ElemType, any per-sample shape (.npy members and memmaps,
//            HDF5 datasets, raw bytes with a declared dtype and shape).
//   kLabel   an integer (int64), as today's label.
//   kScalar  one number: int64 or float64.
//   kText    a UTF-8 string (checked: other bytes are an error of the sample).
//   kBytes   raw bytes, undecoded.
//   kJson    a JSON document (checked in the worker, parsed by the consumer).
//
// Which image and which label are "primary" (the fast path, the tuple form,
// the GPU stage, the field the transforms apply to): the field named "image" of
// kind kImage in mode kRGB, else the first such field; the field named
// "label" of kind kLabel, else the first kLabel field.
//
// Thread-safety: plain values. Errors: InvalidArgument naming the field.
#ifndef STOKER_RECORD_H_
#define STOKER_RECORD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/status.h"
#include "stoker/types.h"

namespace stoker {

enum class FieldKind { kImage, kArray, kLabel, kScalar, kText, kBytes, kJson };

// numpy's element types (bool, int8..int64, uint8..uint64, float16/32/64), and
// bfloat16 for image outputs (numpy has none: Python views it as torch's).
enum class ElemType {
  kBool, kInt8, kInt16, kInt32, kInt64, kUint8, kUint16, kUint32, kUint64,
  kFloat16, kFloat32, kFloat64, kBFloat16,
};

enum class ImageMode { kRGB, kNative };

// What a field is to the geometric transforms: a target that follows the
// primary image through every crop, resize, flip and warp, with the same
// random draw. kNone: untouched (every field of today's records).
//  kMask: a label map, one channel (kArray uint8/uint16 [H, W], or a kImage
//    field decoded native to one channel); resampled nearest-neighbour,
//    padding filled with FieldSpec::ignore_index; never photometric.
//  kBoxes: kArray float32 [N, 4] in FieldSpec::box_format; corners follow the
//    geometry, then clipped to the output and sanitised (a removed box takes
//    its kPerBox rows with it). Delivered xyxy in output pixels.
//  kKeypoints: kArray float32 [K, 2] or [K, 3] (x, y, visibility); points
//    leaving the output are marked invisible, never dropped.
//  kPerBox: one row per box of the kBoxes field named FieldSpec::follows
//    (per-box labels, iscrowd, area): rows are removed with their box.
enum class TargetRole { kNone, kMask, kBoxes, kKeypoints, kPerBox };

// A box's four numbers, as torchvision's tv_tensors.BoundingBoxFormat.
enum class BoxFormat { kXYXY, kXYWH, kCXCYWH };

// Per-sample dimensions a field may have.
inline constexpr int kMaxFieldDims = 8;

size_t ElemSize(ElemType t);
const char* ElemTypeName(ElemType t);  // numpy's names: "float32", "uint16", "bool" ...
// numpy's names and "<f4"-style type strings ("f4", "i8", "u1", "b1", ...).
StatusOr<ElemType> ParseElemType(std::string_view name);
ElemType ElemTypeOf(DType d);
const char* FieldKindName(FieldKind k);  // "image", "array", "label", ...
StatusOr<FieldKind> ParseFieldKind(std::string_view name);
const char* TargetRoleName(TargetRole r);  // "none", "mask", "boxes", "keypoints", "per_box"
StatusOr<TargetRole> ParseTargetRole(std::string_view name);
const char* BoxFormatName(BoxFormat f);  // "xyxy", "xywh", "cxcywh"
StatusOr<BoxFormat> ParseBoxFormat(std::string_view name);  // case-insensitive

struct FieldSpec {
  std::string name;
  FieldKind kind = FieldKind::kArray;
  // kArray: the element type, when every sample has the same (dtype_known);
  // otherwise each sample carries its own (a shard's .npy members). kLabel:
  // kInt64. kScalar: kInt64 or kFloat64. kImage (other than the primary
  // one): kUint8 or kUint16 when known (declared), with shape {H, W, C}.
  ElemType dtype = ElemType::kUint8;
  bool dtype_known = true;
  // The per-sample shape when known (shape_known): -1 for a dimension that
  // varies from sample to sample. kImage raw pixels: {H, W, C}.
  std::vector<int64_t> shape;
  bool shape_known = true;
  ImageMode image_mode = ImageMode::kRGB;
  // Target role (above) and its parameters: the box format of a kBoxes field,
  // the fill of a kMask field's padding, the kBoxes field a kPerBox field's
  // rows follow.
  TargetRole target = TargetRole::kNone;
  BoxFormat box_format = BoxFormat::kXYXY;
  int64_t ignore_index = 255;
  std::string follows;

  // Every sample has the same dtype and shape (stackable into one block).
  bool fixed() const;
  // Bytes per sample when fixed().
  size_t sample_bytes() const;
  // "emb: array float32 [512]", for messages.
  std::string ToString() const;
};

// An encoded image field of any size: kRGB uint8; kNative of no known dtype
// (uint8 or uint16 as each file holds; declare dtype and shape to stack it).
FieldSpec ImageField(std::string name, ImageMode mode = ImageMode::kRGB);
FieldSpec LabelField(std::string name = "label");
FieldSpec ArrayField(std::string name, ElemType dtype, std::vector<int64_t> shape);
FieldSpec ScalarField(std::string name, ElemType dtype = ElemType::kInt64);
FieldSpec TextField(std::string name);
FieldSpec BytesField(std::string name);
FieldSpec JsonField(std::string name);

struct Schema {
  std::vector<FieldSpec> fields;

  // Index of the field called `name`, or -1.
  int Find(std::string_view name) const;
  // The primary image (kImage, mode kRGB: "image", else the first) and the
  // primary label ("label", else the first kLabel), or -1.
  int image() const;
  int label() const;
  // Whether the schema is the image + label pair of the sources without
  // records (two fields: the primary image and the primary label).
  bool IsImageLabel() const;
  // Same field names, kinds, dtypes and shapes, in the same order (what a
  // mixture of sources requires of its children).
  bool SameFields(const Schema& other) const;
  std::string ToString() const;

  // {"image": image (RGB), "label": label}: every source without records.
  static Schema ImageLabel();
};

// Unique non-empty names, kinds with a valid dtype, dims >= -1, at most
// kMaxFieldDims. Errors name the field.
Status CheckSchema(const Schema& schema);

// Whether [data, data + size) is valid UTF-8 (no overlongs, surrogates or
// code points past U+10FFFF). Pure.
bool IsValidUtf8(const uint8_t* data, size_t size);

}  // namespace stoker

#endif  // STOKER_RECORD_H_
