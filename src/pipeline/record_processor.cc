// Copyright 2026 The stoker Authors.
#include "pipeline/record_processor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>


namespace stoker {
namespace {

// A JSON field's document is checked in the worker, so a bad one is its
// sample's error (skippable under on_error="skip"): strict JSON (RFC 8259),
// nested at most kMaxJsonDepth deep, since Python's json.loads, which
// converts the field in the consumer, recurses once per level (a document
// 200,000 deep raised RecursionError from next(), naming no sample).
constexpr int kMaxJsonDepth = 256;

// nlohmann's SAX interface (its parser is iterative): counts the depth and
// stops past the bound.
struct JsonDepth {
  using json = nlohmann::json;
  int depth = 0;
  bool too_deep = false;
  bool Open() {
    too_deep = ++depth > kMaxJsonDepth;
    return !too_deep;
  }
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) { return Open(); }
  bool key(json::string_t&) { return true; }
  bool end_object() { return --depth, true; }
  bool start_array(std::size_t) { return Open(); }
  bool end_array() { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    const std::string what = e.what();
    const size_t at = what.find("] ");
    error = at == std::string::npos ? what : what.substr(at + 2);
    return false;
  }
  std::string error;  // nlohmann's description of the first syntax error
};


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

// The numbers of an int or float array as doubles.
Status ToDoubles(const FieldValue& v, std::vector<double>* out) {
  const size_t esize = ElemSize(v.dtype);
  const size_t n = esize == 0 ? 0 : v.size / esize;
  out->resize(n);
  auto take = [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, v.data + i * sizeof(T), sizeof(T));
      (*out)[i] = static_cast<double>(x);
    }
  };
  switch (v.dtype) {
    case ElemType::kFloat32: take(float{}); break;
    case ElemType::kFloat64: take(double{}); break;
    case ElemType::kInt8: take(int8_t{}); break;
    case ElemType::kInt16: take(int16_t{}); break;
    case ElemType::kInt32: take(int32_t{}); break;
    case ElemType::kInt64: take(int64_t{}); break;
    case ElemType::kUint8: take(uint8_t{}); break;
    case ElemType::kUint16: take(uint16_t{}); break;
    case ElemType::kUint32: take(uint32_t{}); break;
    default:
      return InvalidArgumentError(std::string("coordinates of dtype ") + ElemTypeName(v.dtype) +
                                  ": give float32, float64 or an integer type");
  }
  return Status::OK();
}

}  // namespace

Status CheckJsonDocument(const uint8_t* data, size_t size) {
  JsonDepth sax;
  const bool ok = nlohmann::json::sax_parse(data, data + size, &sax,
                                            nlohmann::json::input_format_t::json,
                                            /*strict=*/true);
  if (sax.too_deep) {
    return DataLossError("a JSON document nested deeper than " + std::to_string(kMaxJsonDepth) +
                         " levels");
  }
  if (!ok) {
    // Python's json.dumps writes NaN and Infinity by default; say so when
    // they are there.
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const bool nonfinite = text.find("NaN") != std::string_view::npos ||
                           text.find("Infinity") != std::string_view::npos;
    return DataLossError(
        "not a valid JSON document" + (sax.error.empty() ? std::string() : ": " + sax.error) +
        (nonfinite ? " (strict JSON: NaN and Infinity, which Python's json.dumps writes by "
                     "default, are not JSON; write null or a string, or dump with "
                     "allow_nan=False to find them)"
                   : std::string()));
  }
  return Status::OK();
}

struct RecordProcessor::Transformed {
  explicit Transformed(const ProcessorConfig& images, const std::string& field)
      : config(images),
        writer(DType::kUint8, Layout::kNHWC, 0, 0, false, {0.f, 0.f, 0.f}, {1.f, 1.f, 1.f}) {
    config.image_field = field;
    config.primary = false;
    // As the primary's: a draw that reads the boxes (RandomIoUCrop) needs the
    // steps recorded to be replayed the same.
    config.record_geometry = images.record_geometry;
    config.timing = false;
    processor = std::make_unique<SampleProcessor>(config, &writer);
  }
  ProcessorConfig config;  // referenced by `processor`: declared before it
  PixelWriter writer;
  std::unique_ptr<SampleProcessor> processor;
  RgbImage out;
};

RecordProcessor::RecordProcessor(const RecordPlan* plan, const DecoderOptions& decoder,
                                 const ProcessorConfig* images)
    : plan_(plan), decoder_(decoder) {
  transformed_.resize(plan->fields.size());
  for (size_t k = 0; k < plan->fields.size(); ++k) {
    if (plan->fields[k].transformed && images != nullptr) {
      transformed_[k] = std::make_unique<Transformed>(*images, plan->fields[k].spec.name);
    }
  }
}

RecordProcessor::~RecordProcessor() = default;

size_t RecordProcessor::scratch_bytes() const {
  size_t bytes = decoder_.scratch_bytes() + image_.pixels.capacity();
  for (const auto& t : transformed_) {
    if (t != nullptr) bytes += t->processor->scratch_bytes() + t->out.capacity_bytes();
  }
  return bytes;
}

void RecordProcessor::ReleaseScratch() {
  decoder_.ReleaseScratch();
  image_.Release();
  for (const auto& t : transformed_) {
    if (t == nullptr) continue;
    t->processor->TrimScratch();
    t->out.Release();
  }
}

Status RecordProcessor::Process(const SampleData& sample, BatchBuffer* buf, int s,
                                const TargetGeometry* geometry, int64_t* boxes_removed,
                                const ImageDraw* draw) {
  geometry_ = geometry;
  draw_ = draw;
  removed_ = 0;
  const int source_fields = plan_->source_fields;
  if (sample.num_fields != source_fields || sample.fields == nullptr) {
    return InternalError("the source gave " + std::to_string(sample.num_fields) +
                         " field values for a schema of " + std::to_string(source_fields));
  }
  const FieldValue* values = sample.fields;
  if (!plan_->steps.empty()) {
    STOKER_RETURN_IF_ERROR(RunSteps(sample.fields, draw != nullptr ? draw->step_seed : 0));
    values = values_.data();
  }
  // Per-box rows last: they follow their boxes' removals.
  for (const bool per_box : {false, true}) {
    for (const RecordFieldPlan& f : plan_->fields) {
      if ((f.spec.target == TargetRole::kPerBox) != per_box) continue;
      const FieldValue& v = values[f.schema_index];
      Status st = ProcessField(f, v, buf, s);
      if (!st.ok()) return st.WithContext(FieldContext(f.spec.name, v));
    }
  }
  if (boxes_removed != nullptr) *boxes_removed += removed_;
  return Status::OK();
}

Status RecordProcessor::PlanBoxes(const SampleData& sample, std::vector<double>* xyxy) {
  xyxy->clear();
  if (plan_->plan_boxes < 0) return Status::OK();
  const RecordFieldPlan& f = plan_->fields[static_cast<size_t>(plan_->plan_boxes)];
  if (sample.num_fields != plan_->source_fields || sample.fields == nullptr) {
    return InternalError("the source gave " + std::to_string(sample.num_fields) +
                         " field values for a schema of " +
                         std::to_string(plan_->source_fields));
  }
  const FieldValue& v = sample.fields[f.schema_index];
  Status st;
  if (v.ndim != 2 || v.dims[1] != 4) {
    st = InvalidArgumentError("boxes of shape " + Shape(v.dims.data(), v.ndim) +
                              ", expected [N, 4]");
  } else {
    st = ToDoubles(v, &numbers_);
    if (st.ok() && static_cast<int64_t>(numbers_.size()) != v.dims[0] * 4) {
      st = DataLossError(std::to_string(v.size) + " bytes for shape " +
                         Shape(v.dims.data(), v.ndim) + " of " + ElemTypeName(v.dtype));
    }
  }
  if (!st.ok()) return st.WithContext(FieldContext(f.spec.name, v));
  BoxesToXyxy(f.spec.box_format, numbers_.data(), static_cast<int>(v.dims[0]), xyxy);
  return Status::OK();
}

Status RecordProcessor::RunSteps(const FieldValue* source, uint64_t step_seed) {
  Rng seeds(step_seed);
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
    const uint64_t seed = seeds.Next();  // drawn for every step, whether it uses it or not
    Status st = (*sp.step.callback)(sp.specs.data(), step_values.data(), storage.data(),
                                    static_cast<int>(sp.indices.size()), seed);
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
  if (f.spec.target != TargetRole::kNone) return WriteTarget(f, v, buf, s);
  switch (f.spec.kind) {
    case FieldKind::kImage:
      return f.transformed ? WriteTransformedImage(f, v, buf, s) : WriteImage(f, v, buf, s);
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
      STOKER_RETURN_IF_ERROR(CheckJsonDocument(v.data, v.size));
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
  STOKER_RETURN_IF_ERROR(spec.image_mode == ImageMode::kNative
                             ? decoder_.DecodeNative(v.data, v.size, &image_)
                             : decoder_.DecodeRgb(v.data, v.size, &image_));
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

Status RecordProcessor::WriteTransformedImage(const RecordFieldPlan& f, const FieldValue& v,
                                              BatchBuffer* buf, int s) {
  Transformed* t = transformed_[static_cast<size_t>(f.batch_field)].get();
  if (t == nullptr || draw_ == nullptr) {
    return InternalError("a transformed image field without the primary image's draw");
  }
  if (v.raw) return UnimplementedError("raw pixels in an image field other than the primary one");
  SampleData sample;
  sample.bytes = v.data;
  sample.size = v.size;
  SampleOutput out;
  out.image = &t->out;
  out.expect_width = draw_->width;
  out.expect_height = draw_->height;
  Rng rng = draw_->rng;  // the primary image's draws, replayed
  StageTimes times;
  STOKER_RETURN_IF_ERROR(t->processor->Process(sample, &rng, out, &times, draw_->boxes));
  const FieldSpec& spec = f.spec;
  const int64_t dims[3] = {t->out.height(), t->out.width(), 3};
  if (spec.shape_known && spec.shape.size() == 3 && spec.shape[0] >= 0 &&
      (spec.shape[0] != dims[0] || spec.shape[1] != dims[1])) {
    return InternalError("a transformed image of another size than the plan's");
  }
  const size_t bytes = static_cast<size_t>(dims[0] * dims[1] * 3);
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(f.batch_field, s, bytes,
                                                           ElemType::kUint8, dims, 3));
  if (bytes > 0) std::memcpy(slot, t->out.data(), bytes);
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

Status RecordProcessor::WriteTarget(const RecordFieldPlan& f, const FieldValue& v,
                                    BatchBuffer* buf, int s) {
  if (geometry_ == nullptr) return InternalError("a target without the image's geometry");
  const TargetRole role = f.spec.target;
  if (role == TargetRole::kMask) return WriteMask(f, v, buf, s);
  if (role == TargetRole::kPerBox) return WritePerBox(f, v, buf, s);
  const int64_t cols = v.ndim == 2 ? v.dims[1] : -1;
  const int64_t rows = v.ndim == 2 ? v.dims[0] : 0;
  if (role == TargetRole::kBoxes && cols != 4) {
    return InvalidArgumentError("boxes of shape " + Shape(v.dims.data(), v.ndim) +
                                ", expected [N, 4]");
  }
  if (role == TargetRole::kKeypoints && cols != 2 && cols != 3) {
    return InvalidArgumentError("keypoints of shape " + Shape(v.dims.data(), v.ndim) +
                                ", expected [K, 2] or [K, 3]");
  }
  STOKER_RETURN_IF_ERROR(ToDoubles(v, &numbers_));
  if (static_cast<int64_t>(numbers_.size()) != rows * cols) {
    return DataLossError(std::to_string(v.size) + " bytes for shape " +
                         Shape(v.dims.data(), v.ndim) + " of " + ElemTypeName(v.dtype));
  }
  int64_t out_rows = rows;
  if (role == TargetRole::kBoxes) {
    if (keep_.size() < plan_->fields.size()) keep_.resize(plan_->fields.size());
    std::vector<uint8_t>& keep = keep_[static_cast<size_t>(&f - plan_->fields.data())];
    TransformBoxes(*geometry_, f.spec.box_format, numbers_.data(), static_cast<int>(rows),
                   BoxRules{f.min_size, f.min_area_fraction}, &floats_, &keep);
    out_rows = static_cast<int64_t>(floats_.size() / 4);
    removed_ += rows - out_rows;
  } else {
    TransformKeypoints(*geometry_, numbers_.data(), static_cast<int>(rows), static_cast<int>(cols),
                       &floats_);
  }
  const int64_t dims[2] = {out_rows, role == TargetRole::kBoxes ? 4 : 3};
  const size_t bytes = floats_.size() * sizeof(float);
  if (f.spec.shape[0] >= 0 && f.spec.shape[0] != out_rows) {
    return InvalidArgumentError("shape " + Shape(v.dims.data(), v.ndim) +
                                ", the source declares " + Shape(f.source_spec.shape));
  }
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(f.batch_field, s, bytes,
                                                           ElemType::kFloat32, dims, 2));
  if (bytes > 0) std::memcpy(slot, floats_.data(), bytes);
  return Status::OK();
}

Status RecordProcessor::WriteMask(const RecordFieldPlan& f, const FieldValue& v,
                                  BatchBuffer* buf, int s) {
  const FieldSpec& src = f.source_spec;
  PixelPlane in;  // the mask as read (never written)
  int first_row = -1, mask_height = 0;  // a band of rows: TransformMaskView's
  if (src.kind == FieldKind::kImage) {
    if (v.raw) return UnimplementedError("raw pixels in a mask field");
    // A palette PNG (VOC's masks) gives its indices, the class of each pixel.
    // When the first step crops, only the rows it reads are decoded.
    NativeRows band;
    const bool cropped = MaskRowsNeeded(*geometry_, &band.begin, &band.end);
    STOKER_RETURN_IF_ERROR(decoder_.DecodeNative(v.data, v.size, &image_,
                                                 /*palette_indices=*/true,
                                                 cropped ? &band : nullptr));
    if (cropped) {
      first_row = band.first;
      mask_height = band.image_height;
    }
    mask_rows_read_ += cropped ? band.rows_read : image_.height;
    if (image_.channels != 1) {
      static const char* const kLayouts[] = {"", "grey", "grey + alpha", "RGB", "RGBA"};
      return InvalidArgumentError(
          "a mask is a label map of one channel, this image decodes to " +
          std::to_string(image_.channels) + " (" +
          kLayouts[std::clamp(image_.channels, 0, 4)] +
          "): save masks as greyscale or palette PNGs of class indices");
    }
    in = PixelPlane{image_.pixels.data(), image_.width, image_.height,
                    static_cast<std::ptrdiff_t>(image_.row_bytes()), image_.bytes_per_sample};
  } else {
    const bool shape_ok = v.ndim == 2 || (v.ndim == 3 && v.dims[2] == 1);
    if (!shape_ok || (v.dtype != ElemType::kUint8 && v.dtype != ElemType::kUint16)) {
      return InvalidArgumentError(std::string("a mask is uint8 or uint16 [H, W], got ") +
                                  ElemTypeName(v.dtype) + " " + Shape(v.dims.data(), v.ndim));
    }
    const int bpp = static_cast<int>(ElemSize(v.dtype));
    in = PixelPlane{const_cast<uint8_t*>(v.data), static_cast<int>(v.dims[1]),
                    static_cast<int>(v.dims[0]), static_cast<std::ptrdiff_t>(v.dims[1]) * bpp,
                    bpp};
    const size_t bytes = static_cast<size_t>(in.stride) * in.height;
    if (bytes != v.size) {
      return DataLossError(std::to_string(v.size) + " bytes for shape " +
                           Shape(v.dims.data(), v.ndim) + " of " + ElemTypeName(v.dtype));
    }
  }
  const ElemType dtype = in.bpp == 2 ? ElemType::kUint16 : ElemType::kUint8;
  if (f.spec.dtype_known && dtype != f.spec.dtype) {
    return InvalidArgumentError(std::string("dtype ") + ElemTypeName(dtype) +
                                ", the source declares " + ElemTypeName(f.spec.dtype));
  }
  PixelPlane out;
  STOKER_RETURN_IF_ERROR(
      TransformMaskView(*geometry_, f.spec.ignore_index, in, &mask_, &mask_scratch_, &out,
                        first_row, mask_height));
  const int64_t dims[2] = {out.height, out.width};
  const size_t row = static_cast<size_t>(out.width) * out.bpp;
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot, buf->ReserveField(f.batch_field, s, row * out.height,
                                                           dtype, dims, 2));
  for (int y = 0; y < out.height; ++y) std::memcpy(slot + y * row, out.data + y * out.stride, row);
  return Status::OK();
}

Status RecordProcessor::WritePerBox(const RecordFieldPlan& f, const FieldValue& v,
                                    BatchBuffer* buf, int s) {
  const std::vector<uint8_t>& keep = keep_[static_cast<size_t>(f.follows)];
  const std::string& boxes = plan_->fields[static_cast<size_t>(f.follows)].spec.name;
  if (f.spec.dtype_known && v.dtype != f.spec.dtype) {
    return InvalidArgumentError(std::string("dtype ") + ElemTypeName(v.dtype) +
                                ", the source declares " + ElemTypeName(f.spec.dtype));
  }
  if (v.ndim < 1 || v.dims[0] != static_cast<int64_t>(keep.size())) {
    return InvalidArgumentError("shape " + Shape(v.dims.data(), v.ndim) + ": one row per box of '" +
                                boxes + "' (" + std::to_string(keep.size()) + " boxes)");
  }
  const size_t row = keep.empty() ? 0 : v.size / keep.size();
  std::array<int64_t, kMaxFieldDims> dims = v.dims;
  dims[0] = 0;
  for (uint8_t k : keep) dims[0] += k;
  if (f.planes) {  // instance masks: each kept plane moved like a mask, padding 0
    const int bpp = static_cast<int>(ElemSize(v.dtype));
    if (v.ndim != 3 || (v.dtype != ElemType::kUint8 && v.dtype != ElemType::kUint16)) {
      return InvalidArgumentError(std::string("instance masks are uint8 or uint16 [N, H, W], "
                                  "got ") + ElemTypeName(v.dtype) + " " +
                                  Shape(v.dims.data(), v.ndim));
    }
    const size_t plane = static_cast<size_t>(v.dims[1]) * static_cast<size_t>(v.dims[2]) * bpp;
    if (plane * keep.size() != v.size) {
      return DataLossError(std::to_string(v.size) + " bytes for shape " +
                           Shape(v.dims.data(), v.ndim) + " of " + ElemTypeName(v.dtype));
    }
    dims[1] = geometry_->out_height();
    dims[2] = geometry_->out_width();
    const size_t out_plane = static_cast<size_t>(dims[1]) * static_cast<size_t>(dims[2]) * bpp;
    STOKER_ASSIGN_OR_RETURN(
        uint8_t* slot, buf->ReserveField(f.batch_field, s, out_plane * static_cast<size_t>(dims[0]),
                                         v.dtype, dims.data(), 3));
    return TransformMaskPlanes(*geometry_, 0, v.data, static_cast<int>(keep.size()),
                               static_cast<int>(v.dims[2]), static_cast<int>(v.dims[1]), bpp,
                               keep.data(), &mask_, &mask_scratch_, slot);
  }
  const size_t bytes = row * static_cast<size_t>(dims[0]);
  STOKER_ASSIGN_OR_RETURN(uint8_t* slot,
                          buf->ReserveField(f.batch_field, s, bytes, v.dtype, dims.data(), v.ndim));
  size_t at = 0;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) continue;
    std::memcpy(slot + at, v.data + i * row, row);
    at += row;
  }
  return Status::OK();
}

}  // namespace stoker
