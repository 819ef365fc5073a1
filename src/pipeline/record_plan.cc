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
  for (size_t k = 0; k < schema.fields.size(); ++k) {
    if (static_cast<int>(k) == plan->image || static_cast<int>(k) == plan->label) continue;
    RecordFieldPlan f;
    f.schema_index = static_cast<int>(k);
    f.batch_field = static_cast<int>(plan->fields.size());
    f.spec = schema.fields[k];
    plan->layouts.push_back(DataLayout(f.spec));
    plan->fields.push_back(std::move(f));
  }
  return std::shared_ptr<const RecordPlan>(std::move(plan));
}

}  // namespace stoker
