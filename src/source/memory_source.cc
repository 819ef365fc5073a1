// Copyright 2026 The stoker Authors.
#include "source/memory_source.h"

namespace stoker {

std::string MemorySource::Describe() const {
  return "MemorySource(" + std::to_string(samples_.size()) + " samples)";
}

bool MemorySource::FixedImageSize(int* height, int* width) const {
  if (samples_.empty()) return false;
  for (const MemorySample& s : samples_) {
    if (s.raw_width <= 0 || s.raw_width != samples_[0].raw_width ||
        s.raw_height != samples_[0].raw_height) {
      return false;
    }
  }
  *height = samples_[0].raw_height;
  *width = samples_[0].raw_width;
  return true;
}

Status MemorySource::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  const MemorySample& s = samples_[index];
  out->id = s.id >= 0 ? s.id : index;
  out->label = s.label;
  out->size = s.bytes.size();
  if (!has_image_) {
    out->bytes = nullptr;
    out->pixels = nullptr;
  } else if (s.raw_width > 0) {
    out->bytes = nullptr;
    out->pixels = s.bytes.data();
    out->pixel_width = s.raw_width;
    out->pixel_height = s.raw_height;
    out->pixel_stride = static_cast<ptrdiff_t>(s.raw_width) * 3;
  } else {
    out->bytes = s.bytes.data();
    out->pixels = nullptr;
  }
  if (!s.fields.empty()) {
    // The values point into this source's storage; only the table is copied.
    scratch->fields.assign(s.fields.begin(), s.fields.end());
    for (size_t k = 0; k < s.fields.size(); ++k) {
      if (s.fields[k].data != nullptr) scratch->fields[k].data = s.field_bytes[k].data();
    }
    out->fields = scratch->fields.data();
    out->num_fields = static_cast<int>(scratch->fields.size());
  }
  return Status::OK();
}

}  // namespace stoker
