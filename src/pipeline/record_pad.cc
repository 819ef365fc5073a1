// Copyright 2026 The stoker Authors.
#include "pipeline/record_pad.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes_text.h"
#include "ops/convert.h"

namespace stoker {
namespace {

// `value` (finite: LoaderOptions checks) as an integer of type T, clamped
// to T's range, truncated toward zero.
template <typename T>
T ToInt(double value) {
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (value <= lo) return std::numeric_limits<T>::min();
  if (value >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

// `value` as one element of `elem`, in `out` (ElemSize(elem) bytes).
void EncodePad(double value, ElemType elem, uint8_t* out) {
  auto put = [out](auto v) { std::memcpy(out, &v, sizeof(v)); };
  switch (elem) {
    case ElemType::kBool: put(static_cast<uint8_t>(value != 0)); break;
    case ElemType::kInt8: put(ToInt<int8_t>(value)); break;
    case ElemType::kInt16: put(ToInt<int16_t>(value)); break;
    case ElemType::kInt32: put(ToInt<int32_t>(value)); break;
    case ElemType::kInt64: put(ToInt<int64_t>(value)); break;
    case ElemType::kUint8: put(ToInt<uint8_t>(value)); break;
    case ElemType::kUint16: put(ToInt<uint16_t>(value)); break;
    case ElemType::kUint32: put(ToInt<uint32_t>(value)); break;
    case ElemType::kUint64: put(ToInt<uint64_t>(value)); break;
    case ElemType::kFloat16: put(FloatToHalf(static_cast<float>(value))); break;
    case ElemType::kBFloat16: put(FloatToBFloat16(static_cast<float>(value))); break;
    case ElemType::kFloat32: put(static_cast<float>(value)); break;
    case ElemType::kFloat64: put(value); break;
  }
}

std::string ShapeText(const int64_t* dims, int ndim) {
  std::string s = "[";
  for (int k = 0; k < ndim; ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// Copies one sample (`dims`, C order) into the box of `box` dims at `out`.
void CopyIntoBox(const uint8_t* src, const int64_t* dims, const int64_t* box, int ndim,
                 size_t elem, uint8_t* out) {
  if (ndim == 0) {
    std::memcpy(out, src, elem);
    return;
  }
  const size_t row = static_cast<size_t>(dims[ndim - 1]) * elem;
  int64_t rows = 1;
  for (int k = 0; k + 1 < ndim; ++k) rows *= dims[k];
  if (row == 0 || rows == 0) return;
  std::array<int64_t, kMaxFieldDims> idx{};
  for (int64_t r = 0; r < rows; ++r) {
    size_t offset = 0;  // in elements of the box
    for (int k = 0; k + 1 < ndim; ++k) offset = (offset + idx[k]) * box[k + 1];
    std::memcpy(out + offset * elem, src + static_cast<size_t>(r) * row, row);
    for (int k = ndim - 2; k >= 0; --k) {  // the next row's index
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// One padded field's box: its dtype, number of dimensions and the largest
// size along each dimension, with the sample (its index in the batch) that
// sets each; `bytes` is the block [size, box...], or SIZE_MAX past size_t,
// and `exact` the same in double (what a message and the bound compare).
struct PaddedBox {
  ElemType elem = ElemType::kUint8;
  int ndim = 0;
  std::array<int64_t, kMaxFieldDims> dims{};
  std::array<int, kMaxFieldDims> set_by{};
  size_t box = 0;    // bytes of one sample's box
  size_t bytes = 0;  // bytes of the block
  double exact = 0;
};

Status MeasureBox(const BatchBuffer& buf, int f, PaddedBox* out) {
  const FieldLayout& layout = buf.shape().fields[static_cast<size_t>(f)];
  const int n = buf.size;
  const FieldSlot& first = buf.field_slot(f, 0);
  PaddedBox b;
  b.elem = first.elem;
  b.ndim = first.ndim;
  for (int i = 0; i < n; ++i) {
    const FieldSlot& s = buf.field_slot(f, i);
    if (s.elem != first.elem || s.ndim != first.ndim) {
      return InvalidArgumentError(
          "field '" + layout.spec.name + "': collate=\"pad\" stacks one dtype and number of "
          "dimensions per batch, and sample " + std::to_string(buf.ids()[i]) + " holds " +
          ElemTypeName(s.elem) + " " + ShapeText(s.dims.data(), s.ndim) + " where sample " +
          std::to_string(buf.ids()[0]) + " holds " + ElemTypeName(first.elem) + " " +
          ShapeText(first.dims.data(), first.ndim) +
          " (declare the field's dtype in the source to check each sample as it is read)");
    }
    for (int k = 0; k < b.ndim; ++k) {
      if (i == 0 || s.dims[k] > b.dims[k]) {
        b.dims[k] = s.dims[k];
        b.set_by[k] = i;
      }
    }
  }
  bool overflow = false;
  b.box = ElemSize(b.elem);
  for (int k = 0; k < b.ndim; ++k) {
    overflow |= __builtin_mul_overflow(b.box, static_cast<size_t>(b.dims[k]), &b.box);
  }
  overflow |= __builtin_mul_overflow(b.box, static_cast<size_t>(n), &b.bytes);
  if (overflow) b.bytes = SIZE_MAX;
  b.exact = static_cast<double>(ElemSize(b.elem)) * n;
  for (int k = 0; k < b.ndim; ++k) b.exact *= static_cast<double>(b.dims[k]);
  *out = b;
  return Status::OK();
}

// The error for a block past `max_bytes` (the batch's padded bytes reaching
// `total` with this field): names the field, its block and the sample that
// sets each dimension.
Status TooLarge(const BatchBuffer& buf, int f, const PaddedBox& b, double total,
                int64_t max_bytes) {
  const std::string& name = buf.shape().fields[static_cast<size_t>(f)].spec.name;
  std::string setters;
  for (int k = 0; k < b.ndim; ++k) {
    setters += std::string(k ? "; " : "") + "dimension " + std::to_string(k) + " (" +
               std::to_string(b.dims[k]) + ") from sample " +
               std::to_string(buf.ids()[static_cast<size_t>(b.set_by[k])]) + " " +
               ShapeText(buf.field_slot(f, b.set_by[k]).dims.data(), b.ndim);
  }
  const double block = b.exact;
  return ResourceExhaustedError(
      "field '" + name + "': collate=\"pad\" would pad " + std::to_string(buf.size) +
      " samples to " + ElemTypeName(b.elem) + " " + ShapeText(b.dims.data(), b.ndim) + ", " +
      BytesText(block) + (total > block ? " (" + BytesText(total) + " with the batch's other "
                                         "padded fields)" : std::string()) +
      ", past max_padded_bytes=" + std::to_string(max_bytes) + " (" +
      BytesText(static_cast<double>(max_bytes)) + "); the sizes come from " +
      (setters.empty() ? std::string("no dimension") : setters) +
      ". Raise Loader(max_padded_bytes=) if the batch is meant to be this large, or bound the "
      "field's shape (collate=\"list\" keeps each sample's own)");
}

void FillBox(BatchBuffer* buf, int f, const PaddedBox& b, double pad_value, uint8_t* out) {
  const int n = buf->size;
  PaddedField& p = buf->padded(f);
  p.elem = b.elem;
  p.ndim = b.ndim;
  for (int k = 0; k < p.ndim; ++k) p.dims[k] = b.dims[k];
  const size_t elem = ElemSize(p.elem);
  // The pad value everywhere, then each sample over it.
  uint8_t pad[8] = {};
  EncodePad(pad_value, p.elem, pad);
  const size_t total = b.bytes;
  if (std::all_of(pad, pad + elem, [](uint8_t c) { return c == 0; })) {
    if (total > 0) std::memset(out, 0, total);
  } else {
    for (size_t o = 0; o < total; o += elem) std::memcpy(out + o, pad, elem);
  }
  p.lengths.assign(static_cast<size_t>(n) * static_cast<size_t>(p.ndim), 0);
  for (int i = 0; i < n; ++i) {
    const FieldSlot& s = buf->field_slot(f, i);
    CopyIntoBox(s.data, s.dims.data(), p.dims.data(), p.ndim, elem,
                out + b.box * static_cast<size_t>(i));
    for (int k = 0; k < p.ndim; ++k) {
      p.lengths[static_cast<size_t>(i) * static_cast<size_t>(p.ndim) + k] = s.dims[k];
    }
  }
}

}  // namespace

bool HasPaddedFields(const BatchShape& shape) {
  return std::any_of(shape.fields.begin(), shape.fields.end(),
                     [](const FieldLayout& l) { return l.pad; });
}

Status PadFields(BatchBuffer* buf, double pad_value, int64_t max_padded_bytes) {
  if (buf->size <= 0) return Status::OK();
  // Every padded field is measured and the batch's sum checked before any
  // block is reserved.
  std::vector<std::pair<int, PaddedBox>> boxes;
  double total = 0;
  for (int f = 0; f < buf->num_fields(); ++f) {
    if (!buf->shape().fields[static_cast<size_t>(f)].pad) continue;
    PaddedBox b;
    STOKER_RETURN_IF_ERROR(MeasureBox(*buf, f, &b));
    total += b.exact;
    if (b.bytes == SIZE_MAX || total > static_cast<double>(max_padded_bytes)) {
      return TooLarge(*buf, f, b, total, max_padded_bytes);
    }
    boxes.emplace_back(f, b);
  }
  for (const auto& [f, b] : boxes) {
    STOKER_ASSIGN_OR_RETURN(uint8_t* out, buf->ReservePadded(f, b.bytes));
    FillBox(buf, f, b, pad_value, out);
  }
  return Status::OK();
}

}  // namespace stoker
