// Copyright 2026 The stoker Authors.
#include "diagnose/diagnose.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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
    // The "GPU step", far slower than the pipeline (~1 ms per batch here), so a loaded
    // machine's hiccups stay well inside the 5% margin.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }, 16);  // 16 steps: one scheduling hiccup on a loaded machine stays under 5%
  EXPECT_FALSE(d.data_bound) << FormatDiagnosis(d);
  EXPECT_EQ(d.bottleneck, "");
  EXPECT_NE(d.verdict.find("not data-bound"), std::string::npos);
  // Not data-bound means the full pipeline keeps within 5% of the step alone.
  EXPECT_LT(d.cost_factor, 1.0 / 0.95);
  EXPECT_GT(d.cost_factor, 0.9);
}

TEST(DiagnoseTest, FormatShowsEveryModeAndTheVerdict) {
  auto src = std::make_shared<MemorySource>(Jpegs(16, 48, 32));
  Diagnosis d = RunDiagnosis(src, Options({Transform::CenterCrop(16, 16)}), [](const BatchPtr&) {}, 4);
  const std::string text = FormatDiagnosis(d);
  for (const char* s : {"1 batch cached", "2 batch copied", "3 one sample", "4 encoded bytes",
                        "5 full pipeline", "busy time", "verdict: "}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
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
