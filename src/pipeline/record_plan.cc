// Copyright 2026 The stoker Authors.
#include "pipeline/record_plan.h"

#include <string>
#include <utility>

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

}  // namespace

StatusOr<std::shared_ptr<const RecordPlan>> MakeRecordPlan(const Schema& schema,
                                                           const LoaderOptions& options) {
  STOKER_RETURN_IF_ERROR(CheckSchema(schema));
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
  for (size_t k = 0; k < full.fields.size(); ++k) {
    if (static_cast<int>(k) == plan->image || static_cast<int>(k) == plan->label) continue;
    RecordFieldPlan f;
    f.schema_index = static_cast<int>(k);
    f.batch_field = static_cast<int>(plan->fields.size());
    f.spec = full.fields[k];
    plan->layouts.push_back(DataLayout(f.spec));
    FieldLayout& l = plan->layouts.back();
    l.pad = options.collate == LoaderOptions::Collate::kPad && f.spec.kind == FieldKind::kArray &&
            !l.fixed;
    if (l.pad && full.Find(f.spec.name + "_lengths") >= 0) {
      return InvalidArgumentError("collate=\"pad\" adds the key '" + f.spec.name +
                                  "_lengths' (the shapes of field '" + f.spec.name +
                                  "'), and the source has a field of that name");
    }
    plan->fields.push_back(std::move(f));
  }
  return std::shared_ptr<const RecordPlan>(std::move(plan));
}

}  // namespace stoker
