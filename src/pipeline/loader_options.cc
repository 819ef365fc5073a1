// Copyright 2026 The stoker Authors.
#include "pipeline/loader_options.h"

#include <algorithm>
#include <string>

#include "ops/geometry.h"

namespace stoker {

Status ValidateLoaderOptions(const Source& source, const LoaderOptions& options, int* height,
                             int* width) {
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
  if (options.max_skip_attempts < 1) {
    return InvalidArgumentError("max_skip_attempts must be >= 1");
  }
  if (source.size() == 0) return InvalidArgumentError(source.Describe() + " has no samples");
  STOKER_RETURN_IF_ERROR(StaticOutputSize(options.transforms, height, width));
  for (const Transform& t : options.transforms) {
    if (t.kind == Transform::Kind::kNormalize && options.dtype == DType::kUint8) {
      return InvalidArgumentError(
          "Normalize cannot be applied to uint8 output: use dtype float32, float16 or bfloat16, "
          "or drop Normalize and normalise on the device");
    }
    if (t.kind == Transform::Kind::kNormalize) {
      for (float s : t.std) {
        if (!(s != 0.f)) return InvalidArgumentError("Normalize std must be non-zero");
      }
    }
    if (t.kind == Transform::Kind::kRandomResizedCrop &&
        (t.scale_min <= 0 || t.scale_min > t.scale_max || t.ratio_min <= 0 ||
         t.ratio_min > t.ratio_max)) {
      return InvalidArgumentError("invalid " + t.ToString());
    }
    if (t.kind == Transform::Kind::kRandomHorizontalFlip && (t.p < 0 || t.p > 1)) {
      return InvalidArgumentError("RandomHorizontalFlip p must be in [0, 1]");
    }
    if ((t.kind == Transform::Kind::kResize || t.kind == Transform::Kind::kCenterCrop ||
         t.kind == Transform::Kind::kRandomResizedCrop) &&
        (t.height <= 0 || t.width < 0 || (t.kind != Transform::Kind::kResize && t.width == 0))) {
      return InvalidArgumentError("sizes must be positive in " + t.ToString());
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

bool HasNormalize(const std::vector<Transform>& transforms) {
  for (const auto& t : transforms) {
    if (t.kind == Transform::Kind::kNormalize) return true;
  }
  return false;
}

Transform NormalizeOf(const std::vector<Transform>& transforms) {
  Transform n = Transform::Normalize({0.f, 0.f, 0.f}, {1.f, 1.f, 1.f});
  for (const auto& t : transforms) {
    if (t.kind == Transform::Kind::kNormalize) n = t;
  }
  return n;
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

}  // namespace stoker
