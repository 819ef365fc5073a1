// Copyright 2026 The stoker Authors.
//
// CachedImage: one sample as the image program decoded it whole (its pixels)
// with the fields read beside it: what the decoded cache (pipeline/
// decoded_cache.h) and the output cache keep, and what SampleProcessor
// (program/sample_processor.h) decodes into and processes from.
//
// Thread-safety: a value; the cache shares finished entries read-only.
#ifndef STOKER_PROGRAM_DECODED_IMAGE_H_
#define STOKER_PROGRAM_DECODED_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/source.h"

namespace stoker {

// One decoded image: 8-bit RGB, rows width * 3 bytes apart, followed by 16
// bytes of slack (the resampler's vector loads may read past the last pixel).
struct CachedImage {
  std::vector<uint8_t> pixels;
  int width = 0;
  int height = 0;
  int64_t id = -1;     // the sample's id and label, as read
  uint64_t stamp = 0;  // the sample's SampleStamp when it was read (cache_validate)
  int64_t label = -1;
  // Records: the sample's other fields, their bytes held in field_bytes
  // (cache="decoded": every schema field's value as read; cache="output":
  // each batch field's finished slot).
  // (FieldValue::member points into field_members.)
  std::vector<FieldValue> fields;
  std::vector<std::vector<uint8_t>> field_bytes;
  std::vector<std::string> field_members;
  size_t bytes() const {
    size_t n = pixels.capacity() + sizeof(CachedImage) + fields.capacity() * sizeof(FieldValue);
    for (const auto& b : field_bytes) n += b.capacity() + sizeof(b);
    for (const auto& m : field_members) n += m.capacity() + sizeof(m);
    return n;
  }
};

}  // namespace stoker

#endif  // STOKER_PROGRAM_DECODED_IMAGE_H_
