// Copyright 2026 The stoker Authors.
//
// CocoSourceImpl: COCO instances annotations as records (the public class,
// its fields and its errors are in include/stoker/sources.h). The JSON is
// parsed once at Open (nlohmann-json) into flat per-annotation arrays; a
// sample's boxes, labels, iscrowd and area point into them (valid while the
// source lives), its image is read from its file, and its masks (when asked
// for) are rasterised into the worker's scratch (source/coco_masks.h).
//
// Thread-safety: immutable after Open(); ReadIndex is thread-safe.
#ifndef STOKER_SOURCE_COCO_H_
#define STOKER_SOURCE_COCO_H_

#include <memory>
#include <string>
#include <vector>

#include "stoker/sources.h"

namespace stoker {

class CocoSourceImpl final : public CocoSource {
 public:
  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  std::string Describe() const override;
  Schema schema() const override { return schema_; }
  std::vector<std::string> classes() const override { return names_; }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override;
  std::string NameOf(int64_t index) const override;
  uint64_t SampleStamp(int64_t index) const override { return FileStamp(Path(index)); }
  std::vector<int64_t> category_ids() const override { return category_ids_; }
  std::vector<int64_t> category_labels() const override { return category_labels_; }
  int64_t num_classes() const override {
    return category_labels_.empty() ? 0 : category_labels_.back() + 1;
  }
  int64_t image_id(int64_t index) const override { return images_[static_cast<size_t>(index)].id; }
  std::string Path(int64_t index) const override {
    return dir_ + "/" + images_[static_cast<size_t>(index)].file;
  }

 private:
  friend class CocoSource;
  CocoSourceImpl() = default;

  struct Image {
    int64_t id = 0;
    std::string file;
    int height = 0, width = 0;
    // Its annotations in the flat arrays: [begin, end); the per-box fields'
    // are [begin, kept) (crowds, when dropped, come last).
    size_t begin = 0, kept = 0, end = 0;
  };

 public:
  // A segmentation: polygons, or RLE counts (decoded at Open); public for
  // coco.cc's rasterising helpers.
  struct Segmentation {
    std::vector<std::vector<double>> polygons;
    std::vector<uint32_t> rle;
    bool is_rle = false;
  };

 private:
  // Rasterises the sample's masks into `bytes` (semantic [H, W] or
  // instances [N, H, W]).
  Status Masks(const Image& im, std::vector<uint8_t>* bytes) const;
  Status CheckDeclaredSize(const Image& im, const uint8_t* data, size_t size) const;

  std::string dir_, json_;
  CocoOptions options_;
  Schema schema_;
  std::vector<Image> images_;
  std::vector<float> boxes_, area_;
  std::vector<int64_t> labels_, iscrowd_;
  std::vector<Segmentation> segs_;  // with masks only
  std::vector<int64_t> category_ids_, category_labels_;
  int64_t semantic_offset_ = 0;  // the semantic mask's value is label + this
  std::vector<std::string> names_;
  bool wide_ = false;  // semantic mask is uint16
};

}  // namespace stoker

#endif  // STOKER_SOURCE_COCO_H_
