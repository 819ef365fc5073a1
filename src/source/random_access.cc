// Copyright 2026 The stoker Authors.
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <utility>

#include "base/rng.h"
#include "source/ranked_reader.h"
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
  // Position p reads global offset + rank + p * w: past the end (a repeat)
  // from p = ceil((left - rank) / w) on.
  const int64_t real = left > spec.rank ? (left - spec.rank + w - 1) / w : 0;
  share.rank_padded = std::max<int64_t>(0, share.samples - real);
  return share;
}

int64_t GlobalPosition(int64_t n, const EpochSpec& spec, int64_t position) {
  const int64_t w = std::max(1, spec.world_size);
  const int64_t offset = std::max<int64_t>(0, spec.offset);
  const int64_t g = offset + spec.rank + position * w;
  if (g < n) return g;
  // Padding repeats the epoch's first positions, whatever the offset: the
  // uninterrupted epoch's padding, also after a resume.
  return (g - n) % n;
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

// The length of the directory part all `names` share ("/data/train/" of
// "/data/train/cat/1.jpg" and "/data/train/dog/2.jpg"): where the data lies,
// not what it is.
size_t CommonDirectoryLength(const std::vector<std::string>& names) {
  if (names.empty()) return 0;
  size_t common = names[0].size();
  for (const std::string& s : names) {
    size_t i = 0;
    while (i < common && i < s.size() && s[i] == names[0][i]) ++i;
    common = i;
  }
  const size_t slash = names[0].rfind('/', common == 0 ? 0 : common - 1);
  return slash == std::string::npos || common == 0 ? 0 : slash + 1;
}

}  // namespace

std::string FieldContext(const std::string& name, const FieldValue& v) {
  std::string c = "field '" + name + "'";
  if (!v.member.empty()) c += " (member " + std::string(v.member) + ")";
  return c;
}

uint64_t Source::Fingerprint() const {
  return HashString(static_cast<uint64_t>(size()), Describe());
}

uint64_t FingerprintNames(uint64_t seed, const std::vector<std::string>& names) {
  const size_t strip = CommonDirectoryLength(names);
  uint64_t h = Mix64(seed);
  for (const std::string& name : names) h = HashString(h, name.substr(strip));
  return h;
}

uint64_t FileStamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 1;
  uint64_t h = Mix64(static_cast<uint64_t>(st.st_size) ^ 0x5354414d50ULL);
  h = Mix64(h ^ static_cast<uint64_t>(st.st_mtim.tv_sec));
  h = Mix64(h ^ static_cast<uint64_t>(st.st_mtim.tv_nsec));
  h = Mix64(h ^ static_cast<uint64_t>(st.st_ino));
  return h < 2 ? h + 2 : h;
}

uint64_t RandomAccessSource::Fingerprint() const {
  const int64_t n = size();
  const int64_t k = std::min<int64_t>(n, 1024);
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) names.push_back(FingerprintNameOf(k == n ? i : i * (n - 1) / (k - 1)));
  return FingerprintNames(static_cast<uint64_t>(n), names);
}

namespace {

// Reads the rank's share of the epoch: global position g reads index
// order_.At(g) (a held permutation, draws made on demand, or g itself).
class PermutedReader : public RankedReader {
 public:
  PermutedReader(const RandomAccessSource* source, EpochOrder order, int64_t n,
                 const EpochSpec& spec)
      : RankedReader(n, spec), source_(source), order_(std::move(order)) {}

 private:
  Status ReadGlobal(int64_t g, SampleScratch* scratch, SampleData* out) const override {
    return source_->ReadIndex(Index(g), scratch, out);
  }
  int64_t KeyOfGlobal(int64_t g) const override { return Index(g); }
  std::string NameOfGlobal(int64_t g) const override { return source_->NameOf(Index(g)); }

  int64_t Index(int64_t g) const { return order_.At(g); }

  const RandomAccessSource* source_;
  EpochOrder order_;  // global position -> source index (held, drawn on demand, identity)
};

}  // namespace

StatusOr<std::unique_ptr<EpochReader>> RandomAccessSource::StartEpoch(const EpochSpec& spec) {
  const int64_t n = size();
  if (n > int64_t{0xFFFFFFFF}) {
    return InvalidArgumentError("sources of more than 2^32 samples are not supported");
  }
  STOKER_RETURN_IF_ERROR(CheckRank(spec));
  int64_t epoch_size = n;
  EpochOrder order(n);
  if (spec.sampler != nullptr && spec.sampler->kind != SamplerSpec::Kind::kAll) {
    const std::vector<int64_t> labels =
        spec.sampler->kind == SamplerSpec::Kind::kClassBalanced ? Labels() : std::vector<int64_t>();
    STOKER_RETURN_IF_ERROR(ValidateSampler(*spec.sampler, n, labels, &epoch_size));
    order = SampleEpochOrder(*spec.sampler, n, labels, spec.seed, spec.epoch, spec.shuffle);
  } else if (spec.shuffle) {
    order = EpochOrder(EpochPermutation(n, spec.seed, spec.epoch));
  }
  // The rank split goes over the sampled epoch (epoch_size global positions).
  return std::unique_ptr<EpochReader>(new PermutedReader(this, std::move(order), epoch_size, spec));
}

}  // namespace stoker
