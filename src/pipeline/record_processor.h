// Copyright 2026 The stoker Authors.
//
// RecordProcessor: what one worker does with a record's fields besides the
// primary image and label (pipeline/record_plan.h), writing each into its
// slot of the batch buffer:
//  - another RGB image: decoded and transformed by a SampleProcessor of its
//    own, which replays the primary image's draws (DrawLog) for the
//    transforms they share and draws the others from the field's own stream
//    (HashSeed(seed, epoch, id, 1 + field index));
//  - a native image: decoded as stored (ImageDecoder::DecodeNative), or raw
//    pixels copied, as [H, W, C];
//  - an array: its dtype and shape checked against the schema, its bytes
//    copied into the field's block (fixed shape: a memcpy of the row) or its
//    slot's region (variable shape);
//  - a label or scalar: the number; text (checked UTF-8), bytes, json
//    (checked to parse): the bytes into the slot's region.
// Errors name the field ("field 'caption': not valid UTF-8"); the caller
// adds the sample's name and applies on_error. A failed field leaves the
// sample failed: no record is delivered with a field of another sample.
//
// Thread-safety: NOT thread-safe; one per worker. Owns its scratch (the
// field processors' and a decoder's), reused from sample to sample.
#ifndef STOKER_PIPELINE_RECORD_PROCESSOR_H_
#define STOKER_PIPELINE_RECORD_PROCESSOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "codec/decoder.h"
#include "pipeline/record_plan.h"
#include "pipeline/sample_processor.h"
#include "stoker/batch.h"
#include "stoker/source.h"

namespace stoker {

class RecordProcessor {
 public:
  explicit RecordProcessor(const RecordPlan* plan, const DecoderOptions& decoder);

  // Where the primary image's processor logs its draws (null when no field
  // replays them).
  DrawLog* draw_log() { return plan_->log_draws ? &log_ : nullptr; }

  // Writes every batch field of `sample` into slot `s` of `buf`. `seed`,
  // `epoch`: the loader's, for the fields' own random streams.
  Status Process(const SampleData& sample, uint64_t seed, int64_t epoch, BatchBuffer* buf, int s,
                 StageTimes* times);

  size_t scratch_bytes() const;
  // Frees the field processors' scratch above their budget; true if any did.
  bool TrimScratch();

 private:
  Status ProcessField(const RecordFieldPlan& f, const FieldValue& v, const SampleData& sample,
                      uint64_t seed, int64_t epoch, BatchBuffer* buf, int s, StageTimes* times);
  Status WriteImage(const RecordFieldPlan& f, const FieldValue& v, const SampleData& sample,
                    uint64_t seed, int64_t epoch, BatchBuffer* buf, int s, StageTimes* times);
  Status WriteNative(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);
  Status WriteArray(const RecordFieldPlan& f, const FieldValue& v, BatchBuffer* buf, int s);

  const RecordPlan* plan_;
  std::vector<std::unique_ptr<SampleProcessor>> images_;  // per plan field (null: not RGB)
  ImageDecoder native_;
  DrawLog log_;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_RECORD_PROCESSOR_H_
