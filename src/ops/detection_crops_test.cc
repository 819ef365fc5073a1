// Copyright 2026 The stoker Authors.
#include "ops/detection_crops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/geometry.h"
#include "ops/targets.h"
#include "stoker/transform_schema.h"

namespace stoker {
namespace {

Transform Make(const std::string& name, const KeywordArgs& kw) {
  StatusOr<Transform> t = MakeTransform(name, {}, kw);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

double IoU(const double* b, const Rect& r) {
  const double iw = std::max(0.0, std::min(b[2], double(r.right())) - std::max(b[0], double(r.x)));
  const double ih =
      std::max(0.0, std::min(b[3], double(r.bottom())) - std::max(b[1], double(r.y)));
  const double a1 = (b[2] - b[0]) * (b[3] - b[1]), a2 = double(r.width) * r.height;
  return iw * ih / (a1 + a2 - iw * ih);
}

// Plans `t` alone for a w x h image with `boxes`, drawn from Rng(seed).
Status Plan(const Transform& t, int w, int h, const std::vector<double>* boxes, uint64_t seed,
            std::vector<GeometryStep>* steps) {
  Rng rng(seed);
  GeometryPlan plan;
  steps->clear();
  return PlanGeometry({t}, w, h, &rng, &plan, steps, boxes);
}

TEST(DetectionCropsTest, IoUCropStepDropsBoxesWhoseCentreIsOutside) {
  // Crop (10, 10, 20, 20) of 100 x 100, marked as RandomIoUCrop's.
  TargetGeometry g;
  g.Reset(100, 100);
  GeometryStep s;
  s.kind = GeometryStep::kCrop;
  s.in_width = s.in_height = 100;
  s.crop = Rect{10, 10, 20, 20};
  s.out_width = s.out_height = 20;
  s.drop_outside_centres = true;
  g.steps.push_back(s);
  // A: centre (15, 15) inside -> kept, shifted. B: centre (6, 6) outside,
  // overlapping -> removed. C: centre x exactly 10 (the crop's edge; v2's
  // test is strict) -> removed. D: centre (29, 20) inside, clamped.
  const double in[16] = {12, 12, 18, 18, 0, 0, 12, 12, 5, 12, 15, 18, 22, 15, 36, 25};
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{}, &out, &keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(out, (std::vector<float>{2, 2, 8, 8, 12, 5, 20, 15}));
  // The same crop without the mark keeps B and C, clamped.
  g.steps[0].drop_outside_centres = false;
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{}, &out, &keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 1, 1}));
  // BoxesAfterSteps: what a later RandomIoUCrop sees (marked: A and D).
  g.steps[0].drop_outside_centres = true;
  std::vector<double> after;
  BoxesAfterSteps(g.steps, std::vector<double>(in, in + 16), &after);
  EXPECT_EQ(after, (std::vector<double>{2, 2, 8, 8, 12, 5, 20, 15}));
}

TEST(DetectionCropsTest, IoUCropDrawMeetsItsConstraints) {
  // One option (0.5): every crop has a box centre strictly inside and an IoU
  // >= 0.5 with such a box; its size follows the scale and aspect ranges.
  const Transform t = Make("RandomIoUCrop", {{"sampler_options", ArgValue{0.5}}});
  const std::vector<double> boxes = {10, 10, 60, 50, 70, 20, 110, 70, 5, 60, 30, 78};
  int cropped = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<GeometryStep> steps;
    ASSERT_TRUE(Plan(t, 120, 80, &boxes, seed, &steps).ok());
    if (steps.empty()) continue;
    ++cropped;
    ASSERT_EQ(steps.size(), 1u);
    const GeometryStep& s = steps[0];
    const Rect& r = s.crop;
    EXPECT_TRUE(s.drop_outside_centres);
    EXPECT_GE(r.x, 0);
    EXPECT_GE(r.y, 0);
    EXPECT_LE(r.right(), 120);
    EXPECT_LE(r.bottom(), 80);
    EXPECT_GE(r.width, static_cast<int>(120 * 0.3));
    EXPECT_GE(r.height, static_cast<int>(80 * 0.3));
    const double aspect = double(r.width) / r.height;
    EXPECT_GE(aspect, 0.5);
    EXPECT_LE(aspect, 2.0);
    double best = -1;
    for (size_t i = 0; i < boxes.size(); i += 4) {
      const double cx = (boxes[i] + boxes[i + 2]) / 2, cy = (boxes[i + 1] + boxes[i + 3]) / 2;
      if (r.x < cx && cx < r.right() && r.y < cy && cy < r.bottom()) {
        best = std::max(best, IoU(&boxes[i], r));
      }
    }
    EXPECT_GE(best, 0.5) << "seed " << seed;
  }
  // Each draw is a crop here (the option is reachable, and never >= 1).
  EXPECT_EQ(cropped, 200);
}

TEST(DetectionCropsTest, IoUCropLeavesTheSampleUncropped) {
  const std::vector<double> boxes = {0, 0, 100, 100};
  std::vector<GeometryStep> steps;
  // The no-crop option only.
  ASSERT_TRUE(
      Plan(Make("RandomIoUCrop", {{"sampler_options", ArgValue{2.0}}}), 100, 100, &boxes, 1,
           &steps)
          .ok());
  EXPECT_TRUE(steps.empty());
  // No boxes: nothing can satisfy an option.
  const std::vector<double> none;
  ASSERT_TRUE(Plan(Make("RandomIoUCrop", {}), 100, 100, &none, 1, &steps).ok());
  EXPECT_TRUE(steps.empty());
  // An option no crop can reach (a crop of at most 10% a side has IoU <= 0.01
  // with a box covering the image): v2 would loop forever; here the draws
  // stop after kIoUCropMaxOptionDraws and the sample stays whole.
  const Transform unreachable =
      Make("RandomIoUCrop", {{"min_scale", 0.05}, {"max_scale", 0.1},
                             {"sampler_options", ArgValue{0.9}}, {"trials", 5}});
  ASSERT_TRUE(Plan(unreachable, 100, 100, &boxes, 1, &steps).ok());
  EXPECT_TRUE(steps.empty());
  // Without the sample's boxes the plan refuses (the Loader refuses earlier).
  const Status st = Plan(Make("RandomIoUCrop", {}), 100, 100, nullptr, 1, &steps);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("boxes"), std::string::npos) << st.message();
}

TEST(DetectionCropsTest, ZoomOutPadsAndShifts) {
  // side_range (2, 2): a canvas of exactly 2W x 2H, the image at (left, top).
  const Transform t = Make("RandomZoomOut", {{"side_range", ArgValue{2.0, 2.0}}, {"p", 1.0},
                                             {"fill", 7}});
  std::vector<GeometryStep> steps;
  ASSERT_TRUE(Plan(t, 4, 3, nullptr, 5, &steps).ok());
  ASSERT_EQ(steps.size(), 1u);
  const GeometryStep& s = steps[0];
  EXPECT_EQ(s.crop.width, 8);
  EXPECT_EQ(s.crop.height, 6);
  const int left = -s.crop.x, top = -s.crop.y;
  EXPECT_GE(left, 0);
  EXPECT_LE(left, 4);
  EXPECT_GE(top, 0);
  EXPECT_LE(top, 3);
  EXPECT_EQ(s.pad1, (std::array<int, 4>{left, top, 4 - left, 3 - top}));
  TargetGeometry g;
  g.Reset(4, 3);
  g.steps = steps;
  // A box and a keypoint move by (left, top).
  const double box[4] = {1, 1, 3, 2};
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYXY, box, 1, BoxRules{}, &out, &keep);
  EXPECT_EQ(out, (std::vector<float>{float(1 + left), float(1 + top), float(3 + left),
                                     float(2 + top)}));
  const double kp[2] = {2, 3};
  TransformKeypoints(g, kp, 1, 2, &out);
  EXPECT_EQ(out, (std::vector<float>{float(2 + left), float(3 + top), 1}));
  // The mask: the image at (left, top), the rest its ignore_index (255).
  MaskImage m, scratch;
  m.width = 4;
  m.height = 3;
  m.pixels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  ASSERT_TRUE(TransformMask(g, 255, &m, &scratch).ok());
  ASSERT_EQ(m.width, 8);
  ASSERT_EQ(m.height, 6);
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 8; ++x) {
      const bool in = x >= left && x < left + 4 && y >= top && y < top + 3;
      const int want = in ? 1 + (y - top) * 4 + (x - left) : 255;
      EXPECT_EQ(m.pixels[y * 8 + x], want) << x << "," << y;
    }
  }
  // p = 0: never.
  ASSERT_TRUE(Plan(Make("RandomZoomOut", {{"p", 0.0}}), 4, 3, nullptr, 5, &steps).ok());
  EXPECT_TRUE(steps.empty());
}

TEST(DetectionCropsTest, ArgumentsAreChecked) {
  auto code = [](const std::string& name, const KeywordArgs& kw) {
    return MakeTransform(name, {}, kw).status();
  };
  Status s = code("RandomIoUCrop", {{"min_scale", 0.8}, {"max_scale", 0.5}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_scale"), std::string::npos) << s.message();
  EXPECT_EQ(code("RandomIoUCrop", {{"sampler_options", ArgValue(std::vector<ArgValue>{})}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RandomIoUCrop", {{"sampler_options", ArgValue{-0.5}}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RandomIoUCrop", {{"trials", 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RandomZoomOut", {{"side_range", ArgValue{0.5, 2.0}}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("RandomZoomOut", {{"side_range", ArgValue{3.0, 2.0}}}).code(),
            StatusCode::kInvalidArgument);
  // The defaults, as v2's.
  const Transform t = Make("RandomIoUCrop", {});
  EXPECT_EQ(t.sampler_options, (std::vector<double>{0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0}));
  EXPECT_EQ(t.trials, 40);
  EXPECT_EQ(t.scale_min, 0.3);
  EXPECT_EQ(t.ratio_max, 2.0);
  EXPECT_TRUE(t.schema->needs_boxes);
  EXPECT_EQ(Make("RandomZoomOut", {}).side_range, (std::array<double, 2>{1.0, 4.0}));
}

}  // namespace
}  // namespace stoker
