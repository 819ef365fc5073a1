// Copyright 2026 The stoker Authors.
#include "pipeline/record_processor.h"

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
    : plan_(plan), native_(decoder) {}

bool RecordProcessor::TrimScratch() {
  if (native_.scratch_bytes() == 0) return false;
  native_.ReleaseScratch();
  return true;
}

Status RecordProcessor::Process(const SampleData& sample, BatchBuffer* buf, int s) {
  if (sample.num_fields != static_cast<int>(plan_->schema.fields.size()) ||
      sample.fields == nullptr) {
    return InternalError("the source gave " + std::to_string(sample.num_fields) +
                         " field values for a schema of " +
                         std::to_string(plan_->schema.fields.size()));
  }
  for (const RecordFieldPlan& f : plan_->fields) {
    const FieldValue& v = sample.fields[f.schema_index];
    Status st = ProcessField(f, v, buf, s);
    if (!st.ok()) return st.WithContext("field '" + f.spec.name + "'");
  }
  return Status::OK();
}

Status RecordProcessor::ProcessField(const RecordFieldPlan& f, const FieldValue& v,
                                     BatchBuffer* buf, int s) {
  const int b = f.batch_field;
  switch (f.spec.kind) {
    case FieldKind::kImage:
      return WriteNative(f, v, buf, s);
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

Status RecordProcessor::WriteNative(const RecordFieldPlan& f, const FieldValue& v,
                                    BatchBuffer* buf, int s) {
  const int b = f.batch_field;
  if (v.raw) {  // pixels as stored: [H, W, C] rows `stride` apart
    if (v.ndim != 3) return InternalError("raw image without [H, W, C] dims");
    const size_t row = static_cast<size_t>(v.dims[1] * v.dims[2]) * ElemSize(v.dtype);
    const size_t bytes = row * static_cast<size_t>(v.dims[0]);
    STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(b, s, bytes, v.dtype, v.dims.data(), 3));
    const ptrdiff_t stride = v.stride != 0 ? v.stride : static_cast<ptrdiff_t>(row);
    for (int64_t y = 0; y < v.dims[0]; ++y) {
      std::memcpy(slot + row * static_cast<size_t>(y), v.data + stride * y, row);
    }
    return Status::OK();
  }
  const FieldLayout& layout = buf->shape().fields[static_cast<size_t>(b)];
  NativeInfo info;
  return native_.DecodeNative(
      v.data, v.size,
      [&](const NativeInfo& i) -> StatusOr<uint8_t*> {
        const ElemType elem = i.bytes_per_sample == 2 ? ElemType::kUint16 : ElemType::kUint8;
        const int64_t dims[3] = {i.height, i.width, i.channels};
        if (layout.fixed && (elem != layout.elem || layout.dims.size() != 3 ||
                             layout.dims[0] != dims[0] || layout.dims[1] != dims[1] ||
                             layout.dims[2] != dims[2])) {
          return InvalidArgumentError(std::string("image ") + Shape(dims, 3) + " " +
                                      ElemTypeName(elem) + ", the source declares " +
                                      Shape(layout.dims) + " " + ElemTypeName(layout.elem));
        }
        const size_t bytes = static_cast<size_t>(i.height) * i.width * i.channels *
                             i.bytes_per_sample;
        return buf->ReserveField(b, s, bytes, elem, dims, 3);
      },
      &info);
}

}  // namespace stoker
