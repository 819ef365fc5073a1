// Copyright 2026 The stoker Authors.
#include "pipeline/record_plan.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ops/geometry.h"
#include "stoker/transform_schema.h"

namespace stoker {

FieldLayout DataLayout(const FieldSpec& spec) {
  FieldLayout l;
  l.spec = spec;
  switch (spec.kind) {
    case FieldKind::kLabel:
      l.elem = ElemType::kInt64;
      l.fixed = true;
      break;
    case FieldKind::kScalar:
      l.elem = spec.dtype;
      l.fixed = true;
      break;
    case FieldKind::kArray:
    case FieldKind::kImage:
      l.elem = spec.dtype;
      l.fixed = spec.fixed();
      if (l.fixed) l.dims = spec.shape;
      break;
    case FieldKind::kText:
    case FieldKind::kBytes:
    case FieldKind::kJson:
      l.elem = ElemType::kUint8;
      break;
  }
  return l;
}

namespace {

// Appends the steps' additions to plan->schema and resolves their fields.
Status PlanFieldSteps(const std::vector<FieldStep>& steps, RecordPlan* plan) {
  Schema& full = plan->schema;
  if (!steps.empty() && full.IsImageLabel()) {
    return InvalidArgumentError("Lambda(" + steps.front().name + ", fields=...) runs on the "
                                "fields of records, and the source yields (image, label) "
                                "samples: use Lambda(fn) without fields= on the image");
  }
  for (const FieldStep& step : steps) {
    const std::string what = "Lambda(" + step.name + ", fields=...)";
    if (step.callback == nullptr) return InvalidArgumentError(what + ": no function");
    FieldStepPlan sp;
    sp.step = step;
    for (const std::string& name : step.fields) {
      const int k = full.Find(name);
      if (k < 0) {
        return InvalidArgumentError(what + ": '" + name + "' is not a field of the record (its "
                                    "fields: " + full.ToString() + ")");
      }
      if (k == plan->image) {
        return InvalidArgumentError(what + ": '" + name + "' is the transformed image: a "
                                    "Lambda without fields= runs on it");
      }
      if (k == plan->label) {
        return InvalidArgumentError(what + ": '" + name + "' is the primary label (the labels "
                                    "array), which field steps do not rewrite");
      }
      sp.indices.push_back(k);
    }
    for (const FieldSpec& add : step.adds) {
      if (full.Find(add.name) >= 0) {
        return InvalidArgumentError(what + ": it adds '" + add.name + "', already a field of "
                                    "the record: name it in fields= to rewrite it");
      }
      if (add.kind == FieldKind::kImage) {
        return InvalidArgumentError(what + ": it adds '" + add.name + "' as an image; added "
                                    "fields are arrays, labels, scalars, text, bytes or json");
      }
      sp.indices.push_back(static_cast<int>(full.fields.size()));
      full.fields.push_back(add);
    }
    for (int k : sp.indices) sp.specs.push_back(full.fields[static_cast<size_t>(k)]);
    plan->steps.push_back(std::move(sp));
  }
  Status valid = CheckSchema(full);
  if (!valid.ok() && !steps.empty()) return valid.WithContext("the fields Lambda steps add");
  return valid;
}

std::string FieldList(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + "]";
}

// Checks the transforms' `fields` against the schema; *named: the image
// fields other than the primary one that some transform names.
Status PlanTransformFields(const std::vector<Transform>& transforms, const RecordPlan& plan,
                           std::vector<std::string>* named) {
  const Schema& schema = plan.schema;
  const std::string primary =
      plan.image >= 0 ? schema.fields[static_cast<size_t>(plan.image)].name : "";
  const Transform* first_geometric = nullptr;
  std::vector<std::string> geometric_set;
  for (const Transform& t : transforms) {
    if (t.schema == nullptr) continue;
    const TransformStage stage = t.schema->stage;
    const bool geometric = stage == TransformStage::kGeometry || stage == TransformStage::kWarp;
    const std::string who = t.ToString();
    if (!t.fields.empty() && !geometric && stage != TransformStage::kImage) {
      return InvalidArgumentError(who + ": fields= is for image transforms (geometric and "
                                  "photometric); " + TransformStageName(stage) +
                                  " transforms run on the primary image only");
    }
    for (const std::string& name : t.fields) {
      const int k = schema.Find(name);
      if (k < 0 || k >= plan.source_fields) {
        return InvalidArgumentError(who + ": fields: '" + name + "' is not a field of the "
                                    "record (its fields: " + schema.ToString() + ")");
      }
      const FieldSpec& f = schema.fields[static_cast<size_t>(k)];
      if (f.kind != FieldKind::kImage) {
        return InvalidArgumentError(who + ": fields: '" + name + "' is a " +
                                    FieldKindName(f.kind) + " field, not an image");
      }
      if (f.image_mode != ImageMode::kRGB) {
        return InvalidArgumentError(who + ": fields: '" + name + "' is a native-mode image; "
                                    "transforms run on RGB image fields (declare it with mode "
                                    "'rgb')");
      }
      if (f.target != TargetRole::kNone) {
        return InvalidArgumentError(who + ": fields: '" + name + "' is a " +
                                    TargetRoleName(f.target) + " target, which follows the "
                                    "image's geometry by itself");
      }
      if (name != primary &&
          std::find(named->begin(), named->end(), name) == named->end()) {
        named->push_back(name);
      }
    }
    if (!geometric) continue;
    std::vector<std::string> set = t.fields.empty() ? std::vector<std::string>{primary} : t.fields;
    std::sort(set.begin(), set.end());
    if (std::find(set.begin(), set.end(), primary) == set.end()) {
      return InvalidArgumentError(who + ": fields must name the primary image '" + primary +
                                  "': geometric transforms draw on it and replay the draw on "
                                  "the other fields");
    }
    if (first_geometric == nullptr) {
      first_geometric = &t;
      geometric_set = set;
    } else if (set != geometric_set) {
      return InvalidArgumentError(who + " and " + first_geometric->ToString() + " name other "
                                  "image fields (" + FieldList(set) + ", " +
                                  FieldList(geometric_set) + "): every geometric transform "
                                  "names the same fields");
    }
  }
  if (first_geometric != nullptr) {
    for (const std::string& name : *named) {
      if (std::find(geometric_set.begin(), geometric_set.end(), name) == geometric_set.end()) {
        return InvalidArgumentError(
            "'" + name + "' is transformed, and the geometric transform " +
            first_geometric->ToString() + " does not name it: every geometric transform names "
            "every transformed image field (fields=" +
            FieldList({primary, name}) + ")");
      }
    }
  }
  return Status::OK();
}

// Resolves each kPerBox field's kBoxes field; targets on the primary image
// or label are refused.
Status PlanTargets(RecordPlan* plan) {
  const Schema& full = plan->schema;
  for (int k : {plan->image, plan->label}) {
    if (k >= 0 && full.fields[static_cast<size_t>(k)].target != TargetRole::kNone) {
      return InvalidArgumentError("field '" + full.fields[static_cast<size_t>(k)].name +
                                  "' is the primary image or label, not a target");
    }
  }
  for (RecordFieldPlan& f : plan->fields) {
    if (f.spec.target != TargetRole::kPerBox) continue;
    int found = -1, boxes = 0;
    for (size_t j = 0; j < plan->fields.size(); ++j) {
      const FieldSpec& b = plan->fields[j].spec;
      if (b.target != TargetRole::kBoxes) continue;
      ++boxes;
      if (f.spec.follows.empty() ? boxes == 1 : b.name == f.spec.follows) {
        found = static_cast<int>(j);
      }
    }
    if (f.spec.follows.empty() && boxes != 1) found = -1;
    if (found < 0) {
      return InvalidArgumentError(
          "field '" + f.spec.name + "' (target per_box) follows " +
          (f.spec.follows.empty() ? std::string("no named field, and the record has ") +
                                        std::to_string(boxes) + " boxes fields (name one with "
                                        "follows=)"
                                  : "'" + f.spec.follows + "', not a boxes field of the record"));
    }
    f.follows = found;
  }
  return Status::OK();
}

// The source's target roles with LoaderOptions::targets applied.
Status ApplyTargetDecls(const std::vector<TargetDecl>& decls, Schema* schema) {
  for (const TargetDecl& d : decls) {
    const int k = schema->Find(d.field);
    if (k < 0) {
      return InvalidArgumentError("targets: '" + d.field + "' is not a field of the record (its "
                                  "fields: " + schema->ToString() + ")");
    }
    if (d.role == TargetRole::kNone) {
      return InvalidArgumentError("targets: field '" + d.field + "' has no role (mask, boxes, "
                                  "keypoints or per_box)");
    }
    if (!(d.min_size >= 0) || !(d.min_area_fraction >= 0 && d.min_area_fraction <= 1)) {
      return InvalidArgumentError("targets: field '" + d.field + "': min_size must be >= 0 and "
                                  "min_area_fraction in [0, 1]");
    }
    FieldSpec& f = schema->fields[static_cast<size_t>(k)];
    f.target = d.role;
    f.box_format = d.box_format;
    f.ignore_index = d.ignore_index;
    f.follows = d.follows;
  }
  return Status::OK();
}

// The delivered spec of target field `f` (already role-checked), or an error
// naming what its role needs.
Status PlanTarget(const LoaderOptions& options, int out_h, int out_w, bool fixed_out,
                  RecordFieldPlan* fp) {
  FieldSpec& spec = fp->spec;
  const FieldSpec& src = fp->source_spec;
  const std::string what = "field '" + src.name + "' (target " +
                           TargetRoleName(src.target) + ")";
  auto dims_known = [&](size_t n) { return src.shape_known && src.shape.size() == n; };
  switch (src.target) {
    case TargetRole::kMask: {
      const bool native = src.kind == FieldKind::kImage && src.image_mode == ImageMode::kNative;
      if (!native && src.kind != FieldKind::kArray) {
        return InvalidArgumentError(what + ": a mask is an array [H, W] of uint8 or uint16, or a "
                                    "native-mode image of one channel; got " + src.ToString());
      }
      if (src.dtype_known && src.dtype != ElemType::kUint8 && src.dtype != ElemType::kUint16) {
        return InvalidArgumentError(what + ": a mask is uint8 or uint16, got " +
                                    ElemTypeName(src.dtype));
      }
      if (!native && src.shape_known &&
          !(src.shape.size() == 2 || (src.shape.size() == 3 && src.shape[2] == 1))) {
        return InvalidArgumentError(what + ": a mask is [H, W] (or [H, W, 1]), got " +
                                    src.ToString());
      }
      spec.kind = FieldKind::kArray;
      spec.dtype = src.dtype;
      spec.dtype_known = src.dtype_known;
      spec.shape = fixed_out ? std::vector<int64_t>{out_h, out_w} : std::vector<int64_t>{-1, -1};
      spec.shape_known = true;
      return Status::OK();
    }
    case TargetRole::kBoxes:
      if (src.kind != FieldKind::kArray ||
          (src.shape_known && !(dims_known(2) && (src.shape[1] == 4 || src.shape[1] < 0)))) {
        return InvalidArgumentError(what + ": boxes are an array [N, 4], got " + src.ToString());
      }
      spec.dtype = ElemType::kFloat32;
      spec.dtype_known = true;
      spec.shape = {-1, 4};
      spec.shape_known = true;
      fp->min_size = 1.0;
      fp->min_area_fraction = 0.0;
      for (const TargetDecl& d : options.targets) {
        if (d.field == src.name) {
          fp->min_size = d.min_size;
          fp->min_area_fraction = d.min_area_fraction;
        }
      }
      return Status::OK();
    case TargetRole::kKeypoints:
      if (src.kind != FieldKind::kArray ||
          (src.shape_known &&
           !(dims_known(2) && (src.shape[1] == 2 || src.shape[1] == 3 || src.shape[1] < 0)))) {
        return InvalidArgumentError(what + ": keypoints are an array [K, 2] or [K, 3], got " +
                                    src.ToString());
      }
      spec.dtype = ElemType::kFloat32;
      spec.dtype_known = true;
      spec.shape = {src.shape_known ? src.shape[0] : -1, 3};
      spec.shape_known = true;
      return Status::OK();
    case TargetRole::kPerBox:
      if (src.kind != FieldKind::kArray || (src.shape_known && src.shape.empty())) {
        return InvalidArgumentError(what + ": per-box rows are an array [N, ...], got " +
                                    src.ToString());
      }
      if (src.shape_known) spec.shape[0] = -1;
      // [N, H, W] of uint8/uint16: instance masks (Coco(masks="instances")),
      // a plane per box moved like a mask, the output's size once moved.
      if (src.shape_known && src.shape.size() == 3 && src.dtype_known &&
          (src.dtype == ElemType::kUint8 || src.dtype == ElemType::kUint16)) {
        fp->planes = true;
        spec.shape = fixed_out ? std::vector<int64_t>{-1, out_h, out_w}
                               : std::vector<int64_t>{-1, -1, -1};
      }
      return Status::OK();
    case TargetRole::kNone:
      break;
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<const RecordPlan>> MakeRecordPlan(const Schema& source_schema,
                                                           const LoaderOptions& options,
                                                           int in_height, int in_width) {
  STOKER_RETURN_IF_ERROR(CheckSchema(source_schema));
  Schema schema = source_schema;
  STOKER_RETURN_IF_ERROR(ApplyTargetDecls(options.targets, &schema));
  auto plan = std::make_shared<RecordPlan>();
  plan->schema = schema;
  plan->image = schema.image();
  plan->label = schema.label();
  if (plan->image < 0 && !options.transforms.empty()) {
    return InvalidArgumentError(
        options.transforms.front().ToString() + " is an image transform, and the source has "
        "no RGB image field (its fields: " + schema.ToString() + ")");
  }
  plan->source_fields = static_cast<int>(schema.fields.size());
  STOKER_RETURN_IF_ERROR(PlanFieldSteps(options.field_steps, plan.get()));
  const Schema& full = plan->schema;
  // The output size a mask is stacked at (else a list per batch).
  int out_h = 0, out_w = 0;
  const bool fixed_out = options.collate != LoaderOptions::Collate::kList &&
                         StaticOutputSize(options.transforms, in_height, in_width, &out_h,
                                          &out_w).ok();
  std::vector<std::string> transformed;
  STOKER_RETURN_IF_ERROR(PlanTransformFields(options.transforms, *plan, &transformed));
  for (size_t i = 0; i < options.field_collate.size(); ++i) {
    const std::string& name = options.field_collate[i].first;
    const int k = full.Find(name);
    if (k < 0) {
      return InvalidArgumentError("collate: '" + name + "' is not a field of the record (its "
                                  "fields: " + full.ToString() + ")");
    }
    if (k == plan->image || k == plan->label) {
      return InvalidArgumentError("collate: '" + name + "' is the primary " +
                                  (k == plan->image ? "image" : "label") + ", batched by the "
                                  "string form (collate='list' for per-sample images); name "
                                  "other fields in the dict");
    }
    for (size_t j = 0; j < i; ++j) {
      if (options.field_collate[j].first == name) {
        return InvalidArgumentError("collate: '" + name + "' is named twice");
      }
    }
  }
  auto collate_of = [&](const std::string& name) {
    for (const auto& [n, c] : options.field_collate) {
      if (n == name) return c;
    }
    return options.collate;
  };
  for (size_t k = 0; k < full.fields.size(); ++k) {
    if (static_cast<int>(k) == plan->image || static_cast<int>(k) == plan->label) continue;
    RecordFieldPlan f;
    f.schema_index = static_cast<int>(k);
    f.batch_field = static_cast<int>(plan->fields.size());
    f.spec = full.fields[k];
    f.source_spec = f.spec;
    if (std::find(transformed.begin(), transformed.end(), f.spec.name) != transformed.end()) {
      // The output size when the transforms end in one, else its own.
      f.transformed = true;
      f.spec.dtype = ElemType::kUint8;
      f.spec.dtype_known = true;
      f.spec.shape = fixed_out ? std::vector<int64_t>{out_h, out_w, 3}
                               : std::vector<int64_t>{-1, -1, 3};
      f.spec.shape_known = true;
    }
    if (f.spec.target != TargetRole::kNone) {
      if (static_cast<int>(k) >= plan->source_fields) {
        return InvalidArgumentError("field '" + f.spec.name + "': a Lambda's addition cannot be "
                                    "a target");
      }
      if (plan->image < 0) {
        return InvalidArgumentError("field '" + f.spec.name + "' is a " +
                                    TargetRoleName(f.spec.target) + " target, and the source "
                                    "has no RGB image field for it to follow (its fields: " +
                                    full.ToString() + ")");
      }
      STOKER_RETURN_IF_ERROR(PlanTarget(options, out_h, out_w, fixed_out, &f));
      plan->targets = true;
    }
    plan->layouts.push_back(DataLayout(f.spec));
    FieldLayout& l = plan->layouts.back();
    l.pad = collate_of(f.spec.name) == LoaderOptions::Collate::kPad &&
            f.spec.kind == FieldKind::kArray &&
            !l.fixed;
    if (l.pad && full.Find(f.spec.name + "_lengths") >= 0) {
      return InvalidArgumentError("collate=\"pad\" adds the key '" + f.spec.name +
                                  "_lengths' (the shapes of field '" + f.spec.name +
                                  "'), and the source has a field of that name");
    }
    plan->fields.push_back(std::move(f));
  }
  STOKER_RETURN_IF_ERROR(PlanTargets(plan.get()));
  // Per-box rows of rank 3 and more that are not instance masks (planes)
  // follow their boxes when boxes are removed, but no geometric transform
  // moves their values: refused rather than delivered out of register.
  bool geometric = false;
  for (const Transform& t : options.transforms) {
    geometric |= t.schema != nullptr && (t.schema->stage == TransformStage::kGeometry ||
                                         t.schema->stage == TransformStage::kWarp);
  }
  // A transform whose draw reads the boxes (RandomIoUCrop) reads the first
  // boxes field as the source gives it, before the image is decoded: so
  // there must be one, and no field step may rewrite it.
  for (const Transform& t : options.transforms) {
    if (t.schema == nullptr || !t.schema->needs_boxes || plan->plan_boxes >= 0) continue;
    for (size_t k = 0; k < plan->fields.size() && plan->plan_boxes < 0; ++k) {
      if (plan->fields[k].spec.target == TargetRole::kBoxes) plan->plan_boxes = static_cast<int>(k);
    }
    if (plan->plan_boxes < 0) {
      return InvalidArgumentError(
          t.ToString() + " draws its crop from the sample's boxes, and no field is a boxes "
          "target: give the Loader targets={'<field>': 'boxes'} (or {'<field>': {'role': "
          "'boxes', 'format': ...}}) on a record source with boxes (the fields: " +
          full.ToString() + ")");
    }
    const int boxes_index = plan->fields[static_cast<size_t>(plan->plan_boxes)].schema_index;
    for (const FieldStepPlan& sp : plan->steps) {
      if (std::find(sp.indices.begin(), sp.indices.end(), boxes_index) != sp.indices.end()) {
        return InvalidArgumentError(
            "Lambda(" + sp.step.name + ", fields=...) rewrites '" +
            plan->fields[static_cast<size_t>(plan->plan_boxes)].spec.name + "', and " +
            t.ToString() + " draws its crop from those boxes before the steps run");
      }
    }
  }
  for (const RecordFieldPlan& f : plan->fields) {
    if (geometric && f.spec.target == TargetRole::kPerBox && !f.planes && f.spec.shape_known &&
        f.spec.shape.size() >= 3) {
      return InvalidArgumentError(
          "field '" + f.spec.name + "' (target per_box) is " + f.source_spec.ToString() +
          ": geometric transforms move per-box rows of rank 3 only as instance masks, uint8 "
          "or uint16 [N, H, W]; use that layout, or no geometric transform");
    }
  }
  return std::shared_ptr<const RecordPlan>(std::move(plan));
}

}  // namespace stoker
