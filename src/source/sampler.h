// Copyright 2026 The stoker Authors.
//
// The draws behind SamplerSpec (include/stoker/sampler.h): turns a spec, the
// source's size (and labels, for class balance) and (seed, epoch) into the
// epoch's sequence of source indices.
//
// Thread-safety: pure functions of their arguments.
// Errors: InvalidArgument naming what is wrong with the spec.
#ifndef STOKER_SOURCE_SAMPLER_H_
#define STOKER_SOURCE_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "stoker/sampler.h"
#include "stoker/status.h"

namespace stoker {

// Checks `spec` against a source of `source_size` samples. `labels` (one per
// sample, or empty when the source has none) is needed by kClassBalanced.
// On success, `*epoch_size` is the number of indices each epoch yields.
Status ValidateSampler(const SamplerSpec& spec, int64_t source_size,
                       const std::vector<int64_t>& labels, int64_t* epoch_size);

// The epoch's indices. `shuffle` permutes kAll and kSubset (kWeighted and
// kClassBalanced draws are random already). Precondition: ValidateSampler
// returned OK for the same spec, size and labels.
std::vector<uint32_t> SampleEpoch(const SamplerSpec& spec, int64_t source_size,
                                  const std::vector<int64_t>& labels, uint64_t seed,
                                  int64_t epoch, bool shuffle);

// Weights that make each class equally likely per draw: 1 / (samples of
// the class). Samples labelled < 0 get weight 0.
std::vector<double> ClassBalancedWeights(const std::vector<int64_t>& labels);

}  // namespace stoker

#endif  // STOKER_SOURCE_SAMPLER_H_
