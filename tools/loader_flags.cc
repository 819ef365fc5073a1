// Copyright 2026 The stoker Authors.
#include "loader_flags.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli_checks.h"

namespace stoker {
namespace {

const std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
const std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};

std::vector<Transform> PipelineTransforms(const std::string& pipeline, DType dtype) {
  std::vector<Transform> t;
  if (pipeline == "train") {
    t = {Transform::RandomResizedCrop(224, 224), Transform::RandomHorizontalFlip()};
  } else {
    t = {Transform::Resize(256), Transform::CenterCrop(224, 224)};
  }
  if (dtype != DType::kUint8) t.push_back(Transform::Normalize(kMean, kStd));
  return t;
}

}  // namespace

void AddLoaderFlags(CLI::App* sub, LoaderFlags* f, LoaderFlagSet set) {
  sub->add_option("--pipeline", f->pipeline,
                  "train = RandomResizedCrop(224) + flip + normalise; "
                  "val = Resize(256) + CenterCrop(224) + normalise")
      ->check(CLI::IsMember({"train", "val"}))->capture_default_str();
  if (set.sizes) {
    sub->add_option("--batch-size", f->options.batch_size, "samples per batch")
        ->capture_default_str()->check(kPositive);
    sub->add_option("--threads", f->options.threads, "worker threads (0: one per core)")
        ->capture_default_str()->check(kNonNegative);
    sub->add_option("--prefetch", f->options.prefetch, "batches in flight")
        ->capture_default_str()->check(kPositive);
  }
  sub->add_option("--dtype", f->dtype, "uint8 (no normalise), float32, float16 or bfloat16")
      ->check(OneOf(kDTypeChoices))->capture_default_str();
  sub->add_option("--dct-scaling", f->dct_scaling,
                  "JPEG decode at 1/2, 1/4, 1/8 size when the crop is downscaled 2x or more "
                  "(faster, slightly different pixels): auto = on for train (a random crop), "
                  "off for val (bit-identical to torchvision), as in Python")
      ->check(OneOf(kDctScalingChoices))->capture_default_str();
  sub->add_option("--on-error", f->on_error,
                  "raise: stop at the first bad image, naming it; skip: leave it out and "
                  "count it (as Loader(on_error=))")
      ->check(OneOf(kOnErrorChoices))->capture_default_str();
  if (set.layout) {
    sub->add_option("--layout", f->layout, "NCHW or NHWC")
        ->check(OneOf(kLayoutChoices))->capture_default_str();
  }
  if (set.trace) {
    sub->add_option("--trace", f->trace,
                    "write a Chrome trace / Perfetto JSON of the run to FILE: per worker "
                    "thread the read, decode, transform and cache spans of every sample; "
                    "the consumer's waits and hand-offs (docs/diagnosis.md)");
  }
}

LoaderOptions ToLoaderOptions(const LoaderFlags& f) {
  LoaderOptions o = f.options;
  o.shuffle = true;
  o.dtype = ParseDType(f.dtype).value();  // the flags' checks admit valid names only
  o.layout = ParseLayout(f.layout).value();
  o.dct_scaling = ParseChoice("--dct-scaling", f.dct_scaling, kDctScalingChoices).value();
  o.on_error = ParseChoice("--on-error", f.on_error, kOnErrorChoices).value();
  o.transforms = PipelineTransforms(f.pipeline, o.dtype);
  if (!f.trace.empty()) {
    o.tracer = std::make_shared<Tracer>();
    (void)o.tracer->Start(TraceOptions{});  // the default ring size is valid
  }
  return o;
}

int FinishTrace(const LoaderFlags& f, const LoaderOptions& o, const char* verb, int status) {
  if (f.trace.empty() || o.tracer == nullptr) return status;
  o.tracer->Stop();
  const Status st = o.tracer->WriteChromeTrace(f.trace);
  if (!st.ok()) {
    std::fprintf(stderr, "stoker %s: --trace: %s\n", verb, st.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "stoker %s: trace written to %s (open it in ui.perfetto.dev)\n", verb,
               f.trace.c_str());
  return status;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace stoker
