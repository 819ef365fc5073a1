// Copyright 2026 The stoker Authors.
//
// Transform declarations. Every transform is declared once, in C++
// (src/ops/*_transforms.cc): its name, its parameters (each with a type, a
// default and the values it accepts), the stage it runs at and how it maps
// from torchvision. Everything else derives from that declaration:
//
//   - MakeTransform: binds positional and keyword arguments as a Python call
//     does, converts each value, checks it and fills a Transform;
//   - CheckTransform: the same checks on a Transform built field by field
//     (the C++ factories); the Loader runs it on every transform it is given;
//   - Transform::ToString: "Name(param=value, ...)" from the parameters;
//   - the Python binding: stoker.<Name> is a class made from the declaration
//     (python/stoker/_transforms.py), its stub and docs/api.md are generated
//     from it (tools/gen_python_docs.py), and so is the README's table of
//     torchvision transforms.
//
// Errors have one form, naming the transform, the argument, what it accepts
// and what it got:
//   "RandomPosterize: bits must be an int in [0, 8], got 9"
// followed, where the range alone does not say why, by ": <reason>". A value
// of the wrong type (a string for a size) is kWrongType (Python's TypeError);
// a value out of range, or one stoker does not support, kInvalidArgument.
//
// Thread-safety: the declarations are built once, on first use (thread-safe),
// and never change; every function here may be called from any thread.
#ifndef STOKER_TRANSFORM_SCHEMA_H_
#define STOKER_TRANSFORM_SCHEMA_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/status.h"
#include "stoker/transforms.h"

namespace stoker {

// An argument as a caller has it: None, a bool, an int, a float, a string, a
// list of arguments, or (kOther) something else, known only by its repr.
class ArgValue {
 public:
  enum class Type { kNone, kBool, kInt, kFloat, kString, kList, kOther };

  ArgValue() = default;  // None
  ArgValue(bool v) : type_(Type::kBool), b_(v) {}                              // NOLINT
  ArgValue(int v) : type_(Type::kInt), i_(v) {}                                // NOLINT
  ArgValue(int64_t v) : type_(Type::kInt), i_(v) {}                            // NOLINT
  ArgValue(double v) : type_(Type::kFloat), d_(v) {}                           // NOLINT
  ArgValue(const char* v) : type_(Type::kString), s_(v) {}                     // NOLINT
  ArgValue(std::string v) : type_(Type::kString), s_(std::move(v)) {}          // NOLINT
  ArgValue(std::vector<ArgValue> v) : type_(Type::kList), list_(std::move(v)) {}  // NOLINT
  ArgValue(std::initializer_list<ArgValue> v) : type_(Type::kList), list_(v) {}
  // An object of no type above (the Python binding's fallback).
  static ArgValue Other(std::string repr);

  Type type() const { return type_; }
  bool is_none() const { return type_ == Type::kNone; }
  // An int or a float (not a bool).
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  // The value of a kBool, kInt, kString or kList.
  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  const std::string& as_string() const { return s_; }
  const std::vector<ArgValue>& as_list() const { return list_; }
  // An int or a float as a double.
  double as_double() const { return type_ == Type::kInt ? static_cast<double>(i_) : d_; }

  // How the caller wrote the value, for messages (the binding sets Python's
  // repr, e.g. "InterpolationMode.NEAREST"); Repr() falls back to a
  // Python-like rendering: None, True, 3, 0.5, 'edge', (1, 2).
  ArgValue& set_repr(std::string repr);
  std::string Repr() const;

 private:
  Type type_ = Type::kNone;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0.0;
  std::string s_;  // kString; kOther: its repr
  std::vector<ArgValue> list_;
  std::string repr_;
};

// Where in the per-sample path a transform runs (src/ops/README.md).
enum class TransformStage {
  // Crops, resizes, pads and flips: planned per sample into the crop ->
  // resample -> window stages of the region decode (ops/geometry.h).
  kGeometry,
  // On the uint8 image of the output size, in list order: the photometric
  // ops, the policies, Python callbacks.
  kImage,
  // As kImage, but geometric: must follow every kGeometry transform in the
  // list (RandomRotation, RandomAffine, RandomPerspective).
  kWarp,
  // Fused into the conversion to the output dtype (Normalize; at most one).
  kConvert,
  // On the output tensor, after the conversion (RandomErasing).
  kTensor,
};
const char* TransformStageName(TransformStage stage);

struct TransformOps;  // the engine's side of a declaration (src/ops/transform_ops.h)

// One parameter of a transform.
struct ParamSchema {
  std::string name;
  // The Python annotation for stubs and docs ("float", "Size", ...).
  std::string annotation;
  bool required = false;
  // Given by keyword only (Python's `*, fields=None`): not counted among the
  // positional arguments.
  bool keyword_only = false;
  ArgValue default_value;  // when not required
  // What it accepts, completing "<name> must be ...": "a number in [0, 1]".
  std::string accepts;
  // Converts `value` into fields of `*t`. An empty Status means accepted;
  // otherwise its code (kWrongType or kInvalidArgument) and, in its
  // message, the reason to add after the range (may be empty).
  std::function<Status(const ArgValue& value, Transform* t)> set;
  // The value `t` holds, as `set` accepts it (for ToString and
  // CheckTransform); null for an argument that sets no field (an accepted
  // torchvision argument such as antialias=True).
  std::function<ArgValue(const Transform& t)> get;
  // How ToString shows the value (null: ArgValue::Repr of `get`).
  std::function<std::string(const Transform& t)> show;
};

struct TransformSchema {
  std::string name;
  // The docstring: what it does, and how it differs from torchvision if it does.
  std::string doc;
  TransformStage stage = TransformStage::kImage;
  // The README's mapping table (stoker column) for torchvision's transform of
  // this name: "same arguments; ...". Declarations with equal notes share a row.
  std::string torchvision;
  // The docs/api.md section ("Geometry", "Colour", ...), from the family of
  // declarations it belongs to, and that family's introduction.
  std::string section;
  std::vector<ParamSchema> params;
  // Checks between parameters (after each one was accepted), in the same
  // message form ("Resize: max_size must be greater than size (256), got 256").
  std::vector<std::function<Status(const TransformSchema&, const Transform&)>> checks;
  // Whether the Python package makes a stoker.<name> class from it (false for
  // Lambda, whose argument is a Python function: stoker.Lambda).
  bool python = true;
  // Random geometry (RandomResizedCrop): dct_scaling="auto" turns on.
  bool random_geometry = false;
  // The same output for a sample in every epoch (cache="output" needs it).
  bool deterministic = false;
  // Its draw depends on the sample's boxes (RandomIoUCrop): a Loader refuses
  // it unless a field is a boxes target (LoaderOptions::targets).
  bool needs_boxes = false;
  // Replaces the generic description (Lambda: "Lambda(<function name>)").
  std::function<std::string(const Transform&)> to_string;
  const TransformOps* ops = nullptr;

  const ParamSchema* Param(std::string_view name) const;
};

// A torchvision transform stoker does not provide, and what to do instead.
struct TorchvisionNote {
  std::string name;
  std::string instead;
};

// Every declaration, in declaration order (families: geometry, warps,
// colour, policies, output); and the notes.
const std::vector<const TransformSchema*>& TransformSchemas();
const std::vector<TorchvisionNote>& TorchvisionNotes();
// The families' docs/api.md sections, in order: (section, introduction).
const std::vector<std::pair<std::string, std::string>>& TransformSections();
// The declaration named `name`, or null.
const TransformSchema* FindTransformSchema(std::string_view name);

using KeywordArgs = std::vector<std::pair<std::string, ArgValue>>;

// Transform `name` from `positional` then `keywords`, bound to its
// parameters as Python binds a call (unknown, missing or repeated
// arguments: kWrongType), each converted and checked, then the checks
// between parameters. Example:
//   MakeTransform("RandomCrop", {32}, {{"padding", 4}, {"padding_mode", "reflect"}})
StatusOr<Transform> MakeTransform(std::string_view name, const std::vector<ArgValue>& positional,
                                  const KeywordArgs& keywords = {});

// The checks MakeTransform makes, on a Transform built any way (the C++
// factories do not check): each parameter's current value, then the checks
// between them. A Transform without a declaration (default-constructed) is
// refused.
Status CheckTransform(const Transform& t);

}  // namespace stoker

#endif  // STOKER_TRANSFORM_SCHEMA_H_
