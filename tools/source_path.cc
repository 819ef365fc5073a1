// Copyright 2026 The stoker Authors.
#include "source_path.h"

#include <sys/stat.h>

#include <cstring>
#include <utility>
#include <vector>

#include "stoker/sources.h"

namespace stoker {

const char kSourcePathHelp[] =
    "image folder (DATA/<class>/<image>), images .npy, .h5/.hdf5, or tar shards (a path or "
    "pattern ending in .tar, .tar.gz, .tgz or .tar.zst, e.g. 'shards/train-{000..009}.tar')";

namespace {
bool EndsWith(const std::string& s, const char* sfx) {
  const size_t n = std::strlen(sfx);
  return s.size() > n && s.compare(s.size() - n, n, sfx) == 0;
}

// --field NAME=VALUE options as (name, value) pairs; `form` and `example`
// are for the error message.
StatusOr<std::vector<std::pair<std::string, std::string>>> SplitFields(
    const std::vector<std::string>& fields, const char* form, const char* example) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& f : fields) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size()) {
      return InvalidArgumentError("--field '" + f + "': expected NAME=" + form + " (e.g. " +
                                  example + ")");
    }
    out.emplace_back(f.substr(0, eq), f.substr(eq + 1));
  }
  return out;
}
}  // namespace

StatusOr<std::shared_ptr<Source>> OpenSourceFromPath(const std::string& path,
                                                     const SourcePathOptions& o) {
  if (EndsWith(path, ".tar") || EndsWith(path, ".tar.gz") || EndsWith(path, ".tgz") ||
      EndsWith(path, ".tar.zst")) {
    if (!o.labels.empty() || !o.layout.empty()) {
      return InvalidArgumentError("--labels and --layout are not for tar shards");
    }
    ShardOptions so;
    so.patterns = {path};
    STOKER_ASSIGN_OR_RETURN(auto fields, SplitFields(o.fields, "EXT[;EXT...]", "caption=txt"));
    for (auto& [name, exts] : fields) so.spec.fields.push_back({name, SplitExtensions(exts)});
    return OpenShards(so);
  }
  if (!o.fields.empty()) {
    if (!o.labels.empty() || !o.layout.empty() || !o.masks.empty() || !o.coco.empty()) {
      return InvalidArgumentError("--field declares every field of a record source: no "
                                  "--labels, --layout, --masks or --coco with it");
    }
    if (EndsWith(path, ".h5") || EndsWith(path, ".hdf5")) {
      // HDF5 records: NAME=DATASET (a trailing ":json" makes a string dataset a json field).
      STOKER_ASSIGN_OR_RETURN(auto fields, SplitFields(o.fields, "DATASET[:json]", "emb=features"));
      std::vector<std::string> json;
      for (auto& [name, dataset] : fields) {
        if (EndsWith(dataset, ":json")) {
          dataset.resize(dataset.size() - 5);
          json.push_back(name);
        }
      }
      STOKER_ASSIGN_OR_RETURN(std::shared_ptr<Hdf5Source> s,
                              Hdf5Source::OpenFields(path, fields, json));
      return std::shared_ptr<Source>(s);
    }
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      // Aligned .npy arrays: NAME=FILE.npy, relative to the directory.
      STOKER_ASSIGN_OR_RETURN(auto fields, SplitFields(o.fields, "FILE.npy", "x=features.npy"));
      for (auto& [name, file] : fields) {
        if (!file.empty() && file[0] != '/') file = path + "/" + file;
      }
      STOKER_ASSIGN_OR_RETURN(std::shared_ptr<NpySource> s, NpySource::OpenFields(fields));
      return std::shared_ptr<Source>(s);
    }
    return InvalidArgumentError("--field is for tar shards (NAME=EXT[;EXT...]), an .h5/.hdf5 "
                                "file (NAME=DATASET) or a folder of .npy arrays "
                                "(NAME=FILE.npy); " + path + " is none of them");
  }
  if (!o.masks.empty() && !o.coco.empty()) {
    return InvalidArgumentError("--masks (segmentation pairs) and --coco (COCO annotations) "
                                "are two sources: give one");
  }
  if (!o.masks.empty()) {
    SegmentationFolderOptions so;
    so.image_suffix = o.image_suffix;
    so.mask_suffix = o.mask_suffix;
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<SegmentationFolder> s,
                            SegmentationFolder::Open(path, o.masks, so));
    return std::shared_ptr<Source>(s);
  }
  if (!o.coco.empty()) {
    CocoOptions co;
    co.drop_empty = o.drop_empty;
    STOKER_RETURN_IF_ERROR(ParseCocoOptions(o.coco_masks, o.coco_labels, o.coco_crowd, &co));
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<CocoSource> s, CocoSource::Open(path, o.coco, co));
    return std::shared_ptr<Source>(s);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFoundError(path + ": no such file or directory");
  if (S_ISDIR(st.st_mode)) {
    if (!o.labels.empty()) return InvalidArgumentError("--labels is for .npy and HDF5 sources");
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ImageFolder> f, ImageFolder::Open(path));
    return std::shared_ptr<Source>(f);
  }
  if (EndsWith(path, ".npy")) {
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<NpySource> s,
                            NpySource::Open(path, o.labels, o.layout));
    return std::shared_ptr<Source>(s);
  }
  if (EndsWith(path, ".h5") || EndsWith(path, ".hdf5")) {
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<Hdf5Source> s,
                            Hdf5Source::Open(path, o.images, o.labels_given ? o.labels : "labels"));
    return std::shared_ptr<Source>(s);
  }
  return InvalidArgumentError(path + ": not an image folder, a .npy or an .h5/.hdf5 file, nor tar "
                              "shards (.tar, .tar.gz, .tgz, .tar.zst)");
}

}  // namespace stoker
