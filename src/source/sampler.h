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
#include <memory>
#include <vector>

#include "stoker/sampler.h"
#include "stoker/status.h"

namespace stoker {

class Rng;  // base/rng.h

// Checks `spec` against a source of `source_size` samples. `labels` (one per
// sample, or empty when the source has none) is needed by kClassBalanced.
// On success, `*epoch_size` is the number of indices each epoch yields.
Status ValidateSampler(const SamplerSpec& spec, int64_t source_size,
                       const std::vector<int64_t>& labels, int64_t* epoch_size);

// Vose's alias method over non-negative weights (at least one positive):
// O(n) set-up, O(1) per draw, exact for the weights' double-precision
// proportions. The weights are divided by the largest first, so neither a
// sum past DBL_MAX (weights of 1e308) nor denormals (1e-320) skew the
// proportions. Immutable after construction.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& weights);
  // One draw from `rng`.
  uint32_t Draw(Rng* rng) const;

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

// An epoch's sequence of source indices. Held in memory when it is at most
// the source's size (permutations, subsets, draws without replacement), or
// drawn on demand for weighted draws with replacement, whose count
// (num_samples) is not bounded by the source: position p's draw comes from
// its own Rng(HashSeed(key, p)), so any position is known in O(1) without
// the others and an epoch of 2^32 - 1 draws costs no memory. A value;
// thread-safe to read.
class EpochOrder {
 public:
  // The identity over [0, n).
  explicit EpochOrder(int64_t n = 0) : size_(n) {}
  explicit EpochOrder(std::vector<uint32_t> indices)
      : size_(static_cast<int64_t>(indices.size())), indices_(std::move(indices)), held_(true) {}
  EpochOrder(std::shared_ptr<const AliasTable> table, int64_t n, uint64_t key)
      : size_(n), table_(std::move(table)), key_(key) {}

  int64_t size() const { return size_; }
  bool identity() const { return !held_ && table_ == nullptr; }
  // The source index at `position` in [0, size()).
  uint32_t At(int64_t position) const;

 private:
  int64_t size_ = 0;
  std::vector<uint32_t> indices_;
  bool held_ = false;
  std::shared_ptr<const AliasTable> table_;
  uint64_t key_ = 0;
};

// The epoch's indices. `shuffle` permutes kAll and kSubset (kWeighted and
// kClassBalanced draws are random already). Precondition: ValidateSampler
// returned OK for the same spec, size and labels.
EpochOrder SampleEpochOrder(const SamplerSpec& spec, int64_t source_size,
                            const std::vector<int64_t>& labels, uint64_t seed, int64_t epoch,
                            bool shuffle);
// The same, every index materialised (tests; small epochs).
std::vector<uint32_t> SampleEpoch(const SamplerSpec& spec, int64_t source_size,
                                  const std::vector<int64_t>& labels, uint64_t seed,
                                  int64_t epoch, bool shuffle);

// Weights that make each class equally likely per draw: 1 / (samples of
// the class). Samples labelled < 0 get weight 0.
std::vector<double> ClassBalancedWeights(const std::vector<int64_t>& labels);

}  // namespace stoker

#endif  // STOKER_SOURCE_SAMPLER_H_
