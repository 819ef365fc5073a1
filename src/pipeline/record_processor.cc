// Copyright 2026 The stoker Authors.
#include "pipeline/record_processor.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>


namespace stoker {
namespace {

std::string Shape(const int64_t* dims, int ndim) {
  std::string s = "[";
  for (int k = 0; k < ndim; ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    s += (k ? ", " : "") + (dims[k] < 0 ? std::string("*") : std::to_string(dims[k]));
  }
  return s + "]";
}

}  // namespace

RecordProcessor::RecordProcessor(const RecordPlan* plan, const DecoderOptions& decoder)
    : plan_(plan), decoder_(decoder) {}

size_t RecordProcessor::scratch_bytes() const {
  return decoder_.scratch_bytes() + image_.pixels.capacity();
}

void RecordProcessor::ReleaseScratch() {
  decoder_.ReleaseScratch();
  image_.Release();
}

Status RecordProcessor::Process(const SampleData& sample, BatchBuffer* buf, int s) {
  const int source_fields = plan_->source_fields;
  if (sample.num_fields != source_fields || sample.fields == nullptr) {
    return InternalError("the source gave " + std::to_string(sample.num_fields) +
                         " field values for a schema of " + std::to_string(source_fields));
  }
  const FieldValue* values = sample.fields;
  if (!plan_->steps.empty()) {
    STOKER_RETURN_IF_ERROR(RunSteps(sample.fields));
    values = values_.data();
  }
  for (const RecordFieldPlan& f : plan_->fields) {
    const FieldValue& v = values[f.schema_index];
    Status st = ProcessField(f, v, buf, s);
    if (!st.ok()) return st.WithContext("field '" + f.spec.name + "'");
  }
  return Status::OK();
}

Status RecordProcessor::RunSteps(const FieldValue* source) {
  const size_t n = plan_->schema.fields.size();
  values_.assign(n, FieldValue());
  std::copy(source, source + plan_->source_fields, values_.begin());
  if (storage_.size() < plan_->steps.size()) storage_.resize(plan_->steps.size());
  for (size_t k = 0; k < plan_->steps.size(); ++k) {
    const FieldStepPlan& sp = plan_->steps[k];
    std::vector<FieldValue>& step_values = step_values_;
    step_values.clear();
    for (int i : sp.indices) step_values.push_back(values_[static_cast<size_t>(i)]);
    std::vector<std::vector<uint8_t>>& storage = storage_[k];
    storage.resize(sp.indices.size());
    Status st = (*sp.step.callback)(sp.specs.data(), step_values.data(), storage.data(),
                                    static_cast<int>(sp.indices.size()));
    if (!st.ok()) return st.WithContext("Lambda(" + sp.step.name + ", fields=...)");
    for (size_t i = 0; i < sp.indices.size(); ++i) {
      values_[static_cast<size_t>(sp.indices[i])] = step_values[i];
    }
  }
  return Status::OK();
}

Status RecordProcessor::ProcessField(const RecordFieldPlan& f, const FieldValue& v,
                                     BatchBuffer* buf, int s) {
  const int b = f.batch_field;
  switch (f.spec.kind) {
    case FieldKind::kImage:
      return WriteImage(f, v, buf, s);
    case FieldKind::kArray:
      return WriteArray(f, v, buf, s);
    case FieldKind::kLabel:
    case FieldKind::kScalar: {
      const ElemType want = f.spec.kind == FieldKind::kLabel ? ElemType::kInt64 : f.spec.dtype;
      if (v.dtype != want) {
        return InvalidArgumentError(std::string("a ") + ElemTypeName(v.dtype) + " value, the "
                                    "schema says " + ElemTypeName(want));
      }
      STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(b, s, 8, want, nullptr, 0));
      if (want == ElemType::kInt64) {
        std::memcpy(slot, &v.i, 8);
      } else {
        std::memcpy(slot, &v.f, 8);
      }
      return Status::OK();
    }
    case FieldKind::kText:
      if (!IsValidUtf8(v.data, v.size)) return DataLossError("not valid UTF-8 text");
      break;
    case FieldKind::kJson:
      if (!nlohmann::json::accept(v.data, v.data + v.size)) {
        return DataLossError("not a valid JSON document");
      }
      break;
    case FieldKind::kBytes:
      break;
  }
  const int64_t n = static_cast<int64_t>(v.size);
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(b, s, v.size, ElemType::kUint8, &n, 1));
  if (v.size > 0) std::memcpy(slot, v.data, v.size);
  return Status::OK();
}

Status RecordProcessor::WriteImage(const RecordFieldPlan& f, const FieldValue& v,
                                   BatchBuffer* buf, int s) {
  const FieldSpec& spec = f.spec;
  if (v.raw) return UnimplementedError("raw pixels in an image field other than the primary one");
  const bool mask = spec.target == TargetRole::kMask;
  STOKER_RETURN_IF_ERROR(spec.image_mode == ImageMode::kNative
                             ? decoder_.DecodeNative(v.data, v.size, &image_, mask)
                             : decoder_.DecodeRgb(v.data, v.size, &image_));
  if (mask && image_.channels != 1) {
    static const char* const kLayouts[] = {"", "grey", "grey + alpha", "RGB", "RGBA"};
    return InvalidArgumentError(
        "a mask is a label map of one channel, this image decodes to " +
        std::to_string(image_.channels) + " (" +
        kLayouts[std::clamp(image_.channels, 0, 4)] +
        "): save masks as greyscale or palette PNGs of class indices");
  }
  const ElemType dtype = image_.bytes_per_sample == 2 ? ElemType::kUint16 : ElemType::kUint8;
  const int64_t dims[3] = {image_.height, image_.width, image_.channels};
  if ((spec.dtype_known && dtype != spec.dtype) ||
      (spec.shape_known && spec.shape.size() == 3 &&
       (spec.shape[0] != dims[0] || spec.shape[1] != dims[1] || spec.shape[2] != dims[2]))) {
    return InvalidArgumentError(std::string("decoded to ") + ElemTypeName(dtype) + " " +
                                Shape(dims, 3) + ", the source declares " +
                                (spec.dtype_known ? ElemTypeName(spec.dtype) : "any dtype") +
                                " " + (spec.shape_known ? Shape(spec.shape) : "[any shape]"));
  }
  const size_t bytes = image_.bytes();
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot,
                          buf->ReserveField(f.batch_field, s, bytes, dtype, dims, 3));
  if (bytes > 0) std::memcpy(slot, image_.pixels.data(), bytes);
  return Status::OK();
}

Status RecordProcessor::WriteArray(const RecordFieldPlan& f, const FieldValue& v,
                                   BatchBuffer* buf, int s) {
  const FieldSpec& spec = f.spec;
  if (spec.dtype_known && v.dtype != spec.dtype) {
    return InvalidArgumentError(std::string("dtype ") + ElemTypeName(v.dtype) +
                                ", the source declares " + ElemTypeName(spec.dtype));
  }
  if (v.ndim < 0 || v.ndim > kMaxFieldDims) return InternalError("bad array rank");
  if (spec.shape_known) {
    bool same = static_cast<size_t>(v.ndim) == spec.shape.size();
    for (int k = 0; same && k < v.ndim; ++k) {
      if (spec.shape[static_cast<size_t>(k)] >= 0 &&
          spec.shape[static_cast<size_t>(k)] != v.dims[static_cast<size_t>(k)]) {
        same = false;
      }
    }
    if (!same) {
      return InvalidArgumentError("shape " + Shape(v.dims.data(), v.ndim) +
                                  ", the source declares " + Shape(spec.shape));
    }
  }
  size_t bytes = ElemSize(v.dtype);
  for (int k = 0; k < v.ndim; ++k) bytes *= static_cast<size_t>(v.dims[static_cast<size_t>(k)]);
  if (bytes != v.size) {
    return DataLossError(std::to_string(v.size) + " bytes for shape " +
                         Shape(v.dims.data(), v.ndim) + " of " + ElemTypeName(v.dtype));
  }
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot,
                          buf->ReserveField(f.batch_field, s, bytes, v.dtype, v.dims.data(), v.ndim));
  if (bytes > 0) std::memcpy(slot, v.data, bytes);
  return Status::OK();
}

}  // namespace stoker
