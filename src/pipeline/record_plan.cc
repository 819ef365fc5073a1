// Copyright 2026 The stoker Authors.
#include "pipeline/record_plan.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "ops/geometry.h"

namespace stoker {
namespace {

bool IsNormalize(const Transform& t) { return t.kind == Transform::Kind::kNormalize; }

std::string Join(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + ("'" + n + "'");
  return "[" + s + "]";
}

// The output layout of an RGB image field processed by `transforms`, or
// variable when they do not end in a fixed size (or collate is "list").
FieldLayout ImageLayout(const FieldSpec& spec, const std::vector<Transform>& transforms,
                        const LoaderOptions& options, int* height, int* width) {
  FieldLayout l;
  l.spec = spec;
  l.elem = ElemTypeOf(options.dtype);
  *height = *width = 0;
  if (options.collate == LoaderOptions::Collate::kBatch &&
      StaticOutputSize(transforms, height, width).ok()) {
    l.fixed = true;
    l.dims = options.layout == Layout::kNCHW ? std::vector<int64_t>{3, *height, *width}
                                             : std::vector<int64_t>{*height, *width, 3};
  } else {
    *height = *width = 0;
  }
  return l;
}

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
    case FieldKind::kImage:  // native
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

}  // namespace

bool MovesPixels(const Transform& t) {
  using K = Transform::Kind;
  if (t.kind == K::kRandomRotation || t.kind == K::kRandomAffine ||
      t.kind == K::kRandomPerspective) {
    return true;
  }
  return !t.photometric() && t.kind != K::kNormalize && t.kind != K::kRandomErasing;
}

bool AppliesTo(const Transform& t, const std::string& name, bool primary) {
  if (t.fields.empty()) return primary;
  return std::find(t.fields.begin(), t.fields.end(), name) != t.fields.end();
}

StatusOr<std::shared_ptr<const RecordPlan>> MakeRecordPlan(const Schema& schema,
                                                           const LoaderOptions& options) {
  STOKER_RETURN_IF_ERROR(CheckSchema(schema));
  auto plan = std::make_shared<RecordPlan>();
  plan->schema = schema;
  plan->image = schema.image();
  plan->label = schema.label();
  const std::string primary =
      plan->image >= 0 ? schema.fields[static_cast<size_t>(plan->image)].name : std::string();

  // Every field a transform names is an RGB image of the schema.
  for (const Transform& t : options.transforms) {
    if (t.fields.empty() && plan->image < 0) {
      return InvalidArgumentError(
          t.ToString() + " applies to the primary image, and the source has no RGB image "
          "field (its fields: " + schema.ToString() + "); name the fields it applies to");
    }
    for (const std::string& name : t.fields) {
      const int k = schema.Find(name);
      if (k < 0) {
        return InvalidArgumentError(t.ToString() + ": fields names '" + name +
                                    "', which the source does not have (its fields: " +
                                    schema.ToString() + ")");
      }
      const FieldSpec& f = schema.fields[static_cast<size_t>(k)];
      if (f.kind != FieldKind::kImage || f.image_mode != ImageMode::kRGB) {
        return InvalidArgumentError(t.ToString() + ": field '" + name + "' is " +
                                    f.ToString() +
                                    "; image transforms apply to RGB image fields only");
      }
    }
  }
  // The transforms that move pixels name one set of fields, the primary among them.
  std::set<std::string> moved;
  const Transform* first_mover = nullptr;
  for (const Transform& t : options.transforms) {
    if (!MovesPixels(t)) continue;
    std::set<std::string> names(t.fields.begin(), t.fields.end());
    if (names.empty()) names.insert(primary);
    if (first_mover == nullptr) {
      first_mover = &t;
      moved = names;
      if (!names.count(primary)) {
        return InvalidArgumentError(
            t.ToString() + " moves the pixels of " + Join(names) + " but not of the primary "
            "image '" + primary + "': transforms that crop, resize, pad, flip or warp must "
            "apply to the primary image too (its draws are shared by every field they name)");
      }
    } else if (names != moved) {
      return InvalidArgumentError(
          t.ToString() + " applies to " + Join(names) + " but " + first_mover->ToString() +
          " to " + Join(moved) + ": transforms that crop, resize, pad, flip or warp must name "
          "the same image fields, so that those fields stay aligned");
    }
  }
  for (const Transform& t : options.transforms) {
    if (AppliesTo(t, primary, true) && plan->image >= 0) plan->primary_transforms.push_back(t);
  }
  // Index of each transform in the primary's list (-1: not applied to it).
  std::vector<int> primary_index(options.transforms.size(), -1);
  for (size_t i = 0, p = 0; i < options.transforms.size(); ++i) {
    if (plan->image >= 0 && AppliesTo(options.transforms[i], primary, true)) {
      primary_index[i] = static_cast<int>(p++);
    }
  }

  for (size_t k = 0; k < schema.fields.size(); ++k) {
    if (static_cast<int>(k) == plan->image || static_cast<int>(k) == plan->label) continue;
    const FieldSpec& spec = schema.fields[k];
    RecordFieldPlan f;
    f.schema_index = static_cast<int>(k);
    f.batch_field = static_cast<int>(plan->fields.size());
    f.spec = spec;
    FieldLayout layout;
    if (spec.kind == FieldKind::kImage && spec.image_mode == ImageMode::kRGB) {
      auto config = std::make_unique<ProcessorConfig>();
      config->dct_scaling = options.dct_scaling;
      config->decoder.max_pixels = options.max_pixels;
      config->timing = options.stage_timing;
      config->scratch_budget = options.scratch_budget;
      Transform normalize = Transform::Normalize({0.f, 0.f, 0.f}, {1.f, 1.f, 1.f});
      bool normalized = false;
      for (size_t i = 0; i < options.transforms.size(); ++i) {
        const Transform& t = options.transforms[i];
        if (!AppliesTo(t, spec.name, false)) continue;
        config->transforms.push_back(t);
        config->shared_draws.push_back(primary_index[i]);
        if (primary_index[i] >= 0) plan->log_draws = true;
        if (MovesPixels(t)) config->shared_geometry = true;
        if (IsNormalize(t)) {
          normalize = t;
          normalized = true;
        }
      }
      int h = 0, w = 0;
      layout = ImageLayout(spec, config->transforms, options, &h, &w);
      f.writer = std::make_unique<PixelWriter>(options.dtype, options.layout, h, w, normalized,
                                               normalize.mean, normalize.std);
      f.config = std::move(config);
    } else {
      layout = DataLayout(spec);
    }
    plan->layouts.push_back(std::move(layout));
    plan->fields.push_back(std::move(f));
  }
  return std::shared_ptr<const RecordPlan>(std::move(plan));
}

}  // namespace stoker
