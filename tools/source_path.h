// Copyright 2026 The stoker Authors.
//
// OpenSourceFromPath: the one place where a CLI verb turns a path into a
// Source (`stoker convert`, `stoker stats`):
//  - a directory: an image folder (DIR/<class>/<image>); with `masks`, a
//    SegmentationFolder of DIR's images and the masks; with `coco`, the
//    COCO annotations over DIR's images;
//  - FILE.npy: an images array (labels from `labels`, layout from `layout`);
//  - FILE.h5 / FILE.hdf5: the `images` and `labels` datasets;
//  - with `fields`: records of tar shards, of an HDF5 file's datasets, or of
//    a directory's aligned .npy arrays (SourcePathOptions::fields);
//  - tar shards: a path or pattern ending in .tar, .tar.gz, .tgz or .tar.zst
//    (brace ranges and quoted globs expand, see source/shards.h); local
//    uncompressed shards are indexed (random access), compressed ones
//    streamed in order (unknown length).
// Thread-safety: a plain function. Errors: NotFound for a missing path,
// InvalidArgument for a path of no known kind or options that do not apply
// to it; otherwise the source's own Open error.
#ifndef STOKER_TOOLS_SOURCE_PATH_H_
#define STOKER_TOOLS_SOURCE_PATH_H_

#include <memory>
#include <string>
#include <vector>

#include "stoker/source.h"

namespace stoker {

struct SourcePathOptions {
  // .npy: a 1-D labels .npy ("" none). HDF5: the labels dataset; when not
  // `labels_given`, "labels" is used ("" given explicitly means none).
  std::string labels;
  bool labels_given = false;
  std::string images = "images";  // HDF5: the images dataset
  std::string layout;             // .npy: NHWC or NCHW ("" from the shape)
  // Records, "NAME=VALUE" each; empty: image + label. Tar shards:
  // NAME=EXT;EXT (Shards' fields=); an .h5/.hdf5 file: NAME=DATASET (with
  // ":json" at the end: a json field); a directory: NAME=FILE.npy, aligned
  // arrays relative to it (Npy({...})).
  std::vector<std::string> fields;
  // A directory with `masks`: SegmentationFolder(path, masks) with these
  // suffixes; with `coco` (an annotations .json): Coco(path, coco) with
  // masks "" (none), "semantic" or "instances", labels, crowd (ParseCocoOptions)
  // and drop_empty.
  std::string masks, image_suffix, mask_suffix;
  std::string coco, coco_masks;
  std::string coco_labels = "category_id", coco_crowd = "drop";  // ParseCocoOptions' names
  bool drop_empty = false;
};

StatusOr<std::shared_ptr<Source>> OpenSourceFromPath(const std::string& path,
                                                     const SourcePathOptions& options);

// "image folder, .npy, .h5/.hdf5 or tar shards (.tar, .tar.gz, .tar.zst)", for help texts.
extern const char kSourcePathHelp[];

}  // namespace stoker

#endif  // STOKER_TOOLS_SOURCE_PATH_H_
