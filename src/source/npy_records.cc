// Copyright 2026 The stoker Authors.
#include "source/npy_records.h"

#include <string>
#include <utility>

#include "source/npy.h"

namespace stoker {

StatusOr<ElemType> NpyElemType(const NpyHeader& h) {
  const bool little = h.byte_order == '<' || h.byte_order == '|' || h.byte_order == '=';
  if (!little && h.item_size > 1) {
    return InvalidArgumentError("big-endian arrays are not read in place (convert with "
                                "a.astype(a.dtype.newbyteorder('<')))");
  }
  std::string name;
  switch (h.kind) {
    case 'b': name = "bool"; break;
    case 'i': name = "int" + std::to_string(h.item_size * 8); break;
    case 'u': name = "uint" + std::to_string(h.item_size * 8); break;
    case 'f': name = "float" + std::to_string(h.item_size * 8); break;
    default: break;
  }
  auto t = ParseElemType(name);
  if (name.empty() || !t.ok() || ElemSize(t.value()) != static_cast<size_t>(h.item_size) ||
      t.value() == ElemType::kBFloat16) {
    return InvalidArgumentError(std::string("dtype kind '") + h.kind + "' of " +
                                std::to_string(h.item_size) + " bytes is not read (expected "
                                "bool, int8..int64, uint8..uint64, float16, float32, float64)");
  }
  return t;
}

StatusOr<std::shared_ptr<NpySource>> NpySource::OpenFields(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  if (fields.empty()) return InvalidArgumentError("Npy needs at least one field");
  std::shared_ptr<NpyRecordSource> src(new NpyRecordSource());
  for (size_t k = 0; k < fields.size(); ++k) {
    const std::string& name = fields[k].first;  // not a structured binding: clang 14
    const std::string& path = fields[k].second;  // cannot capture one in a lambda
    auto fail = [&](const std::string& why) {
      return InvalidArgumentError("field '" + name + "' (" + path + "): " + why);
    };
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
    NpyHeader h;
    Status s = ParseNpyHeader(file->data(), file->size(), &h);
    if (!s.ok()) return fail(s.message());
    if (h.fortran_order) {
      return fail("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    }
    if (h.shape.empty()) return fail("a 0-d array has no rows: fields are arrays [N, ...]");
    if (h.shape.size() - 1 > static_cast<size_t>(kMaxFieldDims)) {
      return fail("more than " + std::to_string(kMaxFieldDims) + " dimensions per sample");
    }
    auto elem = NpyElemType(h);
    if (!elem.ok()) return fail(elem.status().message());
    if (k == 0) {
      src->n_ = h.shape[0];
    } else if (h.shape[0] != src->n_) {
      return InvalidArgumentError(
          "field '" + name + "' (" + path + ") has " + std::to_string(h.shape[0]) +
          " rows but field '" + fields[0].first + "' (" + fields[0].second + ") has " +
          std::to_string(src->n_) + ": the arrays of a record source must be aligned");
    }
    std::vector<int64_t> dims(h.shape.begin() + 1, h.shape.end());
    size_t row = ElemSize(elem.value());
    for (int64_t d : dims) row *= static_cast<size_t>(d);
    if (name == "image" && elem.value() == ElemType::kUint8 && dims.size() == 3 &&
        dims[2] == 3 && dims[0] > 0 && dims[1] > 0 && dims[0] <= (1 << 20) &&
        dims[1] <= (1 << 20)) {
      src->image_ = static_cast<int>(k);
      src->height_ = static_cast<int>(dims[0]);
      src->width_ = static_cast<int>(dims[1]);
      FieldSpec f = ImageField(name);
      f.shape = dims;
      f.shape_known = true;
      src->schema_.fields.push_back(std::move(f));
    } else if (name == "label" && dims.empty() && h.kind != 'f') {
      std::vector<int64_t> labels;
      Status ls = ParseNpyLabels(file->data(), file->size(), &labels);
      if (!ls.ok()) return fail(ls.message());
      src->label_ = static_cast<int>(k);
      src->labels_ = std::move(labels);
      src->schema_.fields.push_back(LabelField(name));
    } else {
      src->schema_.fields.push_back(ArrayField(name, elem.value(), dims));
    }
    NpyRecordSource::Array a;
    a.rows = file->data() + h.data_offset;
    a.row_bytes = row;
    a.file = std::move(file);
    src->arrays_.push_back(std::move(a));
  }
  STOKER_RETURN_IF_ERROR(CheckSchema(src->schema_));
  return std::shared_ptr<NpySource>(std::move(src));
}

std::string NpyRecordSource::Describe() const {
  std::string s = "Npy(" + std::to_string(n_) + " records {";
  for (size_t k = 0; k < arrays_.size(); ++k) {
    s += (k ? "; " : "") + schema_.fields[k].ToString() + " <- " + arrays_[k].file->path();
  }
  return s + "})";
}

std::string NpyRecordSource::NameOf(int64_t index) const {
  return arrays_.front().file->path() + "[" + std::to_string(index) + "]";
}

Status NpyRecordSource::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= n_) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  scratch->fields.resize(arrays_.size());
  for (size_t k = 0; k < arrays_.size(); ++k) {
    const Array& a = arrays_[k];
    const uint8_t* row = a.rows + static_cast<size_t>(index) * a.row_bytes;
    // A file truncated since it was mapped would raise SIGBUS on these pages.
    Status st = a.file->CheckRange(static_cast<size_t>(row - a.file->data()), a.row_bytes);
    if (!st.ok()) return st.WithContext("field '" + schema_.fields[k].name + "'");
    const FieldSpec& f = schema_.fields[k];
    FieldValue& v = scratch->fields[k];
    v = FieldValue();
    v.data = row;
    v.size = a.row_bytes;
    v.dtype = f.kind == FieldKind::kImage ? ElemType::kUint8 : f.dtype;
    v.ndim = static_cast<int>(f.shape.size());
    for (size_t d = 0; d < f.shape.size(); ++d) v.dims[d] = f.shape[d];
  }
  *out = SampleData();
  out->id = index;
  out->label = label_ >= 0 ? labels_[static_cast<size_t>(index)] : -1;
  if (image_ >= 0) {
    const FieldValue& v = scratch->fields[static_cast<size_t>(image_)];
    out->pixels = v.data;
    out->size = v.size;
    out->pixel_width = width_;
    out->pixel_height = height_;
    out->pixel_stride = static_cast<ptrdiff_t>(width_) * 3;
  }
  out->fields = scratch->fields.data();
  out->num_fields = static_cast<int>(arrays_.size());
  return Status::OK();
}

}  // namespace stoker
