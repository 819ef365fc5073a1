// Copyright 2026 The stoker Authors.
//
// Samplers: which samples of a random-access source an epoch visits, and in
// which order. The default visits every sample once (shuffled or not); the
// others follow torch.utils.data's samplers:
//
//   SamplerSpec::Weighted(w)         WeightedRandomSampler(w, num_samples, replacement)
//   SamplerSpec::ClassBalanced()     weights 1 / (samples of the sample's class)
//   SamplerSpec::Subset(indices)     the given indices (SubsetRandomSampler when shuffled)
//
// Determinism: an epoch's draws are a function of (seed, epoch) and the spec
// alone, so they are identical for any thread count, on every rank, and
// after a resume. Ranks split the sampled sequence as they split the
// default permutation.
//
// Thread-safety: a SamplerSpec is a value.
#ifndef STOKER_SAMPLER_H_
#define STOKER_SAMPLER_H_

#include <cstdint>
#include <vector>

namespace stoker {

struct SamplerSpec {
  enum class Kind { kAll, kWeighted, kClassBalanced, kSubset };
  Kind kind = Kind::kAll;
  // kWeighted: one non-negative, finite weight per sample (not necessarily
  // normalised; at least one positive).
  std::vector<double> weights;
  // kSubset: source indices, visited in this order unless the loader shuffles.
  std::vector<int64_t> indices;
  // Draws per epoch (kWeighted, kClassBalanced); -1: the source's size.
  int64_t num_samples = -1;
  // kWeighted / kClassBalanced: draw with replacement (torch's default).
  // Without replacement, num_samples may not exceed the samples of positive
  // weight; the draws follow torch.multinomial's sequential scheme.
  bool replacement = true;

  static SamplerSpec Weighted(std::vector<double> weights, int64_t num_samples = -1,
                              bool replacement = true) {
    SamplerSpec s;
    s.kind = Kind::kWeighted;
    s.weights = std::move(weights);
    s.num_samples = num_samples;
    s.replacement = replacement;
    return s;
  }
  static SamplerSpec ClassBalanced(int64_t num_samples = -1, bool replacement = true) {
    SamplerSpec s;
    s.kind = Kind::kClassBalanced;
    s.num_samples = num_samples;
    s.replacement = replacement;
    return s;
  }
  static SamplerSpec Subset(std::vector<int64_t> indices) {
    SamplerSpec s;
    s.kind = Kind::kSubset;
    s.indices = std::move(indices);
    return s;
  }
};

}  // namespace stoker

#endif  // STOKER_SAMPLER_H_
