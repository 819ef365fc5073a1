// Copyright 2026 The stoker Authors.
//
// Deterministic generator of photo-like JPEG images in ImageFolder layout
// (dir/class_XXX/img_XXXXXX.jpg). `make demo` and the benchmarks use it when
// the user names no dataset.
//
// The pixels are built so that a JPEG decoder pays about what it pays for
// real photos: smooth large-scale structure (a gradient and a few soft blobs
// in colours drawn from a per-class palette, so classes look different),
// hard edges (rectangles and ellipses), and texture (value noise and lattice
// noise from ~30 px down to 2 px, plus per-pixel luminance and chroma grain,
// its strength varying across the image and from image to image). At
// 500x375, quality 90, 4:4:4 the files are 90-130 KiB (median ~107), like
// ImageNet photos (~110 KB); 4:2:0 ones are ~65 KiB. All pixel arithmetic is
// integer (plus correctly rounded sqrt), so the pixels are the same on every
// run, compiler and machine, and the JPEG bytes are the same for a given
// libjpeg build.
//
// Thread-safety: every function here is a pure function of its arguments
// and keeps no state; all may be called concurrently from any thread.
// WriteSyntheticImageFolder calls that name the same directory race on the
// files, as any two writers of one file do.
//
// Errors: WriteSyntheticImageFolder returns InvalidArgument for unusable
// options and IoError, naming the path, when a directory cannot be created
// or a file cannot be written; files written before the error stay. The
// in-memory functions have no error channel: on invalid arguments (see their
// comments) they return an empty vector.
#ifndef STOKER_SYNTH_SYNTH_H_
#define STOKER_SYNTH_SYNTH_H_

#include <cstdint>
#include <string>
#include <vector>

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

// What WriteSyntheticImageFolder encodes for image `image_index` of class
// `class_index`.
struct SynthImageSpec {
  int width = 0;
  int height = 0;
  int subsampling = 444;  // 444 or 420
  uint64_t seed = 0;      // the argument to SynthesizeJpeg/SynthesizePixels
};
SynthImageSpec SynthImageSpecFor(const SynthOptions& options, int class_index,
                                 int image_index);

// Encodes one synthetic RGB image (pure function of its arguments) into JPEG
// bytes (baseline, JFIF, standard Huffman tables, islow DCT).
// `subsampling` is 444, 422 or 420. Returns an empty vector unless
// 1 <= width, height <= 65500, 1 <= quality <= 100 and subsampling is valid.
std::vector<uint8_t> SynthesizeJpeg(int width, int height, uint64_t seed, int quality,
                                    int subsampling = 444);

// The raw RGB pixels (HWC, 3 channels) that SynthesizeJpeg encodes. Seeds that
// differ only in their low 20 bits share a colour palette (a "class");
// WriteSyntheticImageFolder gives each class its own palette, with hues spread
// around the colour wheel. Returns an empty vector unless
// 1 <= width, height <= 65500.
std::vector<uint8_t> SynthesizePixels(int width, int height, uint64_t seed);

}  // namespace stoker

#endif  // STOKER_SYNTH_SYNTH_H_
