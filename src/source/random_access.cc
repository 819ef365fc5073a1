// Copyright 2026 The stoker Authors.
#include <utility>

#include "base/rng.h"
#include "source/sampler.h"
#include "stoker/source.h"

namespace stoker {

std::vector<uint32_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<uint32_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[i] = static_cast<uint32_t>(i);
  Rng rng(HashSeed(seed, static_cast<uint64_t>(epoch), 0x5EED5EEDull));
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i + 1)));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

namespace {

class PermutedReader : public EpochReader {
 public:
  PermutedReader(const RandomAccessSource* source, std::vector<uint32_t> perm, int64_t n)
      : source_(source), perm_(std::move(perm)), n_(n) {}

  int64_t size() const override { return n_; }
  bool random_access() const override { return true; }

  Status Read(int64_t position, SampleScratch* scratch, SampleData* out, bool* end) override {
    if (position < 0 || position >= n_) {
      *end = true;
      return Status::OK();
    }
    *end = false;
    return source_->ReadIndex(Index(position), scratch, out);
  }

  int64_t KeyAt(int64_t position) const override {
    return position < 0 || position >= n_ ? -1 : Index(position);
  }

  std::string Name(int64_t position) const override {
    if (position < 0 || position >= n_) return "<position " + std::to_string(position) + ">";
    return source_->NameOf(Index(position));
  }

 private:
  int64_t Index(int64_t position) const { return perm_.empty() ? position : perm_[position]; }

  const RandomAccessSource* source_;
  std::vector<uint32_t> perm_;  // empty: identity
  int64_t n_;
};

}  // namespace

StatusOr<std::unique_ptr<EpochReader>> RandomAccessSource::StartEpoch(const EpochSpec& spec) {
  const int64_t n = size();
  if (n > int64_t{0xFFFFFFFF}) {
    return InvalidArgumentError("sources of more than 2^32 samples are not supported");
  }
  std::vector<uint32_t> perm;
  int64_t epoch_size = n;
  if (spec.sampler != nullptr && spec.sampler->kind != SamplerSpec::Kind::kAll) {
    const std::vector<int64_t> labels =
        spec.sampler->kind == SamplerSpec::Kind::kClassBalanced ? Labels() : std::vector<int64_t>();
    STOKER_RETURN_IF_ERROR(ValidateSampler(*spec.sampler, n, labels, &epoch_size));
    perm = SampleEpoch(*spec.sampler, n, labels, spec.seed, spec.epoch, spec.shuffle);
  } else if (spec.shuffle) {
    perm = EpochPermutation(n, spec.seed, spec.epoch);
  }
  return std::unique_ptr<EpochReader>(new PermutedReader(this, std::move(perm), epoch_size));
}

}  // namespace stoker
