// Copyright 2026 The stoker Authors.
#include "source/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/rng.h"
#include "stoker/source.h"

namespace stoker {
namespace {

// A stream of its own, apart from EpochPermutation's and the samples'.
constexpr uint64_t kSamplerStream = 0x5A3B1E5ull;

// Draws without replacement, Efraimidis-Spirakis: with key_i = u_i^(1/w_i),
// the n largest keys, in decreasing order, have the distribution of drawing
// one at a time proportionally to the remaining weights (torch.multinomial).
// Compared as log(-log u_i) - log w_i, increasing (the same order): finite
// for every positive finite weight, so weights of 1e308 or 1e-320 (where
// log(u) / w overflows to -inf for all) keep their proportions.
std::vector<uint32_t> DrawsWithoutReplacement(const std::vector<double>& weights, int64_t n,
                                              Rng* rng) {
  std::vector<std::pair<double, uint32_t>> keys;
  keys.reserve(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    double u = rng->Uniform();  // always drawn: keys do not depend on other weights
    if (weights[i] <= 0) continue;
    if (u <= 0) u = 0x1.0p-60;
    keys.emplace_back(std::log(-std::log(u)) - std::log(weights[i]), static_cast<uint32_t>(i));
  }
  std::partial_sort(keys.begin(), keys.begin() + n, keys.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first < b.first : a.second < b.second;
                    });
  std::vector<uint32_t> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(keys[static_cast<size_t>(i)].second);
  return out;
}

void Shuffle(std::vector<uint32_t>* v, Rng* rng) {
  for (size_t i = v->size(); i > 1; --i) {
    std::swap((*v)[i - 1], (*v)[rng->Below(i)]);
  }
}

}  // namespace

AliasTable::AliasTable(const std::vector<double>& weights) {
  const size_t n = weights.size();
  prob_.assign(n, 0.0);
  alias_.assign(n, 0);
  // Scaled by the largest weight first: the sum is then at most n (no
  // overflow for weights near DBL_MAX) and denormal weights become normal.
  const double largest = *std::max_element(weights.begin(), weights.end());
  std::vector<double> scaled(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += scaled[i] = weights[i] / largest;
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    scaled[i] = scaled[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = scaled[s];
    alias_[s] = l;
    scaled[l] = (scaled[l] + scaled[s]) - 1.0;
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (uint32_t i : large) prob_[i] = 1.0;
  for (uint32_t i : small) prob_[i] = 1.0;  // rounding leftovers
}

uint32_t AliasTable::Draw(Rng* rng) const {
  const uint32_t column = static_cast<uint32_t>(rng->Below(prob_.size()));
  return rng->Uniform() < prob_[column] ? column : alias_[column];
}

uint32_t EpochOrder::At(int64_t position) const {
  if (held_) return indices_[static_cast<size_t>(position)];
  if (table_ == nullptr) return static_cast<uint32_t>(position);
  Rng rng(HashSeed(key_, static_cast<uint64_t>(position)));
  return table_->Draw(&rng);
}

std::vector<double> ClassBalancedWeights(const std::vector<int64_t>& labels) {
  std::unordered_map<int64_t, int64_t> counts;
  for (int64_t l : labels) {
    if (l >= 0) ++counts[l];
  }
  std::vector<double> w(labels.size(), 0.0);
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= 0) w[i] = 1.0 / static_cast<double>(counts[labels[i]]);
  }
  return w;
}

Status ValidateSampler(const SamplerSpec& spec, int64_t source_size,
                       const std::vector<int64_t>& labels, int64_t* epoch_size) {
  if (source_size < 0) {
    if (spec.kind == SamplerSpec::Kind::kAll) {
      *epoch_size = -1;
      return Status::OK();
    }
    return InvalidArgumentError(
        "samplers need a random-access source of known size; a streamed source visits each "
        "sample once (use indexed shards: uncompressed local .tar)");
  }
  if (source_size > int64_t{0xFFFFFFFF}) {
    return InvalidArgumentError("sources of more than 2^32 samples are not supported");
  }
  switch (spec.kind) {
    case SamplerSpec::Kind::kAll:
      *epoch_size = source_size;
      return Status::OK();
    case SamplerSpec::Kind::kSubset:
      if (spec.indices.empty()) return InvalidArgumentError("Subset: indices is empty");
      for (int64_t i : spec.indices) {
        if (i < 0 || i >= source_size) {
          return InvalidArgumentError("Subset: index " + std::to_string(i) +
                                      " is out of range for a source of " +
                                      std::to_string(source_size) + " samples");
        }
      }
      *epoch_size = static_cast<int64_t>(spec.indices.size());
      return Status::OK();
    case SamplerSpec::Kind::kWeighted:
    case SamplerSpec::Kind::kClassBalanced:
      break;
  }
  const char* name = spec.kind == SamplerSpec::Kind::kWeighted ? "WeightedSampler"
                                                                : "ClassBalanced";
  std::vector<double> weights = spec.weights;
  if (spec.kind == SamplerSpec::Kind::kClassBalanced) {
    if (static_cast<int64_t>(labels.size()) != source_size) {
      return InvalidArgumentError(
          "ClassBalanced needs the source's labels without reading the images; this source "
          "does not provide them: pass WeightedSampler(weights) instead");
    }
    weights = ClassBalancedWeights(labels);
  } else if (static_cast<int64_t>(weights.size()) != source_size) {
    return InvalidArgumentError(std::string(name) + ": " + std::to_string(weights.size()) +
                                " weights for a source of " + std::to_string(source_size) +
                                " samples (one weight per sample)");
  }
  int64_t positive = 0;
  for (double w : weights) {
    if (!std::isfinite(w) || w < 0) {
      return InvalidArgumentError(std::string(name) + ": weights must be finite and >= 0");
    }
    if (w > 0) ++positive;
  }
  if (positive == 0) {
    return InvalidArgumentError(std::string(name) + ": no sample has a positive weight");
  }
  const int64_t n = spec.num_samples < 0 ? source_size : spec.num_samples;
  if (n == 0) return InvalidArgumentError(std::string(name) + ": num_samples must be positive");
  if (n > int64_t{0xFFFFFFFF}) {
    return InvalidArgumentError(std::string(name) + ": num_samples must be below 2^32");
  }
  if (!spec.replacement && n > positive) {
    return InvalidArgumentError(std::string(name) + ": num_samples " + std::to_string(n) +
                                " without replacement exceeds the " + std::to_string(positive) +
                                " samples of positive weight");
  }
  *epoch_size = n;
  return Status::OK();
}

EpochOrder SampleEpochOrder(const SamplerSpec& spec, int64_t source_size,
                            const std::vector<int64_t>& labels, uint64_t seed, int64_t epoch,
                            bool shuffle) {
  switch (spec.kind) {
    case SamplerSpec::Kind::kAll:
      if (shuffle) return EpochOrder(EpochPermutation(source_size, seed, epoch));
      return EpochOrder(source_size);
    case SamplerSpec::Kind::kSubset: {
      std::vector<uint32_t> out(spec.indices.begin(), spec.indices.end());
      if (shuffle) {
        Rng rng(HashSeed(seed, static_cast<uint64_t>(epoch), kSamplerStream));
        Shuffle(&out, &rng);
      }
      return EpochOrder(std::move(out));
    }
    case SamplerSpec::Kind::kWeighted:
    case SamplerSpec::Kind::kClassBalanced:
      break;
  }
  const std::vector<double> weights = spec.kind == SamplerSpec::Kind::kClassBalanced
                                          ? ClassBalancedWeights(labels)
                                          : spec.weights;
  const int64_t n = spec.num_samples < 0 ? source_size : spec.num_samples;
  const uint64_t key = HashSeed(seed, static_cast<uint64_t>(epoch), kSamplerStream, 1);
  if (spec.replacement) return EpochOrder(std::make_shared<const AliasTable>(weights), n, key);
  // Without replacement n is at most the source's size: held.
  Rng rng(key);
  return EpochOrder(DrawsWithoutReplacement(weights, n, &rng));
}

std::vector<uint32_t> SampleEpoch(const SamplerSpec& spec, int64_t source_size,
                                  const std::vector<int64_t>& labels, uint64_t seed,
                                  int64_t epoch, bool shuffle) {
  const EpochOrder order = SampleEpochOrder(spec, source_size, labels, seed, epoch, shuffle);
  std::vector<uint32_t> out(static_cast<size_t>(order.size()));
  for (int64_t p = 0; p < order.size(); ++p) out[static_cast<size_t>(p)] = order.At(p);
  return out;
}

}  // namespace stoker
