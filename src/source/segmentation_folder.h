// Copyright 2026 The stoker Authors.
//
// SegmentationFolderImpl: image + mask pairs matched by key (the public
// class, its contract and its options are in include/stoker/sources.h).
//
// Thread-safety: immutable after Open(); ReadIndex is thread-safe.
// Errors: Open as SegmentationFolder::Open says; ReadIndex returns IoError
// naming the file that cannot be read.
#ifndef STOKER_SOURCE_SEGMENTATION_FOLDER_H_
#define STOKER_SOURCE_SEGMENTATION_FOLDER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/sources.h"

namespace stoker {

class SegmentationFolderImpl final : public SegmentationFolder {
 public:
  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  std::string Describe() const override;
  Schema schema() const override { return schema_; }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;
  uint64_t SampleStamp(int64_t index) const override;
  // Each pair's paths relative to their own roots (images_dir, masks_dir):
  // the same pairs under other roots have the same fingerprint.
  uint64_t Fingerprint() const override;
  std::string ImagePath(int64_t index) const override;
  std::string MaskPath(int64_t index) const override;

 private:
  friend class SegmentationFolder;
  SegmentationFolderImpl() = default;
  // Open's pairing: every image with its mask (each unpaired key named), or
  // the keys `split` lists, in its order (SegmentationFolderOptions::split).
  Status TakeAllPairs(const std::map<std::string, std::string>& images,
                      const std::map<std::string, std::string>& masks,
                      const SegmentationFolderOptions& options);
  Status TakeSplit(const std::string& path, const std::map<std::string, std::string>& images,
                   const std::map<std::string, std::string>& masks);

  std::string images_dir_, masks_dir_;
  std::vector<std::string> images_, masks_;  // relative paths, pair k = sample k
  Schema schema_;
};

// The key of a file (its relative path without the extension) when its stem
// ends with `suffix` (removed), else false. Exposed for tests.
bool SegmentationKey(const std::string& rel, const std::string& suffix, std::string* key);

}  // namespace stoker

#endif  // STOKER_SOURCE_SEGMENTATION_FOLDER_H_
