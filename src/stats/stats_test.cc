// Copyright 2026 The stoker Authors.
// ComputeStats on generated folders whose answers are known, InspectImage on
// every JPEG and PNG flavour, the JSON round trip and CompareStats.
#include "stats/stats.h"
#include "stats/hypothesis.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "source/image_folder.h"
#include "stoker/sources.h"
#include "stats/drift.h"
#include "testing/test_arrays.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::EncodeJpeg;
using testing::EncodePng;
using testing::JpegSpec;
using testing::MakeDirs;
using testing::PngSpec;
using testing::TempDir;
using testing::WriteFile;

std::vector<uint8_t> Solid(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < px.size(); i += 3) px[i] = r, px[i + 1] = g, px[i + 2] = b;
  return px;
}

std::vector<uint8_t> SolidPng(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  std::vector<uint8_t> expected;
  return EncodePng(Solid(w, h, r, g, b), w, h, PngSpec{}, &expected);
}

std::string Mode(const std::vector<uint8_t>& bytes) {
  std::string format, mode;
  if (!InspectImage(bytes.data(), bytes.size(), &format, &mode)) return "(none)";
  return format + "|" + mode;
}

TEST(InspectImage, NamesJpegSubsamplingAndColour) {
  const std::vector<uint8_t> px = testing::MakePixels(32, 24, 1);
  JpegSpec s;
  s.subsampling = 420;
  EXPECT_EQ(Mode(EncodeJpeg(px, 32, 24, s)), "JPEG|JPEG 4:2:0");
  s.subsampling = 422;
  EXPECT_EQ(Mode(EncodeJpeg(px, 32, 24, s)), "JPEG|JPEG 4:2:2");
  s.subsampling = 444;
  s.progressive = true;
  EXPECT_EQ(Mode(EncodeJpeg(px, 32, 24, s)), "JPEG|JPEG 4:4:4");
  s.progressive = false;
  s.color = JpegSpec::kGray;
  EXPECT_EQ(Mode(EncodeJpeg(px, 32, 24, s)), "JPEG|JPEG grey");
  s.color = JpegSpec::kCmyk;
  EXPECT_EQ(Mode(EncodeJpeg(px, 32, 24, s)), "JPEG|JPEG CMYK");
}

TEST(InspectImage, NamesPngColourTypesAndRefusesNonImages) {
  const std::vector<uint8_t> px = testing::MakePixels(8, 8, 2);
  std::vector<uint8_t> expected;
  const struct { int type, depth; const char* mode; } cases[] = {
      {0, 8, "PNG grey 8-bit"},       {0, 16, "PNG grey 16-bit"}, {2, 8, "PNG RGB 8-bit"},
      {3, 4, "PNG palette 4-bit"},    {4, 8, "PNG grey+alpha 8-bit"},
      {6, 16, "PNG RGBA 16-bit"}};
  for (const auto& c : cases) {
    PngSpec spec;
    spec.color_type = c.type;
    spec.bit_depth = c.depth;
    EXPECT_EQ(Mode(EncodePng(px, 8, 8, spec, &expected)), std::string("PNG|") + c.mode);
  }
  const std::string text = "hello, not an image";
  EXPECT_EQ(Mode(std::vector<uint8_t>(text.begin(), text.end())), "(none)");
  std::vector<uint8_t> cut = EncodeJpeg(px, 8, 8);
  cut.resize(20);  // SOI and part of APP0: no frame header
  EXPECT_EQ(Mode(cut), "(none)");
}

// InspectImage parses untrusted headers by hand: every prefix and many
// single-byte corruptions of real files must be answered without reading out
// of bounds (run under `make test-asan`), and a prefix that holds the whole
// header must give the full file's answer.
TEST(InspectImage, SurvivesEveryTruncationAndByteFlips) {
  const std::vector<uint8_t> px = testing::MakePixels(16, 12, 3);
  JpegSpec cmyk;
  cmyk.color = JpegSpec::kCmyk;
  std::vector<uint8_t> expected;
  PngSpec palette;
  palette.color_type = 3;
  const std::vector<std::vector<uint8_t>> files = {
      EncodeJpeg(px, 16, 12), EncodeJpeg(px, 16, 12, cmyk), EncodePng(px, 16, 12, palette,
                                                                       &expected)};
  for (const std::vector<uint8_t>& file : files) {
    const std::string full = Mode(file);
    ASSERT_NE(full, "(none)");
    for (size_t n = 0; n <= file.size(); ++n) {
      // An exact-size copy, so reading past `n` is a heap overflow ASan sees.
      std::unique_ptr<uint8_t[]> cut(new uint8_t[std::max<size_t>(n, 1)]);
      std::copy(file.begin(), file.begin() + static_cast<ptrdiff_t>(n), cut.get());
      std::string format, mode;
      if (InspectImage(cut.get(), n, &format, &mode)) {
        EXPECT_EQ(format + "|" + mode, full) << "prefix " << n;
      }
    }
    uint64_t state = 12345;
    for (int k = 0; k < 2000; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::vector<uint8_t> bad = file;
      const size_t at = static_cast<size_t>(state >> 33) % std::min<size_t>(bad.size(), 700);
      bad[at] = static_cast<uint8_t>(state >> 17);
      std::string format, mode;
      (void)InspectImage(bad.data(), bad.size(), &format, &mode);  // must not crash
    }
  }
}

// red/ : two 8x4 red PNGs; blue/: one 4x4 blue PNG, its copy, and a broken
// file. Pixels: 64 red, 32 blue, so R has mean 2/3 and B 1/3, both with
// variance 2/9; G is 0.
class SolidFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDirs(dir_.path() + "/red");
    MakeDirs(dir_.path() + "/blue");
    WriteFile(dir_.path() + "/red/a.png", SolidPng(8, 4, 255, 0, 0));
    WriteFile(dir_.path() + "/red/b.png", SolidPng(4, 8, 255, 0, 0));  // tall
    WriteFile(dir_.path() + "/blue/c.png", SolidPng(4, 4, 0, 0, 255));
    WriteFile(dir_.path() + "/blue/d.png", SolidPng(4, 4, 0, 0, 255));
    std::vector<uint8_t> bad = SolidPng(4, 4, 0, 0, 255);
    bad.resize(bad.size() / 2);
    WriteFile(dir_.path() + "/blue/e_broken.png", bad);
  }
  DatasetStats Run(int resolution, int threads) {
    auto folder = ImageFolder::Open(dir_.path());
    EXPECT_TRUE(folder.ok()) << folder.status().ToString();
    StatsOptions o;
    o.resolution = resolution;
    o.threads = threads;
    o.duplicates = true;
    auto r = ComputeStats(folder.value().get(), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.value();
  }
  TempDir dir_;
};

TEST_F(SolidFolder, ProgressEndsAtTheTotalOnTheCallingThread) {
  auto folder = ImageFolder::Open(dir_.path());
  ASSERT_TRUE(folder.ok());
  for (int threads : {1, 3}) {
    std::vector<std::pair<int64_t, int64_t>> calls;
    const std::thread::id caller = std::this_thread::get_id();
    StatsOptions o;
    o.threads = threads;
    o.progress = [&](int64_t done, int64_t total) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      calls.emplace_back(done, total);
      // A slow display: the workers still running finish while it draws, so
      // no poll of the loop sees the end.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    };
    ASSERT_TRUE(ComputeStats(folder.value().get(), o).ok());
    // Without a final call the last report would not say 5/5 (or there would
    // be none at all when the workers end before the first poll).
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), std::make_pair(int64_t{5}, int64_t{5})) << threads << " threads";
    for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  }
}

TEST_F(SolidFolder, KnownAnswers) {
  const DatasetStats s = Run(0, 2);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.images, 4);
  ASSERT_EQ(s.classes.size(), 2u);
  EXPECT_EQ(s.classes[0].name, "blue");  // sorted, as torchvision
  EXPECT_EQ(s.classes[0].count, 2);      // the broken file is not counted
  EXPECT_EQ(s.classes[1].name, "red");
  EXPECT_EQ(s.classes[1].count, 2);
  EXPECT_EQ(s.ImbalanceRatio(), 1.0);
  EXPECT_EQ(s.widths, (Histogram{{4, 3}, {8, 1}}));
  EXPECT_EQ(s.heights, (Histogram{{4, 3}, {8, 1}}));
  EXPECT_EQ(s.aspects, (Histogram{{500, 1}, {1000, 2}, {2000, 1}}));
  EXPECT_EQ(s.formats, (std::map<std::string, int64_t>{{"PNG", 4}}));
  EXPECT_EQ(s.modes, (std::map<std::string, int64_t>{{"PNG RGB 8-bit", 4}}));
  EXPECT_EQ(s.pixels, 96);
  EXPECT_NEAR(s.mean[0], 2.0 / 3, 1e-15);
  EXPECT_EQ(s.mean[1], 0);
  EXPECT_NEAR(s.mean[2], 1.0 / 3, 1e-15);
  EXPECT_NEAR(s.stddev[0], std::sqrt(2.0) / 3, 1e-15);
  EXPECT_EQ(s.stddev[1], 0);
  EXPECT_NEAR(s.stddev[2], std::sqrt(2.0) / 3, 1e-15);
  ASSERT_EQ(s.duplicates.size(), 1u);
  ASSERT_EQ(s.duplicates[0].size(), 2u);
  EXPECT_NE(s.duplicates[0][0].find("blue/c.png"), std::string::npos);
  EXPECT_NE(s.duplicates[0][1].find("blue/d.png"), std::string::npos);
  EXPECT_EQ(s.RedundantCopies(), 1);
  EXPECT_TRUE(s.duplicates_checked);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].name.find("e_broken.png"), std::string::npos);
  EXPECT_FALSE(s.errors[0].message.empty());
  const std::string text = FormatStats(s);
  EXPECT_NE(text.find("e_broken.png"), std::string::npos);
  EXPECT_NE(text.find("Normalize(mean=[0.6667, 0.0000, 0.3333]"), std::string::npos) << text;
}

TEST_F(SolidFolder, SameForAnyThreadCountAndRoundTripsThroughJson) {
  DatasetStats a = Run(64, 1), b = Run(64, 3);
  a.seconds = b.seconds = 0;
  EXPECT_EQ(StatsToJson(a), StatsToJson(b));
  auto back = StatsFromJson(StatsToJson(a));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(StatsToJson(back.value()), StatsToJson(a));
  EXPECT_FALSE(StatsFromJson("{\"x\": 1}").ok());
  EXPECT_FALSE(StatsFromJson("not json").ok());
}

TEST(ComputeStats, ResolutionResizesAndUsesDctScaling) {
  TempDir dir;
  MakeDirs(dir.path() + "/c");
  // 200x100 solid PNG at resolution 50: resized to 100x50 (5000 pixels),
  // still solid, so the mean is exact.
  WriteFile(dir.path() + "/c/p.png", SolidPng(200, 100, 10, 20, 30));
  // 256x256 grey JPEG at resolution 32: decoded at 1/8 = 32x32, no resize.
  JpegSpec gray;
  gray.color = JpegSpec::kGray;
  WriteFile(dir.path() + "/c/q.jpg", EncodeJpeg(Solid(256, 256, 128, 128, 128), 256, 256, gray));
  auto folder = ImageFolder::Open(dir.path());
  ASSERT_TRUE(folder.ok());
  StatsOptions o;
  o.resolution = 50;
  auto only_png = ComputeStats(folder.value().get(), o);
  ASSERT_TRUE(only_png.ok());
  // At 50: PNG 100x50 = 5000; JPEG 1/4 -> 64x64, resized to 50x50 = 2500.
  EXPECT_EQ(only_png.value().pixels, 5000 + 2500);
  o.resolution = 32;
  auto r = ComputeStats(folder.value().get(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().pixels, 64 * 32 + 32 * 32);
  EXPECT_EQ(r.value().modes, (std::map<std::string, int64_t>{{"JPEG grey", 1},
                                                              {"PNG RGB 8-bit", 1}}));
  o.resolution = 0;
  r = ComputeStats(folder.value().get(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().pixels, 200 * 100 + 256 * 256);
}

// 37 lossless PNGs of noise in 3 classes at assorted sizes: at full size the
// mean and std must equal a direct computation over the known pixels, and
// the report must be the same for 1, 2 and 5 threads (also at a resolution
// that resizes). Without `duplicates` nothing is hashed or grouped.
TEST(ComputeStats, ExactOnNoiseAndIdenticalForAnyThreadCount) {
  TempDir dir;
  double sum[3] = {0, 0, 0}, sumsq[3] = {0, 0, 0};
  int64_t pixels = 0;
  for (int i = 0; i < 37; ++i) {
    const std::string cls = "c" + std::to_string(i % 3);
    MakeDirs(dir.path() + "/" + cls);
    const int w = 9 + (i * 7) % 40, h = 11 + (i * 13) % 30;
    const std::vector<uint8_t> px = testing::MakePixels(w, h, static_cast<uint64_t>(i) + 100);
    for (size_t k = 0; k < px.size(); ++k) {
      sum[k % 3] += px[k] / 255.0;
      sumsq[k % 3] += (px[k] / 255.0) * (px[k] / 255.0);
    }
    pixels += static_cast<int64_t>(w) * h;
    std::vector<uint8_t> expected;
    WriteFile(dir.path() + "/" + cls + "/" + std::to_string(i) + ".png",
              EncodePng(px, w, h, PngSpec{}, &expected));
  }
  auto folder = ImageFolder::Open(dir.path());
  ASSERT_TRUE(folder.ok());
  for (int resolution : {0, 16}) {
    std::string first;
    for (int threads : {1, 2, 5}) {
      StatsOptions o;
      o.resolution = resolution;
      o.threads = threads;
      auto r = ComputeStats(folder.value().get(), o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      DatasetStats s = r.value();
      EXPECT_EQ(s.images, 37);
      EXPECT_FALSE(s.duplicates_checked);
      EXPECT_TRUE(s.duplicates.empty());
      ASSERT_EQ(s.classes.size(), 3u);
      EXPECT_EQ(s.classes[0].count, 13);
      EXPECT_NEAR(s.ImbalanceRatio(), 13.0 / 12, 1e-12);
      if (resolution == 0) {
        ASSERT_EQ(s.pixels, pixels);
        for (int c = 0; c < 3; ++c) {
          const double mean = sum[c] / pixels;
          EXPECT_NEAR(s.mean[static_cast<size_t>(c)], mean, 1e-12);
          EXPECT_NEAR(s.stddev[static_cast<size_t>(c)],
                      std::sqrt(sumsq[c] / pixels - mean * mean), 1e-9);
        }
      } else {
        EXPECT_LT(s.pixels, pixels);  // images with shorter side > 16 were resized
      }
      s.seconds = 0;
      const std::string json = StatsToJson(s);
      if (first.empty()) first = json;
      EXPECT_EQ(json, first) << "threads " << threads << " resolution " << resolution;
    }
  }
}

// A record source is summarised by its primary image and label,
// exactly as the image + label source of the same arrays; its other fields
// are not read. A record without an image is refused, naming the source.
TEST(ComputeStats, RecordSourcesAreSummarisedByTheirImageAndLabel) {
  TempDir dir;
  const int n = 11, h = 6, w = 5;
  std::vector<uint8_t> px, labels, feats;
  for (int i = 0; i < n; ++i) {
    const std::vector<uint8_t> one = testing::MakePixels(w, h, static_cast<uint64_t>(i) + 7);
    px.insert(px.end(), one.begin(), one.end());
    const int64_t label = i % 4;
    const uint8_t* l = reinterpret_cast<const uint8_t*>(&label);
    labels.insert(labels.end(), l, l + 8);
    for (int k = 0; k < 3; ++k) {
      const float f = static_cast<float>(i * 3 + k);
      const uint8_t* b = reinterpret_cast<const uint8_t*>(&f);
      feats.insert(feats.end(), b, b + 4);
    }
  }
  const std::string x = dir.path() + "/x.npy", y = dir.path() + "/y.npy",
                    z = dir.path() + "/z.npy";
  WriteFile(x, testing::NpyBytes("|u1", {n, h, w, 3}, px));
  WriteFile(y, testing::NpyBytes("<i8", {n}, labels));
  WriteFile(z, testing::NpyBytes("<f4", {n, 3}, feats));
  auto pair = NpySource::Open(x, y);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto record = NpySource::OpenFields({{"image", x}, {"z", z}, {"label", y}});
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  StatsOptions o;
  o.resolution = 0;
  o.threads = 2;
  auto want = ComputeStats(pair.value().get(), o);
  auto got = ComputeStats(record.value().get(), o);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got.value().images, n);
  EXPECT_EQ(got.value().pixels, int64_t{n} * h * w);
  ASSERT_EQ(got.value().classes.size(), 4u);
  DatasetStats a = want.value(), b = got.value();
  a.seconds = b.seconds = 0;
  a.source = b.source = "";  // the sources describe themselves differently
  EXPECT_EQ(StatsToJson(b), StatsToJson(a));

  auto imageless = NpySource::OpenFields({{"z", z}, {"label", y}});
  ASSERT_TRUE(imageless.ok()) << imageless.status().ToString();
  auto refused = ComputeStats(imageless.value().get(), o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.status().message().find("has no image field"), std::string::npos)
      << refused.status().ToString();
}

TEST(CompareStats, SameAndShifted) {
  DatasetStats old;
  old.classes = {{0, "a", 500}, {1, "b", 500}};
  for (int i = 0; i < 200; ++i) ++old.widths[100 + i], ++old.heights[100 + i];
  old.aspects = {{1000, 200}};
  old.modes = {{"JPEG 4:2:0", 200}};
  old.pixels = 1000;
  old.mean = {0.5, 0.4, 0.3};
  old.stddev = {0.2, 0.2, 0.2};
  std::vector<DriftVerdict> v = CompareStats(old, old, DriftOptions{});
  ASSERT_EQ(v.size(), 7u);
  EXPECT_FALSE(AnyShifted(v)) << FormatVerdicts(v);

  DatasetStats now = old;
  now.classes = {{0, "a", 500}, {1, "b", 400}};  // chi2 = 2 * 50^2 / 450 = 11.1
  now.mean[1] = 0.45;
  now.modes = {{"JPEG 4:2:0", 150}, {"PNG RGB 8-bit", 50}};  // TV 0.25
  now.widths.clear();
  for (int i = 0; i < 200; ++i) ++now.widths[150 + i];  // D = 0.25 > 0.163
  v = CompareStats(now, old, DriftOptions{});
  EXPECT_TRUE(v[0].shifted) << v[0].detail;  // class balance
  EXPECT_NEAR(v[0].statistic, ChiSquareSurvival(2.0 * 2500 / 450, 1), 1e-12);
  EXPECT_TRUE(v[1].shifted) << v[1].detail;  // width
  EXPECT_NEAR(v[1].statistic, 0.25, 1e-12);
  EXPECT_FALSE(v[2].shifted);  // height
  EXPECT_FALSE(v[3].shifted);  // aspect
  EXPECT_TRUE(v[4].shifted);   // colour mean
  EXPECT_NEAR(v[4].statistic, 0.05, 1e-12);
  EXPECT_FALSE(v[5].shifted);  // colour std
  EXPECT_TRUE(v[6].shifted);   // format mix
  EXPECT_NEAR(v[6].statistic, 0.25, 1e-12);
  // A class OLD never had.
  now.classes.push_back({2, "c", 1});
  EXPECT_TRUE(CompareStats(now, old, DriftOptions{})[0].shifted);
  // Huge datasets: a significant but tiny class shift (p ~ 6e-5, total
  // variation 0.002) and a tiny size shift (D = 0.02 > critical 0.0073) pass
  // the effect-size floors, and fail without them.
  DatasetStats big = old, big_now = old;
  big.classes = {{0, "a", 500000}, {1, "b", 500000}};
  big_now.classes = {{0, "a", 502000}, {1, "b", 498000}};
  big.widths = {{100, 100000}};
  big_now.widths = {{100, 98000}, {101, 2000}};
  v = CompareStats(big_now, big, DriftOptions{});
  EXPECT_FALSE(v[0].shifted) << v[0].detail;
  EXPECT_LT(v[0].statistic, 1e-4);
  EXPECT_FALSE(v[1].shifted) << v[1].detail;
  EXPECT_NEAR(v[1].statistic, 0.02, 1e-12);
  DriftOptions no_floor;
  no_floor.class_min_shift = 0;
  no_floor.ks_min_d = 0;
  v = CompareStats(big_now, big, no_floor);
  EXPECT_TRUE(v[0].shifted) << v[0].detail;
  EXPECT_TRUE(v[1].shifted) << v[1].detail;
  // No name in common (a folder against numbered shards): matched by label.
  DatasetStats numbered = old;
  numbered.classes = {{0, "0", 500}, {1, "1", 500}};
  v = CompareStats(numbered, old, DriftOptions{});
  EXPECT_FALSE(v[0].shifted) << v[0].detail;
  EXPECT_NE(v[0].detail.find("matched by label"), std::string::npos);
  numbered.classes[1].count = 400;
  EXPECT_TRUE(CompareStats(numbered, old, DriftOptions{})[0].shifted);
  // Nothing labelled: skipped, not shifted.
  now.classes.clear();
  EXPECT_TRUE(CompareStats(now, old, DriftOptions{})[0].skipped);
  EXPECT_FALSE(CompareStats(now, old, DriftOptions{})[0].shifted);
}

// Issue 32 item 3: a class folder or a file whose name is not UTF-8 made
// StatsToJson throw (nlohmann's type_error 316), so `stoker stats` aborted
// with or without --json. Such bytes are written as \xNN now, the report
// stays valid UTF-8 JSON and reads back, and --against still matches the
// class by name.
TEST(StatsJson, NamesThatAreNotUtf8) {
  TempDir dir;
  const std::string latin1 = "caf\xe9";  // "cafe" with e-acute in Latin-1
  MakeDirs(dir.path() + "/" + latin1);
  MakeDirs(dir.path() + "/ok");
  WriteFile(dir.path() + "/" + latin1 + "/a.png", SolidPng(4, 4, 255, 0, 0));
  WriteFile(dir.path() + "/ok/b\xff.png", std::vector<uint8_t>{1, 2, 3});  // unreadable
  auto folder = ImageFolder::Open(dir.path());
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  auto s = ComputeStats(folder.value().get(), StatsOptions{});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::string json;
  ASSERT_NO_THROW(json = StatsToJson(s.value()));
  EXPECT_NE(json.find("caf\\\\xe9"), std::string::npos) << json;  // "caf\\xe9" in JSON
  EXPECT_NE(json.find("b\\\\xff.png"), std::string::npos) << json;
  auto back = StatsFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value().classes[0].name, "caf\\xe9");
  EXPECT_NE(FormatStats(s.value()).find("caf"), std::string::npos);
  // The live dataset against its saved report: the classes match by name.
  const std::vector<DriftVerdict> v = CompareStats(s.value(), back.value(), DriftOptions{});
  EXPECT_FALSE(v[0].shifted) << v[0].detail;
  EXPECT_EQ(v[0].detail.find("matched by label"), std::string::npos) << v[0].detail;
}

// Issue 32 item 31: a report whose counts are absurd (10^30 or negative)
// was read (10^30 through a double), and --against then printed "critical
// inf" and exited 0. Such a report is refused, naming the member.
TEST(StatsJson, AbsurdCountsAreRefused) {
  DatasetStats s;
  s.samples = s.images = 2;
  s.classes = {{0, "a", 2}};
  s.widths = {{10, 2}};
  s.heights = {{10, 2}};
  s.aspects = {{1000, 2}};
  s.pixels = 200;
  const std::string good = StatsToJson(s);
  ASSERT_TRUE(StatsFromJson(good).ok());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = good;
    const size_t at = j.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return j.replace(at, from.size(), to);
  };
  for (const std::string& bad :
       {with("\"widths\":[[10,2]]", "\"widths\":[[10,1e30]]"),
        with("\"widths\":[[10,2]]", "\"widths\":[[10,-5]]"),
        with("\"widths\":[[10,2]]", "\"widths\":[[10,1000000000000000000]]"),
        with("\"heights\":[[10,2]]", "\"heights\":[[10,2.5]]"),
        with("\"aspects_milli\":[[1000,2]]", "\"aspects_milli\":[[-3,2]]"),
        with("\"count\":2", "\"count\":-1"),
        with("\"samples\":2", "\"samples\":1e30"),
        with("\"pixels\":200", "\"pixels\":-200"),
        with("\"mean\":[0.0,0.0,0.0]", "\"mean\":[0.0,1e300,0.0]")}) {
    auto r = StatsFromJson(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace stoker
