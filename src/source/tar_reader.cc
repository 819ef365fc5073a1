// Copyright 2026 The stoker Authors.
#include "source/tar_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "source/shard_records.h"

namespace stoker {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;

}  // namespace

TarReader::TarReader(std::unique_ptr<ByteStream> stream) : stream_(std::move(stream)) {}

TarReader::~TarReader() {
  if (archive_ != nullptr) archive_read_free(archive_);
}

long TarReader::ReadCallback(struct archive* a, void* self_ptr, const void** buffer) {
  auto* self = static_cast<TarReader*>(self_ptr);
  size_t got = 0;
  Status s = self->stream_->Read(self->buffer_.data(), self->buffer_.size(), &got);
  if (!s.ok()) {
    self->stream_error_ = s;
    archive_set_error(a, EIO, "%s", s.message().c_str());
    return -1;
  }
  *buffer = self->buffer_.data();
  return static_cast<long>(got);
}

StatusOr<std::unique_ptr<TarReader>> TarReader::Open(std::unique_ptr<ByteStream> stream,
                                                     int64_t max_member_bytes,
                                                     bool require_end_of_archive) {
  std::unique_ptr<TarReader> r(new TarReader(std::move(stream)));
  r->max_member_bytes_ = max_member_bytes;
  r->require_end_ = require_end_of_archive;
  r->buffer_.resize(kReadChunk);
  r->archive_ = archive_read_new();
  if (r->archive_ == nullptr) return ResourceExhaustedError(r->name() + ": archive_read_new failed");
  archive_read_support_format_tar(r->archive_);
  archive_read_support_format_empty(r->archive_);
  archive_read_support_filter_gzip(r->archive_);
  archive_read_support_filter_zstd(r->archive_);
  archive_read_support_filter_none(r->archive_);
  if (archive_read_open(r->archive_, r.get(), nullptr, &TarReader::ReadCallback, nullptr) !=
      ARCHIVE_OK) {
    const char* msg = archive_error_string(r->archive_);
    Status s = r->stream_error_.ok()
                   ? DataLossError(r->Where() + ": before the first member: " +
                                   (msg ? msg : "cannot read the archive"))
                   : r->stream_error_;
    return s;
  }
  return r;
}

Status TarReader::Next(TarMember* member, bool* end) {
  *end = false;
  if (failed_) {
    *end = true;
    return Status::OK();
  }
  for (;;) {
    struct archive_entry* entry = nullptr;
    const int rc = archive_read_next_header(archive_, &entry);
    if (rc == ARCHIVE_EOF) {
      // libarchive ends quietly when the input ends right after a member.
      // With the end-of-archive blocks present, the tar reader has consumed
      // at least one zero block past the last member's data.
      if (members_end_ >= 0 && archive_filter_bytes(archive_, 0) < members_end_ + 512) {
        missing_end_ = true;
        if (require_end_) {
          failed_ = true;
          return DataLossError(Where() + ": ends after member " + member_ +
                               " without the end-of-archive blocks (cut at a member boundary: "
                               "the shard looks truncated)");
        }
      }
      *end = true;
      DrainStream();
      return Status::OK();
    }
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      failed_ = true;
      const std::string where = member_.empty() ? std::string("at the first member")
                                                : "after member " + member_;
      if (!stream_error_.ok()) return stream_error_.WithContext(Where() + ": " + where);
      const char* msg = archive_error_string(archive_);
      return DataLossError(Where() + ": " + where + ": " + (msg ? msg : "damaged tar header"));
    }
    const char* path = archive_entry_pathname(entry);
    if (path == nullptr) path = archive_entry_pathname_utf8(entry);
    member_ = path ? path : "";
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    if (archive_entry_sparse_count(entry) > 0) {  // its bytes are not stored contiguously
      failed_ = true;
      return DataLossError(Where() + ": member " + member_ + ": sparse members are not supported");
    }
    member->path = member_;
    member->size = archive_entry_size(entry);
    member_size_ = member->size;
    member->data_offset = archive_filter_bytes(archive_, 0);
    members_end_ = member->data_offset + (member->size + 511) / 512 * 512;
    return Status::OK();
  }
}

void TarReader::DrainStream() {
  // libarchive stops at the end-of-archive blocks; reading the padding after
  // them lets a remote stream see its end (and complete its disk cache).
  // Bounded: a stream with more than 4 MiB of trailing bytes is left as is.
  size_t total = 0, got = 0;
  while (total < (size_t{4} << 20) && stream_->Read(buffer_.data(), buffer_.size(), &got).ok() &&
         got > 0) {
    total += got;
  }
}

Status TarReader::ReadData(std::vector<uint8_t>* out, size_t at) {
  if (member_size_ > max_member_bytes_) {
    failed_ = true;
    return DataLossError(Where() + ": member " + member_ + ": " + std::to_string(member_size_) +
                         " bytes, more than the limit of " + std::to_string(max_member_bytes_) +
                         " (max_sample_bytes)");
  }
  // The header's size is a claim: the buffer grows with the bytes that really
  // arrive (doubling from 1 MiB, or from the buffer's previous size), so a
  // member declaring 900 MiB in a 157 KB shard costs at most a few MiB.
  // Only the bytes beyond the previous size are zeroed.
  const size_t total = static_cast<size_t>(member_size_);
  const size_t had = out->size() > at ? out->size() - at : 0;
  out->resize(at + std::min(total, std::max(had, size_t{1} << 20)));
  size_t got = 0;
  while (got < total) {
    if (at + got == out->size()) out->resize(at + std::min(total, (out->size() - at) * 2));
    const la_ssize_t n = archive_read_data(archive_, out->data() + at + got,
                                           out->size() - at - got);
    if (n == 0) break;
    if (n < 0) {
      failed_ = true;
      if (!stream_error_.ok()) return stream_error_.WithContext(Where() + ": member " + member_);
      const char* msg = archive_error_string(archive_);
      return DataLossError(Where() + ": member " + member_ + ": " + (msg ? msg : "read failed"));
    }
    got += static_cast<size_t>(n);
  }
  if (got != total) {
    failed_ = true;
    return DataLossError(Where() + ": member " + member_ + ": truncated (" + std::to_string(got) +
                         " of " + std::to_string(member_size_) + " bytes)");
  }
  return Status::OK();
}

std::vector<std::string> SplitExtensions(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(';', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool SplitKey(const std::string& path, std::string* key, std::string* ext) {
  const size_t slash = path.find_last_of('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.find('.', base);
  if (dot == std::string::npos) return false;
  *key = path.substr(0, dot);
  *ext = path.substr(dot + 1);
  return true;
}

StatusOr<int64_t> ParseLabel(const uint8_t* data, size_t size, bool allow_negative) {
  size_t i = 0;
  while (i < size && std::isspace(data[i])) ++i;
  bool neg = false;
  if (i < size && (data[i] == '-' || data[i] == '+')) neg = data[i++] == '-';
  if (i >= size || !std::isdigit(data[i])) return InvalidArgumentError("not an integer label");
  int64_t v = 0;
  for (; i < size && std::isdigit(data[i]); ++i) {
    if (v > (INT64_MAX - 9) / 10) return InvalidArgumentError("label out of range");
    v = v * 10 + (data[i] - '0');
  }
  while (i < size && std::isspace(data[i])) ++i;
  if (i != size) return InvalidArgumentError("not an integer label");
  if (neg && v != 0 && !allow_negative) {
    return InvalidArgumentError("negative label -" + std::to_string(v) +
                                " (labels index classes from 0)");
  }
  return neg ? -v : v;
}

StatusOr<std::unique_ptr<ShardSampleReader>> ShardSampleReader::Open(const std::string& url,
                                                                     const SampleSpec& spec,
                                                                     const StreamOptions& options,
                                                                     bool read_images) {
  auto stream = OpenStream(url, options);
  if (!stream.ok()) return stream.status();
  return FromStream(std::move(stream).value(), spec, read_images);
}

StatusOr<std::unique_ptr<ShardSampleReader>> ShardSampleReader::FromStream(
    std::unique_ptr<ByteStream> stream, const SampleSpec& spec, bool read_images) {
  int label_field = -1;
  if (!spec.fields.empty()) {
    auto schema = ShardSchema(spec.fields);
    if (!schema.ok()) return schema.status();
    label_field = schema.value().label();
  }
  auto tar = TarReader::Open(std::move(stream), spec.max_member_bytes, spec.require_end_of_archive);
  if (!tar.ok()) return tar.status();
  std::unique_ptr<ShardSampleReader> r(
      new ShardSampleReader(std::move(tar).value(), spec, read_images));
  for (ShardField& f : r->spec_.fields) {
    for (std::string& e : f.exts) e = AsciiLower(e);
  }
  r->label_field_ = label_field;
  return r;
}

Status ShardSampleReader::TakeRecordMember(const std::string& ext, ShardSample* sample,
                                           std::vector<size_t>* ranks) {
  const std::string lower = AsciiLower(ext);
  bool read = false;
  size_t start = 0;
  for (size_t f = 0; f < spec_.fields.size(); ++f) {
    const std::vector<std::string>& exts = spec_.fields[f].exts;
    const size_t rank =
        static_cast<size_t>(std::find(exts.begin(), exts.end(), lower) - exts.begin());
    if (rank >= (*ranks)[f]) continue;  // not this field's, or a preferred member came first
    (*ranks)[f] = rank;
    sample->field_members[f] = pending_.path;
    sample->field_offsets[f] = pending_.data_offset;
    sample->field_sizes[f] = pending_.size;
    // Indexing reads only the primary label (the index keeps its value).
    const bool want = read_images_ || static_cast<int>(f) == label_field_;
    if (want && !read) {
      start = read_images_ ? sample->bytes.size() : 0;
      STOKER_RETURN_IF_ERROR(tar_->ReadData(read_images_ ? &sample->bytes : &label_bytes_, start));
      read = true;
    }
    sample->field_starts[f] = start;
  }
  return Status::OK();
}

Status ShardSampleReader::FinishRecord(const std::string& key, ShardSample* sample,
                                       const std::vector<size_t>& ranks) {
  for (size_t f = 0; f < spec_.fields.size(); ++f) {
    if (ranks[f] < spec_.fields[f].exts.size()) continue;
    std::string l;
    for (const auto& e : spec_.fields[f].exts) l += (l.empty() ? "" : ";") + e;
    return DataLossError(name() + ": sample " + key + " has no member for field '" +
                         spec_.fields[f].name + "' (extension " + l + ")");
  }
  sample->image_member = sample->field_members.front();
  sample->data_offset = sample->field_offsets.front();
  sample->data_size = sample->field_sizes.front();
  return Status::OK();
}

Status ShardSampleReader::Next(ShardSample* sample, bool* end) {
  *end = false;
  for (;;) {
    if (!deferred_.ok()) {  // damage met after the previous sample's last member
      Status s = deferred_;
      deferred_ = Status::OK();
      return s;
    }
    if (done_) {
      *end = true;
      return Status::OK();
    }
    if (!has_pending_) {
      bool tar_end = false;
      Status s = tar_->Next(&pending_, &tar_end);
      if (!s.ok() || tar_end) done_ = true;
      if (!s.ok()) return s;
      if (tar_end) continue;
      has_pending_ = true;
    }
    // A new group starts with the pending member.
    std::string key, ext;
    if (!SplitKey(pending_.path, &key, &ext)) {  // no extension: not part of any sample
      has_pending_ = false;
      continue;
    }
    sample->key = key;
    sample->image_member.clear();
    sample->label = -1;
    const bool record = !spec_.fields.empty();
    std::vector<size_t> field_ranks;
    if (record) {
      const size_t nf = spec_.fields.size();
      field_ranks.resize(nf, SIZE_MAX);
      sample->field_members.assign(nf, std::string());
      sample->field_offsets.assign(nf, -1);
      sample->field_sizes.assign(nf, 0);
      sample->field_starts.assign(nf, 0);
      sample->bytes.clear();
    }
    size_t image_rank = spec_.image_exts.size();
    bool has_label = false;
    Status group_error;
    // Duplicate keys: webdataset refuses a member name
    // repeated within a sample; a key that comes back after other keys
    // would be a second sample under the same name. Both are errors of
    // that sample here (counted skips under on_error="skip").
    if (!seen_keys_.insert(key).second) {
      group_error = DataLossError(name() + ": sample " + key +
                                  " appears again after other samples (duplicate key)");
    }
    std::vector<std::string> exts_seen;
    for (;;) {
      // Consume the pending member, which belongs to this group.
      const bool duplicate = std::find(exts_seen.begin(), exts_seen.end(), ext) != exts_seen.end();
      exts_seen.push_back(ext);
      if (duplicate && group_error.ok()) {
        group_error = DataLossError(name() + ": member " + pending_.path +
                                    " appears twice in sample " + key + " (duplicate key)");
      }
      size_t rank = 0;
      while (rank < spec_.image_exts.size() && spec_.image_exts[rank] != ext) ++rank;
      if (duplicate) {
        // Not read: the sample is an error already.
      } else if (record) {
        Status s = TakeRecordMember(ext, sample, &field_ranks);
        if (!s.ok()) {
          done_ = true;
          return s;
        }
      } else if (rank < image_rank) {
        image_rank = rank;
        sample->image_member = pending_.path;
        sample->data_offset = pending_.data_offset;
        sample->data_size = pending_.size;
        if (read_images_) {
          Status s = tar_->ReadData(&sample->bytes);
          if (!s.ok()) {
            done_ = true;
            return s;
          }
        }
      } else if (!spec_.label_ext.empty() && ext == spec_.label_ext) {
        Status s = tar_->ReadData(&label_bytes_);
        if (!s.ok()) {
          done_ = true;
          return s;
        }
        auto label = ParseLabel(label_bytes_.data(), label_bytes_.size(),
                                spec_.allow_negative_labels);
        if (!label.ok() && group_error.ok()) {
          group_error = DataLossError(name() + ": member " + pending_.path + ": " +
                                      label.status().message());
        }
        sample->label = label.ok() ? label.value() : -1;
        has_label = true;
      }
      has_pending_ = false;
      bool tar_end = false;
      Status s = tar_->Next(&pending_, &tar_end);
      if (!s.ok()) {  // this sample is complete; report the damage next time
        done_ = true;
        deferred_ = s;
        break;
      }
      if (tar_end) {
        done_ = true;
        break;
      }
      has_pending_ = true;
      std::string next_key;
      if (!SplitKey(pending_.path, &next_key, &ext) || next_key != key) break;
    }
    if (record) {
      Status fs = group_error.ok() ? FinishRecord(key, sample, field_ranks) : group_error;
      if (!fs.ok() && !deferred_.ok()) {  // the damage cut this sample short: one error
        Status s = deferred_;
        deferred_ = Status::OK();
        return s;
      }
      if (fs.ok() && label_field_ >= 0) {
        const size_t lf = static_cast<size_t>(label_field_);
        const std::vector<uint8_t>& b = read_images_ ? sample->bytes : label_bytes_;
        auto label = ParseLabel(b.data() + sample->field_starts[lf],
                                static_cast<size_t>(sample->field_sizes[lf]),
                                spec_.allow_negative_labels);
        if (!label.ok()) {
          return DataLossError(name() + ": sample " + key + ": field '" +
                               spec_.fields[lf].name + "' (member " +
                               sample->field_members[lf] + "): " + label.status().message());
        }
        sample->label = label.value();
      }
      return fs;
    }
    const bool incomplete = !group_error.ok() || image_rank == spec_.image_exts.size() ||
                            (!spec_.label_ext.empty() && !has_label);
    if (incomplete && !deferred_.ok()) {  // the damage cut this sample short: one error
      Status s = deferred_;
      deferred_ = Status::OK();
      return s;
    }
    if (!group_error.ok()) return group_error;
    if (image_rank == spec_.image_exts.size()) {
      return DataLossError(name() + ": sample " + key + " has no member with extension " +
                           [&] {
                             std::string l;
                             for (const auto& e : spec_.image_exts) l += (l.empty() ? "" : ";") + e;
                             return l;
                           }());
    }
    if (!spec_.label_ext.empty() && !has_label) {
      return DataLossError(name() + ": sample " + key + " has no ." + spec_.label_ext +
                           " member");
    }
    return Status::OK();
  }
}

}  // namespace stoker
