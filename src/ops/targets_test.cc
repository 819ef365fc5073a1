// Copyright 2026 The stoker Authors.
#include "ops/targets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/transforms.h"

namespace stoker {
namespace {

GeometryStep CropStep(int in_w, int in_h, Rect r, int mode = kPadConstant) {
  GeometryStep s;
  s.kind = GeometryStep::kCrop;
  s.in_width = in_w;
  s.in_height = in_h;
  s.crop = r;
  s.out_width = r.width;
  s.out_height = r.height;
  s.pad_mode = mode;
  return s;
}

GeometryStep ResizeStep(int in_w, int in_h, int w, int h) {
  GeometryStep s;
  s.kind = GeometryStep::kResize;
  s.in_width = in_w;
  s.in_height = in_h;
  s.out_width = w;
  s.out_height = h;
  return s;
}

GeometryStep FlipStep(int w, int h, bool horizontal = true) {
  GeometryStep s;
  s.kind = horizontal ? GeometryStep::kHFlip : GeometryStep::kVFlip;
  s.in_width = s.out_width = w;
  s.in_height = s.out_height = h;
  return s;
}

GeometryStep WarpOf(int w, int h, const WarpStep& warp) {
  GeometryStep s;
  s.kind = GeometryStep::kWarp;
  s.in_width = s.out_width = w;
  s.in_height = s.out_height = h;
  s.warp = warp;
  return s;
}

MaskImage Mask(int w, int h, std::vector<uint8_t> v) {
  MaskImage m;
  m.width = w;
  m.height = h;
  m.bpp = 1;
  m.pixels = std::move(v);
  return m;
}

std::vector<uint8_t> Pixels(const MaskImage& m) {
  return std::vector<uint8_t>(m.pixels.begin(),
                              m.pixels.begin() + static_cast<size_t>(m.width) * m.height * m.bpp);
}

TEST(TargetsTest, CropClampsAndRemovesBySizeAndAreaFraction) {
  TargetGeometry g;
  g.Reset(100, 80);
  g.steps.push_back(CropStep(100, 80, Rect{10, 20, 50, 40}));
  // (0,0,30,30) -> (-10,-20,20,10) -> clamped (0,0,20,10): 200 of 900 px inside.
  // (5,5,12,22) -> (-5,-15,2,2) -> (0,0,2,2): 2 px wide, 4 of 119 px inside.
  // (70,70,90,79) -> (60,50,80,59) -> (50,40,50,40): empty.
  // (15,25,35,45) -> (5,5,25,25): inside.
  const double in[16] = {0, 0, 30, 30, 5, 5, 12, 22, 70, 70, 90, 79, 15, 25, 35, 45};
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{}, &out, &keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(out, (std::vector<float>{0, 0, 20, 10, 0, 0, 2, 2, 5, 5, 25, 25}));
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{3.0, 0.0}, &out, &keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0, 0, 1}));
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{1.0, 0.2}, &out, &keep);  // 0.222 kept
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0, 0, 1}));
  TransformBoxes(g, BoxFormat::kXYXY, in, 4, BoxRules{1.0, 0.25}, &out, &keep);
  EXPECT_EQ(keep, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(out, (std::vector<float>{5, 5, 25, 25}));
}

TEST(TargetsTest, ResizeThenFlipInOutputPixelsFromXywhAndCxcywh) {
  TargetGeometry g;
  g.Reset(100, 80);
  g.steps.push_back(ResizeStep(100, 80, 50, 40));
  g.steps.push_back(FlipStep(50, 40));
  const double xywh[4] = {10, 10, 20, 10};    // xyxy (10,10,30,20)
  const double cxcywh[4] = {20, 15, 20, 10};  // the same box
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYWH, xywh, 1, BoxRules{}, &out, &keep);
  EXPECT_EQ(out, (std::vector<float>{35, 5, 45, 10}));
  TransformBoxes(g, BoxFormat::kCXCYWH, cxcywh, 1, BoxRules{}, &out, &keep);
  EXPECT_EQ(out, (std::vector<float>{35, 5, 45, 10}));
}

TEST(TargetsTest, WarpsTakeTheBoxAroundTheCornersClamped) {
  TargetGeometry g;
  g.Reset(20, 20);
  g.steps.push_back(WarpOf(20, 20, AffineStep(0, 5, -3, 1, 0, 0, false, 0, 0, 20, 20)));
  const double in[8] = {2, 4, 6, 8, 16, 1, 19, 9};
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYXY, in, 2, BoxRules{}, &out, &keep);
  // The second: (21,-2,24,6), clamped to (20,0,20,6), empty: removed.
  EXPECT_EQ(keep, (std::vector<uint8_t>{1, 0}));
  ASSERT_EQ(out.size(), 4u);
  const float want[4] = {7, 1, 11, 5};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(out[k], want[k], 1e-5) << k;
}

TEST(TargetsTest, RotationAboutTheCentre) {
  // 90 degrees counter-clockwise about (10, 10) of a 20 x 20 image (the
  // transpose shortcut): (x, y) -> (y, 20 - x). A 45-degree rotation: the
  // box around the rotated corners.
  TargetGeometry g;
  g.Reset(20, 20);
  g.steps.push_back(WarpOf(20, 20, RotateStep(90, false, 0, 0, 20, 20)));
  const double in[4] = {2, 4, 6, 8};
  std::vector<float> out;
  std::vector<uint8_t> keep;
  TransformBoxes(g, BoxFormat::kXYXY, in, 1, BoxRules{}, &out, &keep);
  EXPECT_EQ(out, (std::vector<float>{4, 14, 8, 18}));
  g.steps[0].warp = RotateStep(45, false, 0, 0, 20, 20);
  const double centred[4] = {8, 8, 12, 12};
  TransformBoxes(g, BoxFormat::kXYXY, centred, 1, BoxRules{}, &out, &keep);
  const double r = 2 * std::sqrt(2.0);
  const float want[4] = {static_cast<float>(10 - r), static_cast<float>(10 - r),
                         static_cast<float>(10 + r), static_cast<float>(10 + r)};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(out[k], want[k], 1e-5) << k;
}

TEST(TargetsTest, KeypointsLeavingACropStayInvisible) {
  TargetGeometry g;
  g.Reset(100, 80);
  g.steps.push_back(CropStep(100, 80, Rect{10, 10, 20, 20}));
  g.steps.push_back(CropStep(20, 20, Rect{-10, -10, 40, 40}));  // padding brings it back
  g.steps.push_back(FlipStep(40, 40));
  const double in[9] = {15, 15, 2, 5, 5, 2, 40, 40, 0};
  std::vector<float> out;
  TransformKeypoints(g, in, 3, 3, &out);
  // (15,15) -> (5,5) -> (15,15) -> flip (25,15), visibility kept (2).
  // (5,5) -> (-5,-5) outside the first crop -> invisible, never dropped.
  // (40,40) -> (30,30) outside -> invisible; then (40,40), flipped (0,40).
  EXPECT_EQ(out, (std::vector<float>{25, 15, 2, 35, 5, 0, 0, 40, 0}));
  const double two[2] = {15, 15};
  TransformKeypoints(g, two, 1, 2, &out);
  EXPECT_EQ(out, (std::vector<float>{25, 15, 1}));
}

TEST(TargetsTest, MaskFollowsTheListOrderWithPillowNearest) {
  // Image.resize(NEAREST) of [0 1 2 3] to 2 wide reads x = floor(2 * (i + 0.5)):
  // [1 3]; then the flip: [3 1]. Flipping first would give [2 0].
  TargetGeometry g;
  g.Reset(4, 1);
  g.steps.push_back(ResizeStep(4, 1, 2, 1));
  g.steps.push_back(FlipStep(2, 1));
  MaskImage m = Mask(4, 1, {0, 1, 2, 3}), scratch;
  ASSERT_TRUE(TransformMask(g, 255, &m, &scratch).ok());
  EXPECT_EQ(Pixels(m), (std::vector<uint8_t>{3, 1}));
}

TEST(TargetsTest, MaskPaddingIsTheIgnoreIndexOrTheFold) {
  TargetGeometry g;
  g.Reset(3, 1);
  g.steps.push_back(CropStep(3, 1, Rect{-2, 0, 6, 1}));
  MaskImage m = Mask(3, 1, {1, 2, 3}), scratch;
  ASSERT_TRUE(TransformMask(g, 255, &m, &scratch).ok());
  EXPECT_EQ(Pixels(m), (std::vector<uint8_t>{255, 255, 1, 2, 3, 255}));
  g.steps[0].pad_mode = kPadReflect;
  m = Mask(3, 1, {1, 2, 3});
  ASSERT_TRUE(TransformMask(g, 255, &m, &scratch).ok());
  EXPECT_EQ(Pixels(m), (std::vector<uint8_t>{3, 2, 1, 2, 3, 2}));  // np.pad reflect
  // uint16: the fill in the mask's own type.
  MaskImage m16;
  m16.width = 3;
  m16.height = 1;
  m16.bpp = 2;
  const uint16_t v[3] = {1000, 2000, 3000};
  m16.pixels.assign(reinterpret_cast<const uint8_t*>(v), reinterpret_cast<const uint8_t*>(v) + 6);
  g.steps[0].pad_mode = kPadConstant;
  ASSERT_TRUE(TransformMask(g, 65535, &m16, &scratch).ok());
  uint16_t got[6];
  std::memcpy(got, m16.pixels.data(), 12);
  EXPECT_EQ(std::vector<uint16_t>(got, got + 6),
            (std::vector<uint16_t>{65535, 65535, 1000, 2000, 3000, 65535}));
}

TEST(TargetsTest, MaskWarpIsNearestWithTheFill) {
  TargetGeometry g;
  g.Reset(4, 1);
  g.steps.push_back(WarpOf(4, 1, AffineStep(0, 1, 0, 1, 0, 0, false, 0, 0, 4, 1)));
  MaskImage m = Mask(4, 1, {5, 6, 7, 8}), scratch;
  ASSERT_TRUE(TransformMask(g, 255, &m, &scratch).ok());
  EXPECT_EQ(Pixels(m), (std::vector<uint8_t>{255, 5, 6, 7}));
}

TEST(TargetsTest, InstancePlanesMoveLikeMasksAndFollowTheKeptBoxes) {
  // Three 3x2 planes; a crop padding one column on the left, then a flip:
  // each plane [a b c / d e f] -> padded [0 a b c / 0 d e f] -> x in [-1, 3)
  // -> flipped [c b a 0 / f e d 0]. The middle box is removed: its plane too.
  TargetGeometry g;
  g.Reset(3, 2);
  g.steps.push_back(CropStep(3, 2, Rect{-1, 0, 4, 2}));
  g.steps.push_back(FlipStep(4, 2));
  const std::vector<uint8_t> planes = {1, 2, 3, 4, 5, 6,         // box 0
                                       7, 8, 9, 10, 11, 12,      // box 1 (removed)
                                       13, 14, 15, 16, 17, 18};  // box 2
  const uint8_t keep[3] = {1, 0, 1};
  MaskImage a, b;
  std::vector<uint8_t> out(16, 99);
  ASSERT_TRUE(TransformMaskPlanes(g, 0, planes.data(), 3, 3, 2, 1, keep, &a, &b, out.data()).ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{3, 2, 1, 0, 6, 5, 4, 0,  //
                                       15, 14, 13, 0, 18, 17, 16, 0}));
  // A plane of another size than the image.
  const Status st =
      TransformMaskPlanes(g, 0, planes.data(), 2, 3, 3, 1, keep, &a, &b, out.data());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(TargetsTest, MaskOfAnotherSizeIsAnError) {
  TargetGeometry g;
  g.Reset(4, 2);
  MaskImage m = Mask(4, 1, {0, 0, 0, 0}), scratch;
  const Status st = TransformMask(g, 255, &m, &scratch);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("mask is 1x4 (HxW), its image 2x4"), std::string::npos)
      << st.message();
}

TEST(TargetsTest, PlanGeometryRecordsTheStepsInListOrder) {
  std::vector<Transform> ts = {Transform::RandomResizedCrop(8, 8),
                               Transform::RandomHorizontalFlip(1.0),
                               Transform::CenterCrop(4, 4)};
  Rng rng(7);
  GeometryPlan plan;
  std::vector<GeometryStep> steps;
  ASSERT_TRUE(PlanGeometry(ts, 40, 30, &rng, &plan, &steps).ok());
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].kind, GeometryStep::kCrop);
  EXPECT_EQ(steps[0].in_width, 40);
  EXPECT_EQ(steps[1].kind, GeometryStep::kResize);
  EXPECT_EQ(steps[1].in_width, steps[0].crop.width);
  EXPECT_EQ(steps[1].out_width, 8);
  EXPECT_EQ(steps[2].kind, GeometryStep::kHFlip);
  EXPECT_EQ(steps[3].kind, GeometryStep::kCrop);
  EXPECT_EQ(steps[3].crop, (Rect{2, 2, 4, 4}));
  EXPECT_EQ(steps[3].out_width, 4);
}

// A mask cropped by its first step needs only the crop's rows
// (MaskRowsNeeded); replayed from that band of rows it is the whole mask's
// result, byte for byte; a band the first step does not fit in is refused.
TEST(TargetsTest, MaskBandOfTheFirstCropsRowsGivesTheWholeMasksResult) {
  const int w = 40, h = 30;
  std::vector<uint8_t> v(static_cast<size_t>(w) * h);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 37 + i / 7) % 251);
  const MaskImage whole = Mask(w, h, v);
  const PixelPlane full{const_cast<uint8_t*>(whole.pixels.data()), w, h, w, 1};
  for (const Rect& c : {Rect{3, 5, 20, 11}, Rect{0, 0, 40, 29}, Rect{7, 12, 9, 18}}) {
    for (int tail = 0; tail < 3; ++tail) {
      TargetGeometry g;
      g.Reset(w, h);
      g.steps.push_back(CropStep(w, h, c));
      if (tail >= 1) g.steps.push_back(ResizeStep(c.width, c.height, 13, 17));
      if (tail >= 2) g.steps.push_back(FlipStep(13, 17));
      int y0 = -1, y1 = -1;
      ASSERT_TRUE(MaskRowsNeeded(g, &y0, &y1));
      EXPECT_EQ(y0, c.y);
      EXPECT_EQ(y1, c.bottom());
      MaskImage a, b, a2, b2;
      PixelPlane want, got;
      ASSERT_TRUE(TransformMaskView(g, 255, full, &a, &b, &want).ok());
      const PixelPlane band{const_cast<uint8_t*>(whole.pixels.data()) + y0 * w, w, y1 - y0, w, 1};
      ASSERT_TRUE(TransformMaskView(g, 255, band, &a2, &b2, &got, y0, h).ok());
      ASSERT_EQ(got.width, want.width);
      ASSERT_EQ(got.height, want.height);
      for (int y = 0; y < got.height; ++y) {
        ASSERT_EQ(std::memcmp(got.data + y * got.stride, want.data + y * want.stride,
                              static_cast<size_t>(got.width)), 0)
            << c.x << "," << c.y << " tail " << tail << " row " << y;
      }
      if (y0 > 0) {  // a band starting below the crop's first row
        const PixelPlane late{band.data + w, w, band.height - 1, w, 1};
        EXPECT_EQ(TransformMaskView(g, 255, late, &a2, &b2, &got, y0 + 1, h).code(),
                  StatusCode::kInternal);
      }
      // The band's mask of another height is the size error, naming the full height.
      const Status wrong = TransformMaskView(g, 255, band, &a2, &b2, &got, y0, h + 1);
      EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(wrong.message().find("mask is 31x40"), std::string::npos) << wrong.message();
    }
  }
  // No band: no steps, a padded crop, a flip first, a crop of every row.
  TargetGeometry g;
  g.Reset(w, h);
  int y0 = 0, y1 = 0;
  EXPECT_FALSE(MaskRowsNeeded(g, &y0, &y1));
  g.steps = {CropStep(w, h, Rect{-2, 3, 10, 10})};
  EXPECT_FALSE(MaskRowsNeeded(g, &y0, &y1));
  g.steps = {CropStep(w, h, Rect{2, 25, 10, 10})};
  EXPECT_FALSE(MaskRowsNeeded(g, &y0, &y1));
  g.steps = {FlipStep(w, h), CropStep(w, h, Rect{2, 3, 10, 10})};
  EXPECT_FALSE(MaskRowsNeeded(g, &y0, &y1));
  g.steps = {CropStep(w, h, Rect{2, 0, 10, h})};
  EXPECT_FALSE(MaskRowsNeeded(g, &y0, &y1));
}

}  // namespace
}  // namespace stoker
