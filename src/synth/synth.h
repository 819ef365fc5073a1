// Copyright 2026 The stoker Authors.
//
// (SynthOptions and WriteSyntheticImageFolder are public: include/stoker/synth.h.)
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
#include "stoker/synth.h"  // SynthOptions, WriteSyntheticImageFolder

namespace stoker {

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
