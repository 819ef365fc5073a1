// Copyright 2026 The stoker Authors.
#include <algorithm>
#include <string>
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

RankShare RankShareOf(int64_t n, const EpochSpec& spec) {
  RankShare share;
  const int64_t w = std::max(1, spec.world_size);
  const int64_t left = std::max<int64_t>(0, n - std::max<int64_t>(0, spec.offset));
  if (spec.uneven) {  // no padding, no drop: ranks below left % w read one more
    share.samples = left / w + (spec.rank < left % w ? 1 : 0);
    share.padded = 0;
    return share;
  }
  share.samples = spec.drop_last ? left / w : (left + w - 1) / w;
  share.padded = spec.drop_last ? 0 : share.samples * w - left;
  return share;
}

int64_t GlobalPosition(int64_t n, const EpochSpec& spec, int64_t position) {
  const int64_t w = std::max(1, spec.world_size);
  const int64_t offset = std::max<int64_t>(0, spec.offset);
  const int64_t g = offset + spec.rank + position * w;
  if (g < n) return g;
  const int64_t left = n - offset;  // > 0 whenever a rank has a position past the end
  return offset + (g - n) % left;
}

std::vector<int64_t> RankSlice(const std::vector<int64_t>& order, const EpochSpec& spec) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t k = RankShareOf(n, spec).samples;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, k)));
  for (int64_t p = 0; p < k; ++p) out.push_back(order[GlobalPosition(n, spec, p)]);
  return out;
}

namespace {

uint64_t HashString(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;  // FNV-1a
  return Mix64(h);
}

}  // namespace

uint64_t Source::Fingerprint() const {
  return HashString(static_cast<uint64_t>(size()), Describe());
}

uint64_t RandomAccessSource::Fingerprint() const {
  const int64_t n = size();
  uint64_t h = Mix64(static_cast<uint64_t>(n));
  const int64_t k = std::min<int64_t>(n, 1024);
  for (int64_t i = 0; i < k; ++i) h = HashString(h, NameOf(k == n ? i : i * (n - 1) / (k - 1)));
  return h;
}

namespace {

// Reads the rank's share of the permuted epoch: its position p is the
// global position GlobalPosition(n, spec, p) of the permutation.
class PermutedReader : public EpochReader {
 public:
  PermutedReader(const RandomAccessSource* source, std::vector<uint32_t> perm, int64_t n,
                 const EpochSpec& spec)
      : source_(source), perm_(std::move(perm)), n_(n), spec_(spec) {
    const RankShare share = RankShareOf(n, spec);
    size_ = share.samples;
    padded_ = share.padded;
    identity_ = spec.world_size <= 1 && spec.offset <= 0;
  }

  int64_t size() const override { return size_; }
  bool random_access() const override { return true; }
  int64_t padded() const override { return padded_; }

  Status Read(int64_t position, SampleScratch* scratch, SampleData* out, bool* end) override {
    if (position < 0 || position >= size_) {
      *end = true;
      return Status::OK();
    }
    *end = false;
    return source_->ReadIndex(Index(position), scratch, out);
  }

  int64_t KeyAt(int64_t position) const override {
    return position < 0 || position >= size_ ? -1 : Index(position);
  }

  std::string Name(int64_t position) const override {
    if (position < 0 || position >= size_) return "<position " + std::to_string(position) + ">";
    return source_->NameOf(Index(position));
  }

 private:
  int64_t Index(int64_t position) const {
    const int64_t g = identity_ ? position : GlobalPosition(n_, spec_, position);
    return perm_.empty() ? g : perm_[g];
  }

  const RandomAccessSource* source_;
  std::vector<uint32_t> perm_;  // empty: identity
  int64_t n_;                   // samples in the whole epoch
  EpochSpec spec_;
  int64_t size_ = 0;            // this rank's positions
  int64_t padded_ = 0;
  bool identity_ = true;        // one rank, no offset: position == global position
};

}  // namespace

StatusOr<std::unique_ptr<EpochReader>> RandomAccessSource::StartEpoch(const EpochSpec& spec) {
  const int64_t n = size();
  if (n > int64_t{0xFFFFFFFF}) {
    return InvalidArgumentError("sources of more than 2^32 samples are not supported");
  }
  std::vector<uint32_t> perm;
  if (spec.world_size < 1 || spec.rank < 0 || spec.rank >= spec.world_size) {
    return InvalidArgumentError("rank " + std::to_string(spec.rank) + " is not in [0, world_size " +
                                std::to_string(spec.world_size) + ")");
  }
  int64_t epoch_size = n;
  if (spec.sampler != nullptr && spec.sampler->kind != SamplerSpec::Kind::kAll) {
    const std::vector<int64_t> labels =
        spec.sampler->kind == SamplerSpec::Kind::kClassBalanced ? Labels() : std::vector<int64_t>();
    STOKER_RETURN_IF_ERROR(ValidateSampler(*spec.sampler, n, labels, &epoch_size));
    perm = SampleEpoch(*spec.sampler, n, labels, spec.seed, spec.epoch, spec.shuffle);
  } else if (spec.shuffle) {
    perm = EpochPermutation(n, spec.seed, spec.epoch);
  }
  // The rank split goes over the sampled epoch (epoch_size global positions).
  return std::unique_ptr<EpochReader>(new PermutedReader(this, std::move(perm), epoch_size, spec));
}

}  // namespace stoker
