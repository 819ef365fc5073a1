// Copyright 2026 The stoker Authors.
#include "pipeline/loader_options.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "source/memory_source.h"

namespace stoker {
namespace {

std::shared_ptr<MemorySource> Samples(int n) {
  std::vector<MemorySample> samples(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) samples[i].name = "s" + std::to_string(i);
  return std::make_shared<MemorySource>(std::move(samples));
}

LoaderOptions Train(int batch) {
  LoaderOptions o;
  o.batch_size = batch;
  o.transforms = {Transform::RandomResizedCrop(32, 32), Transform::RandomHorizontalFlip(),
                  Transform::Normalize({0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f})};
  return o;
}

// A stream: its size is not known before it ends.
class UnsizedSource : public Source {
 public:
  int64_t size() const override { return -1; }
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec&) override {
    return UnimplementedError("not read in these tests");
  }
  std::string Describe() const override { return "a test stream"; }
};

Status Check(const Source& src, const LoaderOptions& o) {
  int h = 0, w = 0;
  auto plan = MakeRecordPlan(src.schema(), o);
  if (!plan.ok()) return plan.status();
  return ValidateLoaderOptions(src, o, *plan.value(), &h, &w);
}

TEST(LoaderOptionsTest, GivesTheOutputSize) {
  auto src = Samples(3);
  LoaderOptions o = Train(4);
  o.transforms = {Transform::Resize(40), Transform::CenterCrop(24, 32)};
  int h = 0, w = 0;
  auto plan = MakeRecordPlan(src->schema(), o);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(ValidateLoaderOptions(*src, o, *plan.value(), &h, &w).ok());
  EXPECT_EQ(h, 24);
  EXPECT_EQ(w, 32);
}

TEST(LoaderOptionsTest, RejectsBadOptionsNamingThem) {
  auto src = Samples(3);
  LoaderOptions o = Train(4);
  o.batch_size = 0;
  Status s = Check(*src, o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("batch_size"), std::string::npos) << s.message();
  o = Train(4);
  o.dtype = DType::kUint8;  // with Normalize
  s = Check(*src, o);
  EXPECT_NE(s.message().find("uint8"), std::string::npos) << s.message();
  o = Train(4);
  o.transforms = {Transform::Resize(32)};  // no fixed size
  s = Check(*src, o);
  EXPECT_NE(s.message().find("fixed"), std::string::npos) << s.message();
  o = Train(4);
  o.drop_last = true;  // 3 samples, batch 4: nothing at all
  EXPECT_EQ(Check(*src, o).code(), StatusCode::kInvalidArgument);
  o = Train(4);
  o.prefetch = 0;
  s = Check(*src, o);
  EXPECT_NE(s.message().find("prefetch"), std::string::npos) << s.message();
  o = Train(4);
  o.auto_threads = true;
  o.max_threads = -1;
  s = Check(*src, o);
  EXPECT_NE(s.message().find("max_threads"), std::string::npos) << s.message();
  o = Train(4);
  o.transforms.push_back(Transform::RandomHorizontalFlip(1.5f));
  s = Check(*src, o);
  EXPECT_NE(s.message().find("RandomHorizontalFlip"), std::string::npos) << s.message();
  EXPECT_EQ(Check(*Samples(0), Train(4)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Check(*src, Train(4)).ok());
  o = Train(4);
  o.cache_bytes = 1 << 20;
  EXPECT_TRUE(Check(*src, o).ok());
  s = Check(UnsizedSource(), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cache_dir"), std::string::npos) << s.message();
}

// Transforms built field by field (the C++ factories check nothing) are
// checked by their declarations, with the message MakeTransform gives.
TEST(LoaderOptionsTest, InvalidTransformFieldsAreRefusedByTheirDeclaration) {
  auto src = Samples(3);
  LoaderOptions o = Train(4);
  o.transforms = {Transform::RandomCrop(8, 8, {1, 1, 1, 1}, false, /*padding_mode=*/9)};
  Status s = Check(*src, o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "RandomCrop: padding_mode must be one of 'constant', 'edge', 'reflect', "
            "'symmetric', got 9: np.pad's modes, as torchvision pads a PIL image");
  o.transforms = {Transform::CenterCrop(8, 8), Transform::RandomPosterize(9)};
  s = Check(*src, o);
  EXPECT_EQ(s.message(), "RandomPosterize: bits must be an int in [0, 8], got 9");
  o.transforms = {Transform::CenterCrop(8, 8), Transform{}};  // no declaration
  EXPECT_EQ(Check(*src, o).code(), StatusCode::kInvalidArgument);
  o.transforms = {Transform::CenterCrop(0, 8)};  // before the output size is worked out
  s = Check(*src, o);
  EXPECT_NE(s.message().find("CenterCrop: size must be"), std::string::npos) << s.message();
}

// A warp before a geometric transform, and a second Normalize, are refused
// from the declarations' stages.
TEST(LoaderOptionsTest, StagesOrderTheList) {
  auto src = Samples(3);
  LoaderOptions o = Train(4);
  o.transforms = {Transform::RandomAffine({-5, 5}, {0, 0}, {1, 1}, {0, 0, 0, 0}),
                  Transform::CenterCrop(8, 8)};
  Status s = Check(*src, o);
  EXPECT_NE(s.message().find("place RandomAffine after the crops"), std::string::npos)
      << s.message();
  o.transforms = {Transform::CenterCrop(8, 8),
                  Transform::RandomAffine({-5, 5}, {0, 0}, {1, 1}, {0, 0, 0, 0}),
                  Transform::ColorJitter({0.5, 1.5}, {1, 1}, {1, 1}, {0, 0})};
  EXPECT_TRUE(Check(*src, o).ok());
  o = Train(4);
  o.transforms.push_back(o.transforms.back());
  s = Check(*src, o);
  EXPECT_NE(s.message().find("more than one Normalize"), std::string::npos) << s.message();
}

TEST(LoaderOptionsTest, NormalizeOfFindsTheNormalize) {
  const LoaderOptions o = Train(4);
  EXPECT_TRUE(HasNormalize(o.transforms));
  EXPECT_FLOAT_EQ(NormalizeOf(o.transforms).std[1], 0.2f);
  EXPECT_FALSE(HasNormalize({Transform::CenterCrop(8, 8)}));
  EXPECT_FLOAT_EQ(NormalizeOf({}).std[0], 1.f);
  EXPECT_FLOAT_EQ(NormalizeOf({}).mean[0], 0.f);
}

TEST(LoaderOptionsTest, PlanThreads) {
  LoaderOptions o;
  EXPECT_EQ(PlanThreads(o, 6).workers, 6);  // 0: one per core
  EXPECT_EQ(PlanThreads(o, 6).active, 6);
  o.threads = 3;
  EXPECT_EQ(PlanThreads(o, 6).workers, 3);
  o.auto_threads = true;  // workers up to the ceiling, `threads` active at first
  EXPECT_EQ(PlanThreads(o, 6).workers, 6);
  EXPECT_EQ(PlanThreads(o, 6).active, 3);
  o.threads = 0;  // start at half the ceiling
  o.max_threads = 5;
  EXPECT_EQ(PlanThreads(o, 6).workers, 5);
  EXPECT_EQ(PlanThreads(o, 6).active, 2);
  o.threads = 9;  // never above the ceiling
  EXPECT_EQ(PlanThreads(o, 6).active, 5);
}

TEST(LoaderOptionsTest, DctScalingAutoIsOnForARandomCropOnlyAndOffUnderTheDecodedCache) {
  using Dct = LoaderOptions::DctScaling;
  LoaderOptions train = Train(4);
  EXPECT_EQ(train.dct_scaling, Dct::kAuto);  // the default
  EXPECT_EQ(ResolveLoaderOptions(train).value().dct_scaling, Dct::kOn);
  LoaderOptions val;
  val.transforms = {Transform::Resize(256), Transform::CenterCrop(224, 224)};
  EXPECT_EQ(ResolveLoaderOptions(val).value().dct_scaling, Dct::kOff);
  val.dct_scaling = Dct::kOn;  // asked for: kept
  EXPECT_EQ(ResolveLoaderOptions(val).value().dct_scaling, Dct::kOn);
  train.cache_bytes = 1 << 20;  // the decoded cache keeps full-size images
  EXPECT_EQ(ResolveLoaderOptions(train).value().dct_scaling, Dct::kOff);
  train.dct_scaling = Dct::kOn;
  const Status refused = ResolveLoaderOptions(train).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("cache='decoded' keeps full-size images"), std::string::npos);
  train.cache_kind = LoaderOptions::CacheKind::kOutput;  // finished samples: any decode
  EXPECT_EQ(ResolveLoaderOptions(train).value().dct_scaling, Dct::kOn);
  // The Loader reports the resolved value.
  auto loader = Loader::Create(Samples(4), val).value();
  EXPECT_EQ(loader->options().dct_scaling, Dct::kOn);
  val.dct_scaling = Dct::kAuto;
  EXPECT_EQ(Loader::Create(Samples(4), val).value()->options().dct_scaling, Dct::kOff);
}

TEST(LoaderOptionsTest, ChoiceTablesParseTheirNamesAndWordTheErrorOnce) {
  EXPECT_EQ(ParseChoice("on_error", "skip", kOnErrorChoices).value(), OnError::kSkip);
  EXPECT_EQ(ParseChoice("rank_tail", "uneven", kRankTailChoices).value(),
            LoaderOptions::RankTail::kUneven);
  EXPECT_EQ(ParseChoice("collate", "pad", kCollateChoices).value(),
            LoaderOptions::Collate::kPad);
  EXPECT_EQ(ParseChoice("cache", "output", kCacheChoices).value(),
            LoaderOptions::CacheKind::kOutput);
  const Status bad = ParseChoice("on_error", "ignore", kOnErrorChoices).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "on_error must be one of 'raise', 'skip', got 'ignore'");
  // Aliases parse but are not listed.
  EXPECT_EQ(ParseDType("half").value(), DType::kFloat16);
  EXPECT_EQ(ChoiceNames(kDTypeChoices), "'uint8', 'float32', 'float16', 'bfloat16'");
  EXPECT_EQ(ParseLayout("CHW").status().message(),
            "layout must be one of 'NCHW', 'NHWC', got 'CHW'");
  EXPECT_EQ(ChoiceName(LoaderOptions::CacheKind::kDecoded, kCacheChoices), "decoded");
}

}  // namespace
}  // namespace stoker
