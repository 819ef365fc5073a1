// Copyright 2026 The stoker Authors.
#include "pipeline/trace_names.h"

namespace stoker {

std::string TransformShortName(const Transform& t) {
  const std::string s = t.ToString();
  return s.substr(0, s.find('('));
}

TraceNames MakeTraceNames(Tracer* tracer, const LoaderOptions& options) {
  TraceNames n;
  std::string geometry, tensor;
  bool normalize = false;
  for (const Transform& t : options.transforms) {
    const std::string name = TransformShortName(t);
    n.transform.push_back(tracer->Intern(name));
    if (t.kind == Transform::Kind::kNormalize) {
      normalize = true;
    } else if (t.kind == Transform::Kind::kRandomErasing) {
      tensor += (tensor.empty() ? "" : "+") + name;
    } else if (!t.photometric()) {
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
