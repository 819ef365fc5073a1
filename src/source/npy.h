// Copyright 2026 The stoker Authors.
//
// .npy arrays as a source: images memory-mapped, labels loaded.
//
// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a version byte
// pair (1.0: 2-byte little-endian header length; 2.0 and 3.0: 4-byte), then
// an ASCII (3.0: UTF-8) Python dict literal {'descr': '<u1', 'fortran_order':
// False, 'shape': (N, H, W, 3), } padded with spaces and ended by '\n', then
// the array data. ParseNpyHeader reads that header strictly: exactly those
// three keys, a simple dtype string (no structured dtypes), non-negative
// dimensions whose byte count does not overflow and fits in the file.
//
// NpySource (include/stoker/sources.h; implemented by NpySourceImpl here)
// serves the images array:
//  - uint8, C order (fortran_order False), 4-D: [N, H, W, C] or [N, C, H, W]
//    with C 3 (RGB) or 1 (grey, replicated to RGB). The layout is read from
//    the shape: C in the last dimension is NHWC, else C in the second is
//    NCHW; an array whose last and second dimensions both are 1 or 3 is
//    taken as NHWC (the shape cannot tell; say layout="NCHW" to override).
//  - NHWC RGB samples are handed out zero-copy: SampleData::pixels points
//    into the mapping (the page cache's pages). NCHW and grey samples are
//    converted into the worker's scratch (planar -> interleaved, grey -> RGB),
//    one pass over the sample's bytes.
//  - labels (optional) are a 1-D array of N values of any numeric dtype:
//    bool, int8..int64, uint8..uint64 (< 2^63), float32/float64 holding
//    integral values; either byte order. They are read once into int64.
//    Without labels every label is -1.
//
// Ownership: the source owns the mapping; samples' pixels stay valid while
// the source lives (the engine holds it for the loader's lifetime).
// Thread-safety: immutable after Open(); ReadIndex is thread-safe.
// Errors: Open returns NotFound for a missing file, InvalidArgument with the
// reason for anything malformed or unsupported (naming the file), and
// Unimplemented for valid arrays stoker does not serve (e.g. Fortran order).
#ifndef STOKER_SOURCE_NPY_H_
#define STOKER_SOURCE_NPY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "stoker/sources.h"

namespace stoker {

struct NpyHeader {
  char byte_order = '|';     // '<', '>' or '|' (not applicable)
  char kind = 0;             // 'b' bool, 'i' signed, 'u' unsigned, 'f' float
  int item_size = 0;         // bytes per element
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;    // where the data starts
  uint64_t data_bytes = 0;   // product(shape) * item_size
};

// Parses the header of the .npy file whose bytes are [data, data + size) and
// checks that the data it announces fits in them. Never reads outside the
// buffer. Errors: InvalidArgument naming what is wrong.
Status ParseNpyHeader(const uint8_t* data, size_t size, NpyHeader* header);

// Converts the 1-D numeric .npy array in [data, data + size) into int64
// values (see the rules above). Errors: InvalidArgument.
Status ParseNpyLabels(const uint8_t* data, size_t size, std::vector<int64_t>* out);
// The same for the file at `path` (errors name it).
StatusOr<std::vector<int64_t>> ReadNpyLabels(const std::string& path);

// The implementation behind NpySource::Open (include/stoker/sources.h).
class NpySourceImpl final : public NpySource {
 public:
  int64_t size() const override { return n_; }
  std::string Describe() const override;
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;

  std::vector<int64_t> Labels() const override { return labels_; }
  int height() const override { return height_; }
  int width() const override { return width_; }
  int channels() const override { return channels_; }
  bool nchw() const override { return nchw_; }

 private:
  friend class NpySource;
  NpySourceImpl() = default;

  std::unique_ptr<MappedFile> images_;
  std::string labels_path_;
  std::vector<int64_t> labels_;  // empty: no labels
  const uint8_t* pixels_ = nullptr;
  int64_t n_ = 0;
  int height_ = 0, width_ = 0, channels_ = 0;
  bool nchw_ = false;
  size_t sample_bytes_ = 0;
};

}  // namespace stoker

#endif  // STOKER_SOURCE_NPY_H_
