// Copyright 2026 The stoker Authors.
//
// Checks a LoaderOptions against its source before a Loader is built, and
// derives what the engine needs from them. Pure functions: no threads, no I/O
// beyond Source::size().
//
// Errors: InvalidArgument naming the option and the value given.
#ifndef STOKER_PIPELINE_LOADER_OPTIONS_H_
#define STOKER_PIPELINE_LOADER_OPTIONS_H_

#include <memory>
#include <vector>

#include "pipeline/record_plan.h"
#include "program/sample_processor.h"
#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/source.h"
#include "stoker/status.h"
#include "ops/transform_ops.h"  // HasNormalize, NormalizeOf, IsDeterministic
#include "stoker/transforms.h"

namespace stoker {

// OK when `options` can drive a Loader over `source`, whose fields `plan`
// describes (MakeRecordPlan); then `*height` and `*width` hold the fixed
// output size the primary image's transforms end in (0 without an image).
Status ValidateLoaderOptions(const Source& source, const LoaderOptions& options,
                             const RecordPlan& plan, int* height, int* width);

// Samples per epoch: the source's size (-1 for a stream), or the number of
// draws of `options.sampler`. Errors: InvalidArgument when the sampler does
// not fit the source (a stream, a weight count or index out of range, no
// labels for class balance), naming why.
StatusOr<int64_t> EpochSamples(const Source& source, const LoaderOptions& options);

// `options` with dct_scaling kAuto resolved to kOn or kOff (LoaderOptions'
// rule); InvalidArgument for kOn with the decoded cache, which keeps
// full-size images.
StatusOr<LoaderOptions> ResolveLoaderOptions(const LoaderOptions& options);

// Worker threads the engine runs (the ceiling when auto-tuned) and the number
// active at the start, for `options` on a machine with `cores` usable cores.
struct ThreadPlan {
  int workers = 1;
  int active = 1;
};
ThreadPlan PlanThreads(const LoaderOptions& options, int cores);

// Batch slots in the engine's ring: `prefetch`, or the ceiling when tuned.
int RingSlots(const LoaderOptions& options);
// How many consecutive positions a worker claims at once (BatchRing::Claim)
// for a random-access epoch: 1, or for records whose samples are cheap (no
// image field, no field step: arrays, numbers, text, bytes, json copied into
// their slots) up to kMaxClaimRun, while every one of `workers` still gets
// two runs of a batch.
constexpr int kMaxClaimRun = 64;
int ClaimRun(const LoaderOptions& options, const RecordPlan& plan, int workers);
// The engine's batch pool for `options` at the output size: it keeps idle the
// ring's buffers, the next epoch's prefetch (up to the ring's size more at an
// epoch's end) and two the consumer holds, so no boundary reallocates.
// Records: the plan's fields get their storage in every buffer.
std::shared_ptr<BatchPool> MakeBatchPool(const LoaderOptions& options, int height, int width,
                                         const RecordPlan& plan);
// The primary image's processor settings from `options`.
// With `plan`: its targets make the processor keep each sample's geometry.
ProcessorConfig MakeProcessorConfig(const LoaderOptions& options,
                                    const RecordPlan* plan = nullptr);

}  // namespace stoker

#endif  // STOKER_PIPELINE_LOADER_OPTIONS_H_
