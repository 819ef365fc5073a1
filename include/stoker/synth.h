// Copyright 2026 The stoker Authors.
//
// Synthetic data: a deterministic folder of photo-like JPEGs in ImageFolder
// layout (`stoker synth`; the demo and benchmarks use it when the user names
// no dataset).
//
// The images cost a JPEG decoder about what real photos do (smooth structure,
// hard edges, texture and grain); at 500x375, quality 90, 4:4:4 they are
// 90-130 KiB. Output is a pure function of the options: the same bytes on
// every run for a given libjpeg build.
//
// Thread-safety: WriteSyntheticImageFolder keeps no state and may be called
// from any thread; two calls naming the same directory race on its files.
// Errors: InvalidArgument for unusable options, IoError naming the path when
// a directory or file cannot be written (files written before stay).
#ifndef STOKER_SYNTH_H_
#define STOKER_SYNTH_H_

#include <cstdint>
#include <string>

#include "stoker/status.h"

namespace stoker {

struct SynthOptions {
  int classes = 4;             // class sub-directories class_000, class_001, ...
  int images_per_class = 64;   // at most kSynthMaxImagesPerClass
  int width = 500;             // each image's size varies deterministically around this (+-20%),
  int height = 375;            // and about one image in 6 is portrait (width/height swapped)
  int quality = 90;            // libjpeg quality, 1..100
  uint64_t seed = 0;
  // When true and stderr is a TTY, print a one-line progress counter to stderr.
  bool progress = false;
};

// Limits checked by WriteSyntheticImageFolder.
inline constexpr int kSynthMaxImagesPerClass = 1 << 20;
inline constexpr int kSynthMaxSide = 50000;  // for SynthOptions::width/height

// Writes OPTIONS.classes * OPTIONS.images_per_class JPEG files under `dir`
// (dir/class_XXX/img_XXXXXX.jpg), creating directories as needed. Existing
// files with the same names are overwritten. Output is a pure function of
// OPTIONS (same bytes every run). Returns the number of files written.
//
// Class c's directory is class_%03d of c; image i of class c is named
// img_%06d of (c * images_per_class + i), so names are unique over the whole
// tree. Its bytes are exactly
//   SynthesizeJpeg(s.width, s.height, s.seed, options.quality, s.subsampling)
// where s = SynthImageSpecFor(options, c, i). About one image in 4 is 4:2:0,
// the rest 4:4:4.
StatusOr<int64_t> WriteSyntheticImageFolder(const std::string& dir,
                                            const SynthOptions& options);

}  // namespace stoker

#endif  // STOKER_SYNTH_H_
