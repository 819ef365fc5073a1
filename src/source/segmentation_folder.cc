// Copyright 2026 The stoker Authors.
#include "source/segmentation_folder.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "io/file.h"
#include "source/image_folder.h"

namespace stoker {

bool SegmentationKey(const std::string& rel, const std::string& suffix, std::string* key) {
  const size_t slash = rel.rfind('/');
  const size_t dot = rel.rfind('.');
  std::string stem = (dot == std::string::npos || (slash != std::string::npos && dot < slash))
                         ? rel
                         : rel.substr(0, dot);
  if (!suffix.empty()) {
    if (stem.size() < suffix.size() ||
        stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) != 0) {
      return false;
    }
    stem.resize(stem.size() - suffix.size());
  }
  *key = std::move(stem);
  return true;
}

namespace {

// key -> relative path of one folder's files; two files of one key are an
// error naming both.
Status KeyFiles(const std::string& dir, const std::string& suffix, const char* what,
                std::map<std::string, std::string>* out) {
  std::vector<std::string> files;
  STOKER_RETURN_IF_ERROR(ListImageFiles(dir, &files));
  for (std::string& f : files) {
    std::string key;
    if (!SegmentationKey(f, suffix, &key)) continue;
    auto [it, fresh] = out->emplace(key, f);
    if (!fresh) {
      return InvalidArgumentError(std::string(what) + " folder " + dir + ": '" + it->second +
                                  "' and '" + f + "' have the same key '" + key +
                                  "' (one file per key and folder)");
    }
  }
  return Status::OK();
}

std::string FirstFew(const std::vector<std::string>& keys) {
  std::string s;
  const size_t shown = std::min<size_t>(keys.size(), 5);
  for (size_t k = 0; k < shown; ++k) s += (k ? ", '" : "'") + keys[k] + "'";
  if (keys.size() > shown) s += " and " + std::to_string(keys.size() - shown) + " more";
  return s;
}

}  // namespace

StatusOr<std::shared_ptr<SegmentationFolder>> SegmentationFolder::Open(
    const std::string& images_dir, const std::string& masks_dir,
    const SegmentationFolderOptions& options) {
  if (!options.mask_dtype.empty() && options.mask_dtype != "uint8" &&
      options.mask_dtype != "uint16") {
    return InvalidArgumentError("SegmentationFolder: mask_dtype '" + options.mask_dtype +
                                "': expected \"uint8\", \"uint16\" or none (as each file holds)");
  }
  std::shared_ptr<SegmentationFolderImpl> src(new SegmentationFolderImpl());
  src->images_dir_ = TrimTrailingSlashes(images_dir);
  src->masks_dir_ = TrimTrailingSlashes(masks_dir);
  std::map<std::string, std::string> images, masks;
  STOKER_RETURN_IF_ERROR(KeyFiles(src->images_dir_, options.image_suffix, "images", &images));
  STOKER_RETURN_IF_ERROR(KeyFiles(src->masks_dir_, options.mask_suffix, "masks", &masks));
  if (!options.split.empty()) {
    STOKER_RETURN_IF_ERROR(src->TakeSplit(options.split, images, masks));
  } else {
    STOKER_RETURN_IF_ERROR(src->TakeAllPairs(images, masks, options));
  }
  if (src->images_.empty()) {
    return InvalidArgumentError("SegmentationFolder(" + src->images_dir_ + ", " +
                                src->masks_dir_ + "): no image files");
  }
  FieldSpec mask = ImageField("mask", ImageMode::kNative);
  mask.target = TargetRole::kMask;
  if (!options.mask_dtype.empty()) {
    mask.dtype = options.mask_dtype == "uint16" ? ElemType::kUint16 : ElemType::kUint8;
    mask.dtype_known = true;
  }
  src->schema_.fields = {ImageField("image"), std::move(mask)};
  return std::shared_ptr<SegmentationFolder>(std::move(src));
}

Status SegmentationFolderImpl::TakeAllPairs(const std::map<std::string, std::string>& images,
                                            const std::map<std::string, std::string>& masks,
                                            const SegmentationFolderOptions& options) {
  std::vector<std::string> no_mask, no_image;
  for (const auto& [key, rel] : images) {
    auto m = masks.find(key);
    if (m == masks.end()) {
      no_mask.push_back(key);
      continue;
    }
    images_.push_back(rel);
    masks_.push_back(m->second);
  }
  for (const auto& [key, rel] : masks) {
    if (!images.count(key)) no_image.push_back(key);
  }
  if (no_mask.empty() && no_image.empty()) return Status::OK();
  std::string msg = "SegmentationFolder(" + images_dir_ + ", " + masks_dir_ + "): ";
  if (!no_mask.empty()) {
    msg += std::to_string(no_mask.size()) + " image(s) without a mask" +
           (options.mask_suffix.empty() ? "" : " (suffix '" + options.mask_suffix + "')") +
           ": " + FirstFew(no_mask);
  }
  if (!no_image.empty()) {
    msg += std::string(no_mask.empty() ? "" : "; ") + std::to_string(no_image.size()) +
           " mask(s) without an image" +
           (options.image_suffix.empty() ? "" : " (suffix '" + options.image_suffix + "')") +
           ": " + FirstFew(no_image);
  }
  return InvalidArgumentError(msg);
}

Status SegmentationFolderImpl::TakeSplit(const std::string& path,
                                         const std::map<std::string, std::string>& images,
                                         const std::map<std::string, std::string>& masks) {
  std::vector<uint8_t> bytes;
  size_t size = 0;
  Status read = ReadFileInto(path, &bytes, &size);
  if (!read.ok()) return read.WithContext("SegmentationFolder: split");
  const std::string where = "SegmentationFolder(" + images_dir_ + ", " + masks_dir_ +
                            "): split " + path;
  std::set<std::string> seen;
  std::vector<std::string> no_image, no_mask, twice;
  const std::string text(reinterpret_cast<const char*>(bytes.data()), size);
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t\r", at);
    const size_t last = text.find_last_not_of(" \t\r", end == 0 ? 0 : end - 1);
    at = end + 1;
    if (first == std::string::npos || first >= end || last < first) continue;
    const std::string key = text.substr(first, last - first + 1);
    if (!seen.insert(key).second) {
      twice.push_back(key);
      continue;
    }
    auto i = images.find(key);
    auto m = masks.find(key);
    if (i == images.end()) no_image.push_back(key);
    if (m == masks.end()) no_mask.push_back(key);
    if (i == images.end() || m == masks.end()) continue;
    images_.push_back(i->second);
    masks_.push_back(m->second);
  }
  std::string msg;
  auto add = [&msg](const std::vector<std::string>& keys, const std::string& what) {
    if (keys.empty()) return;
    msg += (msg.empty() ? "" : "; ") + std::to_string(keys.size()) + " key(s) " + what + ": " +
           FirstFew(keys);
  };
  add(no_image, "without an image");
  add(no_mask, "without a mask");
  add(twice, "listed twice");
  if (!msg.empty()) return InvalidArgumentError(where + " lists " + msg);
  if (seen.empty()) return InvalidArgumentError(where + " lists no key");
  return Status::OK();
}

std::string SegmentationFolderImpl::ImagePath(int64_t index) const {
  return images_dir_ + "/" + images_[static_cast<size_t>(index)];
}

std::string SegmentationFolderImpl::MaskPath(int64_t index) const {
  return masks_dir_ + "/" + masks_[static_cast<size_t>(index)];
}

std::string SegmentationFolderImpl::NameOf(int64_t index) const {
  return ImagePath(index) + " (mask " + MaskPath(index) + ")";
}

uint64_t SegmentationFolderImpl::Fingerprint() const {
  const int64_t n = size();
  const int64_t k = std::min<int64_t>(n, 1024);  // as RandomAccessSource's: evenly spaced
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const size_t at = static_cast<size_t>(k == n ? i : i * (n - 1) / (k - 1));
    names.push_back(images_[at] + "\n" + masks_[at]);
  }
  return FingerprintNames(static_cast<uint64_t>(n), names);
}

uint64_t SegmentationFolderImpl::SampleStamp(int64_t index) const {
  return FileStamp(ImagePath(index)) * 31 + FileStamp(MaskPath(index));
}

std::string SegmentationFolderImpl::Describe() const {
  return "SegmentationFolder(" + images_dir_ + ", " + masks_dir_ + ", " +
         std::to_string(size()) + " pairs)";
}

Status SegmentationFolderImpl::ReadIndex(int64_t index, SampleScratch* scratch,
                                         SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  scratch->fields.resize(2);
  scratch->field_bytes.resize(1);
  size_t n_image = 0, n_mask = 0;
  STOKER_RETURN_IF_ERROR(ReadFileInto(ImagePath(index), &scratch->bytes, &n_image));
  STOKER_RETURN_IF_ERROR(ReadFileInto(MaskPath(index), &scratch->field_bytes[0], &n_mask));
  *out = SampleData();
  out->id = index;
  out->bytes = scratch->bytes.data();
  out->size = n_image;
  scratch->fields[0] = FieldValue();
  FieldValue& m = scratch->fields[1];
  m = FieldValue();
  m.data = scratch->field_bytes[0].data();
  m.size = n_mask;
  out->fields = scratch->fields.data();
  out->num_fields = 2;
  return Status::OK();
}

}  // namespace stoker
