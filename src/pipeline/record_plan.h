// Copyright 2026 The stoker Authors.
//
// RecordPlan: what the engine does with each field of a source's schema
// (stoker/record.h), decided once when a Loader is made.
//
//  - The primary image takes today's path (SampleProcessor into the image
//    block or the collate="list" regions) with the transforms that apply to
//    it: those without `fields`, and those naming it. Its pixels are exactly
//    what they are for an image + label source.
//  - The primary label goes to the labels array, as today.
//  - Every other field is a batch field (BatchShape::fields, in schema
//    order): another RGB image runs a SampleProcessor of its own with the
//    transforms naming it, replaying the primary's draws for the transforms
//    they share (one draw per transform); a native image is decoded as
//    stored, untransformed; arrays, labels, scalars, text, bytes and json are
//    checked against the schema and copied into their slot.
//
// Rules checked here (InvalidArgument naming the transform or field):
// every name in a transform's `fields` is an RGB image field of the schema;
// the transforms that move pixels (crops, resizes, pads, flips, warps) name
// the same image fields, among them the primary image (so their draws are
// shared and the fields stay aligned); a Normalize applies to the fields it
// names.
//
// Thread-safety: immutable after MakeRecordPlan; shared by the workers.
#ifndef STOKER_PIPELINE_RECORD_PLAN_H_
#define STOKER_PIPELINE_RECORD_PLAN_H_

#include <memory>
#include <string>
#include <vector>

#include "ops/convert.h"
#include "pipeline/sample_processor.h"
#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/record.h"

namespace stoker {

struct RecordFieldPlan {
  int schema_index = -1;  // into the schema (and SampleData::fields)
  int batch_field = -1;   // into BatchShape::fields
  FieldSpec spec;
  // RGB image fields: their processor's settings and pixel writer.
  std::unique_ptr<ProcessorConfig> config;
  std::unique_ptr<PixelWriter> writer;
};

struct RecordPlan {
  Schema schema;
  int image = -1;  // the primary image's schema index, or -1
  int label = -1;  // the primary label's, or -1
  // The transforms of the primary image (LoaderOptions::transforms for an
  // image + label source).
  std::vector<Transform> primary_transforms;
  std::vector<RecordFieldPlan> fields;  // batch fields, in schema order
  std::vector<FieldLayout> layouts;     // BatchShape::fields
  // Whether another image field replays the primary's draws (the primary
  // processor then logs them).
  bool log_draws = false;

  bool records() const { return !fields.empty(); }
};

// Plans `schema` for `options` (output dtype, layout, collate, transforms).
// Errors: InvalidArgument, as the header says.
StatusOr<std::shared_ptr<const RecordPlan>> MakeRecordPlan(const Schema& schema,
                                                           const LoaderOptions& options);

// Whether `t` moves pixels (a crop, resize, pad, flip or warp): such
// transforms must apply to the same image fields.
bool MovesPixels(const Transform& t);
// Whether `t` applies to the field `name` (`primary`: it is the primary
// image, which a transform without `fields` applies to).
bool AppliesTo(const Transform& t, const std::string& name, bool primary);

}  // namespace stoker

#endif  // STOKER_PIPELINE_RECORD_PLAN_H_
