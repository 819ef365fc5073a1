// Copyright 2026 The stoker Authors.
//
// ComputeStats: one pass over a source that says what is in it
// (`stoker stats DATA`):
//  - class counts (by label, with the source's class names) and the
//    imbalance ratio max / min;
//  - image sizes (width, height) and aspect ratios (width / height, kept in
//    thousandths) as value -> count histograms;
//  - file formats (JPEG, PNG, raw pixels) and colour modes (JPEG grey,
//    4:2:0, 4:2:2, 4:4:4, ..., CMYK/YCCK; PNG colour type and bit depth),
//    read from the headers (InspectImage; images the decoder reads but
//    InspectImage does not know count as "<format> (mode unknown)");
//  - the exact per-channel mean and standard deviation of the pixels in
//    [0, 1] (every pixel of every image weighs the same, population std),
//    with images brought to shorter side `resolution` first: JPEGs are
//    decoded at the largest DCT scale 1/2, 1/4 or 1/8 that keeps the shorter
//    side >= resolution, then every image whose shorter side is longer is
//    resized to it with the engine's resampler (torchvision's Resize(N):
//    Pillow's antialiased bilinear); smaller images are used as they are.
//    resolution 0 uses every image at full size. Sums are integers, so the
//    result is the same for any thread count;
//  - groups of duplicate images (when `duplicates`): identical encoded bytes
//    (XXH3 128-bit hash; raw-pixel samples hash their pixels and size);
//  - unreadable or undecodable samples, each named with the reason.
// The statistics cover the samples that could be read and decoded; broken
// ones appear only in `errors` (and in `samples`).
//
// Thread-safety: ComputeStats reads the source from `threads` threads of its
// own; the progress callback runs on the calling thread. Errors: the call
// fails only when the source cannot start an epoch; per-sample failures are
// reported in the result.
#ifndef STOKER_STATS_H_
#define STOKER_STATS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

// A sample as value -> count (also declared, identically, by the
// engine's hypothesis tests).
using Histogram = std::map<int64_t, int64_t>;

struct StatsOptions {
  int resolution = 64;  // shorter side for the colour statistics; 0: full size
  int threads = 0;      // 0: one per core this process may run on (AvailableCores)
  bool duplicates = false;  // hash every sample and group identical ones
  int64_t max_pixels = int64_t{1} << 28;  // larger images are reported as errors
  // Called on the calling thread about 10 times a second and once at the
  // end: (samples done, total or -1 when the source's length is unknown).
  std::function<void(int64_t, int64_t)> progress;
};

struct ClassStat {
  int64_t label = 0;
  std::string name;  // from Source::classes(), or the label as text
  int64_t count = 0;
};

struct SampleError {
  std::string name;
  std::string message;
};

struct DatasetStats {
  std::string source;      // Source::Describe()
  int resolution = 0;
  int64_t samples = 0;     // samples met: images + errors
  int64_t images = 0;      // read and decoded
  std::vector<ClassStat> classes;  // by label; classes the source names but
                                   // that have no image count 0
  int64_t unlabelled = 0;          // images without a label
  Histogram widths, heights;
  Histogram aspects;               // round(1000 * width / height)
  std::map<std::string, int64_t> formats;  // "JPEG", "PNG", "raw"
  std::map<std::string, int64_t> modes;    // "JPEG 4:2:0", "PNG RGBA 8-bit", ...
  int64_t pixels = 0;                      // pixels in mean / std
  std::array<double, 3> mean{};            // R, G, B in [0, 1]
  std::array<double, 3> stddev{};
  bool duplicates_checked = false;
  std::vector<std::vector<std::string>> duplicates;  // names, groups in source order
  std::vector<SampleError> errors;                   // in source order
  double seconds = 0;

  // max / min class count; +inf when a class has no image; 0 without classes.
  double ImbalanceRatio() const;
  // Copies beyond the first in the duplicate groups.
  int64_t RedundantCopies() const;
};

StatusOr<DatasetStats> ComputeStats(Source* source, const StatsOptions& options);

// Format and colour mode from an encoded image's headers, e.g. {"JPEG",
// "JPEG 4:2:0"}, {"PNG", "PNG palette 8-bit"}. Returns false (and leaves the
// outputs alone) when the bytes are neither JPEG nor PNG or the header is
// cut short.
bool InspectImage(const uint8_t* data, size_t size, std::string* format, std::string* mode);

// The complete report as one JSON object ("stoker_stats": 1, ...), and back.
// StatsFromJson fails with InvalidArgument on anything that is not such a
// report (the message says what is missing).
std::string StatsToJson(const DatasetStats& stats);
StatusOr<DatasetStats> StatsFromJson(const std::string& text);

// The report for people: counts, text histograms, mean/std, duplicates,
// errors (at most `max_listed` names per list).
std::string FormatStats(const DatasetStats& stats, int max_listed = 20);

}  // namespace stoker

#endif  // STOKER_STATS_H_
