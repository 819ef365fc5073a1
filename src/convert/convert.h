// Copyright 2026 The stoker Authors.
//
// (The public part is include/stoker/convert.h.)
//
// ConvertToShards: any source into tar shards in the WebDataset layout
// (`stoker convert`). Per sample the shard gets KEY.<ext> (the image) and
// KEY.cls (the label as decimal text, no newline; omitted when the label is
// negative, i.e. the source has none). When the source has class names
// (ImageFolder), they are written beside the shards as classes.json, a JSON
// array of strings indexed by label, which Shards() reads back. Bytes of a
// name that are not UTF-8 are written as surrogate escapes (\udce9 for a
// Latin-1 e-acute, as Python's json.dumps(os.fsdecode(name))), so the file
// is valid JSON and the names come back as they were. The file is written
// through classes.json.tmp and a rename; a failed write (a full disk)
// removes the temporary and is an error naming the file.
//
// The image member:
//  - without `resize`: the source's encoded bytes as they are (no decode,
//    no re-encode), with the extension of their content (jpg, png, webp,
//    tif, bmp, ppm, pgm or pbm: ImageFileExtension);
//  - with `resize` = S: an image whose shorter side is longer than S is
//    decoded, resized so its shorter side is S (torchvision's Resize(S) size
//    rule and Pillow's antialiased bilinear filter, the engine's own
//    resampler) and re-encoded as JPEG at `quality` / `subsampling`; an image
//    already that small keeps its original bytes;
//  - raw-pixel sources (npy, HDF5 pixel datasets) are always encoded as JPEG
//    (resized first when `resize` asks for it).
//
// Keys: the base name of the sample's name without an image extension
// (one of ImageFolder's, any case), every character outside [A-Za-z0-9_-]
// replaced by '_' (so no dots): "n01440764/n01440764_10026.JPEG" gives
// "n01440764_10026". A key already used in this conversion gets "_" and the
// sample index appended (repeatedly, until unique), so keys are unique and
// the mapping is deterministic.
//
// Samples are read, decoded, resized and encoded on `threads` threads and
// written in source order (index order, no shuffle) by the calling thread;
// at most 4 x threads samples are held in memory at once.
//
// Thread-safety: one call at a time per output directory (see ShardWriter).
// Errors: the first sample that fails (unreadable, corrupt when it must be
// decoded) stops the conversion with its error naming the sample; completed
// shards stay, the partial one is deleted. InvalidArgument, before anything
// is written, when a classes.json in the directory names other classes and
// `shards.overwrite` is false.
#ifndef STOKER_CONVERT_CONVERT_H_
#define STOKER_CONVERT_CONVERT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "source/shard_writer.h"
#include "stoker/convert.h"  // ConvertOptions, ConvertResult, ConvertToShards
#include "stoker/source.h"

namespace stoker {

// The class-name file written beside the shards, and its path in `dir`.
inline constexpr const char kClassesJsonName[] = "classes.json";
std::string ClassesJsonPath(const std::string& dir);

// The key for a sample named `name` (see above), before de-duplication.
std::string ShardKeyFromName(const std::string& name);

}  // namespace stoker

#endif  // STOKER_CONVERT_CONVERT_H_
