// Copyright 2026 The stoker Authors.
//
// ConvertToShards: any source into tar shards in the WebDataset layout
// (`stoker convert`). Per sample the shard gets KEY.<ext> (the image) and
// KEY.cls (the label as decimal text, no newline; omitted when the label is
// negative, i.e. the source has none). When the source has class names
// (ImageFolder), they are written beside the shards as classes.json, a JSON
// array of strings indexed by label, which Shards() reads back.
//
// Records (a source whose schema is not image + label): the primary image and
// label as below, and every other field as KEY.NAME.<ext of its kind>: npy
// (arrays, a .npy file), txt (text), json (json; scalars as a JSON number),
// bin (bytes), cls (labels), which webdataset's decoders and
// Shards(fields={NAME: "NAME.npy", ...}) read back. No image member when the
// record has no image; a second image field or a name outside
// [A-Za-z0-9_-] is refused before anything is written. A mask image field
// (target kMask: SegmentationFolder's "mask") is written as its encoded bytes,
// KEY.NAME.<ext of its content> ("a.mask.png"); Coco's boxes, labels,
// iscrowd, area and semantic mask are arrays: KEY.boxes.npy, ... Sources with
// target fields (masks, boxes) refuse `resize`: the targets would not follow.
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
// Keys: the base name of the sample's name (a note after it in parentheses,
// "a.png (mask m/a.png)", left out) without an image extension
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
#ifndef STOKER_CONVERT_H_
#define STOKER_CONVERT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/shard_writer.h"  // Compression, ShardWriterOptions, ShardInfo
#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

// ---- The conversion ----

struct ConvertOptions {
  ShardWriterOptions shards;
  int resize = 0;          // shorter side in pixels; 0: keep the size
  int quality = 90;        // JPEG quality of re-encoded images
  int subsampling = 444;   // 444, 422 or 420 for re-encoded images
  int threads = 0;         // 0: one per core
  // Called by the writing thread after every sample: (samples done, total,
  // bytes of tar data written so far).
  std::function<void(int64_t, int64_t, int64_t)> progress;
};

struct ConvertResult {
  int64_t samples = 0;
  int64_t reencoded = 0;     // images decoded and re-encoded (resized or raw)
  int64_t input_bytes = 0;   // encoded bytes read from the source
  int64_t output_bytes = 0;  // shard files on disk
  double seconds = 0;
  std::vector<ShardInfo> shards;
};

StatusOr<ConvertResult> ConvertToShards(Source* source, const ConvertOptions& options);

}  // namespace stoker

#endif  // STOKER_CONVERT_H_
