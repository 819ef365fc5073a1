// Copyright 2026 The stoker Authors.
//
// The declarations' registry and what derives from a declaration alone:
// argument binding (MakeTransform), checking (CheckTransform) and the
// description (Transform::ToString, in api/transforms.cc, calls Describe).
#include "stoker/transform_schema.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "ops/transform_params.h"
#include "ops/transform_registry.h"

namespace stoker {

// ---------------------------------------------------------------- ArgValue --

ArgValue ArgValue::Other(std::string repr) {
  ArgValue v;
  v.type_ = Type::kOther;
  v.s_ = std::move(repr);
  return v;
}

ArgValue& ArgValue::set_repr(std::string repr) {
  repr_ = std::move(repr);
  return *this;
}

std::string ArgValue::Repr() const {
  if (!repr_.empty()) return repr_;
  switch (type()) {
    case Type::kNone: return "None";
    case Type::kBool: return as_bool() ? "True" : "False";
    case Type::kInt: return std::to_string(as_int());
    case Type::kFloat: return params::FormatNumber(as_double());
    case Type::kString: return "'" + as_string() + "'";
    case Type::kList: {
      std::string s = "(";
      const std::vector<ArgValue>& l = as_list();
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + l[i].Repr();
      return s + (l.size() == 1 ? ",)" : ")");
    }
    case Type::kOther: return s_;
  }
  return "?";
}

const char* TransformStageName(TransformStage stage) {
  switch (stage) {
    case TransformStage::kGeometry: return "geometry";
    case TransformStage::kImage: return "image";
    case TransformStage::kWarp: return "warp";
    case TransformStage::kConvert: return "convert";
    case TransformStage::kTensor: return "tensor";
  }
  return "?";
}

const ParamSchema* TransformSchema::Param(std::string_view param) const {
  for (const ParamSchema& p : params) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

// ---------------------------------------------------------------- registry --

namespace {

[[noreturn]] void DeclarationBug(const std::string& what) {
  std::fprintf(stderr, "stoker: transform declarations: %s\n", what.c_str());
  std::abort();
}

}  // namespace

TransformDecl& TransformDecl::Doc(std::string doc) {
  s_->doc = std::move(doc);
  return *this;
}
TransformDecl& TransformDecl::Torchvision(std::string note) {
  s_->torchvision = std::move(note);
  return *this;
}
TransformDecl& TransformDecl::Param(ParamSchema param) {
  s_->params.push_back(std::move(param));
  return *this;
}
TransformDecl& TransformDecl::Check(
    std::function<Status(const TransformSchema&, const Transform&)> check) {
  s_->checks.push_back(std::move(check));
  return *this;
}
TransformDecl& TransformDecl::Plan(Status (*plan)(const Transform&, Rng*, GeometryBuilder*),
                                   void (*output_size)(const Transform&, OutputSize*)) {
  ops_->plan = plan;
  ops_->output_size = output_size;
  return *this;
}
TransformDecl& TransformDecl::Image(void (*image)(const Transform&, Rng*, RgbImage*, RgbImage*)) {
  ops_->image = image;
  return *this;
}
TransformDecl& TransformDecl::Tensor(void (*tensor)(const Transform&, Rng*,
                                                    const OutputTensor&)) {
  ops_->tensor = tensor;
  return *this;
}
TransformDecl& TransformDecl::RandomGeometry() {
  s_->random_geometry = true;
  return *this;
}
TransformDecl& TransformDecl::Deterministic() {
  s_->deterministic = true;
  return *this;
}
TransformDecl& TransformDecl::NeedsBoxes() {
  s_->needs_boxes = true;
  return *this;
}
TransformDecl& TransformDecl::NotInPython() {
  s_->python = false;
  return *this;
}
TransformDecl& TransformDecl::Describe(std::function<std::string(const Transform&)> to_string) {
  s_->to_string = std::move(to_string);
  return *this;
}

namespace {

// The `fields` parameter: None (the primary image), a field name, or a list
// of field names (each a non-empty string, no repeats).
ParamSchema FieldsParam() {
  ParamSchema p;
  p.name = "fields";
  p.annotation = "Optional[Sequence[str]]";
  p.keyword_only = true;
  p.default_value = ArgValue();
  p.accepts = "None or a list of the record's image field names";
  p.set = [](const ArgValue& v, Transform* t) -> Status {
    t->fields.clear();
    if (v.is_none()) return Status::OK();
    if (v.type() == ArgValue::Type::kString) {
      if (v.as_string().empty()) return InvalidArgumentError("");
      t->fields.push_back(v.as_string());
      return Status::OK();
    }
    if (v.type() != ArgValue::Type::kList) return WrongTypeError("");
    if (v.as_list().empty()) return InvalidArgumentError("an empty list names no field");
    for (const ArgValue& e : v.as_list()) {
      if (e.type() != ArgValue::Type::kString) return WrongTypeError("");
      if (e.as_string().empty()) return InvalidArgumentError("");
      for (const std::string& f : t->fields) {
        if (f == e.as_string()) return InvalidArgumentError("'" + f + "' is named twice");
      }
      t->fields.push_back(e.as_string());
    }
    return Status::OK();
  };
  p.get = [](const Transform& t) -> ArgValue {
    if (t.fields.empty()) return ArgValue();
    std::vector<ArgValue> l;
    for (const std::string& f : t.fields) l.emplace_back(f);
    return ArgValue(std::move(l));
  };
  p.show = [](const Transform& t) -> std::string {
    if (t.fields.empty()) return "";  // the default: ToString as before
    std::string s = "[";
    for (size_t i = 0; i < t.fields.size(); ++i) s += (i ? ", '" : "'") + t.fields[i] + "'";
    return s + "]";
  };
  return p;
}

}  // namespace

TransformDecl TransformFamily::Declare(std::string name, TransformStage stage) {
  TransformSchema& s = registry_->schemas_.emplace_back();
  TransformOps& ops = registry_->ops_.emplace_back();
  s.name = std::move(name);
  s.stage = stage;
  s.section = section_;
  s.ops = &ops;
  registry_->list_.push_back(&s);
  return TransformDecl(&s, &ops);
}

void TransformFamily::NotProvided(std::string torchvision_name, std::string instead) {
  registry_->notes_.push_back({std::move(torchvision_name), std::move(instead)});
}

TransformFamily TransformRegistry::Family(std::string section, std::string intro) {
  sections_.emplace_back(section, std::move(intro));
  return TransformFamily(this, std::move(section));
}

TransformRegistry::TransformRegistry() {
  TransformFamily geometry = Family(
      "Geometry",
      "Crops, resizes, pads and flips, with torchvision's names and arguments. They are "
      "planned per sample into one region decode and one resampling pass; `ToTensor` is "
      "implied, and the list must end in a fixed size (unless `collate=\"list\"`).");
  DeclareGeometryTransforms(geometry);
  TransformFamily warps = Family(
      "Warps",
      "Geometric warps with Pillow's arithmetic; they run on the output-size image, after "
      "the crops, resizes and flips.");
  DeclareWarpTransforms(warps);
  TransformFamily colour = Family(
      "Colour", "Photometric transforms; they run on the output-size image, after the crop.");
  DeclareColorTransforms(colour);
  TransformFamily policies = Family(
      "Policies", "Automatic augmentation policies, torchvision's op lists and magnitude bins.");
  DeclarePolicyTransforms(policies);
  TransformFamily output = Family(
      "Output", "On the output tensor: the normalisation fused into the dtype conversion, and "
                "what runs after it.");
  DeclareOutputTransforms(output);
  // Every image transform (geometric, photometric, warp) names the record's
  // image fields it touches: one generic parameter, declared here, last, so
  // positional arguments are unchanged (src/pipeline/README.md, "Records").
  for (TransformSchema& s : schemas_) {
    if (!s.python || !(s.stage == TransformStage::kGeometry ||
                       s.stage == TransformStage::kImage || s.stage == TransformStage::kWarp)) {
      continue;
    }
    s.params.push_back(FieldsParam());
  }
  // A name is declared once, and a declared transform has no "not provided"
  // note: both are bugs in the declarations, found by any test that starts.
  std::set<std::string> names;
  for (const TransformSchema* s : list_) {
    if (!names.insert(s->name).second) DeclarationBug(s->name + " is declared twice");
  }
  for (const TorchvisionNote& n : notes_) {
    const TransformSchema* s = nullptr;
    for (const TransformSchema* d : list_) {
      if (d->name == n.name && d->python) s = d;
    }
    if (s != nullptr) DeclarationBug(n.name + " is declared: remove its NotProvided note");
  }
}

const TransformRegistry& TransformRegistry::Get() {
  static const TransformRegistry* registry = new TransformRegistry();
  return *registry;
}

const std::vector<const TransformSchema*>& TransformSchemas() {
  return TransformRegistry::Get().schemas();
}
const std::vector<TorchvisionNote>& TorchvisionNotes() { return TransformRegistry::Get().notes(); }
const std::vector<std::pair<std::string, std::string>>& TransformSections() {
  return TransformRegistry::Get().sections();
}

const TransformSchema* FindTransformSchema(std::string_view name) {
  for (const TransformSchema* s : TransformSchemas()) {
    if (s->name == name) return s;
  }
  return nullptr;
}

// --------------------------------------------------------- binding, checks --

namespace {

// Sets parameter `p` of `*t` from `value`, or the error in the common form.
Status SetParam(const TransformSchema& s, const ParamSchema& p, const ArgValue& value,
                Transform* t) {
  const Status st = p.set(value, t);
  if (st.ok()) return st;
  return params::ParamError(st.code(), s, p.name, p.accepts, value.Repr(), st.message());
}

Status RunChecks(const TransformSchema& s, const Transform& t) {
  for (const auto& check : s.checks) STOKER_RETURN_IF_ERROR(check(s, t));
  return Status::OK();
}

}  // namespace

StatusOr<Transform> MakeTransform(std::string_view name, const std::vector<ArgValue>& positional,
                                  const KeywordArgs& keywords) {
  const TransformSchema* s = FindTransformSchema(name);
  if (s == nullptr) {
    return InvalidArgumentError("no transform named '" + std::string(name) + "'");
  }
  const std::string who = s->name + "()";
  const size_t n = s->params.size();
  size_t max_positional = 0;  // keyword-only parameters are last
  while (max_positional < n && !s->params[max_positional].keyword_only) ++max_positional;
  if (positional.size() > max_positional) {
    return WrongTypeError(who + " takes at most " + std::to_string(max_positional) +
                          " argument" + (max_positional == 1 ? "" : "s") + " (" +
                          std::to_string(positional.size()) +
                          " given)");
  }
  std::vector<const ArgValue*> given(n, nullptr);
  for (size_t i = 0; i < positional.size(); ++i) given[i] = &positional[i];
  for (const auto& [key, value] : keywords) {
    size_t i = 0;
    while (i < n && s->params[i].name != key) ++i;
    if (i == n) {
      return WrongTypeError(who + " got an unexpected keyword argument '" + key + "'");
    }
    if (given[i] != nullptr) {
      return WrongTypeError(who + " got multiple values for argument '" + key + "'");
    }
    given[i] = &value;
  }
  Transform t;
  t.schema = s;
  for (size_t i = 0; i < n; ++i) {
    const ParamSchema& p = s->params[i];
    if (given[i] == nullptr && p.required) {
      return WrongTypeError(who + " missing required argument '" + p.name + "'");
    }
    STOKER_RETURN_IF_ERROR(SetParam(*s, p, given[i] ? *given[i] : p.default_value, &t));
  }
  STOKER_RETURN_IF_ERROR(RunChecks(*s, t));
  return t;
}

Status CheckTransform(const Transform& t) {
  if (t.schema == nullptr) {
    return InvalidArgumentError(
        "a Transform without a declaration (default-constructed): make transforms with "
        "MakeTransform or a Transform factory");
  }
  const TransformSchema& s = *t.schema;
  Transform scratch = t;
  for (const ParamSchema& p : s.params) {
    if (!p.get) continue;  // an argument that sets no field
    STOKER_RETURN_IF_ERROR(SetParam(s, p, p.get(t), &scratch));
  }
  return RunChecks(s, t);
}

std::string DescribeTransform(const Transform& t) {
  if (t.schema == nullptr) return "Transform()";
  const TransformSchema& s = *t.schema;
  if (s.to_string) return s.to_string(t);
  std::string out = s.name + "(";
  bool first = true;
  for (const ParamSchema& p : s.params) {
    std::string value;
    if (p.show) {
      value = p.show(t);
    } else if (p.get) {
      value = p.get(t).Repr();
    }
    if (value.empty()) continue;
    out += (first ? "" : ", ") + p.name + "=" + value;
    first = false;
  }
  return out + ")";
}

}  // namespace stoker
