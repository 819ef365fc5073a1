// Copyright 2026 The stoker Authors.
//
// RecordProcessor: what one worker does with a record's fields besides the
// primary image and label (pipeline/record_plan.h), writing each into its
// slot of the batch buffer:
//  - an array: its dtype and shape checked against the schema, its bytes
//    copied into the field's block (fixed shape: a memcpy of the row) or its
//    slot's region (variable shape);
//  - a label or scalar: the number; text (checked UTF-8), bytes, json
//    (checked to parse): the bytes into the slot's region;
//  - an image other than the primary one: decoded whole (ImageDecoder::
//    DecodeNative in native mode, DecodeRgb in RGB mode; the decoder's
//    max_pixels and allocation rules apply) into an HWC uint8/uint16 array,
//    checked against a declared dtype and shape, and copied into the field's
//    block (declared) or its slot's region.
// Targets (RecordFieldPlan::spec.target) follow the primary image with the
// geometry its SampleProcessor recorded for the sample (ops/targets.h): a
// mask is resampled and written [H, W] of the output; boxes become float32
// xyxy output pixels, the removed ones (counted) taking their kPerBox rows
// with them (instance masks, RecordFieldPlan::planes: each kept plane moved
// like a mask, padding 0); keypoints become float32 [K, 3]. A mask of another size than
// the image, a boxes field that is not [N, 4], per-box rows that are not one
// per box: an error of the sample naming the field.
// Field steps (LoaderOptions::field_steps, planned in RecordPlan::steps) run
// first, in order, on a copy of the sample's values; what they return is
// then checked like the source's values. Errors name the field ("field
// 'caption' (member s004.txt): not valid UTF-8", the member when the value
// names one, FieldValue::member) or the step; the caller
// adds the sample's name and applies on_error. A failed field leaves the
// sample failed: no record is delivered with a field of another sample.
//
// Thread-safety: NOT thread-safe; one per worker; its scratch (the values,
// the steps' storage, the decoder's and one decoded image) is reused from
// sample to sample (scratch_bytes(), ReleaseScratch()).
#ifndef STOKER_PIPELINE_RECORD_PROCESSOR_H_
#define STOKER_PIPELINE_RECORD_PROCESSOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "codec/decoder.h"
#include "ops/targets.h"
#include "base/rng.h"
#include "pipeline/record_plan.h"
#include "program/sample_processor.h"
#include "stoker/batch.h"
#include "stoker/source.h"

namespace stoker {

// The primary image's draw for a sample, for the image fields transformed
// with it (RecordFieldPlan::transformed): the generator as it was before the
// primary image's transforms drew, and the primary image's size.
struct ImageDraw {
  Rng rng{0};
  int width = 0, height = 0;
  // The field steps' seeds: step k gets the k-th number of Rng(step_seed).
  uint64_t step_seed = 0;
  // The boxes the primary image's draw read (RandomIoUCrop; null: none),
  // owned by the caller for the sample's processing.
  const std::vector<double>* boxes = nullptr;
};

// Whether [data, data + size) is one strict JSON document (RFC 8259: no NaN
// or Infinity) nested at most 256 levels deep. DataLoss saying where it
// fails (nlohmann's line and column), and naming NaN and Infinity when the
// text holds them (Python's json.dumps writes them by default). Its parser is
// iterative: no depth can exhaust the stack.
Status CheckJsonDocument(const uint8_t* data, size_t size);

class RecordProcessor {
 public:
  // `images`: the loader's ProcessorConfig, from which each transformed image
  // field gets its own SampleProcessor (needed when the plan has one).
  RecordProcessor(const RecordPlan* plan, const DecoderOptions& decoder = {},
                  const ProcessorConfig* images = nullptr);
  ~RecordProcessor();

  // Writes every batch field of `sample` into slot `s` of `buf`; targets
  // follow `geometry` (the primary image's, from its SampleProcessor), and
  // the boxes they remove are added to *boxes_removed; transformed image
  // fields replay `draw`.
  Status Process(const SampleData& sample, BatchBuffer* buf, int s,
                 const TargetGeometry* geometry = nullptr, int64_t* boxes_removed = nullptr,
                 const ImageDraw* draw = nullptr);

  // The boxes of `sample`'s plan_boxes field (RecordPlan::plan_boxes) as the
  // source gives them, xyxy in the image's pixels, for the transforms whose
  // draw reads them (before the image is decoded). Errors name the field.
  Status PlanBoxes(const SampleData& sample, std::vector<double>* xyxy);

  // Mask PNG rows decoded so far (all of them, or the band down to the
  // first crop's last row: ImageDecoder::DecodeNative's rows), for tests.
  int64_t mask_rows_read() const { return mask_rows_read_; }

  // Decode memory held between samples, and a way to free it.
  size_t scratch_bytes() const;
  void ReleaseScratch();

 private:
  Status ProcessField(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WriteArray(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WriteImage(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WriteTarget(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WriteMask(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WritePerBox(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  // A transformed image field: the transforms with the primary's draw.
  Status WriteTransformedImage(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf,
                               int s);
  // Runs the field steps on the source's values into values_.
  Status RunSteps(const FieldValue* source, uint64_t step_seed);

  const RecordPlan* plan_;
  const ImageDraw* draw_ = nullptr;
  // Transformed image fields: per plan field (null for the others), its
  // config, writer (uint8 HWC) and processor, and the output image.
  struct Transformed;
  std::vector<std::unique_ptr<Transformed>> transformed_;
  ImageDecoder decoder_;
  NativeImage image_;
  std::vector<FieldValue> values_;       // the record's values after the steps
  std::vector<FieldValue> step_values_;  // one step's
  std::vector<std::vector<std::vector<uint8_t>>> storage_;  // per step, per value
  // Targets: the sample's geometry, the boxes removed, and scratch.
  const TargetGeometry* geometry_ = nullptr;
  int64_t removed_ = 0;
  int64_t mask_rows_read_ = 0;
  MaskImage mask_, mask_scratch_;
  std::vector<double> numbers_;
  std::vector<float> floats_;
  std::vector<std::vector<uint8_t>> keep_;  // per plan field: a kBoxes field's kept boxes
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_RECORD_PROCESSOR_H_
