// Copyright 2026 The stoker Authors.
#include "diagnose/tune.h"

#include <gtest/gtest.h>

#include <string>

#include "base/json.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

TuneResult Row(int threads, int prefetch, double rate, double rss, double wait = 0) {
  TuneResult r;
  r.threads = threads;
  r.prefetch = prefetch;
  r.batch_size = 64;
  r.images_per_sec = rate;
  r.peak_rss_mib = rss;
  r.consumer_wait = wait;
  return r;
}

TEST(RecommendTest, FewestThreadsWithinFivePercentOfTheBest) {
  const std::vector<TuneResult> rows = {Row(1, 2, 500, 40), Row(2, 2, 960, 50),
                                        Row(2, 4, 990, 70), Row(4, 2, 1000, 80)};
  const TuneRecommendation r = Recommend(rows, 0);
  EXPECT_EQ(r.index, 1);  // 960 >= 950: two threads, the smaller memory of the two
  EXPECT_NE(r.reason.find("within 5%"), std::string::npos) << r.reason;
}

TEST(RecommendTest, LeastMemoryBreaksTies) {
  const std::vector<TuneResult> rows = {Row(2, 8, 1000, 90), Row(2, 2, 990, 45),
                                        Row(2, 4, 995, 60)};
  EXPECT_EQ(Recommend(rows, 0).index, 1);
}

TEST(RecommendTest, WithAStepTheSmallestThatKeepsTheConsumerFed) {
  const std::vector<TuneResult> rows = {Row(1, 2, 300, 40, 0.30), Row(2, 1, 400, 45, 0.05),
                                        Row(2, 2, 410, 50, 0.01), Row(4, 2, 415, 80, 0.0)};
  const TuneRecommendation r = Recommend(rows, 20);
  EXPECT_EQ(r.index, 2);
  EXPECT_TRUE(r.consumer_fed);
}

TEST(RecommendTest, DataBoundStepGetsTheFastestAndSaysSo) {
  const std::vector<TuneResult> rows = {Row(1, 2, 300, 40, 0.5), Row(2, 2, 500, 45, 0.2)};
  const TuneRecommendation r = Recommend(rows, 5);
  EXPECT_EQ(r.index, 1);
  EXPECT_FALSE(r.consumer_fed);
  EXPECT_NE(r.reason.find("data-bound"), std::string::npos) << r.reason;
}

TEST(RecommendTest, AutoRowsAreNeverRecommended) {
  std::vector<TuneResult> rows = {Row(1, 2, 500, 40), Row(2, 2, 1000, 50)};
  rows.push_back(Row(1, 1, 2000, 10));
  rows.back().auto_tuned = true;
  EXPECT_EQ(Recommend(rows, 0).index, 1);
  rows = {rows.back()};
  EXPECT_EQ(Recommend(rows, 0).index, -1);
}

TEST(TuneTest, SweepsTheGridAndMeasuresEachConfiguration) {
  std::vector<testing::MemorySample> samples;
  for (int i = 0; i < 16; ++i) {
    testing::MemorySample s;
    s.bytes = testing::EncodeJpeg(testing::MakePixels(64, 48, i), 64, 48, testing::JpegSpec{});
    s.name = std::to_string(i) + ".jpg";
    samples.push_back(std::move(s));
  }
  auto src = std::make_shared<testing::MemorySource>(std::move(samples));
  LoaderOptions base;
  base.transforms = {Transform::Resize(32), Transform::CenterCrop(32, 32)};
  TuneOptions o;
  o.threads = {1, 2};
  o.prefetch = {1, 3};
  o.batch_sizes = {4};
  o.seconds = 0.05;
  o.auto_batches = 30;
  int calls = 0;
  o.progress = [&](int i, int total, const std::string& what) {
    EXPECT_EQ(i, calls++);
    EXPECT_EQ(total, 5);
    EXPECT_FALSE(what.empty());
  };
  auto results = Tune(src, base, o);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results.value().size(), 5u);
  EXPECT_EQ(calls, 5);
  for (size_t i = 0; i < 4; ++i) {
    const TuneResult& r = results.value()[i];
    EXPECT_EQ(r.threads, i < 2 ? 1 : 2);
    EXPECT_EQ(r.prefetch, i % 2 ? 3 : 1);
    EXPECT_GT(r.images, 0);
    EXPECT_GT(r.images_per_sec, 0);
    EXPECT_GT(r.peak_rss_mib, 0);
    EXPECT_GE(r.consumer_wait, 0);
    EXPECT_LE(r.consumer_wait, 1.0);
  }
  const TuneResult& a = results.value()[4];
  EXPECT_TRUE(a.auto_tuned);
  EXPECT_EQ(a.images, 10 * 4);  // batches 20..29 of 30
  EXPECT_GE(a.threads, 1);
  EXPECT_LE(a.threads, 2);
  const TuneRecommendation rec = Recommend(results.value(), 0);
  ASSERT_GE(rec.index, 0);
  const std::string json = TuneJson(results.value(), rec, 0);
  EXPECT_EQ(json.front(), '{');
  std::string key = "\"recommended\": ";
  key += std::to_string(rec.index);
  EXPECT_NE(json.find(key), std::string::npos) << json;
  EXPECT_NE(FormatTune(results.value(), rec).find("recommended: "), std::string::npos);
}

TEST(TuneTest, BadConfigurationNamesItself) {
  std::vector<testing::MemorySample> samples(1);
  samples[0].bytes = testing::EncodeJpeg(testing::MakePixels(8, 8, 0), 8, 8, testing::JpegSpec{});
  auto src = std::make_shared<testing::MemorySource>(std::move(samples));
  LoaderOptions base;
  base.transforms = {Transform::CenterCrop(8, 8)};
  TuneOptions o;
  o.threads = {1};
  o.prefetch = {0};
  o.include_auto = false;
  auto results = Tune(src, base, o);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("prefetch"), std::string::npos)
      << results.status().message();
}

TEST(JsonQuoteTest, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonQuote("plain/path"), "\"plain/path\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("x\ny\t\x01"), "\"x\\ny\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}

}  // namespace
}  // namespace stoker
