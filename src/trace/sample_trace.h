// Copyright 2026 The stoker Authors.
//
// SampleTrace: what a worker needs to record the spans of the sample in
// hand -- the tracer, the worker's lane, the span names of the loader's
// steps, and the labels every span carries (sample id, batch, epoch). The
// worker makes one per sample only while tracing is on and passes it down
// (StageTimes::trace); a null SampleTrace means "not tracing", so a step
// reads no extra clock then.
//
// Thread-safety: used by the owning worker only.
#ifndef STOKER_TRACE_SAMPLE_TRACE_H_
#define STOKER_TRACE_SAMPLE_TRACE_H_

#include <cstdint>
#include <vector>

#include "stoker/trace.h"

namespace stoker {

// Span names of a loader's steps, interned once (Tracer::Intern).
struct TraceNames {
  std::vector<uint16_t> transform;  // per transform (index into the loader's list)
  uint16_t resample = 0;        // the fused crop/resize/flip resample, before photometric ops
  uint16_t resample_write = 0;  // the fused resample written straight into the slot
  uint16_t write = 0;           // the conversion into the slot (Normalize, dtype, layout)
  uint16_t tensor = 0;          // the ops on the written sample (RandomErasing)
};

struct SampleTrace {
  Tracer* tracer = nullptr;
  TraceLane* lane = nullptr;
  const TraceNames* names = nullptr;
  int64_t sample = -1;
  int64_t batch = -1;
  int64_t epoch = -1;

  void Add(SpanKind kind, int64_t start_ns, int64_t end_ns, uint16_t name = 0,
           uint8_t detail = 0, int32_t value = 0) const {
    Span s;
    s.start_ns = start_ns;
    s.end_ns = end_ns;
    s.sample = sample;
    s.batch = batch;
    s.epoch = epoch;
    s.kind = kind;
    s.detail = detail;
    s.name = name;
    s.value = value;
    tracer->Record(lane, s);
  }
};

}  // namespace stoker

#endif  // STOKER_TRACE_SAMPLE_TRACE_H_
