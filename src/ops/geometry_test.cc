// Copyright 2026 The stoker Authors.
#include "ops/geometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "stoker/transform_schema.h"

namespace stoker {
namespace {

using T = Transform;

GeometryPlan Plan(const std::vector<Transform>& ts, int w, int h, uint64_t seed = 1) {
  Rng rng(seed);
  GeometryPlan plan;
  const Status st = PlanGeometry(ts, w, h, &rng, &plan);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return plan;
}

// ------------------------------------------------------------- helpers ----

TEST(ShorterSideSizeTest, MatchesTorchvisionTruncation) {
  // Expected values from torchvision's rule, int(size * long / short),
  // evaluated in Python.
  struct Case {
    int w, h, size, ow, oh;
  };
  const Case cases[] = {
      {500, 375, 256, 341, 256},   // landscape: 341.33 -> 341
      {375, 500, 256, 256, 341},   // portrait
      {300, 300, 256, 256, 256},   // square
      {640, 427, 224, 335, 224},   // 335.74 -> 335 (truncated, not rounded)
      {427, 640, 224, 224, 335},
      {333, 251, 224, 297, 224},
      {251, 333, 224, 224, 297},
      {1920, 1080, 256, 455, 256},
      {1000, 10, 7, 700, 7},
      {3, 7, 5, 5, 11},
      {99, 100, 50, 50, 50},       // 50.505 -> 50
      {101, 100, 50, 50, 50},
      {400, 200, 100, 200, 100},   // exact
      {256, 512, 256, 256, 512},
      {10, 10, 300, 300, 300},     // upscaling
  };
  for (const Case& c : cases) {
    int ow = -1, oh = -1;
    ShorterSideSize(c.w, c.h, c.size, &ow, &oh);
    EXPECT_EQ(ow, c.ow) << c.w << "x" << c.h << " -> " << c.size;
    EXPECT_EQ(oh, c.oh) << c.w << "x" << c.h << " -> " << c.size;
  }
}

TEST(RoundHalfEvenTest, MatchesPythonRound) {
  EXPECT_EQ(RoundHalfEven(0.5), 0);
  EXPECT_EQ(RoundHalfEven(1.5), 2);
  EXPECT_EQ(RoundHalfEven(2.5), 2);
  EXPECT_EQ(RoundHalfEven(3.5), 4);
  EXPECT_EQ(RoundHalfEven(58.5), 58);
  EXPECT_EQ(RoundHalfEven(59.5), 60);
  EXPECT_EQ(RoundHalfEven(-0.5), 0);
  EXPECT_EQ(RoundHalfEven(-1.5), -2);
  EXPECT_EQ(RoundHalfEven(-2.5), -2);
  EXPECT_EQ(RoundHalfEven(0.49999999), 0);
  EXPECT_EQ(RoundHalfEven(2.5000001), 3);
  EXPECT_EQ(RoundHalfEven(7.0), 7);
  EXPECT_EQ(RoundHalfEven(-7.2), -7);
}

// --------------------------------------------------------- PlanGeometry ----

TEST(PlanGeometryTest, ResizeThenCenterCropIsOneStage) {
  const GeometryPlan p = Plan({T::Resize(256), T::CenterCrop(224, 224)}, 500, 375);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_FALSE(p.flip);
  const GeometryStage& s = p.stages[0];
  EXPECT_EQ(s.crop, (Rect{0, 0, 500, 375}));
  // Resize(256): 375 -> 256, 500 -> int(256 * 500 / 375) = 341.
  EXPECT_EQ(s.out_width, 341);
  EXPECT_EQ(s.out_height, 256);
  // CenterCrop(224): top = round((256 - 224) / 2) = 16,
  // left = round((341 - 224) / 2) = round(58.5) = 58 (half to even).
  EXPECT_EQ(s.window, (Rect{58, 16, 224, 224}));
  EXPECT_EQ(p.width(), 224);
  EXPECT_EQ(p.height(), 224);
}

TEST(PlanGeometryTest, ResizeThenCenterCropPortrait) {
  const GeometryPlan p = Plan({T::Resize(256), T::CenterCrop(224, 224)}, 375, 500);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_EQ(p.stages[0].out_width, 256);
  EXPECT_EQ(p.stages[0].out_height, 341);
  EXPECT_EQ(p.stages[0].window, (Rect{16, 58, 224, 224}));
}

TEST(PlanGeometryTest, EmptyListIsIdentity) {
  const GeometryPlan p = Plan({}, 123, 45);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_FALSE(p.flip);
  EXPECT_EQ(p.stages[0].crop, (Rect{0, 0, 123, 45}));
  EXPECT_EQ(p.stages[0].out_width, 123);
  EXPECT_EQ(p.stages[0].out_height, 45);
  EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 123, 45}));
  // Normalize is not geometric.
  const GeometryPlan q = Plan({T::Normalize({0.5f, 0.5f, 0.5f}, {0.2f, 0.2f, 0.2f})}, 123, 45);
  ASSERT_EQ(q.num_stages, 1);
  EXPECT_EQ(q.stages[0].window, (Rect{0, 0, 123, 45}));
}

TEST(PlanGeometryTest, CenterCropAloneCropsWithoutResampling) {
  // top = round((375 - 200) / 2) = round(87.5) = 88, left = 150.
  const GeometryPlan p = Plan({T::CenterCrop(200, 200)}, 500, 375);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_EQ(p.stages[0].crop, (Rect{150, 88, 200, 200}));
  EXPECT_EQ(p.stages[0].out_width, 200);
  EXPECT_EQ(p.stages[0].out_height, 200);
  EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 200, 200}));
  // Then a resize of the crop is still one stage.
  const GeometryPlan q = Plan({T::CenterCrop(200, 200), T::Resize(100)}, 500, 375);
  ASSERT_EQ(q.num_stages, 1);
  EXPECT_EQ(q.stages[0].crop, (Rect{150, 88, 200, 200}));
  EXPECT_EQ(q.stages[0].out_width, 100);
  EXPECT_EQ(q.stages[0].out_height, 100);
  EXPECT_EQ(q.stages[0].window, (Rect{0, 0, 100, 100}));
}

TEST(PlanGeometryTest, ResizeToExplicitSize) {
  const GeometryPlan p = Plan({T::Resize(100, 300)}, 640, 480);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_EQ(p.stages[0].out_width, 300);
  EXPECT_EQ(p.stages[0].out_height, 100);
  EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 300, 100}));
  EXPECT_EQ(p.stages[0].crop, (Rect{0, 0, 640, 480}));
}

TEST(PlanGeometryTest, CenterCropLargerThanImagePadsLikeTorchvision) {
  // torchvision pads left = (crop_w - w) // 2, right = (crop_w - w + 1) // 2
  // (likewise top/bottom), then crops at round((padded - crop) / 2) = 0.
  {
    const GeometryPlan p = Plan({T::CenterCrop(300, 400)}, 250, 150);
    ASSERT_EQ(p.num_stages, 1);
    EXPECT_EQ(p.stages[0].crop, (Rect{-75, -75, 400, 300}));
    EXPECT_EQ(p.stages[0].out_width, 400);
    EXPECT_EQ(p.stages[0].out_height, 300);
    EXPECT_EQ(p.width(), 400);
    EXPECT_EQ(p.height(), 300);
  }
  {
    // Odd margins: pad left = 149 // 2 = 74 (right 75), top = 149 // 2 = 74.
    const GeometryPlan p = Plan({T::CenterCrop(300, 400)}, 251, 151);
    EXPECT_EQ(p.stages[0].crop, (Rect{-74, -74, 400, 300}));
  }
  {
    // Larger in width only: left pad 12; top = round((500 - 224) / 2) = 138.
    const GeometryPlan p = Plan({T::CenterCrop(224, 224)}, 200, 500);
    EXPECT_EQ(p.stages[0].crop, (Rect{-12, 138, 224, 224}));
  }
  {
    // Larger in width by one: pad left 1 // 2 = 0, right 1; and
    // top = round((501 - 224) / 2) = round(138.5) = 138.
    const GeometryPlan p = Plan({T::CenterCrop(224, 224)}, 223, 501);
    EXPECT_EQ(p.stages[0].crop, (Rect{0, 138, 224, 224}));
  }
  {
    // After a resize, the window extends outside the resized grid.
    const GeometryPlan p = Plan({T::Resize(100), T::CenterCrop(120, 120)}, 300, 200);
    ASSERT_EQ(p.num_stages, 1);
    EXPECT_EQ(p.stages[0].out_width, 150);
    EXPECT_EQ(p.stages[0].out_height, 100);
    // width: 150 >= 120 -> left = round(15) = 15; height: pad top 10.
    EXPECT_EQ(p.stages[0].window, (Rect{15, -10, 120, 120}));
  }
}

TEST(PlanGeometryTest, RandomResizedCropIsOneStageInsideTheImage) {
  const Transform rrc = T::RandomResizedCrop(224, 224);
  std::set<std::tuple<int, int, int, int>> distinct;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    const GeometryPlan p = Plan({rrc}, 500, 375, seed);
    ASSERT_EQ(p.num_stages, 1);
    const GeometryStage& s = p.stages[0];
    EXPECT_GE(s.crop.x, 0);
    EXPECT_GE(s.crop.y, 0);
    EXPECT_GT(s.crop.width, 0);
    EXPECT_GT(s.crop.height, 0);
    EXPECT_LE(s.crop.right(), 500);
    EXPECT_LE(s.crop.bottom(), 375);
    EXPECT_EQ(s.out_width, 224);
    EXPECT_EQ(s.out_height, 224);
    EXPECT_EQ(s.window, (Rect{0, 0, 224, 224}));
    EXPECT_FALSE(p.flip);
    // The crop is the one SampleRandomResizedCrop draws from the same stream.
    Rng rng(seed);
    EXPECT_EQ(s.crop, SampleRandomResizedCrop(500, 375, rrc, &rng));
    distinct.insert({s.crop.x, s.crop.y, s.crop.width, s.crop.height});
  }
  EXPECT_GT(distinct.size(), 250u);
  // Non-square output: (height, width).
  const GeometryPlan q = Plan({T::RandomResizedCrop(100, 200)}, 640, 480, 3);
  EXPECT_EQ(q.stages[0].out_width, 200);
  EXPECT_EQ(q.stages[0].out_height, 100);
  EXPECT_EQ(q.width(), 200);
  EXPECT_EQ(q.height(), 100);
}

TEST(PlanGeometryTest, FlipProbability) {
  EXPECT_TRUE(Plan({T::RandomHorizontalFlip(1.0)}, 10, 10).flip);
  EXPECT_FALSE(Plan({T::RandomHorizontalFlip(0.0)}, 10, 10).flip);
  int flips = 0, always = 0, never = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    flips += Plan({T::RandomHorizontalFlip(0.5)}, 10, 10, seed).flip;
    always += Plan({T::RandomHorizontalFlip(1.0)}, 10, 10, seed).flip;
    never += Plan({T::RandomHorizontalFlip(0.0)}, 10, 10, seed).flip;
  }
  EXPECT_EQ(always, 1000);
  EXPECT_EQ(never, 0);
  EXPECT_GT(flips, 420);
  EXPECT_LT(flips, 580);
  // Two certain flips cancel.
  EXPECT_FALSE(
      Plan({T::RandomHorizontalFlip(1.0), T::RandomHorizontalFlip(1.0)}, 10, 10).flip);
  // Flipping does not move anything by itself.
  const GeometryPlan p = Plan({T::RandomHorizontalFlip(1.0)}, 31, 17);
  EXPECT_EQ(p.stages[0].crop, (Rect{0, 0, 31, 17}));
  EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 31, 17}));
}

TEST(PlanGeometryTest, FlipBeforeCenterCropMirrorsTheCrop) {
  // 11 wide, crop 4: left = round(3.5) = 4 in the grid the crop sees. After a
  // flip that grid is mirrored: columns 4..7 of the flipped image are
  // columns 3..6 of the original.
  const GeometryPlan plain = Plan({T::CenterCrop(4, 4)}, 11, 8);
  EXPECT_EQ(plain.stages[0].crop, (Rect{4, 2, 4, 4}));
  EXPECT_FALSE(plain.flip);
  const GeometryPlan flipped =
      Plan({T::RandomHorizontalFlip(1.0), T::CenterCrop(4, 4)}, 11, 8);
  EXPECT_EQ(flipped.stages[0].crop, (Rect{3, 2, 4, 4}));
  EXPECT_TRUE(flipped.flip);
  // Flip after the crop: the crop is not mirrored.
  const GeometryPlan after = Plan({T::CenterCrop(4, 4), T::RandomHorizontalFlip(1.0)}, 11, 8);
  EXPECT_EQ(after.stages[0].crop, (Rect{4, 2, 4, 4}));
  EXPECT_TRUE(after.flip);
  // After a resize too: 341 wide, window left 58 -> mirrored 341 - 58 - 224.
  const GeometryPlan rs =
      Plan({T::Resize(256), T::RandomHorizontalFlip(1.0), T::CenterCrop(224, 224)}, 500, 375);
  ASSERT_EQ(rs.num_stages, 1);
  EXPECT_EQ(rs.stages[0].window, (Rect{341 - 58 - 224, 16, 224, 224}));
  EXPECT_TRUE(rs.flip);
}

TEST(PlanGeometryTest, FlipBeforeRandomResizedCropMirrorsTheCrop) {
  const Transform rrc = T::RandomResizedCrop(64, 64);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const GeometryPlan p = Plan({T::RandomHorizontalFlip(1.0), rrc}, 300, 200, seed);
    Rng rng(seed);
    rng.Uniform();  // the flip's draw comes first
    const Rect r = SampleRandomResizedCrop(300, 200, rrc, &rng);
    ASSERT_EQ(p.num_stages, 1);
    EXPECT_TRUE(p.flip);
    EXPECT_EQ(p.stages[0].crop, (Rect{300 - r.x - r.width, r.y, r.width, r.height}));
  }
}

TEST(PlanGeometryTest, ResizeThenRandomResizedCropIsTwoStages) {
  const Transform rrc = T::RandomResizedCrop(224, 224);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const GeometryPlan p = Plan({T::Resize(256), rrc}, 500, 375, seed);
    ASSERT_EQ(p.num_stages, 2);
    EXPECT_EQ(p.stages[0].crop, (Rect{0, 0, 500, 375}));
    EXPECT_EQ(p.stages[0].out_width, 341);
    EXPECT_EQ(p.stages[0].out_height, 256);
    EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 341, 256}));
    Rng rng(seed);
    const Rect r = SampleRandomResizedCrop(341, 256, rrc, &rng);
    EXPECT_EQ(p.stages[1].crop, r);
    EXPECT_GE(r.x, 0);
    EXPECT_LE(r.right(), 341);
    EXPECT_LE(r.bottom(), 256);
    EXPECT_EQ(p.stages[1].out_width, 224);
    EXPECT_EQ(p.stages[1].out_height, 224);
    EXPECT_EQ(p.stages[1].window, (Rect{0, 0, 224, 224}));
    EXPECT_EQ(p.width(), 224);
  }
  // A second resize after a crop of a resize starts a stage on the window.
  const GeometryPlan q =
      Plan({T::Resize(256), T::CenterCrop(224, 224), T::Resize(112)}, 500, 375);
  ASSERT_EQ(q.num_stages, 2);
  EXPECT_EQ(q.stages[0].window, (Rect{58, 16, 224, 224}));
  EXPECT_EQ(q.stages[1].crop, (Rect{0, 0, 224, 224}));
  EXPECT_EQ(q.stages[1].out_width, 112);
  EXPECT_EQ(q.stages[1].out_height, 112);
  EXPECT_EQ(q.width(), 112);
}

// Issue 32 item 2: scales and ratios whose sizes no int holds (1e300), or
// non-finite ones in a Transform built field by field, fail every attempt
// (no undefined cast) and end in the fallback, at least 1 pixel wide.
TEST(PlanGeometryTest, ExtremeRandomResizedCropParametersFallBack) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    double scale_min, scale_max, ratio_min, ratio_max;
    Rect want;
  };
  const Case cases[] = {
      {0.5, 1.0, 1e300, 1e300, Rect{0, 9, 24, 1}},    // h = round(24 / 1e300) -> 1
      {0.5, 1.0, 1e-300, 1e-300, Rect{11, 0, 1, 20}},  // w = round(20 * 1e-300) -> 1
      {1e300, 1e300, 0.75, 4.0 / 3.0, Rect{0, 0, 24, 20}},
      {inf, inf, 0.75, 4.0 / 3.0, Rect{0, 0, 24, 20}},
      {0.5, 1.0, std::nan(""), std::nan(""), Rect{0, 0, 24, 20}},
  };
  for (const Case& c : cases) {
    Transform t = T::RandomResizedCrop(8, 8);
    t.scale_min = c.scale_min;
    t.scale_max = c.scale_max;
    t.ratio_min = c.ratio_min;
    t.ratio_max = c.ratio_max;
    for (uint64_t seed = 0; seed < 5; ++seed) {
      Rng rng(seed);
      EXPECT_EQ(SampleRandomResizedCrop(24, 20, t, &rng), c.want)
          << c.scale_min << " " << c.ratio_min;
    }
  }
}

// Issue 32 item 32: a source whose images share a known size needs no
// size-fixing transform; a shorter-side Resize of it has a fixed size too.
TEST(StaticOutputSizeTest, AKnownInputSizeIsFixed) {
  int h = 0, w = 0;
  EXPECT_FALSE(StaticOutputSize({}, &h, &w).ok());
  ASSERT_TRUE(StaticOutputSize({}, 4, 5, &h, &w).ok());
  EXPECT_EQ(h, 4);
  EXPECT_EQ(w, 5);
  StatusOr<Transform> pad = MakeTransform("Pad", {1});
  ASSERT_TRUE(pad.ok());
  ASSERT_TRUE(StaticOutputSize({T::RandomHorizontalFlip(0.5), pad.value()}, 4, 5, &h, &w).ok());
  EXPECT_EQ(h, 6);
  EXPECT_EQ(w, 7);
  ASSERT_TRUE(StaticOutputSize({T::Resize(8)}, 4, 5, &h, &w).ok());
  EXPECT_EQ(h, 8);
  EXPECT_EQ(w, 10);  // int(8 * 5 / 4)
  EXPECT_FALSE(StaticOutputSize({T::Resize(8)}, &h, &w).ok());  // unknown input
  ASSERT_TRUE(StaticOutputSize({T::CenterCrop(3, 3)}, 4, 5, &h, &w).ok());
  EXPECT_EQ(h, 3);
  EXPECT_EQ(w, 3);
}

TEST(PlanGeometryTest, CropsBeforeTheFirstResizeCompose) {
  const Transform rrc = T::RandomResizedCrop(96, 96);
  for (uint64_t seed = 0; seed < 30; ++seed) {
    // CenterCrop(200): (150, 88) in 500x375; the RRC crop is drawn in the
    // 200x200 grid and lands at that offset.
    const GeometryPlan p = Plan({T::CenterCrop(200, 200), rrc}, 500, 375, seed);
    ASSERT_EQ(p.num_stages, 1);
    Rng rng(seed);
    const Rect r = SampleRandomResizedCrop(200, 200, rrc, &rng);
    EXPECT_EQ(p.stages[0].crop, (Rect{150 + r.x, 88 + r.y, r.width, r.height}));
    EXPECT_EQ(p.stages[0].out_width, 96);
    EXPECT_EQ(p.stages[0].window, (Rect{0, 0, 96, 96}));
  }
  // Two centre crops: 500x375 -> (150, 88, 200, 200) -> centre 51 of 200:
  // left = round(74.5) = 74, top = 74.
  const GeometryPlan q = Plan({T::CenterCrop(200, 200), T::CenterCrop(51, 51)}, 500, 375);
  EXPECT_EQ(q.stages[0].crop, (Rect{224, 162, 51, 51}));
  // Mirrored: the inner crop of the flipped 200 grid starts at 200-74-51=75.
  const GeometryPlan f = Plan(
      {T::CenterCrop(200, 200), T::RandomHorizontalFlip(1.0), T::CenterCrop(51, 51)}, 500, 375);
  EXPECT_EQ(f.stages[0].crop, (Rect{225, 162, 51, 51}));
  EXPECT_TRUE(f.flip);
}

TEST(PlanGeometryTest, TooManyResizesIsInvalidArgument) {
  std::vector<Transform> ts;
  for (int i = 0; i < GeometryPlan::kMaxStages; ++i) ts.push_back(T::Resize(100 + 10 * i));
  Rng rng(1);
  GeometryPlan plan;
  ASSERT_TRUE(PlanGeometry(ts, 640, 480, &rng, &plan).ok());
  EXPECT_EQ(plan.num_stages, GeometryPlan::kMaxStages);
  ts.push_back(T::Resize(50));
  const Status st = PlanGeometry(ts, 640, 480, &rng, &plan);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_FALSE(st.message().empty());
}

// ----------------------------------------------------- StaticOutputSize ----

TEST(StaticOutputSizeTest, ErrorsWithoutAFixedSize) {
  int h = -1, w = -1;
  Status st = StaticOutputSize({T::Resize(256)}, &h, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(st.message().empty());
  st = StaticOutputSize({}, &h, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  st = StaticOutputSize({T::RandomHorizontalFlip(), T::Normalize({0, 0, 0}, {1, 1, 1})}, &h, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  // A shorter-side resize after a fixed size is fixed too: 224x224 ->
  // 256x256, as PlanResize resizes every sample.
  st = StaticOutputSize({T::CenterCrop(224, 224), T::Resize(256)}, &h, &w);
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(h, 256);
  EXPECT_EQ(w, 256);
  st = StaticOutputSize({T::CenterCrop(200, 100), T::Resize(50)}, &h, &w);
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(h, 100);  // int(50 * 200 / 100)
  EXPECT_EQ(w, 50);
  // A shorter-side resize of an unknown size is variable.
  st = StaticOutputSize({T::RandomHorizontalFlip(), T::Resize(256)}, &h, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  st = StaticOutputSize({T::CenterCrop(0, 10)}, &h, &w);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(StaticOutputSizeTest, FixedSizes) {
  int h = -1, w = -1;
  ASSERT_TRUE(StaticOutputSize({T::RandomResizedCrop(224, 224)}, &h, &w).ok());
  EXPECT_EQ(h, 224);
  EXPECT_EQ(w, 224);
  ASSERT_TRUE(StaticOutputSize({T::CenterCrop(100, 200)}, &h, &w).ok());
  EXPECT_EQ(h, 100);
  EXPECT_EQ(w, 200);
  ASSERT_TRUE(StaticOutputSize({T::Resize(120, 160)}, &h, &w).ok());
  EXPECT_EQ(h, 120);
  EXPECT_EQ(w, 160);
  ASSERT_TRUE(StaticOutputSize({T::Resize(256), T::CenterCrop(224, 224)}, &h, &w).ok());
  EXPECT_EQ(h, 224);
  EXPECT_EQ(w, 224);
  ASSERT_TRUE(StaticOutputSize({T::RandomResizedCrop(160, 128), T::RandomHorizontalFlip(),
                                T::Normalize({0.4f, 0.4f, 0.4f}, {0.2f, 0.2f, 0.2f})},
                               &h, &w)
                  .ok());
  EXPECT_EQ(h, 160);
  EXPECT_EQ(w, 128);
  // The last fixed size wins.
  ASSERT_TRUE(StaticOutputSize({T::CenterCrop(300, 300), T::Resize(64, 32)}, &h, &w).ok());
  EXPECT_EQ(h, 64);
  EXPECT_EQ(w, 32);
}

// ------------------------------------------------------------------- Pad ----

Transform Pad(ArgValue padding, KeywordArgs more = {}) {
  more.emplace_back("padding", std::move(padding));
  StatusOr<Transform> t = MakeTransform("Pad", {}, more);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.value();
}

TEST(PadTest, ConstantZeroIsACropReachingOutside) {
  // (left, top, right, bottom) = (1, 2, 3, 4) around 50x40: the crop of the
  // padded grid, zero outside, no stage of its own.
  const GeometryPlan p = Plan({Pad(ArgValue({1, 2, 3, 4}))}, 50, 40);
  ASSERT_EQ(p.num_stages, 1);
  EXPECT_EQ(p.stages[0].crop, (Rect{-1, -2, 54, 46}));
  EXPECT_EQ(p.stages[0].pad_mode, kPadConstant);
  EXPECT_EQ(p.width(), 54);
  EXPECT_EQ(p.height(), 46);
  // After a flip the padding is on the sides of the flipped image: its left
  // pad is the unflipped right one.
  const GeometryPlan f = Plan({T::RandomHorizontalFlip(1.0), Pad(ArgValue({1, 2, 3, 4}))}, 50, 40);
  EXPECT_EQ(f.stages[0].crop, (Rect{-3, -2, 54, 46}));
}

TEST(PadTest, OtherModesAndFillsGetAStageOfTheirOwn) {
  const GeometryPlan p =
      Plan({T::Resize(20, 10), Pad(ArgValue({1, 2}), {{"padding_mode", "reflect"}}),
            T::CenterCrop(4, 4)},
           50, 40);
  ASSERT_EQ(p.num_stages, 3);  // resize | padded crop | centre crop of it
  EXPECT_EQ(p.stages[1].crop, (Rect{-1, -2, 12, 24}));
  EXPECT_EQ(p.stages[1].pad_mode, kPadReflect);
  EXPECT_EQ(p.stages[1].pad1, (std::array<int, 4>{1, 2, 1, 2}));
  EXPECT_EQ(p.width(), 4);
  const GeometryPlan v =
      Plan({T::RandomVerticalFlip(1.0), Pad(ArgValue({1, 2, 3, 4}), {{"fill", 9}})}, 50, 40);
  EXPECT_EQ(v.stages[0].pad_fill, (std::array<uint8_t, 3>{9, 9, 9}));
  EXPECT_EQ(v.stages[0].pad1, (std::array<int, 4>{1, 4, 3, 2}));  // top and bottom swapped
  EXPECT_EQ(v.stages[0].crop, (Rect{-1, -4, 54, 46}));
}

TEST(PadTest, AFixedSizeGrowsByThePadding) {
  int h = 0, w = 0;
  ASSERT_TRUE(StaticOutputSize({T::Resize(30, 20), Pad(ArgValue({1, 2, 3, 4}))}, &h, &w).ok());
  EXPECT_EQ(h, 36);
  EXPECT_EQ(w, 24);
  EXPECT_FALSE(StaticOutputSize({Pad(2)}, &h, &w).ok());  // the image's size is not known
  ASSERT_TRUE(StaticOutputSize({Pad(2), T::CenterCrop(8, 8)}, &h, &w).ok());
  EXPECT_EQ(h, 8);
}

// ---------------------------------------------- SampleRandomResizedCrop ----

TEST(SampleRandomResizedCropTest, CropsRespectScaleAndRatio) {
  struct Case {
    int w, h;
    Transform t;
  };
  const Case cases[] = {
      {500, 375, T::RandomResizedCrop(224, 224)},
      {375, 500, T::RandomResizedCrop(224, 224)},
      {640, 640, T::RandomResizedCrop(224, 224, 0.3, 0.9, 0.5, 2.0)},
      {1000, 300, T::RandomResizedCrop(224, 224, 0.08, 1.0, 0.75, 4.0 / 3.0)},
      {64, 48, T::RandomResizedCrop(32, 32)},
  };
  for (const Case& c : cases) {
    const double area = static_cast<double>(c.w) * c.h;
    int fallbacks = 0, n = 0;
    double area_sum = 0;
    for (uint64_t seed = 0; seed < 3000; ++seed) {
      Rng rng(seed * 7919 + 13);
      const Rect r = SampleRandomResizedCrop(c.w, c.h, c.t, &rng);
      ASSERT_GE(r.x, 0);
      ASSERT_GE(r.y, 0);
      ASSERT_GT(r.width, 0);
      ASSERT_GT(r.height, 0);
      ASSERT_LE(r.right(), c.w);
      ASSERT_LE(r.bottom(), c.h);
      const bool whole = r == Rect{0, 0, c.w, c.h};
      if (whole) {
        ++fallbacks;
        continue;
      }
      // w = round(sqrt(A * ar)), h = round(sqrt(A / ar)): each within 0.5 of
      // the real values, so these bounds are rigorous.
      const double w = r.width, h = r.height;
      EXPECT_LE((w - 0.5) * (h - 0.5), c.t.scale_max * area * (1 + 1e-12)) << w << "x" << h;
      EXPECT_GE((w + 0.5) * (h + 0.5), c.t.scale_min * area * (1 - 1e-12)) << w << "x" << h;
      EXPECT_LE((w - 0.5) / (h + 0.5), c.t.ratio_max * (1 + 1e-12)) << w << "x" << h;
      EXPECT_GE((w + 0.5) / (h - 0.5), c.t.ratio_min * (1 - 1e-12)) << w << "x" << h;
      area_sum += w * h / area;
      ++n;
    }
    EXPECT_LT(fallbacks, 300) << c.w << "x" << c.h;
    ASSERT_GT(n, 0);
    const double mean = area_sum / n;
    EXPECT_GT(mean, c.t.scale_min) << c.w << "x" << c.h;
    EXPECT_LT(mean, (c.t.scale_min + c.t.scale_max) / 2 + 0.05) << c.w << "x" << c.h;
  }
}

TEST(SampleRandomResizedCropTest, PositionsCoverTheImage) {
  const Transform t = T::RandomResizedCrop(224, 224, 0.08, 0.1);
  int min_x = 1 << 30, max_right = 0, min_y = 1 << 30, max_bottom = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    Rng rng(seed);
    const Rect r = SampleRandomResizedCrop(400, 300, t, &rng);
    min_x = std::min(min_x, r.x);
    min_y = std::min(min_y, r.y);
    max_right = std::max(max_right, r.right());
    max_bottom = std::max(max_bottom, r.bottom());
  }
  EXPECT_LT(min_x, 5);
  EXPECT_LT(min_y, 5);
  EXPECT_GT(max_right, 395);
  EXPECT_GT(max_bottom, 295);
}

TEST(SampleRandomResizedCropTest, DeterministicForASeed) {
  const Transform t = T::RandomResizedCrop(224, 224);
  std::set<std::tuple<int, int, int, int>> distinct;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Rng a(seed), b(seed);
    const Rect ra = SampleRandomResizedCrop(640, 480, t, &a);
    const Rect rb = SampleRandomResizedCrop(640, 480, t, &b);
    EXPECT_EQ(ra, rb);
    EXPECT_EQ(a.Next(), b.Next());  // and consumed the same draws
    distinct.insert({ra.x, ra.y, ra.width, ra.height});
  }
  EXPECT_GT(distinct.size(), 90u);
}

TEST(SampleRandomResizedCropTest, FallbackForExtremeAspect) {
  const Transform t = T::RandomResizedCrop(224, 224);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng rng(seed);
    // Too wide: h = 10, w = round(10 * 4 / 3) = 13, centred.
    EXPECT_EQ(SampleRandomResizedCrop(1000, 10, t, &rng), (Rect{493, 0, 13, 10}));
    // Too tall: w = 10, h = round(10 / 0.75) = 13.
    EXPECT_EQ(SampleRandomResizedCrop(10, 1000, t, &rng), (Rect{0, 493, 10, 13}));
  }
  // Half-way rounding is Python's: round(3 * 1.5) = round(4.5) = 4.
  const Transform t2 = T::RandomResizedCrop(8, 8, 0.08, 1.0, 0.5, 1.5);
  Rng rng(5);
  EXPECT_EQ(SampleRandomResizedCrop(100, 3, t2, &rng), (Rect{48, 0, 4, 3}));
  // Every attempt too large, image aspect inside the range: the whole image.
  const Transform t3 = T::RandomResizedCrop(8, 8, 1.0, 1.0, 0.9, 1.1);
  Rng rng3(6);
  // (An attempt can only succeed with exactly 100x100, the same rectangle.)
  EXPECT_EQ(SampleRandomResizedCrop(100, 100, t3, &rng3), (Rect{0, 0, 100, 100}));
  // Aspect below the range: w = width, h = round(w / ratio_min).
  const Transform t4 = T::RandomResizedCrop(8, 8, 1.0, 1.0, 2.0, 2.0);
  Rng rng4(7);
  EXPECT_EQ(SampleRandomResizedCrop(100, 100, t4, &rng4), (Rect{0, 25, 100, 50}));
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

TEST(UniformBetweenTest, IsRngUniformWhereTheSpanIsFiniteAndFiniteForHugeBounds) {
  for (auto [lo, hi] : {std::pair{-3.0, 7.5}, std::pair{0.02, 0.33}, std::pair{2.0, 2.0}}) {
    Rng a(11), b(11);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(UniformBetween(&a, lo, hi), b.Uniform(lo, hi));
  }
  Rng r(12);
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 100; ++i) {
    const double v = UniformBetween(&r, -1e308, 1e308);  // hi - lo overflows
    EXPECT_TRUE(std::isfinite(v) && v >= -1e308 && v <= 1e308) << v;
    EXPECT_EQ(UniformBetween(&r, inf, inf), inf);  // not inf - inf = NaN
    EXPECT_EQ(UniformBetween(&r, 1e-320, 1e-320), 1e-320);
  }
}

// RandomErasing's draws as torchvision makes them, for the stream checks:
// p, then per attempt area and log-ratio, then i and j on success.
TEST(SampleRandomErasingTest, NonFiniteRectanglesFailTheirAttemptsAndLeaveTheImage) {
  // Issue 32, item 2: ratio inf gave a NaN height (SIGSEGV), ratio 1e300 a
  // height of 1e152 (an endless draw): now the 10 attempts fail and the
  // image is left unchanged, after exactly torchvision's 21 draws.
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto [r0, r1] : {std::pair{inf, inf}, std::pair{1e300, 1e300}, std::pair{1e-300, 1e-300},
                        std::pair{nan, nan}, std::pair{0.3, inf}}) {
    for (auto [s0, s1] : {std::pair{1.0, 1.0}, std::pair{0.02, 0.33}}) {
      const Transform t = Transform::RandomErasing(1.0, s0, s1, r0, r1);
      Rng rng(5), ref(5);
      Rect out{-1, -1, -1, -1};
      EXPECT_FALSE(SampleRandomErasing(40, 32, t, &rng, &out)) << r0 << " " << s0;
      EXPECT_EQ(out.width, -1);
      for (int i = 0; i < 21; ++i) ref.Uniform();
      EXPECT_EQ(rng.Uniform(), ref.Uniform()) << "draws used differ";
    }
  }
}

TEST(SampleRandomErasingTest, ValidParametersGiveARectangleInsideTheImage) {
  const Transform t = Transform::RandomErasing(1.0, 0.05, 0.4, 0.4, 2.5);
  Rng rng(8);
  int applied = 0;
  for (int n = 0; n < 2000; ++n) {
    Rect r;
    if (!SampleRandomErasing(40, 32, t, &rng, &r)) continue;
    ++applied;
    EXPECT_TRUE(r.x >= 0 && r.y >= 0 && r.right() <= 40 && r.bottom() <= 32)
        << r.x << "," << r.y << " " << r.width << "x" << r.height;
    EXPECT_LT(r.height, 32);
    EXPECT_LT(r.width, 40);
  }
  EXPECT_GT(applied, 1900);
  Rng never(9);
  Rect r;
  EXPECT_FALSE(SampleRandomErasing(40, 32, Transform::RandomErasing(0.0), &never, &r));
}


// ------------------------------------------------- detection resizes ----

Transform Make(std::string_view name, std::vector<ArgValue> pos,
               std::vector<std::pair<std::string, ArgValue>> kw = {}) {
  StatusOr<Transform> t = MakeTransform(name, pos, kw);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.value();
}

TEST(DetectionResizeTest, SizesByHand) {
  int w = 0, h = 0;
  // v2's ScaleJitter: min(40 / 48, 56 / 64) = 0.8333.., r = 0.5: (int(64 * .41666), int(20)).
  ScaleJitterSize(64, 48, /*target_w=*/56, /*target_h=*/40, 0.5, &w, &h);
  EXPECT_EQ(w, 26);
  EXPECT_EQ(h, 20);
  ScaleJitterSize(64, 48, 56, 40, 1e-9, &w, &h);  // at least one pixel
  EXPECT_EQ(w, 1);
  EXPECT_EQ(h, 1);
  // v2's RandomShortestSize: 480 / 960 = 0.5 -> 640 x 480; capped: 1000 / 1280.
  ShortestSizeSize(1280, 960, 480, 0, &w, &h);
  EXPECT_EQ(w, 640);
  EXPECT_EQ(h, 480);
  ShortestSizeSize(1280, 960, 800, 1000, &w, &h);
  EXPECT_EQ(w, 1000);
  EXPECT_EQ(h, 750);
  // Letterbox: the limiting side exactly its size.
  LetterboxSize(1280, 960, 640, 640, &w, &h);
  EXPECT_EQ(w, 640);
  EXPECT_EQ(h, 480);
  LetterboxSize(37, 91, 40, 40, &w, &h);
  EXPECT_EQ(w, 16);  // int(40 * 37 / 91)
  EXPECT_EQ(h, 40);
  LetterboxSize(100, 10, 50, 30, &w, &h);  // (h, w) = (30, 50): the width limits
  EXPECT_EQ(w, 50);
  EXPECT_EQ(h, 5);
}

TEST(DetectionResizeTest, LetterboxIsOneStageWithAFilledWindow) {
  const Transform lb = Make("Letterbox", {ArgValue(32)});
  const GeometryPlan p = Plan({lb}, 64, 48);
  ASSERT_EQ(p.num_stages, 1);
  const GeometryStage& st = p.stages[0];
  EXPECT_EQ(st.crop, (Rect{0, 0, 64, 48}));
  EXPECT_EQ(st.out_width, 32);
  EXPECT_EQ(st.out_height, 24);
  EXPECT_EQ(st.window, (Rect{0, -4, 32, 32}));
  EXPECT_TRUE(st.window_filled);
  EXPECT_EQ(st.window_fill, (std::array<uint8_t, 3>{114, 114, 114}));
  // A later crop is not a window of the filled one: a stage of its own.
  const GeometryPlan q = Plan({lb, T::CenterCrop(40, 40)}, 64, 48);
  EXPECT_EQ(q.num_stages, 2);
  EXPECT_EQ(q.stages[1].crop, (Rect{-4, -4, 40, 40}));
  int oh = 0, ow = 0;
  ASSERT_TRUE(StaticOutputSize({lb}, &oh, &ow).ok());
  EXPECT_EQ(oh, 32);
  EXPECT_EQ(ow, 32);
}

TEST(DetectionResizeTest, JitterThenLetterboxAndRecordedSteps) {
  const Transform sj = Make("ScaleJitter", {ArgValue(40)},
                            {{"scale_range", ArgValue({ArgValue(0.5), ArgValue(0.5)})}});
  std::vector<GeometryStep> steps;
  Rng rng(3);
  GeometryPlan p;
  ASSERT_TRUE(PlanGeometry({sj, T::RandomHorizontalFlip(1.0), Make("Letterbox", {ArgValue(16)})},
                           64, 48, &rng, &p, &steps)
                  .ok());
  // ScaleJitter: 40 / 64 * 0.5 -> 20 x 15; Letterbox 16: 16 x 12, 2 above, 2 below.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].kind, GeometryStep::kResize);
  EXPECT_EQ(steps[0].out_width, 20);
  EXPECT_EQ(steps[0].out_height, 15);
  EXPECT_EQ(steps[1].kind, GeometryStep::kHFlip);
  EXPECT_EQ(steps[2].kind, GeometryStep::kResize);
  EXPECT_EQ(steps[2].out_width, 16);
  EXPECT_EQ(steps[2].out_height, 12);
  EXPECT_EQ(steps[3].kind, GeometryStep::kCrop);
  EXPECT_EQ(steps[3].crop, (Rect{0, -2, 16, 16}));
  EXPECT_EQ(steps[3].pad1, (std::array<int, 4>{0, 2, 0, 2}));
  EXPECT_EQ(p.num_stages, 2);
  EXPECT_TRUE(p.stages[1].window_filled);
  int oh = 0, ow = 0;
  EXPECT_FALSE(StaticOutputSize({sj}, &oh, &ow).ok());  // each sample its own size
}

TEST(DetectionResizeTest, RandomShortestSizeDrawsEachSize) {
  const Transform t = Make("RandomShortestSize",
                           {ArgValue({ArgValue(10), ArgValue(20), ArgValue(30), ArgValue(45)})},
                           {{"max_size", ArgValue(50)}});
  std::set<int> heights;
  for (uint64_t seed = 0; seed < 40; ++seed) heights.insert(Plan({t}, 64, 48, seed).height());
  // 10 -> 13 x 10; 20 -> 26 x 20; 30 -> 40 x 30; 45 -> capped at 50 / 64: 50 x 37.
  EXPECT_EQ(heights, (std::set<int>{10, 20, 30, 37}));
}

}  // namespace
}  // namespace stoker
