// Copyright 2026 The stoker Authors.
#include "diagnose/diagnose.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::MemorySample;
using testing::MemorySource;

std::vector<MemorySample> Jpegs(int n, int w, int h, bool progressive = false) {
  std::vector<MemorySample> out;
  for (int i = 0; i < n; ++i) {
    testing::JpegSpec spec;
    spec.progressive = progressive;
    MemorySample s;
    s.bytes = testing::EncodeJpeg(testing::MakePixels(w, h, i), w, h, spec);
    s.name = std::to_string(i) + ".jpg";
    out.push_back(std::move(s));
  }
  return out;
}

LoaderOptions Options(std::vector<Transform> t, int threads = 2) {
  LoaderOptions o;
  o.batch_size = 8;
  o.threads = threads;
  o.transforms = std::move(t);
  return o;
}

Diagnosis RunDiagnosis(std::shared_ptr<Source> src, const LoaderOptions& o,
              std::function<void(const BatchPtr&)> step, int batches = 12) {
  auto loader = Loader::Create(std::move(src), o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  DiagnoseOptions d;
  d.batches = batches;
  auto r = Diagnose(loader.value().get(), step, d);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().modes.size(), 5u);
  return r.value();
}

TEST(DiagnoseTest, SlowStorageIsNamed) {
  // 3 ms per read, tiny images: reading dominates everything else.
  auto src = std::make_shared<MemorySource>(Jpegs(64, 48, 32), /*read_delay_us=*/3000);
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}), [](const BatchPtr&) {});
  EXPECT_TRUE(d.data_bound);
  EXPECT_EQ(d.bottleneck, "read") << FormatDiagnosis(d);
  EXPECT_NE(d.verdict.find("reading from storage"), std::string::npos);
  EXPECT_GT(d.modes[4].ratio_to_previous, 3.0) << FormatDiagnosis(d);
}

TEST(DiagnoseTest, HeavyDecodeIsNamed) {
  // Progressive JPEGs must be entropy-decoded whole even for a small crop.
  auto src = std::make_shared<MemorySource>(Jpegs(16, 900, 700, /*progressive=*/true));
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}), [](const BatchPtr&) {}, 6);
  EXPECT_TRUE(d.data_bound);
  EXPECT_EQ(d.bottleneck, "decode") << FormatDiagnosis(d);
  EXPECT_GT(d.pipeline_stats.total.decode_s, d.pipeline_stats.total.augment_s);
}

TEST(DiagnoseTest, HeavyAugmentationIsNamed) {
  // Raw pixels skip decoding; a large antialiased downscale is all the work.
  std::vector<MemorySample> raw;
  for (int i = 0; i < 16; ++i) {
    MemorySample s;
    s.bytes = testing::MakePixels(800, 600, i);
    s.raw_width = 800;
    s.raw_height = 600;
    s.name = "raw" + std::to_string(i);
    raw.push_back(std::move(s));
  }
  auto src = std::make_shared<MemorySource>(raw);
  Diagnosis d = RunDiagnosis(src, Options({Transform::Resize(24, 24)}), [](const BatchPtr&) {}, 6);
  EXPECT_TRUE(d.data_bound);
  EXPECT_EQ(d.bottleneck, "augment") << FormatDiagnosis(d);
}

TEST(DiagnoseTest, SlowConsumerIsNotDataBound) {
  auto src = std::make_shared<MemorySource>(Jpegs(32, 48, 32));
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}), [](const BatchPtr&) {
    // The "GPU step", far slower than the pipeline (~1 ms per batch here): its wait for
    // data stays far under the 3% margin even on a loaded machine.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }, 8);
  EXPECT_EQ(d.state, "fed") << FormatDiagnosis(d);
  EXPECT_TRUE(d.decided);
  EXPECT_FALSE(d.data_bound) << FormatDiagnosis(d);
  EXPECT_EQ(d.bottleneck, "");
  // No stage is blamed (a machine loaded by others may add "cpu-contention").
  for (const std::string& c : d.causes) EXPECT_EQ(c, "cpu-contention");
  EXPECT_NE(d.verdict.find("not data-bound"), std::string::npos);
  EXPECT_LT(d.wait_fraction, 0.03);
  ASSERT_GE(d.round_waits.size(), 3u);  // agree = 3 rounds
}

TEST(DiagnoseTest, TheVerdictIsTheStepsWaitNotAThroughputRatio) {
  // 2 ms per read on one thread: 8 samples take >= 16 ms a batch, for an 8 ms step. The
  // step waits about half the time; the throughput ratio would say the same, but the
  // verdict must come from the wait, which the Diagnosis reports per round.
  auto src = std::make_shared<MemorySource>(Jpegs(64, 48, 32), /*read_delay_us=*/2000);
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}, 1), [](const BatchPtr&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(8));
  }, 6);
  EXPECT_EQ(d.state, "data-bound") << FormatDiagnosis(d);
  EXPECT_TRUE(d.data_bound);
  EXPECT_GT(d.wait_fraction, 0.25) << FormatDiagnosis(d);
  EXPECT_EQ(d.bottleneck, "read") << FormatDiagnosis(d);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.back(), "read");
}

TEST(DiagnoseTest, RoundsThatDisagreeAreUndecided) {
  // The step is far slower than the pipeline in even rounds and instant in odd ones, so
  // no two consecutive rounds agree: the diagnosis must say so, not pick a side.
  auto src = std::make_shared<MemorySource>(Jpegs(64, 48, 32), /*read_delay_us=*/2000);
  constexpr int kBatches = 4;
  // Warm-ups and measured steps before the rounds: modes 1-3 (1 + n each), mode 4
  // (1 + n), mode 5's warm-up (1).
  constexpr int kBefore = 4 * (kBatches + 1) + 1;
  int calls = 0;
  auto loader = Loader::Create(src, Options({Transform::CenterCrop(16, 16)}, 1));
  ASSERT_TRUE(loader.ok());
  DiagnoseOptions o;
  o.batches = kBatches;
  o.agree = 2;
  o.max_rounds = 4;
  auto r = Diagnose(loader.value().get(), [&](const BatchPtr&) {
    const int k = calls++ - kBefore;
    if (k >= 0 && (k / kBatches) % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Diagnosis& d = r.value();
  EXPECT_EQ(d.state, "undecided") << FormatDiagnosis(d);
  EXPECT_FALSE(d.decided);
  EXPECT_FALSE(d.data_bound);
  EXPECT_EQ(d.round_waits.size(), 4u);
  EXPECT_NE(d.verdict.find("undecided"), std::string::npos);
}

TEST(DiagnoseTest, BadOptionsAreRefused) {
  auto src = std::make_shared<MemorySource>(Jpegs(8, 48, 32));
  auto loader = Loader::Create(src, Options({Transform::CenterCrop(16, 16)}));
  ASSERT_TRUE(loader.ok());
  for (auto change : std::vector<std::function<void(DiagnoseOptions*)>>{
           [](DiagnoseOptions* o) { o->batches = 0; },
           [](DiagnoseOptions* o) { o->agree = 0; },
           [](DiagnoseOptions* o) { o->agree = o->max_rounds + 1; },
           [](DiagnoseOptions* o) { o->fed_below = 0.2; },  // above starved_above
       }) {
    DiagnoseOptions o;
    change(&o);
    auto r = Diagnose(loader.value().get(), [](const BatchPtr&) {}, o);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  }
}

TEST(DiagnoseTest, FormatShowsEveryModeAndTheVerdict) {
  auto src = std::make_shared<MemorySource>(Jpegs(16, 48, 32));
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}), [](const BatchPtr&) {}, 4);
  const std::string text = FormatDiagnosis(d);
  for (const char* s : {"1 batch cached", "2 batch copied", "3 one sample", "4 encoded bytes",
                        "5 full pipeline", "busy time", "per round", "cpu: ", "verdict: "}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
}

// A record source whose values point into the worker's scratch, reused from
// read to read (as a shard's members are): whoever keeps a value past the
// next read must copy its bytes.
class CopyingRecords : public stoker::MemorySource {
 public:
  using stoker::MemorySource::MemorySource;
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    STOKER_RETURN_IF_ERROR(stoker::MemorySource::ReadIndex(index, scratch, out));
    scratch->field_bytes.resize(scratch->fields.size());
    for (size_t k = 0; k < scratch->fields.size(); ++k) {
      FieldValue& v = scratch->fields[k];
      if (v.data == nullptr) continue;
      scratch->field_bytes[k].assign(v.data, v.data + v.size);
      v.data = scratch->field_bytes[k].data();
    }
    return Status::OK();
  }
};

// Records held in memory: an optional JPEG image, a label, "aux" int32 [2]
// holding {i, -i} and a caption "c<i>" (the field values point into each
// sample's own bytes, as MemorySource requires).
std::shared_ptr<stoker::MemorySource> Records(int n, bool with_image) {
  Schema schema;
  if (with_image) schema.fields.push_back(ImageField("image"));
  schema.fields.push_back(LabelField("label"));
  schema.fields.push_back(ArrayField("aux", ElemType::kInt32, {2}));
  schema.fields.push_back(TextField("caption"));
  std::vector<MemorySample> samples = with_image ? Jpegs(n, 48, 32) : std::vector<MemorySample>(n);
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[static_cast<size_t>(i)];
    s.label = i % 3;
    s.name = "r" + std::to_string(i);
    if (with_image) testing::AppendField(&s);  // the primary image: given by s.bytes
    testing::AppendField(&s);                  // the primary label: given by s.label
    testing::AppendField(&s, testing::BytesOf<int32_t>({i, -i}), ElemType::kInt32, {2});
    const std::string caption = "c" + std::to_string(i);
    testing::AppendField(&s, std::vector<uint8_t>(caption.begin(), caption.end()));
  }
  return std::make_shared<CopyingRecords>(std::move(samples), schema);
}

// Every batch the step is fed (the cached batch, the in-memory copy of the
// samples, the full pipeline) carries each sample's own fields.
void ExpectOwnFields(const BatchPtr& b, int* checked) {
  const int aux = b->FindField("aux");
  const int caption = b->FindField("caption");
  ASSERT_GE(aux, 0);
  ASSERT_GE(caption, 0);
  for (int i = 0; i < b->size(); ++i) {
    const int64_t id = b->ids()[i];
    const int32_t* v = reinterpret_cast<const int32_t*>(b->field_block(aux)) + 2 * i;
    EXPECT_EQ(v[0], id);
    EXPECT_EQ(v[1], -id);
    const FieldSlot& c = b->field_sample(caption, i);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(c.data), c.bytes), "c" + std::to_string(id));
    EXPECT_EQ(b->labels()[i], id % 3);
    ++*checked;
  }
}

TEST(DiagnoseTest, RecordsAreDiagnosedWithEveryField) {
  int checked = 0;
  Diagnosis d = RunDiagnosis(Records(32, true), Options({Transform::CenterCrop(16, 16)}),
                             [&](const BatchPtr& b) { ExpectOwnFields(b, &checked); }, 4);
  EXPECT_GT(checked, 0);
  for (const ModeResult& m : d.modes) EXPECT_GT(m.images_per_sec, 0) << FormatDiagnosis(d);
  EXPECT_FALSE(d.state.empty());
}

TEST(DiagnoseTest, ARecordWithoutAnImageNamesItsFieldsNotDecoding) {
  int checked = 0;
  Diagnosis d = RunDiagnosis(Records(64, false), Options({}),
                             [&](const BatchPtr& b) { ExpectOwnFields(b, &checked); }, 4);
  EXPECT_GT(checked, 0);
  for (const ModeResult& m : d.modes) EXPECT_GT(m.images_per_sec, 0) << FormatDiagnosis(d);
  EXPECT_NE(d.bottleneck, "decode") << FormatDiagnosis(d);
  EXPECT_NE(d.bottleneck, "augment") << FormatDiagnosis(d);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// A stream that ends at once: every epoch is empty.
class EmptyStream : public Source {
 public:
  int64_t size() const override { return -1; }
  std::string Describe() const override { return "EmptyStream"; }
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec&) override {
    return std::unique_ptr<EpochReader>(new Reader);
  }

 private:
  class Reader : public EpochReader {
   public:
    int64_t size() const override { return -1; }
    bool random_access() const override { return false; }
    Status Read(int64_t, SampleScratch*, SampleData*, bool* end) override {
      *end = true;
      return Status::OK();
    }
    std::string Name(int64_t p) const override { return std::to_string(p) + " (empty stream)"; }
  };
};

TEST(NextBatchAcrossEpochsTest, WrapsIntoTheNextEpoch) {
  auto src = std::make_shared<MemorySource>(Jpegs(3, 24, 16));
  LoaderOptions o = Options({Transform::CenterCrop(8, 8)}, 1);
  o.batch_size = 2;
  auto loader = Loader::Create(src, o).value();
  ASSERT_TRUE(loader->Start().ok());
  std::vector<int> sizes, epochs;
  for (int i = 0; i < 5; ++i) {
    BatchPtr b;
    ASSERT_TRUE(NextBatchAcrossEpochs(loader.get(), &b).ok());
    sizes.push_back(b->size());
    epochs.push_back(static_cast<int>(b->epoch()));
  }
  EXPECT_EQ(sizes, (std::vector<int>{2, 1, 2, 1, 2}));
  EXPECT_EQ(epochs, (std::vector<int>{0, 0, 1, 1, 2}));
}

TEST(NextBatchAcrossEpochsTest, AnEmptyEpochIsAnErrorNotASpin) {
  LoaderOptions o = Options({Transform::CenterCrop(8, 8)}, 1);
  auto loader = Loader::Create(std::make_shared<EmptyStream>(), o).value();
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  const Status s = NextBatchAcrossEpochs(loader.get(), &b);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("no batch"), std::string::npos);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

TEST(JudgeCpuUseTest, OtherProcessesOnSaturatedCoresAreContention) {
  // 2 cores, 10 s: the machine 19.8 core-seconds busy, this process 10 of them.
  const CpuUse c = JudgeCpuUse(2, 2, 10, 10, 19.8, 0.0, 0.5);
  EXPECT_TRUE(c.saturated);
  EXPECT_TRUE(c.contended) << c.summary;
  EXPECT_NEAR(c.others_busy, 0.98, 1e-9);
  EXPECT_NE(c.summary.find("saturated"), std::string::npos);
}

TEST(JudgeCpuUseTest, TheStepsOwnThreadsAreContention) {
  // Nobody else runs, but the step alone kept 1.8 cores busy and runs 60% of the time.
  const CpuUse c = JudgeCpuUse(2, 2, 10, 19.5, 19.6, 1.8, 0.4);
  EXPECT_TRUE(c.saturated);
  EXPECT_TRUE(c.contended) << c.summary;
}

TEST(JudgeCpuUseTest, WorkersAloneOnTheirCoresAreNotContention) {
  // The loader's own workers fill both cores (a sleeping step): more cores, not
  // fewer competitors, would help.
  const CpuUse c = JudgeCpuUse(2, 2, 10, 19.6, 19.7, 0.0, 0.6);
  EXPECT_TRUE(c.saturated);
  EXPECT_FALSE(c.contended) << c.summary;
}

TEST(JudgeCpuUseTest, IdleCoresAreNotContention) {
  const CpuUse c = JudgeCpuUse(2, 2, 10, 6, 12, 1.0, 0.5);
  EXPECT_FALSE(c.saturated);
  EXPECT_FALSE(c.contended);
}

TEST(VideoAdviceTest, WorkersTimesCodecThreadsAgainstTheCores) {
  VideoStageStats v;
  v.clips = 4;
  v.frames_delivered = 64;
  v.frames_decoded = 100;
  v.frames_converted = 64;
  v.gops_decoded = 6;
  v.decode_s = 2;
  v.convert_s = 0.5;
  v.transform_s = 0.5;
  CpuUse cpu;
  cpu.cores = 2;
  const std::string over = VideoAdvice(v, 2, 4, cpu);
  EXPECT_NE(over.find("(2 x 4) oversubscribe the 2 cores: set codec_threads=1"),
            std::string::npos) << over;
  cpu.cores = 8;
  const std::string idle = VideoAdvice(v, 2, 1, cpu);
  EXPECT_NE(idle.find("leave cores idle: threads=8 (many videos), or codec_threads=4"),
            std::string::npos) << idle;
  EXPECT_NE(idle.find("100 frames decoded for 64 delivered (25.0 decoded, 9.0 of them unused, "
                      "and 1.5 GOPs per clip"),
            std::string::npos) << idle;
  EXPECT_EQ(idle.find("shorter GOPs"), std::string::npos) << idle;
  cpu.contended = true;  // more threads only queue for the cores
  EXPECT_EQ(VideoAdvice(v, 2, 1, cpu).find("leave cores idle"), std::string::npos);
  v.frames_decoded = 400;  // 6.25 per delivered frame
  const std::string long_gops = VideoAdvice(v, 2, 1, cpu);
  EXPECT_NE(long_gops.find("shorter GOPs"), std::string::npos) << long_gops;
  EXPECT_NE(long_gops.find("84 decoded but unused per clip: long GOPs"), std::string::npos)
      << long_gops;
}

TEST(JudgeCpuUseTest, AnotherMachinesCoresDoNotCount) {
  // 2 usable cores of a 64-core host: the host's busy time says nothing about ours.
  const CpuUse c = JudgeCpuUse(2, 64, 10, 5, 600, 0.0, 0.5);
  EXPECT_FALSE(c.saturated);
  EXPECT_FALSE(c.contended);
}

}  // namespace
}  // namespace stoker
