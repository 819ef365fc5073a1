// Copyright 2026 The stoker Authors.
//
// ImageFolder: a directory with one sub-directory per class, like
// torchvision.datasets.ImageFolder. Classes are the sub-directories sorted
// by name (byte order) and get label ids 0, 1, ...; inside each class the
// directory tree is walked recursively (symbolic links followed, loops
// detected), directories in sorted order and files sorted by name, keeping
// names ending in one of torchvision's IMG_EXTENSIONS (.jpg .jpeg .png .ppm
// .bmp .pgm .tif .tiff .webp) in any case. This is torchvision's order and
// file set, so index i names the same file in both.
//
// Thread-safety: immutable after Open(); ReadIndex is thread-safe.
// Errors: Open returns NotFound when the root does not exist, InvalidArgument
// when it has no class directories or a class has no images.
// (The public class, with Open(), is in include/stoker/sources.h; this is
// its implementation.)
#ifndef STOKER_SOURCE_IMAGE_FOLDER_H_
#define STOKER_SOURCE_IMAGE_FOLDER_H_

#include <memory>
#include <string>
#include <vector>

#include "stoker/sources.h"

namespace stoker {

class ImageFolderImpl final : public ImageFolder {
 public:
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  std::string Describe() const override;
  std::vector<std::string> classes() const override { return classes_; }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;
  // The sample's file (FileStamp).
  uint64_t SampleStamp(int64_t index) const override { return FileStamp(Path(index)); }

  const std::string& root() const override { return root_; }
  // Path of sample `index` (root-relative paths are stored, joined on use).
  std::string Path(int64_t index) const override;
  int64_t Label(int64_t index) const override { return labels_[index]; }
  std::vector<int64_t> Labels() const override {
    return std::vector<int64_t>(labels_.begin(), labels_.end());
  }

 private:
  friend class ImageFolder;
  ImageFolderImpl() = default;

  std::string root_;
  std::vector<std::string> classes_;
  // Paths relative to root_, packed to keep the index small: offsets_[i] ..
  // offsets_[i + 1] in names_.
  std::string names_;
  std::vector<uint64_t> offsets_;
  std::vector<int32_t> labels_;
};

// torchvision.datasets.folder.IMG_EXTENSIONS, lower case.
inline constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                                   ".pgm", ".tif", ".tiff", ".webp"};

// True for names ending in one of kImageExtensions (any case).
bool HasImageExtension(const std::string& name);
// True for names ending in one of `extensions` (lower case; the name in any case).
bool HasExtension(const std::string& name, const std::vector<std::string>& extensions);

// The class-folder walk (ImageFolder's, and VideoClips'): classes are root's
// sub-directories sorted by name, files (root-relative) in torchvision's
// order, with their class index. `extensions` null: kImageExtensions.
struct ClassFolderListing {
  std::string root;  // without trailing slashes
  std::vector<std::string> classes;
  std::vector<std::string> files;
  std::vector<int32_t> labels;
  std::vector<std::string> empty_classes;
};
// NotFound for a missing root; InvalidArgument when it is not a directory,
// has no class sub-directories or a class has no file (naming them).
Status ListClassFolder(const std::string& root, const std::vector<std::string>* extensions,
                       ClassFolderListing* out);

// `dir` without trailing slashes ("/" stays "/").
std::string TrimTrailingSlashes(std::string dir);

// Every file with an image extension under `root`, walked as a class folder
// is (recursively, symbolic links followed, loops skipped), as paths relative
// to `root`, sorted (byte order). Errors: NotFound when root does not exist,
// InvalidArgument when it is not a directory, IoError for an unreadable one.
Status ListImageFiles(const std::string& root, std::vector<std::string>* out);

}  // namespace stoker

#endif  // STOKER_SOURCE_IMAGE_FOLDER_H_
