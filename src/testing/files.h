// Copyright 2026 The stoker Authors.
//
// Test helpers for written output: a directory's file names, and the
// members of a (possibly compressed) tar read back with libarchive. Header
// only; a test that includes it links libarchive (stoker_shard_writer does).
// Thread-safety: pure functions.
#ifndef STOKER_TESTING_FILES_H_
#define STOKER_TESTING_FILES_H_

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace stoker::testing {

// The names of the entries of `dir`.
inline std::set<std::string> ListDir(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

struct TarMember {
  std::string name;
  std::vector<uint8_t> data;
  bool regular = false;
};

// Every member of the tar at `path` (any compression libarchive reads), in
// order. An unreadable archive yields the members read before the problem.
inline std::vector<TarMember> ReadTar(const std::string& path) {
  std::vector<TarMember> out;
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) == ARCHIVE_OK) {
    struct archive_entry* e;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      TarMember m{archive_entry_pathname(e),
                  std::vector<uint8_t>(static_cast<size_t>(archive_entry_size(e))),
                  archive_entry_filetype(e) == AE_IFREG};
      if (archive_read_data(a, m.data.data(), m.data.size()) !=
          static_cast<la_ssize_t>(m.data.size())) {
        break;
      }
      out.push_back(std::move(m));
    }
  }
  archive_read_free(a);
  return out;
}

}  // namespace stoker::testing

#endif  // STOKER_TESTING_FILES_H_
