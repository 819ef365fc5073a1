// Copyright 2026 The stoker Authors.
#include "source/mix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/rng.h"
#include "source/memory_source.h"
#include "stoker/loader.h"
#include "stoker/mix.h"
#include "testing/loader_fixtures.h"
#include "testing/memory_source.h"

namespace stoker {
namespace {

using Mode = MixOptions::Mode;

MixOptions Opts(Mode mode, std::vector<double> weights = {}, int64_t num_samples = -1) {
  MixOptions o;
  o.mode = mode;
  o.weights = std::move(weights);
  o.num_samples = num_samples;
  return o;
}

std::vector<double> Probs(const MixOptions& o, const std::vector<int64_t>& sizes,
                          int64_t* epoch_size) {
  std::vector<double> p;
  const Status s = ValidateMix(o, sizes, &p, epoch_size);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return p;
}

std::vector<int64_t> SourceCounts(const std::vector<uint64_t>& seq, size_t sources) {
  std::vector<int64_t> counts(sources, 0);
  for (uint64_t e : seq) ++counts[static_cast<size_t>(MixEntrySource(e))];
  return counts;
}

// ---- The options ----

TEST(ValidateMixTest, RefusesBadArguments) {
  std::vector<double> p;
  int64_t n = 0;
  auto message = [&](const MixOptions& o, std::vector<int64_t> sizes) {
    const Status s = ValidateMix(o, sizes, &p, &n);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    return s.message();
  };
  EXPECT_NE(message(MixOptions(), {}).find("empty"), std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {1, 2, 3}), {5, 5}).find("3 weights for 2 sources"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {1, 0}), {5, 5}).find("weights[1] is 0"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {-1, 1}), {5, 5}).find("weights[0] is -1"),
            std::string::npos);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {1, nan}), {5, 5}).find("weights[1] is nan"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {inf, 1}), {5, 5}).find("finite"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted, {1e308, 1e308}), {5, 5}).find("sum"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kAllExhausted), {5, 0}).find("source 1 has no samples"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kFirstExhausted, {}, 10), {5, 5}).find("num_samples"),
            std::string::npos);
  EXPECT_NE(message(Opts(Mode::kNumSamples), {5, 5}).find("positive"), std::string::npos);
  EXPECT_NE(message(Opts(Mode::kNumSamples, {}, 0), {5, 5}).find("positive"), std::string::npos);
  EXPECT_NE(message(Opts(Mode::kReplacement, {}, 0), {5, 5}).find("positive"), std::string::npos);
  EXPECT_NE(message(Opts(Mode::kNumSamples, {}, int64_t{1} << 33), {5, 5}).find("2^32"),
            std::string::npos);
  EXPECT_NE(message(MixOptions(), std::vector<int64_t>(128, 1)).find("at most 127"),
            std::string::npos);
}

TEST(ValidateMixTest, WeightsAndEpochLength) {
  int64_t n = 0;
  // Default weights: the sizes.
  std::vector<double> p = Probs(MixOptions(), {30, 10}, &n);
  EXPECT_EQ(n, 40);
  EXPECT_DOUBLE_EQ(p[0], 0.75);
  EXPECT_DOUBLE_EQ(p[1], 0.25);
  p = Probs(Opts(Mode::kAllExhausted, {2, 6}), {30, 10}, &n);
  EXPECT_DOUBLE_EQ(p[0], 0.25);
  EXPECT_EQ(n, 40);
  (void)Probs(Opts(Mode::kNumSamples, {1, 1}, 7), {30, 10}, &n);
  EXPECT_EQ(n, 7);
  (void)Probs(Opts(Mode::kReplacement, {1, 1}), {30, 10}, &n);
  EXPECT_EQ(n, 40);
  (void)Probs(Opts(Mode::kReplacement, {1, 1}, 5), {30, 10}, &n);
  EXPECT_EQ(n, 5);
  // Equal weights, sizes 10 and 100: the schedule alternates, the 11th
  // sample of source 0 would be next after 20.
  (void)Probs(Opts(Mode::kFirstExhausted, {1, 1}), {10, 100}, &n);
  EXPECT_EQ(n, 20);
  // Weights proportional to the sizes: everything, nothing twice.
  (void)Probs(Opts(Mode::kFirstExhausted), {16, 48, 32}, &n);
  EXPECT_EQ(n, 96);
}

// ---- The schedule ----

TEST(MixScheduleTest, InterleavesByDueTime) {
  EXPECT_EQ(MixSchedule({0.5, 0.5}, {}, 6), (std::vector<uint8_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(MixSchedule({1 / 3.0, 1 / 3.0, 1 / 3.0}, {}, 6),
            (std::vector<uint8_t>{0, 1, 2, 0, 1, 2}));
  // Source 0 three times as often.
  EXPECT_EQ(MixSchedule({0.75, 0.25}, {}, 8), (std::vector<uint8_t>{0, 0, 1, 0, 0, 0, 1, 0}));
  // Capped: a source used up leaves, the others go on.
  EXPECT_EQ(MixSchedule({0.5, 0.5}, {2, 5}, 100), (std::vector<uint8_t>{0, 1, 0, 1, 1, 1, 1}));
}

// Every prefix holds each share within 1 - 1/(2m - 2) of N p_i (the header's
// claim), for random weights, 2 to 10 sources, every N up to 400.
TEST(MixScheduleTest, SharesAreWithinOneOfTheQuota) {
  Rng rng(7);
  int worst_cases = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t m = 2 + rng.Below(9);
    std::vector<double> w(m);
    double sum = 0;
    for (double& x : w) {
      const double u = rng.Uniform();
      sum += x = trial % 3 == 0 ? 1e-4 + u * u * u * u : 0.01 + u;  // some very uneven
    }
    for (double& x : w) x /= sum;
    const std::vector<uint8_t> s = MixSchedule(w, {}, 400);
    std::vector<int64_t> count(m, 0);
    for (size_t n = 1; n <= s.size(); ++n) {
      ++count[s[n - 1]];
      for (size_t i = 0; i < m; ++i) {
        const double quota = static_cast<double>(n) * w[i];
        const double bound = 1.0 - 1.0 / (2.0 * static_cast<double>(m) - 2.0);
        if (std::fabs(static_cast<double>(count[i]) - quota) > bound + 1e-9) ++worst_cases;
      }
    }
  }
  EXPECT_EQ(worst_cases, 0);
}

// ---- The epoch's sequence ----

TEST(MixEpochTest, AllExhaustedVisitsEverySampleOnce) {
  const std::vector<int64_t> sizes = {20, 7, 13};
  for (bool shuffle : {false, true}) {
    int64_t n = 0;
    const MixOptions o = Opts(Mode::kAllExhausted, {1, 2, 3});
    const std::vector<double> p = Probs(o, sizes, &n);
    const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 5, 0, shuffle);
    ASSERT_EQ(seq.size(), 40u);
    EXPECT_EQ(std::set<uint64_t>(seq.begin(), seq.end()).size(), 40u);
    for (uint64_t e : seq) {
      EXPECT_LT(MixEntryIndex(e), sizes[static_cast<size_t>(MixEntrySource(e))]);
    }
    // A function of (seed, epoch): again the same, another epoch differs
    // (when shuffled).
    EXPECT_EQ(MixEpoch(o, sizes, p, n, 5, 0, shuffle), seq);
    EXPECT_EQ(MixEpoch(o, sizes, p, n, 5, 1, shuffle) != seq, shuffle);
    EXPECT_EQ(MixEpoch(o, sizes, p, n, 6, 0, shuffle) != seq, shuffle);
    if (!shuffle) {  // each source in its own order
      std::vector<int64_t> next(3, 0);
      for (uint64_t e : seq) {
        EXPECT_EQ(MixEntryIndex(e), next[static_cast<size_t>(MixEntrySource(e))]++);
      }
    }
  }
}

TEST(MixEpochTest, AllExhaustedDrawsAtTheWeights) {
  // Two sources of 4000; p = (0.8, 0.2): while both have samples, about 80%
  // of the draws are source 0's.
  const std::vector<int64_t> sizes = {4000, 4000};
  int64_t n = 0;
  const MixOptions o = Opts(Mode::kAllExhausted, {4, 1});
  const std::vector<double> p = Probs(o, sizes, &n);
  const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 11, 3, true);
  const std::vector<uint64_t> head(seq.begin(), seq.begin() + 2000);
  const double zero = static_cast<double>(SourceCounts(head, 2)[0]);
  EXPECT_NEAR(zero / 2000, 0.8, 5 * std::sqrt(0.8 * 0.2 / 2000));
  // Once source 0 is used up, only source 1 is left.
  EXPECT_EQ(MixEntrySource(seq.back()), 1);
  // The choices themselves are redrawn each epoch.
  auto sources = [](const std::vector<uint64_t>& v) {
    std::vector<int> out;
    for (uint64_t e : v) out.push_back(MixEntrySource(e));
    return out;
  };
  EXPECT_NE(sources(MixEpoch(o, sizes, p, n, 11, 4, true)), sources(seq));
}

TEST(MixEpochTest, FirstExhaustedAndNumSamplesHaveExactShares) {
  const std::vector<int64_t> sizes = {50, 30};
  for (Mode mode : {Mode::kFirstExhausted, Mode::kNumSamples}) {
    const MixOptions o = Opts(mode, {3, 1}, mode == Mode::kNumSamples ? 400 : -1);
    int64_t n = 0;
    const std::vector<double> p = Probs(o, sizes, &n);
    const std::vector<int64_t> shares = CountChoices(MixSchedule(p, {}, n), 2);
    const std::vector<uint64_t> ordered = MixEpoch(o, sizes, p, n, 1, 0, false);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 1, epoch, true);
      EXPECT_EQ(SourceCounts(seq, 2), shares) << "epoch " << epoch;
      EXPECT_NE(seq, ordered);
    }
    EXPECT_EQ(SourceCounts(ordered, 2), shares);
    if (mode == Mode::kFirstExhausted) {
      // Source 0 (50 samples at 3/4) is used up first: 67 samples.
      EXPECT_EQ(n, 67);
      EXPECT_EQ(shares, (std::vector<int64_t>{50, 17}));
      const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 1, 0, true);
      EXPECT_EQ(std::set<uint64_t>(seq.begin(), seq.end()).size(), seq.size()) << "a repeat";
    } else {
      EXPECT_EQ(shares, (std::vector<int64_t>{300, 100}));
      // Source 0 read 6 times over, source 1 3 1/3 times: each sample of a
      // pass once, and each pass a new order.
      const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 1, 0, true);
      std::map<uint64_t, int> times;
      std::vector<std::vector<int64_t>> passes(2);
      for (uint64_t e : seq) {
        ++times[e];
        passes[static_cast<size_t>(MixEntrySource(e))].push_back(MixEntryIndex(e));
      }
      for (const auto& [e, t] : times) {
        if (MixEntrySource(e) == 0) {
          EXPECT_EQ(t, 6);
        } else {
          EXPECT_TRUE(t == 3 || t == 4) << t;
        }
      }
      const std::vector<int64_t> first(passes[0].begin(), passes[0].begin() + 50);
      const std::vector<int64_t> second(passes[0].begin() + 50, passes[0].begin() + 100);
      EXPECT_NE(first, second);
      EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 50u);
    }
  }
}

TEST(MixEpochTest, ReplacementDrawsIndependently) {
  const std::vector<int64_t> sizes = {5, 1000};
  const MixOptions o = Opts(Mode::kReplacement, {0.3, 0.7}, 20000);
  int64_t n = 0;
  const std::vector<double> p = Probs(o, sizes, &n);
  const std::vector<uint64_t> seq = MixEpoch(o, sizes, p, n, 2, 0, false);
  ASSERT_EQ(seq.size(), 20000u);
  const double zero = static_cast<double>(SourceCounts(seq, 2)[0]);
  EXPECT_NEAR(zero / 20000, 0.3, 5 * std::sqrt(0.3 * 0.7 / 20000));
  std::vector<int> hits(5, 0);
  for (uint64_t e : seq) {
    ASSERT_LT(MixEntryIndex(e), sizes[static_cast<size_t>(MixEntrySource(e))]);
    if (MixEntrySource(e) == 0) ++hits[static_cast<size_t>(MixEntryIndex(e))];
  }
  for (int h : hits) EXPECT_NEAR(h, zero / 5, 5 * std::sqrt(zero / 5));
  // Random whatever the shuffle flag (like WeightedSampler), per epoch.
  EXPECT_EQ(MixEpoch(o, sizes, p, n, 2, 0, true), seq);
  EXPECT_NE(MixEpoch(o, sizes, p, n, 2, 1, false), seq);
}

// ---- MixSource ----

// Samples named "<prefix><i>" with label i % labels, raw 2x2 pixels.
class NamedSource : public MemorySource {
 public:
  NamedSource(int n, int labels, std::vector<std::string> classes, const std::string& prefix)
      : MemorySource(Samples(n, labels, prefix)), classes_(std::move(classes)) {}
  std::vector<std::string> classes() const override { return classes_; }

 private:
  static std::vector<MemorySample> Samples(int n, int labels, const std::string& prefix) {
    std::vector<MemorySample> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      v[i].bytes.assign(12, static_cast<uint8_t>(i));
      v[i].raw_width = 2;
      v[i].raw_height = 2;
      v[i].label = i % labels;
      v[i].name = prefix + std::to_string(i);
    }
    return v;
  }
  std::vector<std::string> classes_;
};

// A stream: not random access.
class StreamSource : public Source {
 public:
  int64_t size() const override { return 4; }
  std::string Describe() const override { return "Stream(test)"; }
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec&) override {
    return UnimplementedError("not read");
  }
};

std::shared_ptr<Source> Named(int n, int labels = 3, std::vector<std::string> classes = {},
                              const std::string& prefix = "s") {
  return std::make_shared<NamedSource>(n, labels, std::move(classes), prefix);
}

TEST(MixSourceTest, RefusesSourcesItCannotMixExactly) {
  auto refused = [](std::vector<std::shared_ptr<Source>> s, const std::string& want) {
    auto mix = MixSource::Open(std::move(s));
    ASSERT_FALSE(mix.ok());
    EXPECT_EQ(mix.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(mix.status().message().find(want), std::string::npos) << mix.status().message();
  };
  refused({}, "empty");
  refused({Named(3), nullptr}, "source 1 is null");
  refused({Named(3), std::make_shared<StreamSource>()}, "Stream(test), is a stream");
  refused({Named(3), Named(0)}, "source 1 has no samples");
  auto inner = MixSource::Open({Named(3), Named(4)});
  ASSERT_TRUE(inner.ok());
  refused({Named(3), inner.value()}, "itself a Mix");
}

TEST(MixSourceTest, LabelPolicies) {
  auto a = Named(6, 3, {"cat", "dog", "owl"}, "a");
  auto b = Named(4, 2, {"owl", "eel"}, "b");
  auto same = Named(4, 3, {"cat", "dog", "owl"}, "c");

  // Same lists: kept. Different lists: refused under kSame, naming the ways out.
  auto ok = MixSource::Open({a, same});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok.value()->classes(), (std::vector<std::string>{"cat", "dog", "owl"}));
  auto refused = MixSource::Open({a, b});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("labels=\"union\""), std::string::npos);
  EXPECT_NE(refused.status().message().find("labels=\"per_source\""), std::string::npos);
  // One named, one not: refused too.
  EXPECT_FALSE(MixSource::Open({a, Named(4)}).ok());
  // No names anywhere: one shared integer label space.
  EXPECT_TRUE(MixSource::Open({Named(4), Named(5)}).ok());

  MixOptions o;
  o.labels = MixOptions::Labels::kUnion;
  EXPECT_FALSE(MixSource::Open({a, Named(4)}, o).ok());  // union needs names
  auto uni = MixSource::Open({a, b}, o);
  ASSERT_TRUE(uni.ok()) << uni.status().ToString();
  EXPECT_EQ(uni.value()->classes(), (std::vector<std::string>{"cat", "dog", "owl", "eel"}));
  o.labels = MixOptions::Labels::kPerSource;
  auto per = MixSource::Open({a, b}, o);
  ASSERT_TRUE(per.ok());
  EXPECT_TRUE(per.value()->classes().empty());

  // Read every sample: ids carry the source, labels are mapped (union) or
  // kept (per source).
  for (const auto& mix : {uni.value(), per.value()}) {
    auto reader = mix->StartEpoch(EpochSpec{});
    ASSERT_TRUE(reader.ok());
    EpochReader* r = reader.value().get();
    ASSERT_EQ(r->size(), 10);
    std::set<std::string> names;
    for (int64_t pos = 0; pos < 10; ++pos) {
      SampleScratch scratch;
      SampleData s;
      bool end = true;
      ASSERT_TRUE(r->Read(pos, &scratch, &s, &end).ok());
      ASSERT_FALSE(end);
      const int source = MixSource::SourceOf(s.id);
      const int64_t index = MixSource::IdInSource(s.id);
      const std::string name = r->Name(pos);
      names.insert(name);
      EXPECT_EQ(name, (source == 0 ? "a" : "b") + std::to_string(index));
      EXPECT_EQ(r->KeyAt(pos), s.id);  // (source, index) both ways
      EXPECT_EQ(s.pixels[0], static_cast<uint8_t>(index));
      if (mix == per.value() || source == 0) {
        EXPECT_EQ(s.label, index % (source == 0 ? 3 : 2));
      } else {  // b's owl (0) is the Mix's 2, its eel (1) the Mix's 3
        EXPECT_EQ(s.label, index % 2 == 0 ? 2 : 3) << name;
      }
    }
    EXPECT_EQ(names.size(), 10u);
    SampleScratch scratch;
    SampleData s;
    bool end = false;
    EXPECT_TRUE(r->Read(10, &scratch, &s, &end).ok());
    EXPECT_TRUE(end);
  }
}

TEST(MixSourceTest, DescribesAndFingerprints) {
  auto a = Named(6), b = Named(4);
  auto mix = MixSource::Open({a, b}, Opts(Mode::kNumSamples, {1, 3}, 100)).value();
  EXPECT_EQ(mix->size(), 100);
  EXPECT_EQ(mix->num_sources(), 2);
  EXPECT_EQ(mix->source(1), b);
  EXPECT_EQ(mix->SamplesPerSource(), (std::vector<int64_t>{25, 75}));
  EXPECT_NE(mix->Describe().find("num_samples, 100 samples per epoch"), std::string::npos)
      << mix->Describe();
  EXPECT_NE(mix->Describe().find("p=0.75"), std::string::npos) << mix->Describe();
  // The fingerprint follows the sources, weights and mode.
  const uint64_t f = mix->Fingerprint();
  EXPECT_EQ(MixSource::Open({a, b}, Opts(Mode::kNumSamples, {1, 3}, 100)).value()->Fingerprint(),
            f);
  EXPECT_NE(MixSource::Open({a, b}, Opts(Mode::kNumSamples, {1, 2}, 100)).value()->Fingerprint(),
            f);
  EXPECT_NE(MixSource::Open({b, a}, Opts(Mode::kNumSamples, {3, 1}, 100)).value()->Fingerprint(),
            f);
  EXPECT_NE(MixSource::Open({a, b}, Opts(Mode::kReplacement, {1, 3}, 100)).value()->Fingerprint(),
            f);
}

// ---- Through the Loader ----

LoaderOptions Loading(int threads, int rank = 0, int world = 1) {
  return testing::SmallAugmentedOptions(threads, 3, rank, world);
}

std::shared_ptr<Source> JpegSource(int n, int labels) {
  testing::JpegSampleOptions jo;
  jo.labels = labels;
  return std::make_shared<MemorySource>(testing::JpegSamples(n, jo));
}

// A record source in memory: JPEG image, label, "aux" int32 [2] = {base + i, -i}.
std::shared_ptr<Source> RecordSource(int n, int32_t base) {
  testing::JpegSampleOptions jo;
  jo.labels = 3;
  std::vector<MemorySample> samples = testing::JpegSamples(n, jo);
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[static_cast<size_t>(i)];
    testing::AppendField(&s);
    testing::AppendField(&s);
    testing::AppendField(&s, testing::BytesOf<int32_t>({base + i, -i}), ElemType::kInt32, {2});
  }
  Schema schema = Schema::ImageLabel();
  schema.fields.push_back(ArrayField("aux", ElemType::kInt32, {2}));
  return std::make_shared<stoker::MemorySource>(std::move(samples), schema);
}

TEST(MixLoaderTest, RecordFieldsOfEverySourceReachTheBatch) {
  auto mix = MixSource::Open({RecordSource(8, 1000), RecordSource(6, 2000)},
                             Opts(Mode::kNumSamples, {1, 1}, 20));
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_GE(mix.value()->schema().Find("aux"), 0) << mix.value()->schema().ToString();
  LoaderOptions o = Loading(3);
  o.batch_size = 4;
  auto loader = Loader::Create(mix.value(), o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  ASSERT_TRUE(loader.value()->Start().ok());
  int seen = 0;
  for (;;) {
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(loader.value()->Next(&b, &end).ok());
    if (end) break;
    const int aux = b->FindField("aux");
    ASSERT_GE(aux, 0);
    for (int i = 0; i < b->size(); ++i) {
      const int64_t id = b->ids()[i];
      const int32_t* v = reinterpret_cast<const int32_t*>(b->field_block(aux)) + 2 * i;
      const int64_t k = MixSource::IdInSource(id);
      EXPECT_EQ(v[0], (MixSource::SourceOf(id) == 0 ? 1000 : 2000) + k);
      EXPECT_EQ(v[1], -k);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 20);
}

TEST(MixSourceTest, SourcesWithOtherFieldsAreRefused) {
  // A record's field that another source lacks would be lost: refused, naming both.
  auto mix = MixSource::Open({RecordSource(4, 0), JpegSource(4, 3)});
  ASSERT_FALSE(mix.ok());
  EXPECT_EQ(mix.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mix.status().message().find("same fields"), std::string::npos)
      << mix.status().message();
  EXPECT_NE(mix.status().message().find("aux"), std::string::npos) << mix.status().message();
}

TEST(MixLoaderTest, BatchesTellTheSourceOfEverySample) {
  auto mix = MixSource::Open({JpegSource(12, 3), JpegSource(9, 3)},
                             Opts(Mode::kNumSamples, {2, 1}, 30))
                 .value();
  auto loader = testing::MakeLoader(mix, Loading(2));
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->num_batches(), 8);
  const testing::Delivered d = testing::RunEpoch(loader.get());
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.ids.size(), 30u);
  std::vector<int64_t> per_source(2, 0);
  for (size_t i = 0; i < d.ids.size(); ++i) {
    const int s = MixSource::SourceOf(d.ids[i]);
    ASSERT_TRUE(s == 0 || s == 1);
    ++per_source[static_cast<size_t>(s)];
    EXPECT_EQ(d.labels[i], MixSource::IdInSource(d.ids[i]) % 3);
  }
  EXPECT_EQ(per_source, (std::vector<int64_t>{20, 10}));
}

TEST(MixLoaderTest, SameSampleSameId_DifferentSourcesDifferentIds) {
  // The same JPEGs as two sources: each sample twice per epoch, under two ids
  // (so with two augmentations); source 0's ids are those it has alone.
  auto src = JpegSource(8, 8);
  auto mix = MixSource::Open({src, src}).value();
  auto loader = testing::MakeLoader(mix, Loading(2));
  auto alone = testing::MakeLoader(src, Loading(2));
  ASSERT_TRUE(loader && alone);
  const testing::Delivered d = testing::RunEpoch(loader.get());
  const testing::Delivered a = testing::RunEpoch(alone.get());
  ASSERT_TRUE(d.status.ok() && a.status.ok());
  EXPECT_EQ(std::set<int64_t>(d.ids.begin(), d.ids.end()).size(), 16u);
  const auto mixed = d.ById();
  for (const auto& [id, pixels] : a.ById()) {
    EXPECT_EQ(mixed.at(id), pixels) << "source 0's sample " << id;
    EXPECT_NE(mixed.at(id | (int64_t{1} << MixSource::kSourceShift)), pixels) << id;
  }
}

TEST(MixLoaderTest, SamplerIsRefused) {
  auto mix = MixSource::Open({JpegSource(4, 2), JpegSource(4, 2)}).value();
  LoaderOptions o = Loading(1);
  o.sampler = SamplerSpec::Subset({0, 1});
  auto loader = Loader::Create(mix, o);
  ASSERT_FALSE(loader.ok());
  EXPECT_NE(loader.status().message().find("Mix"), std::string::npos)
      << loader.status().message();
}

TEST(MixLoaderTest, DecodedCacheServesLaterEpochs) {
  auto mix = MixSource::Open({JpegSource(8, 2), JpegSource(8, 2)},
                             Opts(Mode::kNumSamples, {1, 1}, 16))
                 .value();
  LoaderOptions o = Loading(2);
  o.dct_scaling = LoaderOptions::DctScaling::kOff;
  auto plain = testing::MakeLoader(mix, o);
  o.cache_bytes = 8 << 20;
  auto cached = testing::MakeLoader(mix, o);
  ASSERT_TRUE(plain && cached);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const testing::Delivered want = testing::RunEpoch(plain.get());
    const testing::Delivered got = testing::RunEpoch(cached.get());
    ASSERT_TRUE(want.status.ok() && got.status.ok()) << want.status.ToString() << " | " << got.status.ToString();
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_TRUE(got.pixels == want.pixels) << "epoch " << epoch;
  }
  const LoaderStats s = cached->stats();
  // Two sources' samples are 16 keys: read once, then served from the cache
  // (the second epoch, and the third's first batches made ahead).
  EXPECT_EQ(s.cache_misses, 16);
  EXPECT_GE(s.cache_hits, 16);
}

TEST(MixLoaderTest, RanksAndResumeAcrossWorldSizes) {
  auto mix = MixSource::Open({JpegSource(10, 10), JpegSource(7, 7), JpegSource(5, 5)},
                             Opts(Mode::kNumSamples, {3, 2, 1}, 36))
                 .value();
  // The whole epoch at one rank.
  auto whole = testing::MakeLoader(mix, Loading(2));
  ASSERT_TRUE(whole);
  whole->SetEpoch(2);
  const testing::Delivered ref = testing::RunEpoch(whole.get());
  ASSERT_TRUE(ref.status.ok());
  ASSERT_EQ(ref.ids.size(), 36u);
  std::multiset<int64_t> all(ref.ids.begin(), ref.ids.end());
  for (int world = 2; world <= 3; ++world) {
    std::multiset<int64_t> got;
    for (int rank = 0; rank < world; ++rank) {
      auto l = testing::MakeLoader(mix, Loading(2, rank, world));
      ASSERT_TRUE(l);
      l->SetEpoch(2);
      const testing::Delivered d = testing::RunEpoch(l.get());
      ASSERT_TRUE(d.status.ok());
      EXPECT_EQ(d.ids.size(), 36u / world);
      got.insert(d.ids.begin(), d.ids.end());
    }
    EXPECT_EQ(got, all) << "world " << world;
  }
  // Two batches at 2 ranks, the rest at 3: the epoch's draws exactly once.
  std::multiset<int64_t> got;
  LoaderState state;
  for (int rank = 0; rank < 2; ++rank) {
    auto l = testing::MakeLoader(mix, Loading(2, rank, 2));
    l->SetEpoch(2);
    ASSERT_TRUE(l->Start().ok());
    testing::Delivered head;
    testing::TakeBatches(l.get(), &head, 2);
    got.insert(head.ids.begin(), head.ids.end());
    state = l->state();
  }
  EXPECT_EQ(state.consumed, 16);
  for (int rank = 0; rank < 3; ++rank) {
    auto l = testing::MakeLoader(mix, Loading(2, rank, 3));
    ASSERT_TRUE(l->Resume(state).ok());
    const testing::Delivered rest = testing::RunEpoch(l.get());
    ASSERT_TRUE(rest.status.ok());
    got.insert(rest.ids.begin(), rest.ids.end());
    // Every sample with the uninterrupted run's pixels.
    const auto ref_pixels = ref.ById();
    for (size_t i = 0; i < rest.ids.size(); ++i) {
      EXPECT_EQ(rest.samples[i], ref_pixels.at(rest.ids[i]));
    }
  }
  // 20 left over 3 ranks: 7 each, one padded.
  std::multiset<int64_t> want = all;
  EXPECT_EQ(got.size(), 37u);
  for (int64_t id : want) {
    EXPECT_GE(got.count(id), all.count(id)) << id;
  }
}

}  // namespace
}  // namespace stoker
