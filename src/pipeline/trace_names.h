// Copyright 2026 The stoker Authors.
//
// The span names of a loader's steps (TraceNames, trace/sample_trace.h),
// made from its options once: each transform by its name; the fused
// resample by the geometric transforms it runs (e.g.
// "RandomResizedCrop+RandomHorizontalFlip (resample)"); the conversion into
// the slot by what it does ("write (Normalize, float32, NCHW)").
// Thread-safety: a pure function (Tracer::Intern is thread-safe).
#ifndef STOKER_PIPELINE_TRACE_NAMES_H_
#define STOKER_PIPELINE_TRACE_NAMES_H_

#include <string>

#include "ops/transform_ops.h"  // TransformShortName
#include "stoker/loader.h"
#include "trace/sample_trace.h"

namespace stoker {

TraceNames MakeTraceNames(Tracer* tracer, const LoaderOptions& options);

}  // namespace stoker

#endif  // STOKER_PIPELINE_TRACE_NAMES_H_
