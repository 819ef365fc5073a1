// Copyright 2026 The stoker Authors.
#include "source/image_folder.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "io/file.h"

namespace stoker {

bool HasExtension(const std::string& name, const std::vector<std::string>& extensions) {
  for (const std::string& ext : extensions) {
    if (name.size() < ext.size()) continue;
    bool same = true;
    for (size_t i = 0; i < ext.size() && same; ++i) {
      char c = name[name.size() - ext.size() + i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      same = c == ext[i];
    }
    if (same) return true;
  }
  return false;
}

bool HasImageExtension(const std::string& name) {
  auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    if (name.size() < n) return false;
    for (size_t i = 0; i < n; ++i) {
      char c = name[name.size() - n + i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != ext[i]) return false;
    }
    return true;
  };
  for (const char* ext : kImageExtensions) {
    if (ends_with(ext)) return true;
  }
  return false;
}

namespace {

struct Entry {
  std::string name;
  bool is_dir;
};

// Lists `dir` (following symlinks to find out what entries are).
Status ListDir(const std::string& dir, std::vector<Entry>* out) {
  out->clear();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    const int err = errno;
    std::string msg = dir + ": cannot list directory: " + std::strerror(err);
    return err == ENOENT ? NotFoundError(msg) : IoError(msg);
  }
  while (struct dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (std::strcmp(n, ".") == 0 || std::strcmp(n, "..") == 0) continue;
    bool is_dir = false;
    if (e->d_type == DT_DIR) {
      is_dir = true;
    } else if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
      struct stat st;
      if (::stat((dir + "/" + n).c_str(), &st) == 0) is_dir = S_ISDIR(st.st_mode);
    }
    out->push_back(Entry{n, is_dir});
  }
  ::closedir(d);
  std::sort(out->begin(), out->end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return Status::OK();
}

// torchvision walks each class with sorted(os.walk(dir, followlinks=True)):
// directories in order of their full path, files sorted within each.
Status WalkClass(const std::string& root, const std::string& rel,
                 const std::vector<std::string>* extensions,
                 std::set<std::pair<dev_t, ino_t>>* seen,
                 std::vector<std::pair<std::string, std::vector<std::string>>>* dirs) {
  const std::string abs = root + "/" + rel;
  struct stat st;
  if (::stat(abs.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::OK();  // a dangling link
    // Anything else (ENAMETOOLONG below PATH_MAX-deep folders, EACCES, ELOOP)
    // would lose the files below silently: an error naming the folder.
    const int err = errno;
    return IoError(abs.substr(0, 200) + (abs.size() > 200 ? "..." : "") + ": cannot read (" +
                   std::to_string(abs.size()) + "-byte path): " + std::strerror(err));
  }
  if (!seen->insert({st.st_dev, st.st_ino}).second) return Status::OK();  // loop
  std::vector<Entry> entries;
  STOKER_RETURN_IF_ERROR(ListDir(abs, &entries));
  std::vector<std::string> files;
  for (const Entry& e : entries) {
    const bool kept = extensions != nullptr ? HasExtension(e.name, *extensions)
                                            : HasImageExtension(e.name);
    if (!e.is_dir && kept) files.push_back(rel + "/" + e.name);
  }
  dirs->emplace_back(rel, std::move(files));
  for (const Entry& e : entries) {
    if (e.is_dir) {
      STOKER_RETURN_IF_ERROR(WalkClass(root, rel + "/" + e.name, extensions, seen, dirs));
    }
  }
  return Status::OK();
}

}  // namespace

std::string TrimTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

Status ListImageFiles(const std::string& root, std::vector<std::string>* out) {
  out->clear();
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) return NotFoundError(root + ": no such directory");
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError(root + ": not a directory");
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::pair<std::string, std::vector<std::string>>> dirs;
  STOKER_RETURN_IF_ERROR(WalkClass(root, ".", nullptr, &seen, &dirs));
  for (auto& [dir, files] : dirs) {
    for (std::string& f : files) out->push_back(f.substr(2));  // "./a/b.png" -> "a/b.png"
  }
  std::sort(out->begin(), out->end());
  return Status::OK();
}

Status ListClassFolder(const std::string& root_in, const std::vector<std::string>* extensions,
                       ClassFolderListing* out) {
  const std::string root = TrimTrailingSlashes(root_in);
  struct stat st;
  if (::stat(root.c_str(), &st) != 0) {
    return NotFoundError(root + ": no such directory");
  }
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError(root + ": not a directory");
  std::vector<Entry> top;
  STOKER_RETURN_IF_ERROR(ListDir(root, &top));
  out->root = root;
  for (const Entry& e : top) {
    if (!e.is_dir) continue;
    const int32_t label = static_cast<int32_t>(out->classes.size());
    out->classes.push_back(e.name);
    std::set<std::pair<dev_t, ino_t>> seen;
    std::vector<std::pair<std::string, std::vector<std::string>>> dirs;
    STOKER_RETURN_IF_ERROR(WalkClass(root, e.name, extensions, &seen, &dirs));
    std::sort(dirs.begin(), dirs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t count = 0;
    for (auto& [dir, files] : dirs) {
      for (std::string& f : files) {
        out->files.push_back(std::move(f));
        out->labels.push_back(label);
        ++count;
      }
    }
    if (count == 0) out->empty_classes.push_back(e.name);
  }
  if (out->classes.empty()) {
    return InvalidArgumentError(root + ": no class sub-directories (expected "
                                "ROOT/<class>/<file>, e.g. ROOT/<class>/<image>.jpg)");
  }
  if (!out->empty_classes.empty()) {
    std::string list;
    for (const auto& c : out->empty_classes) list += (list.empty() ? "" : ", ") + c;
    std::string exts;
    if (extensions != nullptr) {
      for (const std::string& ext : *extensions) exts += (exts.empty() ? "" : "/") + ext;
    } else {
      for (const char* ext : kImageExtensions) exts += (exts.empty() ? "" : "/") + std::string(ext);
    }
    return InvalidArgumentError(root + ": found no " + exts + " files for the classes: " + list);
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<ImageFolder>> ImageFolder::Open(const std::string& root_in) {
  ClassFolderListing listing;
  STOKER_RETURN_IF_ERROR(ListClassFolder(root_in, nullptr, &listing));
  std::shared_ptr<ImageFolderImpl> folder(new ImageFolderImpl());
  folder->root_ = listing.root;
  folder->classes_ = std::move(listing.classes);
  folder->offsets_.push_back(0);
  folder->offsets_.reserve(listing.files.size() + 1);
  for (size_t i = 0; i < listing.files.size(); ++i) {
    folder->names_ += listing.files[i];
    folder->offsets_.push_back(folder->names_.size());
  }
  folder->labels_ = std::move(listing.labels);
  return std::shared_ptr<ImageFolder>(std::move(folder));
}

std::string ImageFolderImpl::Path(int64_t index) const {
  return root_ + "/" + names_.substr(offsets_[index], offsets_[index + 1] - offsets_[index]);
}

std::string ImageFolderImpl::NameOf(int64_t index) const { return Path(index); }

std::string ImageFolderImpl::Describe() const {
  return "ImageFolder(" + root_ + ", " + std::to_string(classes_.size()) + " classes, " +
         std::to_string(size()) + " images)";
}

Status ImageFolderImpl::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  // Build the path in a thread-local buffer: no allocation once warmed up.
  thread_local std::string path;
  path.assign(root_);
  path.push_back('/');
  path.append(names_, offsets_[index], offsets_[index + 1] - offsets_[index]);
  size_t n = 0;
  STOKER_RETURN_IF_ERROR(ReadFileInto(path, &scratch->bytes, &n));
  out->id = index;
  out->label = labels_[index];
  out->bytes = scratch->bytes.data();
  out->size = n;
  out->pixels = nullptr;
  return Status::OK();
}

}  // namespace stoker
