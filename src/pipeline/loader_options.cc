// Copyright 2026 The stoker Authors.
#include "pipeline/loader_options.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/geometry.h"
#include "source/sampler.h"

namespace stoker {

namespace {

// The ranges torchvision accepts for the flips, photometric transforms and
// Resize's max_size.
Status CheckAugmentation(const Transform& t) {
  using K = Transform::Kind;
  const bool has_p =
      t.kind == K::kRandomVerticalFlip ||
      (t.photometric() && t.kind != K::kColorJitter && t.kind != K::kGaussianBlur &&
       t.kind != K::kCallback);
  if (t.kind == K::kCallback && (t.callback == nullptr || !*t.callback)) {
    return InvalidArgumentError(t.ToString() + " has no function");
  }
  if (has_p && !(t.p >= 0 && t.p <= 1)) {
    return InvalidArgumentError("p must be in [0, 1] in " + t.ToString());
  }
  if (t.kind == K::kColorJitter) {
    const std::array<double, 2>* factors[3] = {&t.brightness, &t.contrast, &t.saturation};
    for (const auto* r : factors) {
      if (!((*r)[0] >= 0 && (*r)[0] <= (*r)[1])) {
        return InvalidArgumentError("factor ranges must satisfy 0 <= min <= max in " +
                                    t.ToString());
      }
    }
    if (!(t.hue[0] >= -0.5 && t.hue[0] <= t.hue[1] && t.hue[1] <= 0.5)) {
      return InvalidArgumentError("hue must satisfy -0.5 <= min <= max <= 0.5 in " +
                                  t.ToString());
    }
  }
  if (t.kind == K::kRandomPosterize && (t.bits < 0 || t.bits > 8)) {
    return InvalidArgumentError("bits must be in [0, 8] in " + t.ToString());
  }
  if (t.kind == K::kRandomAdjustSharpness && !(t.sharpness_factor >= 0)) {
    return InvalidArgumentError("sharpness_factor must be >= 0 in " + t.ToString());
  }
  if (t.kind == K::kTrivialAugmentWide || t.kind == K::kRandAugment ||
      t.kind == K::kAutoAugment) {
    if (t.num_magnitude_bins < 2 || t.num_magnitude_bins > 1000) {
      return InvalidArgumentError("num_magnitude_bins must be in [2, 1000] in " + t.ToString());
    }
    if (t.kind == K::kRandAugment &&
        (t.num_ops < 0 || t.num_ops > 16 || t.magnitude < 0 ||
         t.magnitude >= t.num_magnitude_bins)) {
      return InvalidArgumentError(
          "RandAugment needs 0 <= num_ops <= 16 and 0 <= magnitude < num_magnitude_bins: " +
          t.ToString());
    }
    for (int f : t.fill) {
      if (f < 0 || f > 255) return InvalidArgumentError("fill must be in [0, 255] in " + t.ToString());
    }
  }
  if (t.kind == K::kRandomCrop) {
    if (t.padding_mode < 0 || t.padding_mode > 3) {
      return InvalidArgumentError("padding_mode must be 0 (constant), 1 (edge), 2 (reflect) or 3 "
                                  "(symmetric) in " + t.ToString());
    }
    for (int f : t.fill) {
      if (f < 0 || f > 255) return InvalidArgumentError("fill must be in [0, 255] in " + t.ToString());
    }
  }
  if (t.kind == K::kRandomRotation || t.kind == K::kRandomAffine ||
      t.kind == K::kRandomPerspective) {
    if (t.interpolation != 0 && t.interpolation != 2 && t.interpolation != 3) {
      return InvalidArgumentError("interpolation must be NEAREST, BILINEAR or BICUBIC in " +
                                  t.ToString());
    }
    for (int f : t.fill) {
      if (f < 0 || f > 255) return InvalidArgumentError("fill must be in [0, 255] in " + t.ToString());
    }
    if (!(t.degrees[0] <= t.degrees[1]) || !std::isfinite(t.degrees[0]) ||
        !std::isfinite(t.degrees[1])) {
      return InvalidArgumentError("degrees must be finite with min <= max in " + t.ToString());
    }
    if (!(t.translate[0] >= 0 && t.translate[0] <= 1 && t.translate[1] >= 0 &&
          t.translate[1] <= 1)) {
      return InvalidArgumentError("translate values must be in [0, 1] in " + t.ToString());
    }
    if (!(t.affine_scale[0] > 0 && t.affine_scale[0] <= t.affine_scale[1] &&
          std::isfinite(t.affine_scale[1]))) {
      return InvalidArgumentError("scale must satisfy 0 < min <= max in " + t.ToString());
    }
    if (!(t.shear[0] <= t.shear[1] && t.shear[2] <= t.shear[3] && std::fabs(t.shear[0]) < 90 &&
          std::fabs(t.shear[1]) < 90 && std::fabs(t.shear[2]) < 90 &&
          std::fabs(t.shear[3]) < 90)) {
      return InvalidArgumentError("shear ranges must satisfy -90 < min <= max < 90 in " +
                                  t.ToString());
    }
    if (t.kind == K::kRandomPerspective &&
        !(t.distortion_scale >= 0 && t.distortion_scale <= 1 && t.p >= 0 && t.p <= 1)) {
      return InvalidArgumentError("distortion_scale and p must be in [0, 1] in " + t.ToString());
    }
  }
  if (t.kind == K::kGaussianBlur) {
    for (int k : t.kernel_size) {
      if (k <= 0 || k % 2 == 0 || k > 101) {
        return InvalidArgumentError("kernel size must be odd, positive and <= 101 in " +
                                    t.ToString());
      }
    }
    if (!(t.sigma[0] > 0 && t.sigma[0] <= t.sigma[1])) {
      return InvalidArgumentError("sigma must satisfy 0 < min <= max in " + t.ToString());
    }
  }
  if (t.kind == K::kRandomErasing) {
    if (!(t.p >= 0 && t.p <= 1)) return InvalidArgumentError("p must be in [0, 1] in " + t.ToString());
    if (!(t.scale_min >= 0 && t.scale_min <= t.scale_max && t.scale_max <= 1) ||
        !(t.ratio_min > 0 && t.ratio_min <= t.ratio_max)) {
      return InvalidArgumentError(
          "RandomErasing needs 0 <= scale[0] <= scale[1] <= 1 and 0 < ratio[0] <= ratio[1]: " +
          t.ToString());
    }
  }
  if (t.kind == K::kResize && t.max_size != 0) {
    if (t.width != 0) {
      return InvalidArgumentError("max_size is only allowed with Resize(size) for an int size: " +
                                  t.ToString());
    }
    if (t.max_size <= t.height) {
      return InvalidArgumentError("max_size must be strictly greater than the requested size in " +
                                  t.ToString());
    }
  }
  return Status::OK();
}

}  // namespace

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
  if (source.size() == 0) return InvalidArgumentError(source.Describe() + " has no samples");
  if (options.cache_bytes > 0 && options.cache_kind == LoaderOptions::CacheKind::kOutput &&
      !IsDeterministic(options.transforms)) {
    return InvalidArgumentError(
        "cache='output' stores finished samples, so it needs transforms without random "
        "parameters (Resize, CenterCrop, Normalize); use cache='decoded' with random transforms");
  }
  if (options.cache_bytes > 0 && source.size() < 0) {
    return InvalidArgumentError(
        "cache_bytes needs a random-access source (folder, npy, hdf5, indexed shards); " +
        source.Describe() + " is a stream: cache its shards on disk with cache_dir instead");
  }
  if (plan.image < 0) {
    *height = *width = 0;  // a record without an image
  } else if (options.collate == LoaderOptions::Collate::kList) {
    // Each sample keeps its own size; a fixed one is reported when there is.
    if (!StaticOutputSize(plan.primary_transforms, height, width).ok()) *height = *width = 0;
  } else {
    Status fixed = StaticOutputSize(plan.primary_transforms, height, width);
    if (!fixed.ok() && fixed.message().find("fixed image size") != std::string::npos) {
      return InvalidArgumentError(fixed.message() +
                                  ", or use collate=\"list\" for per-sample sizes");
    }
    STOKER_RETURN_IF_ERROR(fixed);
  }
  // The warps run on the output-size image: nothing that sets or moves the
  // geometry (crops, resizes, flips) may follow them in the list.
  const Transform* warp = nullptr;
  for (const Transform& t : options.transforms) {
    using K = Transform::Kind;
    if (t.kind == K::kRandomRotation || t.kind == K::kRandomAffine ||
        t.kind == K::kRandomPerspective) {
      if (warp == nullptr) warp = &t;
    } else if (warp != nullptr && !t.photometric() && t.kind != K::kNormalize &&
               t.kind != K::kRandomErasing) {
      return InvalidArgumentError(
          t.ToString() + " follows " + warp->ToString() +
          ": stoker applies the warps to the output-size image, after every crop, resize and "
          "flip; place " + warp->ToString().substr(0, warp->ToString().find('(')) +
          " after the crops, resizes and flips (as torchvision's recipes do)");
    }
  }
  // At most one Normalize per image field.
  std::vector<int> normalizes(plan.schema.fields.size(), 0);
  for (const Transform& t : options.transforms) {
    bool twice = false;
    for (size_t k = 0; k < plan.schema.fields.size(); ++k) {
      const FieldSpec& f = plan.schema.fields[k];
      if (t.kind == Transform::Kind::kNormalize &&
          AppliesTo(t, f.name, static_cast<int>(k) == plan.image) && ++normalizes[k] > 1) {
        twice = true;
      }
    }
    if (twice) {
      return InvalidArgumentError(
          "more than one Normalize in the transforms: keep one (a second Normalize would be "
          "applied to already normalised values, which stoker's single pass cannot do)");
    }
    STOKER_RETURN_IF_ERROR(CheckAugmentation(t));
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
         t.kind == Transform::Kind::kRandomResizedCrop ||
         t.kind == Transform::Kind::kRandomCrop) &&
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

StatusOr<int64_t> EpochSamples(const Source& source, const LoaderOptions& options) {
  if (options.sampler.kind == SamplerSpec::Kind::kAll) return source.size();
  const auto* random_access = dynamic_cast<const RandomAccessSource*>(&source);
  if (random_access == nullptr || source.size() < 0) {
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

bool IsDeterministic(const std::vector<Transform>& transforms) {
  for (const Transform& t : transforms) {
    switch (t.kind) {
      case Transform::Kind::kResize:
      case Transform::Kind::kCenterCrop:
      case Transform::Kind::kNormalize:
        break;
      default:  // random, or a kind not known here to be deterministic
        return false;
    }
  }
  return true;
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

int RingSlots(const LoaderOptions& options) {
  return options.auto_prefetch ? std::max(options.prefetch, options.max_prefetch)
                               : options.prefetch;
}

std::shared_ptr<BatchPool> MakeBatchPool(const LoaderOptions& options, int height, int width,
                                         const RecordPlan& plan) {
  BatchShape shape;
  shape.image = plan.image >= 0;
  shape.fields = plan.layouts;
  shape.batch_size = options.batch_size;
  shape.height = height;
  shape.width = width;
  shape.dtype = options.dtype;
  shape.layout = options.layout;
  shape.variable = shape.image && options.collate == LoaderOptions::Collate::kList;
  return BatchPool::Create(shape, options.allocator ? options.allocator : HostAllocator(),
                           2 * RingSlots(options) + 2);
}

ProcessorConfig MakeProcessorConfig(const LoaderOptions& options, const RecordPlan& plan) {
  ProcessorConfig c;
  c.transforms = plan.primary_transforms;
  c.dct_scaling = options.dct_scaling;
  c.decoder.max_pixels = options.max_pixels;
  c.timing = options.stage_timing;
  c.scratch_budget = options.scratch_budget;
  return c;
}

}  // namespace stoker
