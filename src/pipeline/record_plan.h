// Copyright 2026 The stoker Authors.
//
// RecordPlan: what the engine does with each field of a source's schema
// (stoker/record.h), decided once when a Loader is made.
//
//  - The primary image (Schema::image()) takes today's path (SampleProcessor
//    into the image block or the collate="list" regions) with every
//    transform of LoaderOptions::transforms: its pixels are exactly what
//    they are for an image + label source.
//  - The primary label goes to the labels array, as today.
//  - Every other field is a batch field (BatchShape::fields, in schema
//    order), untransformed: arrays, labels, scalars, text, bytes and json are
//    checked against the schema and copied into their slot; other image
//    fields are decoded (native mode: as stored; RGB mode: 8-bit RGB) into
//    an HWC uint8/uint16 array, stacked when their dtype and shape are
//    declared. Under collate="pad" a variable array field is also padded when
//    its batch is delivered (FieldLayout::pad; pipeline/record_pad.h).
//
// Targets (LoaderOptions::targets, or FieldSpec::target set by the source):
// a mask, boxes, keypoints or per-box field follows the primary image through
// its geometric transforms (ops/targets.h; pipeline/record_processor.h); it
// needs a primary image, the kind and shape its role takes (TargetDecl), and
// a kPerBox field a kBoxes field to follow. A transform whose draw reads the
// boxes (RandomIoUCrop) needs a boxes field (plan_boxes) that no field step
// rewrites.
//
// Rules checked here (InvalidArgument naming the field): the schema is valid
// (CheckSchema); transforms need an RGB image field (the primary one); under
// collate="pad" no field may be called "<padded field>_lengths"; a
// transform's `fields` name RGB image fields of the source's record (not
// targets); the geometric transforms all name the same fields, the primary
// image among them and every field another transform names; a field
// step runs on a record source only, names fields the record has (not the
// primary image or label) and adds new names, of kinds other than image.
//
// Thread-safety: immutable after MakeRecordPlan; shared by the workers.
#ifndef STOKER_PIPELINE_RECORD_PLAN_H_
#define STOKER_PIPELINE_RECORD_PLAN_H_

#include <memory>
#include <vector>

#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/record.h"

namespace stoker {

struct RecordFieldPlan {
  int schema_index = -1;  // into the schema (and SampleData::fields)
  int batch_field = -1;   // into BatchShape::fields
  FieldSpec spec;         // as delivered (a target's: its output dtype and shape)
  // Targets (spec.target != kNone): the field as the source gives it, the
  // box rules (kBoxes) and the kBoxes field a kPerBox field follows (an
  // index into RecordPlan::fields).
  FieldSpec source_spec;
  double min_size = 1.0;
  double min_area_fraction = 0.0;
  int follows = -1;
  // A kPerBox field of uint8/uint16 [N, H, W]: instance masks, a plane per
  // box, each moved like a mask (padding 0) and delivered [N', H', W'].
  bool planes = false;
  // An RGB image field named by a transform's `fields` (Transform::fields):
  // it takes the transforms that name it, and every geometric one, with the
  // primary image's draw; delivered uint8 [H, W, 3] of the output size.
  bool transformed = false;
};

// A field step (LoaderOptions::field_steps) as planned: the schema indices of
// its values (its fields, then its additions) and their specs.
struct FieldStepPlan {
  FieldStep step;
  std::vector<int> indices;
  std::vector<FieldSpec> specs;
};

struct RecordPlan {
  // The source's schema, then the fields the steps add (in step order).
  Schema schema;
  int source_fields = 0;  // how many of them the source reads (SampleData::num_fields)
  std::vector<FieldStepPlan> steps;
  int image = -1;  // the primary image's schema index, or -1
  int label = -1;  // the primary label's, or -1
  std::vector<RecordFieldPlan> fields;  // batch fields, in schema order
  std::vector<FieldLayout> layouts;     // BatchShape::fields
  bool targets = false;  // a field follows the image (FieldSpec::target)
  // The boxes field (index into `fields`) whose boxes are read before the
  // image is decoded, for the transforms whose draw depends on them
  // (TransformSchema::needs_boxes: RandomIoUCrop); -1 when none needs them.
  int plan_boxes = -1;

  bool records() const { return !fields.empty(); }
};

// Plans `schema` for `options`. Errors: InvalidArgument, as the header says.
// `in_height` x `in_width`: the source's FixedImageSize (0: none), for the
// output size a mask is stacked at.
StatusOr<std::shared_ptr<const RecordPlan>> MakeRecordPlan(const Schema& schema,
                                                           const LoaderOptions& options,
                                                           int in_height = 0, int in_width = 0);

// The batch layout of a field that is not the primary image (fixed when every
// sample has one dtype and shape).
FieldLayout DataLayout(const FieldSpec& spec);

}  // namespace stoker

#endif  // STOKER_PIPELINE_RECORD_PLAN_H_
