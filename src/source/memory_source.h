// Copyright 2026 The stoker Authors.
//
// MemorySource: a random-access source over samples held in memory --
// encoded bytes or raw 8-bit RGB pixels, each with a label and a name, and
// for records (a schema other than image + label) one value per field. Reads
// hand out pointers into the source's own storage (no copy). `stoker
// diagnose` caches encoded bytes (and records' fields) in one; tests build
// their data with it.
//
// Thread-safety: immutable after construction; ReadIndex is thread-safe.
#ifndef STOKER_SOURCE_MEMORY_SOURCE_H_
#define STOKER_SOURCE_MEMORY_SOURCE_H_

#include <string>
#include <vector>

#include "stoker/source.h"

namespace stoker {

struct MemorySample {
  std::vector<uint8_t> bytes;   // encoded image, or raw RGB (HWC) when raw_width > 0
  int raw_width = 0;
  int raw_height = 0;
  int64_t id = -1;              // the sample id to report; -1: its index here
  int64_t label = 0;
  std::string name;
  // Records: one value per field of the source's schema, in schema order,
  // and the bytes each points into (values with data == nullptr, such as
  // scalars and labels, have an empty entry). The primary image and label are
  // given by `bytes`/`raw_*` and `label` above, as for any source.
  std::vector<FieldValue> fields;
  std::vector<std::vector<uint8_t>> field_bytes;
};

class MemorySource : public RandomAccessSource {
 public:
  explicit MemorySource(std::vector<MemorySample> samples) : samples_(std::move(samples)) {}
  // Records: every sample carries one value per field of `schema`.
  MemorySource(std::vector<MemorySample> samples, Schema schema)
      : samples_(std::move(samples)), schema_(std::move(schema)) {}

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  std::string Describe() const override;
  std::string NameOf(int64_t index) const override { return samples_[index].name; }
  std::vector<int64_t> Labels() const override {
    std::vector<int64_t> labels;
    for (const MemorySample& s : samples_) labels.push_back(s.label);
    return labels;
  }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  Schema schema() const override { return schema_; }
  // True when every sample is raw pixels of one size.
  bool FixedImageSize(int* height, int* width) const override;

 private:
  std::vector<MemorySample> samples_;
  Schema schema_ = Schema::ImageLabel();
  const bool has_image_ = schema_.image() >= 0;  // a record of other fields has none
};

}  // namespace stoker

#endif  // STOKER_SOURCE_MEMORY_SOURCE_H_
