// Copyright 2026 The stoker Authors.
//
// NpyRecordSource: several aligned .npy arrays as one source of records
// (NpySource::OpenFields, include/stoker/sources.h). Each array is mapped
// once; sample i is row i of every array, one field each (stoker/record.h),
// handed out as pointers into the mappings. Two names are special, so that an
// image + label dataset with extra arrays keeps the engine's image path: a
// field "image" holding uint8 [N, H, W, 3] is the primary image (raw RGB
// pixels: the transforms apply to it), and a field "label" holding a 1-D
// integer (or bool) array is the primary label. Every other array, and those
// names with other shapes or dtypes, is an array field.
//
// Ownership: the source owns the mappings; the field values of a sample stay
// valid while the source lives. Thread-safety: immutable after OpenFields;
// ReadIndex is thread-safe. Errors: OpenFields returns NotFound for a missing
// file and InvalidArgument naming the field and file for anything else
// (dtype, byte order, Fortran order, lengths that disagree).
#ifndef STOKER_SOURCE_NPY_RECORDS_H_
#define STOKER_SOURCE_NPY_RECORDS_H_

#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "stoker/record.h"
#include "stoker/sources.h"

namespace stoker {

struct NpyHeader;

// The element type of a .npy header's dtype, when the host can read it in
// place (native byte order). Errors: InvalidArgument.
StatusOr<ElemType> NpyElemType(const NpyHeader& h);

class NpyRecordSource final : public NpySource {
 public:
  int64_t size() const override { return n_; }
  std::string Describe() const override;
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;
  Schema schema() const override { return schema_; }
  std::vector<int64_t> Labels() const override { return labels_; }

  int height() const override { return 0; }
  int width() const override { return 0; }
  int channels() const override { return 0; }
  bool nchw() const override { return false; }

 private:
  friend class NpySource;
  struct Array {
    std::unique_ptr<MappedFile> file;
    const uint8_t* rows = nullptr;  // row 0
    size_t row_bytes = 0;
  };
  NpyRecordSource() = default;

  Schema schema_;
  std::vector<Array> arrays_;  // one per schema field
  int64_t n_ = 0;
  int image_ = -1;               // the primary image's field, or -1
  int height_ = 0, width_ = 0;   // its size
  int label_ = -1;               // the primary label's field, or -1
  std::vector<int64_t> labels_;  // its values (empty: none)
};

}  // namespace stoker

#endif  // STOKER_SOURCE_NPY_RECORDS_H_
