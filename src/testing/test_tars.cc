// Copyright 2026 The stoker Authors.
#include "testing/test_tars.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdlib>

namespace stoker::testing {
namespace {

la_ssize_t Append(struct archive*, void* out, const void* data, size_t n) {
  auto* v = static_cast<std::vector<uint8_t>*>(out);
  v->insert(v->end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + n);
  return static_cast<la_ssize_t>(n);
}

void Check(int rc, struct archive* a) {
  if (rc != ARCHIVE_OK) {
    std::fprintf(stderr, "MakeTar: %s\n", archive_error_string(a));
    std::abort();
  }
}

}  // namespace

std::vector<uint8_t> MakeTar(const std::vector<TarEntry>& entries, TarFormat format,
                             TarFilter filter) {
  std::vector<uint8_t> out;
  struct archive* a = archive_write_new();
  switch (format) {
    case TarFormat::kPax: Check(archive_write_set_format_pax_restricted(a), a); break;
    case TarFormat::kGnu: Check(archive_write_set_format_gnutar(a), a); break;
    case TarFormat::kUstar: Check(archive_write_set_format_ustar(a), a); break;
  }
  if (filter == TarFilter::kGzip) Check(archive_write_add_filter_gzip(a), a);
  if (filter == TarFilter::kZstd) Check(archive_write_add_filter_zstd(a), a);
  archive_write_set_bytes_in_last_block(a, 1);
  Check(archive_write_open(a, &out, nullptr, &Append, nullptr), a);
  for (const TarEntry& e : entries) {
    struct archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0444);
    archive_entry_set_mtime(entry, 1700000000, 0);
    Check(archive_write_header(a, entry), a);
    if (!e.data.empty() &&
        archive_write_data(a, e.data.data(), e.data.size()) != static_cast<la_ssize_t>(e.data.size())) {
      Check(ARCHIVE_FATAL, a);
    }
    archive_entry_free(entry);
  }
  Check(archive_write_close(a), a);
  archive_write_free(a);
  return out;
}

std::vector<uint8_t> Text(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace stoker::testing
