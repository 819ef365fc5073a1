// Copyright 2026 The stoker Authors.
#include "source/mix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/rng.h"
#include "source/ranked_reader.h"
#include "stoker/source.h"

namespace stoker {
namespace {

// Random streams of their own, apart from the permutations' and samplers'.
constexpr uint64_t kMixChoiceStream = 0x4D1C0ull;
constexpr uint64_t kMixOrderStream = 0x4D1C1ull;

constexpr int64_t kMaxEpoch = int64_t{0xFFFFFFFF};

std::string Num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

const char* ModeName(MixOptions::Mode mode) {
  switch (mode) {
    case MixOptions::Mode::kAllExhausted:
      return "all_exhausted";
    case MixOptions::Mode::kFirstExhausted:
      return "first_exhausted";
    case MixOptions::Mode::kNumSamples:
      return "num_samples";
    case MixOptions::Mode::kReplacement:
      return "replacement";
  }
  return "?";
}

// Tijdeman's solution of the chairman assignment problem (R. Tijdeman, "The
// chairman assignment problem", Discrete Mathematics 32, 1980): with m
// sources of shares q_i, after every step t each source's count c_i stays
// within sigma = 1 - 1/(2m - 2) of t q_i. At step t the sources that may
// take a sample without running ahead of their share (t q_i - c_i >=
// 1 - sigma) compete, and the one whose deadline (c_i + sigma) / q_i -- the
// step at which it would fall sigma behind -- comes first wins (ties: the
// lower index). The bound holds in exact arithmetic; should rounding leave no
// source eligible, the one furthest behind its share is taken.
class Schedule {
 public:
  // The sources `members` (indices into p), with shares p renormalised over them.
  Schedule(const std::vector<double>& p, std::vector<size_t> members)
      : members_(std::move(members)), q_(members_.size()), c_(members_.size(), 0) {
    double sum = 0;
    for (size_t j = 0; j < members_.size(); ++j) sum += p[members_[j]];
    for (size_t j = 0; j < members_.size(); ++j) q_[j] = p[members_[j]] / sum;
    const double m = static_cast<double>(members_.size());
    sigma_ = members_.size() > 1 ? 1.0 - 1.0 / (2.0 * m - 2.0) : 0.5;
  }

  // The source the next step takes, and takes it.
  size_t Take() {
    ++t_;
    const double t = static_cast<double>(t_);
    const double slack = 1e-9 * t;
    size_t best = members_.size();
    double best_deadline = 0;
    for (size_t j = 0; j < members_.size(); ++j) {
      const double cj = static_cast<double>(c_[j]);
      if (t * q_[j] - cj < 1.0 - sigma_ - slack) continue;
      const double deadline = (cj + sigma_) / q_[j];
      if (best == members_.size() || deadline < best_deadline) {
        best = j;
        best_deadline = deadline;
      }
    }
    if (best == members_.size()) {  // rounding: the one furthest behind
      best = 0;
      for (size_t j = 1; j < members_.size(); ++j) {
        if (t * q_[j] - static_cast<double>(c_[j]) >
            t * q_[best] - static_cast<double>(c_[best])) {
          best = j;
        }
      }
    }
    ++c_[best];
    return members_[best];
  }

 private:
  const std::vector<size_t> members_;
  std::vector<double> q_;
  std::vector<int64_t> c_;
  double sigma_ = 0.5;
  int64_t t_ = 0;
};

std::vector<size_t> AllSources(size_t m) {
  std::vector<size_t> v(m);
  std::iota(v.begin(), v.end(), size_t{0});
  return v;
}

// kAllExhausted, shuffled: each draw picks among the sources with samples
// left, with probabilities p renormalised over them.
std::vector<uint8_t> DrawUntilEmpty(const std::vector<double>& p, const std::vector<int64_t>& sizes,
                                    Rng* rng) {
  std::vector<int64_t> left = sizes;
  std::vector<size_t> active;
  for (size_t i = 0; i < p.size(); ++i) active.push_back(i);
  std::vector<double> cum;
  auto rebuild = [&] {
    cum.clear();
    double total = 0;
    for (size_t i : active) cum.push_back(total += p[i]);
  };
  rebuild();
  const int64_t n = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(n));
  while (!active.empty()) {
    const double u = rng->Uniform() * cum.back();
    size_t j = static_cast<size_t>(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
    j = std::min(j, active.size() - 1);  // rounding
    const size_t i = active[j];
    out.push_back(static_cast<uint8_t>(i));
    if (--left[i] == 0) {
      active.erase(active.begin() + static_cast<ptrdiff_t>(j));
      if (!active.empty()) rebuild();
    }
  }
  return out;
}

// Fisher-Yates.
template <typename T>
void Shuffle(std::vector<T>* v, Rng* rng) {
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng->Below(i)]);
}

}  // namespace

Status ValidateMix(const MixOptions& options, const std::vector<int64_t>& sizes,
                   std::vector<double>* p, int64_t* epoch_size) {
  const size_t m = sizes.size();
  if (m == 0) return InvalidArgumentError("Mix: no sources given (the list is empty)");
  if (m > static_cast<size_t>(MixSource::kMaxSources)) {
    return InvalidArgumentError("Mix: " + std::to_string(m) + " sources; at most " +
                                std::to_string(MixSource::kMaxSources) + " can be mixed");
  }
  int64_t total = 0;
  for (size_t i = 0; i < m; ++i) {
    if (sizes[i] <= 0) {
      return InvalidArgumentError("Mix: source " + std::to_string(i) + " has no samples");
    }
    total += sizes[i];
  }
  p->assign(m, 0.0);
  if (options.weights.empty()) {
    for (size_t i = 0; i < m; ++i) (*p)[i] = static_cast<double>(sizes[i]);
  } else {
    if (options.weights.size() != m) {
      return InvalidArgumentError("Mix: " + std::to_string(options.weights.size()) +
                                  " weights for " + std::to_string(m) +
                                  " sources (one weight per source)");
    }
    for (size_t i = 0; i < m; ++i) {
      const double w = options.weights[i];
      if (!std::isfinite(w) || w <= 0) {
        return InvalidArgumentError(
            "Mix: weights[" + std::to_string(i) + "] is " + Num(w) +
            ": every weight must be finite and > 0 (to leave a source out, leave it out of the "
            "list)");
      }
      (*p)[i] = w;
    }
  }
  const double sum = std::accumulate(p->begin(), p->end(), 0.0);
  if (!std::isfinite(sum)) return InvalidArgumentError("Mix: the weights' sum is not finite");
  for (double& x : *p) x /= sum;

  const std::string mode = ModeName(options.mode);
  const int64_t k = options.num_samples;
  switch (options.mode) {
    case MixOptions::Mode::kAllExhausted:
    case MixOptions::Mode::kFirstExhausted:
      if (k != -1) {
        return InvalidArgumentError("Mix: num_samples sets the epoch's length itself; it does not "
                                    "go with stop=\"" + mode + "\"");
      }
      *epoch_size = options.mode == MixOptions::Mode::kAllExhausted
                        ? total
                        : FirstExhaustedLength(*p, sizes);
      break;
    case MixOptions::Mode::kNumSamples:
      if (k <= 0) {
        return InvalidArgumentError("Mix: num_samples must be a positive number of samples, got " +
                                    std::to_string(k));
      }
      *epoch_size = k;
      break;
    case MixOptions::Mode::kReplacement:
      if (k == 0 || k < -1) {
        return InvalidArgumentError("Mix: num_samples must be a positive number of samples, got " +
                                    std::to_string(k));
      }
      *epoch_size = k == -1 ? total : k;
      break;
  }
  if (*epoch_size > kMaxEpoch) {
    return InvalidArgumentError("Mix: " + std::to_string(*epoch_size) +
                                " samples per epoch; at most 2^32 - 1 are supported");
  }
  return Status::OK();
}

std::vector<uint8_t> MixSchedule(const std::vector<double>& p, const std::vector<int64_t>& caps,
                                 int64_t n) {
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, n)));
  std::vector<int64_t> taken(p.size(), 0);
  std::vector<size_t> members;
  for (size_t i = 0; i < p.size(); ++i) {
    if (caps.empty() || caps[i] > 0) members.push_back(i);
  }
  // A source that reaches its cap leaves; the schedule restarts over the rest.
  while (!members.empty() && static_cast<int64_t>(out.size()) < n) {
    Schedule s(p, members);
    while (static_cast<int64_t>(out.size()) < n) {
      const size_t i = s.Take();
      out.push_back(static_cast<uint8_t>(i));
      if (!caps.empty() && ++taken[i] == caps[i]) {
        members.erase(std::find(members.begin(), members.end(), i));
        break;
      }
    }
  }
  return out;
}

int64_t FirstExhaustedLength(const std::vector<double>& p, const std::vector<int64_t>& sizes) {
  Schedule s(p, AllSources(p.size()));
  std::vector<int64_t> taken(p.size(), 0);
  for (int64_t n = 0;; ++n) {
    const size_t i = s.Take();
    if (taken[i]++ == sizes[i]) return n;
  }
}

std::vector<int64_t> CountChoices(const std::vector<uint8_t>& choices, size_t sources) {
  std::vector<int64_t> counts(sources, 0);
  for (uint8_t c : choices) ++counts[c];
  return counts;
}

std::vector<uint64_t> MixEpoch(const MixOptions& options, const std::vector<int64_t>& sizes,
                               const std::vector<double>& p, int64_t epoch_size, uint64_t seed,
                               int64_t epoch, bool shuffle) {
  const size_t m = sizes.size();
  Rng rng(HashSeed(seed, static_cast<uint64_t>(epoch), kMixChoiceStream));
  std::vector<uint64_t> out;
  out.reserve(static_cast<size_t>(epoch_size));
  if (options.mode == MixOptions::Mode::kReplacement) {
    // Independent draws: a source by p (inverse CDF), then a sample uniformly.
    std::vector<double> cum(m);
    std::partial_sum(p.begin(), p.end(), cum.begin());
    for (int64_t n = 0; n < epoch_size; ++n) {
      const double u = rng.Uniform() * cum.back();
      size_t i = static_cast<size_t>(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
      i = std::min(i, m - 1);
      out.push_back(MixEntry(static_cast<int>(i),
                             static_cast<int64_t>(rng.Below(static_cast<uint64_t>(sizes[i])))));
    }
    return out;
  }
  std::vector<uint8_t> choices;
  if (options.mode == MixOptions::Mode::kAllExhausted) {
    choices = shuffle ? DrawUntilEmpty(p, sizes, &rng) : MixSchedule(p, sizes, epoch_size);
  } else {  // kFirstExhausted, kNumSamples: the schedule's shares, in random order if shuffled
    choices = MixSchedule(p, {}, epoch_size);
    if (shuffle) Shuffle(&choices, &rng);
  }
  // Each source's k-th choice reads sample k of its order: pass k / n, one
  // permutation of the source per pass when shuffled.
  std::vector<int64_t> taken(m, 0);
  std::vector<std::vector<uint32_t>> order(m);
  for (uint8_t c : choices) {
    const int64_t n = sizes[c];
    const int64_t k = taken[c]++;
    const int64_t within = k % n;
    if (!shuffle) {
      out.push_back(MixEntry(c, within));
      continue;
    }
    if (within == 0) {  // a new pass
      std::vector<uint32_t>& perm = order[c];
      perm.resize(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0u);
      Rng pass_rng(HashSeed(seed, static_cast<uint64_t>(epoch), kMixOrderStream,
                            (static_cast<uint64_t>(c) << 40) | static_cast<uint64_t>(k / n)));
      Shuffle(&perm, &pass_rng);
    }
    out.push_back(MixEntry(c, order[c][static_cast<size_t>(within)]));
  }
  return out;
}

namespace {

// Reads the rank's share of the epoch's sequence: global position g reads
// the sample the sequence names, as the Mix's (id and label).
class MixReader : public RankedReader {
 public:
  MixReader(const std::vector<const RandomAccessSource*>* sources,
            const std::vector<std::vector<int64_t>>* label_maps, std::vector<uint64_t> sequence,
            const EpochSpec& spec)
      : RankedReader(static_cast<int64_t>(sequence.size()), spec),
        sources_(sources),
        label_maps_(label_maps),
        seq_(std::move(sequence)) {}

 private:
  Status ReadGlobal(int64_t g, SampleScratch* scratch, SampleData* out) const override {
    const uint64_t e = seq_[static_cast<size_t>(g)];
    const int c = MixEntrySource(e);
    const int64_t index = MixEntryIndex(e);
    const RandomAccessSource* source = (*sources_)[static_cast<size_t>(c)];
    STOKER_RETURN_IF_ERROR(source->ReadIndex(index, scratch, out));
    if (out->id < 0 || out->id >= (int64_t{1} << MixSource::kSourceShift)) {
      return InvalidArgumentError(source->NameOf(index) + ": sample id " +
                                  std::to_string(out->id) + " does not fit a Mix id (0 to 2^56)");
    }
    out->id |= static_cast<int64_t>(c) << MixSource::kSourceShift;
    const std::vector<int64_t>& map = (*label_maps_)[static_cast<size_t>(c)];
    if (!map.empty() && out->label >= 0) {
      if (out->label >= static_cast<int64_t>(map.size())) {
        return DataLossError(source->NameOf(index) + ": label " + std::to_string(out->label) +
                             " is outside its source's " + std::to_string(map.size()) +
                             " classes (Mix labels=\"union\" maps labels by class name)");
      }
      out->label = map[static_cast<size_t>(out->label)];
    }
    return Status::OK();
  }

  // (source, index): unique across the sources, the same in every epoch.
  int64_t KeyOfGlobal(int64_t g) const override {
    return static_cast<int64_t>(seq_[static_cast<size_t>(g)]);
  }

  std::string NameOfGlobal(int64_t g) const override {
    const uint64_t e = seq_[static_cast<size_t>(g)];
    return (*sources_)[static_cast<size_t>(MixEntrySource(e))]->NameOf(MixEntryIndex(e));
  }

  const std::vector<const RandomAccessSource*>* sources_;  // the MixSource's
  const std::vector<std::vector<int64_t>>* label_maps_;    // the MixSource's
  const std::vector<uint64_t> seq_;                        // the whole epoch, all ranks
};

class MixSourceImpl : public MixSource {
 public:
  MixSourceImpl(std::vector<std::shared_ptr<Source>> sources, const MixOptions& options)
      : sources_(std::move(sources)), options_(options) {}

  Status Init() {
    for (size_t i = 0; i < sources_.size(); ++i) {
      const std::shared_ptr<Source>& s = sources_[i];
      const std::string which = "Mix: source " + std::to_string(i);
      if (s == nullptr) return InvalidArgumentError(which + " is null");
      if (dynamic_cast<const MixSource*>(s.get()) != nullptr) {
        return InvalidArgumentError(which + " is itself a Mix: list its sources in one Mix "
                                            "(weights multiply through)");
      }
      const auto* ra = dynamic_cast<const RandomAccessSource*>(s.get());
      if (ra == nullptr || !s->random_access()) {
        return InvalidArgumentError(
            which + ", " + s->Describe() +
            ", is a stream: Mix needs random-access sources (ImageFolder, Npy, HDF5, Shards "
            "in indexed mode: local uncompressed .tar), because it draws the epoch's "
            "sequence in advance and reads any position of it (ranks, resume at any world "
            "size). Convert compressed or remote shards to local .tar (stoker convert) or "
            "read them with their own Loader");
      }
      readers_.push_back(ra);
      sizes_.push_back(s->size());
    }
    STOKER_RETURN_IF_ERROR(ValidateMix(options_, sizes_, &p_, &epoch_size_));
    STOKER_RETURN_IF_ERROR(InitSchema());
    return InitLabels();
  }

  // The sources' common fields: every record field reaches the batch.
  Schema schema() const override { return schema_; }
  // When every source's images are raw pixels of one size.
  bool FixedImageSize(int* height, int* width) const override {
    int h = 0, w = 0;
    for (size_t i = 0; i < sources_.size(); ++i) {
      int hi = 0, wi = 0;
      if (!sources_[i]->FixedImageSize(&hi, &wi) || (i > 0 && (hi != h || wi != w))) return false;
      h = hi;
      w = wi;
    }
    *height = h;
    *width = w;
    return true;
  }

  int64_t size() const override { return epoch_size_; }
  bool random_access() const override { return true; }
  std::vector<std::string> classes() const override { return classes_; }
  int num_sources() const override { return static_cast<int>(sources_.size()); }
  std::shared_ptr<Source> source(int i) const override { return sources_.at(static_cast<size_t>(i)); }
  const MixOptions& options() const override { return options_; }
  const std::vector<double>& probabilities() const override { return p_; }

  std::vector<int64_t> SamplesPerSource() const override {
    switch (options_.mode) {
      case MixOptions::Mode::kAllExhausted:
        return sizes_;
      case MixOptions::Mode::kFirstExhausted:
      case MixOptions::Mode::kNumSamples:
        return CountChoices(MixSchedule(p_, {}, epoch_size_), sizes_.size());
      case MixOptions::Mode::kReplacement:
        break;
    }
    std::vector<int64_t> expected;
    for (double x : p_) expected.push_back(static_cast<int64_t>(x * static_cast<double>(epoch_size_)));
    return expected;
  }

  std::string Describe() const override {
    std::string d = "Mix(" + std::to_string(sources_.size()) +
                    (sources_.size() == 1 ? " source: " : " sources: ");
    for (size_t i = 0; i < sources_.size(); ++i) {
      d += (i ? "; " : "") + sources_[i]->Describe() + " p=" + Num(p_[i]);
    }
    return d + "; " + ModeName(options_.mode) + ", " + std::to_string(epoch_size_) +
           " samples per epoch)";
  }

  uint64_t Fingerprint() const override {
    uint64_t h = Mix64(static_cast<uint64_t>(epoch_size_) ^ 0x4D49584Dull);
    for (size_t i = 0; i < sources_.size(); ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, &p_[i], sizeof bits);
      h = HashSeed(h, sources_[i]->Fingerprint(), bits);
    }
    return HashSeed(h, static_cast<uint64_t>(options_.mode), static_cast<uint64_t>(options_.labels));
  }

  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec& spec) override {
    STOKER_RETURN_IF_ERROR(CheckRank(spec));
    if (spec.sampler != nullptr && spec.sampler->kind != SamplerSpec::Kind::kAll) {
      return InvalidArgumentError(
          "sampler= does not apply to a Mix: the Mix draws its own epoch (set its weights, "
          "num_samples or replacement instead)");
    }
    std::vector<uint64_t> seq =
        MixEpoch(options_, sizes_, p_, epoch_size_, spec.seed, spec.epoch, spec.shuffle);
    return std::unique_ptr<EpochReader>(new MixReader(&readers_, &label_maps_, std::move(seq), spec));
  }

 private:
  Status InitLabels() {
    label_maps_.assign(sources_.size(), {});
    switch (options_.labels) {
      case MixOptions::Labels::kPerSource:
        return Status::OK();
      case MixOptions::Labels::kSame: {
        const std::vector<std::string> first = sources_[0]->classes();
        for (size_t i = 1; i < sources_.size(); ++i) {
          const std::vector<std::string> other = sources_[i]->classes();
          if (other == first) continue;
          return InvalidArgumentError(
              "Mix: source " + std::to_string(i) + " has " + ClassesText(other) +
              " but source 0 has " + ClassesText(first) +
              ": their labels would be read against one class list. Choose labels=\"union\" "
              "(labels mapped by class name into the union of the lists) or "
              "labels=\"per_source\" (each label kept as its source gives it; tell the "
              "sources apart by the sample's source index)");
        }
        classes_ = first;
        return Status::OK();
      }
      case MixOptions::Labels::kUnion:
        break;
    }
    std::unordered_map<std::string, int64_t> index;
    for (size_t i = 0; i < sources_.size(); ++i) {
      const std::vector<std::string> names = sources_[i]->classes();
      if (names.empty()) {
        return InvalidArgumentError("Mix: labels=\"union\" maps labels by class name, and source " +
                                    std::to_string(i) + ", " + sources_[i]->Describe() +
                                    ", names no classes; use labels=\"per_source\"");
      }
      std::vector<int64_t>& map = label_maps_[i];
      for (const std::string& name : names) {
        auto it = index.find(name);
        if (it == index.end()) {
          it = index.emplace(name, static_cast<int64_t>(classes_.size())).first;
          classes_.push_back(name);
        }
        map.push_back(it->second);
      }
    }
    return Status::OK();
  }

  Status InitSchema() {
    schema_ = sources_[0]->schema();
    for (size_t i = 1; i < sources_.size(); ++i) {
      const Schema other = sources_[i]->schema();
      if (!schema_.SameFields(other)) {
        return InvalidArgumentError(
            "Mix: source " + std::to_string(i) + " has the fields " + other.ToString() +
            " but source 0 has " + schema_.ToString() + ": a Mix's sources must have the same "
            "fields (names, kinds, dtypes and per-sample shapes, in the same order; RGB "
            "images may differ in size), or the fields one of them lacks would be lost");
      }
      for (size_t k = 0; k < schema_.fields.size(); ++k) {
        FieldSpec& f = schema_.fields[k];
        if (f.kind == FieldKind::kImage && f.image_mode == ImageMode::kRGB &&
            (!other.fields[k].shape_known || other.fields[k].shape != f.shape)) {
          f.shape_known = false;  // sizes differ between the sources
          f.shape.clear();
        }
      }
    }
    return Status::OK();
  }

  static std::string ClassesText(const std::vector<std::string>& c) {
    if (c.empty()) return "no class names";
    std::string t = std::to_string(c.size()) + " classes (" + c[0];
    for (size_t i = 1; i < std::min<size_t>(c.size(), 3); ++i) t += ", " + c[i];
    return t + (c.size() > 3 ? ", ...)" : ")");
  }

  const std::vector<std::shared_ptr<Source>> sources_;
  const MixOptions options_;
  std::vector<const RandomAccessSource*> readers_;  // sources_, cast
  std::vector<int64_t> sizes_;
  std::vector<double> p_;
  int64_t epoch_size_ = 0;
  Schema schema_;
  std::vector<std::string> classes_;
  // labels="union": per source, its label -> the Mix's label; else empty.
  std::vector<std::vector<int64_t>> label_maps_;
};

}  // namespace

StatusOr<std::shared_ptr<MixSource>> MixSource::Open(std::vector<std::shared_ptr<Source>> sources,
                                                     const MixOptions& options) {
  if (sources.empty()) return InvalidArgumentError("Mix: no sources given (the list is empty)");
  if (sources.size() > static_cast<size_t>(kMaxSources)) {
    return InvalidArgumentError("Mix: " + std::to_string(sources.size()) + " sources; at most " +
                                std::to_string(kMaxSources) + " can be mixed");
  }
  auto mix = std::make_shared<MixSourceImpl>(std::move(sources), options);
  STOKER_RETURN_IF_ERROR(mix->Init());
  return std::shared_ptr<MixSource>(std::move(mix));
}

}  // namespace stoker
