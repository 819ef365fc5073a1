// Copyright 2026 The stoker Authors.
#include "pipeline/loader_options.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/geometry.h"
#include "source/sampler.h"
#include "stoker/transform_schema.h"

namespace stoker {

Status ValidateLoaderOptions(const Source& source, const LoaderOptions& options,
                             const RecordPlan& plan, int* height, int* width) {
  if (options.batch_size < 1) {
    return InvalidArgumentError("batch_size must be >= 1, got " +
                                std::to_string(options.batch_size));
  }
  if (options.prefetch < 1) {
    return InvalidArgumentError("prefetch must be >= 1, got " + std::to_string(options.prefetch));
  }
  if (options.threads < 0 || options.threads > 1024) {
    return InvalidArgumentError("threads must be between 0 (one per core) and 1024, got " +
                                std::to_string(options.threads));
  }
  if (options.max_threads < 0 || options.max_threads > 1024) {
    return InvalidArgumentError("max_threads must be between 0 (one per core) and 1024, got " +
                                std::to_string(options.max_threads));
  }
  if (options.auto_prefetch && options.max_prefetch < 1) {
    return InvalidArgumentError("max_prefetch must be >= 1, got " +
                                std::to_string(options.max_prefetch));
  }
  if (!std::isfinite(options.pad_value)) {
    return InvalidArgumentError("pad_value must be a finite number, got " +
                                std::to_string(options.pad_value));
  }
  if (options.max_padded_bytes < 1) {
    return InvalidArgumentError("max_padded_bytes must be >= 1, got " +
                                std::to_string(options.max_padded_bytes));
  }
  if (source.size() == 0) return InvalidArgumentError(source.Describe() + " has no samples");
  // Each transform against its declaration (stoker/transform_schema.h).
  for (const Transform& t : options.transforms) STOKER_RETURN_IF_ERROR(CheckTransform(t));
  if (options.cache_bytes > 0 && options.cache_kind == LoaderOptions::CacheKind::kOutput &&
      !IsDeterministic(options.transforms)) {
    return InvalidArgumentError(
        "cache='output' stores finished samples, so it needs transforms without random "
        "parameters (e.g. Resize, CenterCrop, Normalize); use cache='decoded' with random "
        "transforms");
  }
  if (options.cache_bytes > 0 && source.SamplesVaryByEpoch()) {
    return InvalidArgumentError(
        "cache_bytes: " + source.Describe() + " draws each sample anew every epoch (a clip's "
        "frames and transforms), so a cached sample would repeat one epoch's draw; use no "
        "cache (or sampling=\"uniform\" without random transforms)");
  }
  if (options.cache_bytes > 0 && source.size() < 0) {
    return InvalidArgumentError(
        "cache_bytes needs a random-access source (folder, npy, hdf5, indexed shards); " +
        source.Describe() + " is a stream: cache its shards on disk with cache_dir instead");
  }
  // Sources whose images share a size known up front (Npy, HDF5 raw) need
  // no size-fixing transform to be batched.
  int in_height = 0, in_width = 0;
  if (!source.FixedImageSize(&in_height, &in_width)) in_height = in_width = 0;
  if (plan.image < 0) {
    *height = *width = 0;  // a record without an image
  } else if (options.collate == LoaderOptions::Collate::kList) {
    // Each sample keeps its own size; a fixed one is reported when there is.
    if (!StaticOutputSize(options.transforms, in_height, in_width, height, width).ok()) {
      *height = *width = 0;
    }
  } else {
    Status fixed = StaticOutputSize(options.transforms, in_height, in_width, height, width);
    if (!fixed.ok() && fixed.message().find("fixed image size") != std::string::npos) {
      return InvalidArgumentError(fixed.message() +
                                  ", or use collate=\"list\" for per-sample sizes");
    }
    STOKER_RETURN_IF_ERROR(fixed);
  }
  // The warps run on the output-size image: no geometric transform (crop,
  // resize, pad, flip) may follow them in the list.
  const Transform* warp = nullptr;
  for (const Transform& t : options.transforms) {
    if (t.schema->stage == TransformStage::kWarp) {
      if (warp == nullptr) warp = &t;
    } else if (warp != nullptr && t.schema->stage == TransformStage::kGeometry) {
      return InvalidArgumentError(
          t.ToString() + " follows " + warp->ToString() +
          ": stoker applies the warps to the output-size image, after every crop, resize and "
          "flip; place " + std::string(warp->name()) +
          " after the crops, resizes and flips (as torchvision's recipes do)");
    }
  }
  int converts = 0;
  for (const Transform& t : options.transforms) {
    if (t.schema->stage != TransformStage::kConvert) continue;
    if (++converts > 1) {
      return InvalidArgumentError(
          "more than one Normalize in the transforms: keep one (a second Normalize would be "
          "applied to already normalised values, which stoker's single pass cannot do)");
    }
    if (options.dtype == DType::kUint8) {
      return InvalidArgumentError(
          "Normalize cannot be applied to uint8 output: use dtype float32, float16 or bfloat16, "
          "or drop Normalize and normalise on the device");
    }
  }
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError("rank must be in [0, world_size) and world_size >= 1, got rank " +
                                std::to_string(options.rank) + ", world_size " +
                                std::to_string(options.world_size));
  }
  if (options.world_size > 1 && source.size() < 0) {
    return InvalidArgumentError(
        source.Describe() + " is a stream of unknown length, so " +
        std::to_string(options.world_size) + " ranks cannot be given the same number of "
        "batches: declare the epoch's length (stoker.Shards(..., length=TOTAL_SAMPLES)) or use "
        "mode=\"indexed\" (local uncompressed .tar shards)");
  }
  if (options.rank_tail == LoaderOptions::RankTail::kUneven && options.world_size > 1 &&
      dynamic_cast<const RandomAccessSource*>(&source) == nullptr) {
    return InvalidArgumentError(
        "rank_tail='uneven' deals an epoch's samples out one by one, which needs a "
        "random-access source; " + source.Describe() + " is a stream (use mode=\"indexed\" "
        "shards, or rank_tail='pad' with a declared length)");
  }
  if (options.local_world_size < 1) {
    return InvalidArgumentError("local_world_size must be >= 1, got " +
                                std::to_string(options.local_world_size));
  }
  if (options.drop_last && source.size() >= 0 &&
      source.size() / options.world_size < options.batch_size) {
    return InvalidArgumentError("drop_last=True with " + std::to_string(source.size()) +
                                " samples, world_size " + std::to_string(options.world_size) +
                                " and batch_size " + std::to_string(options.batch_size) +
                                " gives no batch at all");
  }
  return Status::OK();
}

StatusOr<int64_t> EpochSamples(const Source& source, const LoaderOptions& options) {
  if (options.sampler.kind == SamplerSpec::Kind::kAll) return source.size();
  const auto* random_access = dynamic_cast<const RandomAccessSource*>(&source);
  if (random_access == nullptr || source.size() < 0) {
    if (source.random_access()) {  // a Mix (stoker/mix.h)
      return InvalidArgumentError("sampler= does not apply to " + source.Describe() +
                                  ": a Mix draws its own epoch (set its weights, num_samples "
                                  "or replacement instead)");
    }
    return InvalidArgumentError("sampler= needs a random-access source (folder, npy, hdf5, "
                                "indexed shards); " + source.Describe() + " is a stream");
  }
  const std::vector<int64_t> labels = options.sampler.kind == SamplerSpec::Kind::kClassBalanced
                                          ? random_access->Labels()
                                          : std::vector<int64_t>();
  int64_t n = 0;
  STOKER_RETURN_IF_ERROR(ValidateSampler(options.sampler, source.size(), labels, &n));
  if (options.drop_last && n < options.batch_size) {
    return InvalidArgumentError("drop_last=True with a sampler of " + std::to_string(n) +
                                " samples per epoch and batch_size " +
                                std::to_string(options.batch_size) + " gives no batch at all");
  }
  return n;
}

StatusOr<LoaderOptions> ResolveLoaderOptions(const LoaderOptions& options) {
  using Dct = LoaderOptions::DctScaling;
  LoaderOptions o = options;
  const bool decoded_cache =
      o.cache_bytes > 0 && o.cache_kind == LoaderOptions::CacheKind::kDecoded;
  if (decoded_cache && o.dct_scaling == Dct::kOn) {
    return InvalidArgumentError(
        "cache='decoded' keeps full-size images: it cannot be combined with dct_scaling on "
        "(leave dct_scaling 'auto')");
  }
  if (o.dct_scaling == Dct::kAuto) {
    const bool random_geometry =
        std::any_of(o.transforms.begin(), o.transforms.end(),
                    [](const Transform& t) { return t.random_geometry(); });
    o.dct_scaling = random_geometry && !decoded_cache ? Dct::kOn : Dct::kOff;
  }
  return o;
}

ThreadPlan PlanThreads(const LoaderOptions& options, int cores) {
  ThreadPlan plan;
  if (options.auto_threads) {
    plan.workers = options.max_threads > 0 ? options.max_threads : cores;
    plan.active = options.threads > 0 ? std::min(options.threads, plan.workers)
                                      : std::max(1, plan.workers / 2);
  } else {
    plan.workers = options.threads > 0 ? options.threads : cores;
    plan.active = plan.workers;
  }
  return plan;
}

int RingSlots(const LoaderOptions& options) {
  return options.auto_prefetch ? std::max(options.prefetch, options.max_prefetch)
                               : options.prefetch;
}

int ClaimRun(const LoaderOptions& options, const RecordPlan& plan, int workers) {
  if (!plan.records() || plan.image >= 0 || !plan.steps.empty()) return 1;
  for (const RecordFieldPlan& f : plan.fields) {
    if (f.spec.kind == FieldKind::kImage) return 1;  // a decode: not cheap
  }
  return std::clamp(options.batch_size / (2 * std::max(1, workers)), 1, kMaxClaimRun);
}

std::shared_ptr<BatchPool> MakeBatchPool(const LoaderOptions& options, int height, int width,
                                         const RecordPlan& plan) {
  BatchShape shape;
  shape.image = plan.image >= 0;
  shape.fields = plan.layouts;
  shape.records = !plan.schema.IsImageLabel();
  shape.image_name = plan.image >= 0 ? plan.schema.fields[static_cast<size_t>(plan.image)].name : "";
  shape.label_name = plan.label >= 0 ? plan.schema.fields[static_cast<size_t>(plan.label)].name : "";
  shape.batch_size = options.batch_size;
  shape.height = height;
  shape.width = width;
  shape.dtype = options.dtype;
  shape.layout = options.layout;
  shape.variable = shape.image && options.collate == LoaderOptions::Collate::kList;
  return BatchPool::Create(shape, options.allocator ? options.allocator : HostAllocator(),
                           2 * RingSlots(options) + 2);
}

ProcessorConfig MakeProcessorConfig(const LoaderOptions& options, const RecordPlan* plan) {
  ProcessorConfig c;
  c.record_geometry = plan != nullptr && plan->targets;
  if (plan != nullptr && plan->image >= 0) {
    c.image_field = plan->schema.fields[static_cast<size_t>(plan->image)].name;
  }
  c.transforms = options.transforms;
  c.dct_scaling = options.dct_scaling == LoaderOptions::DctScaling::kOn;
  c.decoder.max_pixels = options.max_pixels;
  c.timing = options.stage_timing;
  c.scratch_budget = options.scratch_budget;
  return c;
}

}  // namespace stoker
