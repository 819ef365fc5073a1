// Copyright 2026 The stoker Authors.
//
// Hdf5Source (include/stoker/sources.h; implemented by Hdf5SourceImpl here):
// samples from datasets of an HDF5 file.
//
// The images dataset is either
//  - raw pixels: uint8, 4-D [N, H, W, 3] (any chunking/compression HDF5
//    reads); each sample is read with a hyperslab into the worker's scratch
//    and skips decoding; or
//  - encoded images: 1-D [N] of variable-length uint8 sequences (h5py:
//    `h5py.vlen_dtype(np.uint8)`), each a JPEG or PNG file's bytes, read into
//    scratch and decoded by the engine's threads like files.
// The labels dataset (optional: empty name means every label is -1) is 1-D
// [N] of any integer type (read as int64 by HDF5's conversion) or float type
// holding integral values; it is read once when the source is opened.
//
// HDF5 and threads: Debian's libhdf5 is the serial build, which is not
// thread-safe. Every HDF5 call made by stoker takes one process-wide mutex,
// so reads are serialised while decoding and augmenting stay parallel. (Other
// code in the process that calls HDF5 itself, e.g. h5py, does not take it:
// do not use h5py on the same file while a loader reads it.)
//
// HDF5 and fork: Open() opens the file, reads the shapes and the labels and
// closes it again; no HDF5 handle is held until the first read, which opens
// the file in the reading process (after the engine's threads exist). If the
// process has forked since (a DataLoader-style worker), the child closes the
// inherited handles and opens its own, so no handle is shared across fork.
//
// Records (Hdf5Source::OpenFields): one dataset per field, [N, ...] each with
// one N. Numeric datasets (integers, float16/32/64, h5py's bool enum) are
// array fields of the per-sample shape, read by hyperslab straight into the
// field's scratch buffer; 1-D variable-length uint8 datasets are bytes
// fields, string datasets (variable or fixed length) text fields. A field
// "image" of raw uint8 [N, H, W, 3] or of variable-length uint8 is the
// primary image and a field "label" of 1-D integers the primary label (read
// once at open). Every dataset of a sample is read under one acquisition of
// the mutex; `Open(path, images, labels)` is the same machinery with one
// dataset read per sample and no record fields.
//
// Ownership: the source owns its HDF5 handles and closes them when destroyed.
// Thread-safety: ReadIndex is thread-safe (see above); the rest is immutable
// after Open(). Errors: NotFound for a missing file, InvalidArgument naming
// the dataset for an unsupported shape or type, IoError/DataLoss naming the
// sample when HDF5 fails to read it.
#ifndef STOKER_SOURCE_HDF5_SOURCE_H_
#define STOKER_SOURCE_HDF5_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/record.h"
#include "stoker/sources.h"
#include "stoker/thread_annotations.h"

namespace stoker {

// The one process-wide lock every HDF5 call of stoker holds (the serial
// library is not thread-safe).
Mutex& Hdf5Mutex();

// The implementation behind Hdf5Source::Open (include/stoker/sources.h).
class Hdf5SourceImpl final : public Hdf5Source {
 public:
  ~Hdf5SourceImpl() override;

  int64_t size() const override { return n_; }
  std::string Describe() const override;
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;

  std::vector<int64_t> Labels() const override { return labels_; }
  Schema schema() const override { return records_ ? schema_ : Schema::ImageLabel(); }
  // The HDF5 file (FileStamp): any change to it re-reads every sample.
  uint64_t SampleStamp(int64_t) const override { return FileStamp(path_); }
  bool raw() const override { return raw_; }
  int height() const override { return height_; }
  int width() const override { return width_; }
  bool is_open() const override;

  // How a dataset is read per sample (used by the helpers in hdf5_source.cc).
  enum class Layout {
    kNumeric,      // fixed-size elements, a per-sample shape (hyperslab)
    kVlenBytes,    // 1-D variable-length uint8
    kVlenString,   // 1-D variable-length string
    kFixedString,  // 1-D fixed-length string (row_bytes each, padded)
  };
  // One dataset read per sample.
  struct Column {
    std::string dataset;  // its path in the file
    int field = -1;       // the schema field it fills (records), else -1
    Layout layout = Layout::kNumeric;
    ElemType elem = ElemType::kUint8;   // kNumeric
    std::vector<uint64_t> sample_dims;  // kNumeric: the per-sample shape
    size_t row_bytes = 0;  // kNumeric: bytes per sample; kFixedString: the string's size
    bool space_padded = false;  // kFixedString: padded with spaces (else NULs)
  };

 private:
  friend class Hdf5Source;
  Hdf5SourceImpl() = default;
  Status EnsureOpenLocked() const STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex());
  void CloseLocked() const STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex());
  // Reads column `c` of sample `index` into `buf` (grown, never shrunk);
  // `*n` is the bytes it holds.
  Status ReadColumnLocked(size_t c, int64_t index, std::vector<uint8_t>* buf, size_t* n) const
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex());

  std::string path_, images_name_, labels_name_;
  std::vector<int64_t> labels_;
  int64_t n_ = 0;
  bool raw_ = false;
  int height_ = 0, width_ = 0;
  bool records_ = false;   // opened by OpenFields
  // OpenFields' bound on one sample's bytes (its fields together).
  int64_t max_sample_bytes_ = int64_t{256} << 20;
  Schema schema_;          // records: the fields
  std::vector<Column> columns_;  // read per sample (a label read at open is not one)
  int image_column_ = -1;  // the primary image's column, or -1
  int label_field_ = -1;   // records: the primary label's field, or -1
  // Opened lazily under the HDF5 mutex (hid_t is int64_t), one per column.
  mutable int64_t file_ STOKER_GUARDED_BY(Hdf5Mutex()) = -1;
  mutable std::vector<int64_t> datasets_ STOKER_GUARDED_BY(Hdf5Mutex());
  mutable std::vector<int64_t> mem_types_ STOKER_GUARDED_BY(Hdf5Mutex());
  mutable pid_t opened_by_ STOKER_GUARDED_BY(Hdf5Mutex()) = 0;
};

}  // namespace stoker

#endif  // STOKER_SOURCE_HDF5_SOURCE_H_
