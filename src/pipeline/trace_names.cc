// Copyright 2026 The stoker Authors.
#include "pipeline/trace_names.h"

#include "stoker/transform_schema.h"

namespace stoker {

TraceNames MakeTraceNames(Tracer* tracer, const LoaderOptions& options) {
  TraceNames n;
  std::string geometry, tensor;
  bool normalize = false;
  for (const Transform& t : options.transforms) {
    const std::string name = TransformShortName(t);
    n.transform.push_back(tracer->Intern(name));
    const TransformStage stage = t.schema != nullptr ? t.schema->stage : TransformStage::kImage;
    if (stage == TransformStage::kConvert) {
      normalize = true;
    } else if (stage == TransformStage::kTensor) {
      tensor += (tensor.empty() ? "" : "+") + name;
    } else if (stage == TransformStage::kGeometry) {
      geometry += (geometry.empty() ? "" : "+") + name;
    }
  }
  const std::string write = std::string(normalize ? "Normalize, " : "") +
                            DTypeName(options.dtype) + ", " + LayoutName(options.layout);
  const std::string resample = geometry.empty() ? "resample" : geometry;
  n.resample = tracer->Intern(resample + " (resample)");
  n.resample_write = tracer->Intern(resample + " + write (" + write + ")");
  n.write = tracer->Intern("write (" + write + ")");
  n.tensor = tracer->Intern(tensor.empty() ? "tensor ops" : tensor);
  return n;
}

}  // namespace stoker
