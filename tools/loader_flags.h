// Copyright 2026 The stoker Authors.
//
// The loader options that `bench`, `diagnose` and `tune` share, registered
// once: the pipeline (train or val transforms, as the benchmarks define them),
// the output dtype and layout, DCT scaling, what a bad image does, and batch size,
// threads and prefetch.
// Thread-safety: plain functions on the caller's objects.
#ifndef STOKER_TOOLS_LOADER_FLAGS_H_
#define STOKER_TOOLS_LOADER_FLAGS_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "stoker/loader.h"
#include "stoker/transforms.h"

namespace stoker {

struct LoaderFlags {
  std::string pipeline = "train";
  std::string dtype = "float32";
  std::string layout = "NCHW";
  std::string dct_scaling = "auto";
  std::string on_error = "raise";
  LoaderOptions options;  // batch_size, threads, prefetch as given (or their defaults)
  std::string trace;      // --trace FILE: Chrome trace JSON of the run ("": none)
};

// Which options AddLoaderFlags registers besides --pipeline and --dtype.
struct LoaderFlagSet {
  bool sizes = true;    // --batch-size, --threads, --prefetch (tune sweeps lists instead)
  bool layout = false;  // --layout
  bool trace = false;   // --trace FILE
};

void AddLoaderFlags(CLI::App* sub, LoaderFlags* flags, LoaderFlagSet set);

// The options the flags describe: shuffled, dtype, layout and dct_scaling parsed, and the
// pipeline's transforms (train: RandomResizedCrop(224) + flip; val:
// Resize(256) + CenterCrop(224); Normalize with ImageNet's mean/std unless uint8).
// With --trace, the options carry a Tracer already recording (stoker/trace.h).
LoaderOptions ToLoaderOptions(const LoaderFlags& flags);

// With --trace: stops the options' Tracer and writes its Chrome trace JSON
// to the file, saying so on stderr. `status`: the verb's exit status, kept
// unless the write fails (then 1). Without --trace: returns `status`.
int FinishTrace(const LoaderFlags& flags, const LoaderOptions& options, const char* verb,
                int status);

// Seconds on the steady clock, for the verbs' timings.
double NowSeconds();

}  // namespace stoker

#endif  // STOKER_TOOLS_LOADER_FLAGS_H_
