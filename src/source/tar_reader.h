// Copyright 2026 The stoker Authors.
//
// Reading tar shards in the WebDataset convention, sequentially.
//
// TarReader walks the regular-file members of one tar stream (plain, gzip,
// zstd; ustar, pax and GNU long names; members in sub-directories) through
// libarchive, pulling bytes from a ByteStream. ShardSampleReader groups
// consecutive members that share a key into samples: the key is the member
// path up to the first dot of its basename ("a/n0144_10026.jpg" -> key
// "a/n0144_10026", extension "jpg"), as the webdataset library splits them.
// A sample's image is its member whose extension is in `image_exts` (the
// first one listed wins when several are present); its label is the integer
// text of the member with extension `label_ext` (-1 when label_ext is empty).
//
//   auto r = ShardSampleReader::Open("train-000001.tar", spec, stream_options).value();
//   ShardSample s; bool end;
//   while (r->Next(&s, &end).ok() && !end) Use(s.key, s.bytes, s.label);
//
// Ownership: each reader owns its stream and its libarchive handle.
// Thread-safety: a reader is used by one thread at a time.
// Errors: messages name the shard and the member ("x.tar: member k.jpg:
// truncated tar archive"). A tar stream cannot be resynchronised reliably
// after damage, so after the first error the reader reports the end.
#ifndef STOKER_SOURCE_TAR_READER_H_
#define STOKER_SOURCE_TAR_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "io/stream.h"
#include "stoker/sources.h"  // SampleSpec, SplitExtensions
#include "stoker/status.h"

struct archive;

namespace stoker {

struct TarMember {
  std::string path;
  int64_t size = 0;
  // Offset of the member's data in the (uncompressed) tar stream.
  int64_t data_offset = 0;
};

class TarReader {
 public:
  static StatusOr<std::unique_ptr<TarReader>> Open(std::unique_ptr<ByteStream> stream,
                                                   int64_t max_member_bytes = int64_t{256} << 20,
                                                   bool require_end_of_archive = false);
  ~TarReader();

  // The next regular-file member (directories, links and the like are
  // passed over); `*end` at the end of the archive. A stream that ends right
  // after a member, without the end-of-archive blocks, ends too (libarchive
  // and Python's tarfile accept it) and sets missing_end_of_archive(), or,
  // with `require_end_of_archive`, is a DataLoss error naming the last member.
  Status Next(TarMember* member, bool* end);
  // Whether the archive ended without its end-of-archive blocks (after at
  // least one member), once Next() reported the end.
  bool missing_end_of_archive() const { return missing_end_; }
  // The current member's data, whole; `out` is resized to its size.
  // With `at`, the data goes to (*out)[at, at + size) and `out` is resized to
  // at + size (what lay before `at` is kept).
  Status ReadData(std::vector<uint8_t>* out, size_t at = 0);
  const std::string& name() const { return stream_->name(); }

 private:
  explicit TarReader(std::unique_ptr<ByteStream> stream);
  static long ReadCallback(struct archive* a, void* self, const void** buffer);
  void DrainStream();
  // The stream's name, plus where its bytes come from when that is not the
  // name (a cache file): for error messages.
  std::string Where() const { return name() + stream_->origin(); }

  std::unique_ptr<ByteStream> stream_;
  struct archive* archive_ = nullptr;
  std::vector<uint8_t> buffer_;
  Status stream_error_;  // the ByteStream's own error, kept for the message
  std::string member_;   // current member path, for messages
  int64_t member_size_ = 0;
  int64_t max_member_bytes_ = 0;
  bool require_end_ = false;
  bool missing_end_ = false;
  int64_t members_end_ = -1;  // where the last member's (padded) data ends; -1: no member
  bool failed_ = false;
};

// SampleSpec and SplitExtensions are public (include/stoker/sources.h).

// Splits a member path into key and extension at the first dot of the
// basename; false when the basename has no dot (no extension).
bool SplitKey(const std::string& path, std::string* key, std::string* ext);

// Parses the text of a label member ("7", " 7\n"). Negative values are an
// error unless `allow_negative`.
StatusOr<int64_t> ParseLabel(const uint8_t* data, size_t size, bool allow_negative = false);

struct ShardSample {
  std::string key;
  std::string image_member;       // member path of the image
  std::vector<uint8_t> bytes;     // image bytes (empty with read_images = false)
  int64_t data_offset = 0;        // of the image member in the tar stream
  int64_t data_size = 0;
  int64_t label = -1;
  // Records (spec.fields non-empty): per field, its member's path and data
  // (offset and size in the tar stream) and, when read, where its bytes start
  // in `bytes` (the members' data one after another, in the order met).
  // `label` is the primary label field's value (-1 without one);
  // image_member, data_offset and data_size are the first field's.
  std::vector<std::string> field_members;
  std::vector<int64_t> field_offsets;
  std::vector<int64_t> field_sizes;
  std::vector<size_t> field_starts;
};

class ShardSampleReader {
 public:
  // With `read_images` false only offsets and sizes are recorded (indexing).
  static StatusOr<std::unique_ptr<ShardSampleReader>> Open(const std::string& url,
                                                           const SampleSpec& spec,
                                                           const StreamOptions& options,
                                                           bool read_images = true);
  static StatusOr<std::unique_ptr<ShardSampleReader>> FromStream(
      std::unique_ptr<ByteStream> stream, const SampleSpec& spec, bool read_images = true);

  // The next sample; `*end` at the end of the shard. `sample->bytes` keeps
  // its capacity across calls.
  Status Next(ShardSample* sample, bool* end);
  const std::string& name() const { return tar_->name(); }
  // The shard ended without its end-of-archive blocks (TarReader).
  bool missing_end_of_archive() const { return tar_->missing_end_of_archive(); }

 private:
  ShardSampleReader(std::unique_ptr<TarReader> tar, const SampleSpec& spec, bool read_images)
      : tar_(std::move(tar)), spec_(spec), read_images_(read_images) {}
  // Records: which fields a member of extension `ext` (lowercase) fills, and
  // at what preference rank; reads or records it.
  Status TakeRecordMember(const std::string& ext, ShardSample* sample,
                          std::vector<size_t>* ranks);
  Status FinishRecord(const std::string& key, ShardSample* sample,
                      const std::vector<size_t>& ranks);

  std::unique_ptr<TarReader> tar_;
  SampleSpec spec_;
  bool read_images_;
  TarMember pending_;        // header read, data not yet consumed
  bool has_pending_ = false;
  bool done_ = false;
  Status deferred_;
  std::vector<uint8_t> label_bytes_;
  std::unordered_set<std::string> seen_keys_;  // keys of the samples so far
  // Records: the primary label's field (or -1).
  int label_field_ = -1;
};

}  // namespace stoker

#endif  // STOKER_SOURCE_TAR_READER_H_
