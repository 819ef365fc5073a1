// Copyright 2026 The stoker Authors.
#include "source/memory_source.h"

namespace stoker {

std::string MemorySource::Describe() const {
  return "MemorySource(" + std::to_string(samples_.size()) + " samples)";
}

Status MemorySource::ReadIndex(int64_t index, SampleScratch*, SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  const MemorySample& s = samples_[index];
  out->id = s.id >= 0 ? s.id : index;
  out->label = s.label;
  out->size = s.bytes.size();
  if (s.raw_width > 0) {
    out->bytes = nullptr;
    out->pixels = s.bytes.data();
    out->pixel_width = s.raw_width;
    out->pixel_height = s.raw_height;
    out->pixel_stride = static_cast<ptrdiff_t>(s.raw_width) * 3;
  } else {
    out->bytes = s.bytes.data();
    out->pixels = nullptr;
  }
  return Status::OK();
}

}  // namespace stoker
