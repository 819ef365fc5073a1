// Copyright 2026 The stoker Authors.
//
// PadFields: collate="pad" (LoaderOptions::Collate::kPad). When a record
// batch is delivered, every field with FieldLayout::pad (an array field whose
// shape varies) is written once more, padded: the batch's samples of the
// field, each placed at the origin of a [max dims...] box filled with the pad
// value, into one block [size, max dims...] of the buffer (a pooled region,
// BatchBuffer::ReservePadded: no allocation in steady state), with each
// sample's shape in PaddedField::lengths. The per-sample slots stay as they
// are (the output cache, rank padding and the carry move those), so padding
// is a pure function of the delivered samples: identical for any thread
// count, after skips, on every rank and after a resume.
//
// Errors: InvalidArgument naming the field and the sample ids when two
// samples of one batch differ in dtype or number of dimensions (the first
// sample sets them); ResourceExhausted, before anything is reserved, when
// the batch's padded blocks together would pass `max_padded_bytes`
// (LoaderOptions::max_padded_bytes), naming the field that crosses it, its
// block and the sample that sets each dimension; ResourceExhausted when the
// allocator fails.
// Thread-safety: the caller owns the buffer (the consumer, on a complete
// batch).
#ifndef STOKER_PIPELINE_RECORD_PAD_H_
#define STOKER_PIPELINE_RECORD_PAD_H_

#include "stoker/batch.h"
#include "stoker/status.h"

namespace stoker {

// Whether any field of `shape` is padded.
bool HasPaddedFields(const BatchShape& shape);

// Pads every FieldLayout::pad field of `buf`'s `size` samples with
// `pad_value` (finite; converted to the field's dtype: integers truncated
// toward zero and clamped to the type's range, nonzero for bool,
// round-to-nearest for float16/bfloat16), unless the padded blocks of the
// batch would together pass `max_padded_bytes` (then nothing is written).
Status PadFields(BatchBuffer* buf, double pad_value, int64_t max_padded_bytes);

}  // namespace stoker

#endif  // STOKER_PIPELINE_RECORD_PAD_H_
