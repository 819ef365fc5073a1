// Copyright 2026 The stoker Authors.
#include "device/device_plan.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/rng.h"
#include "stoker/device.h"

namespace stoker {
namespace {

TEST(ParseDeviceTest, Names) {
  EXPECT_EQ(ParseDevice("cpu").value(), -1);
  EXPECT_EQ(ParseDevice("cuda").value(), 0);
  EXPECT_EQ(ParseDevice("cuda:3").value(), 3);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA:0", "cuda:1234"}) {
    EXPECT_EQ(ParseDevice(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MakeBatchGeometryTest, RefusesUnusableOptions) {
  DeviceOptions o;
  EXPECT_TRUE(MakeBatchGeometry(o, 8, 8).ok());
  o.dtype = DType::kUint8;
  EXPECT_EQ(MakeBatchGeometry(o, 8, 8).status().code(), StatusCode::kInvalidArgument);
  o = DeviceOptions();
  o.augment.crop_height = o.augment.crop_width = 11;
  o.augment.pad = 1;
  const Status too_big = MakeBatchGeometry(o, 8, 8).status();
  EXPECT_NE(too_big.message().find("larger than the padded input 10x10"), std::string::npos)
      << too_big.message();
  o.augment.pad = 2;
  const auto g = MakeBatchGeometry(o, 8, 8);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.value().out_height, 11);
  o = DeviceOptions();
  o.normalize = true;
  o.std = {1.f, 0.f, 1.f};
  EXPECT_FALSE(MakeBatchGeometry(o, 8, 8).ok());
  o = DeviceOptions();
  o.augment.scale_min = 0.f;
  EXPECT_FALSE(MakeBatchGeometry(o, 8, 8).ok());
}

// The seeding scheme: the sample's own stream, HashSeed(seed, epoch, id,
// kDeviceAugmentStream), first draw = the flip (as the CPU flip draws).
// A record without an image (DeviceOptions::image false): an empty geometry
// whatever the sizes given, and augmentations or Normalize are refused.
TEST(MakeBatchGeometryTest, NoImage) {
  DeviceOptions o;
  EXPECT_EQ(MakeBatchGeometry(o, 0, 0).status().code(), StatusCode::kInvalidArgument);
  o.image = false;
  auto g = MakeBatchGeometry(o, 0, 0);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g.value().in_height, 0);
  EXPECT_EQ(g.value().out_width, 0);
  EXPECT_EQ(MakeBatchGeometry(o, 32, 32).value().out_height, 0);
  o.augment.flip_p = 0.5;
  EXPECT_NE(MakeBatchGeometry(o, 0, 0).status().message().find("the record has no primary image"),
            std::string::npos);
  o.augment.flip_p = 0;
  o.normalize = true;
  EXPECT_EQ(MakeBatchGeometry(o, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(DrawSampleParamsTest, SeededPerSample) {
  DeviceOptions o;
  o.augment.flip_p = 0.5;
  o.augment.crop_height = o.augment.crop_width = 6;
  o.augment.pad = 2;
  o.augment.brightness = 0.4f;
  const device::BatchGeometry g = MakeBatchGeometry(o, 8, 8).value();
  int flips = 0;
  std::set<int> ys, xs;
  for (int64_t id = 0; id < 2000; ++id) {
    const device::SampleParams p = DrawSampleParams(o.augment, g, 42, 3, id);
    Rng rng(HashSeed(42, 3, static_cast<uint64_t>(id), kDeviceAugmentStream));
    ASSERT_EQ(p.flip, rng.Uniform() < 0.5 ? 1 : 0) << id;
    flips += p.flip;
    ys.insert(p.offset_y);
    xs.insert(p.offset_x);
    ASSERT_GE(p.brightness, 0.6f);
    ASSERT_LE(p.brightness, 1.4f);
    EXPECT_EQ(p.contrast, 1.f);
    EXPECT_EQ(p.affine, 0);
    // Pure function of (seed, epoch, id).
    const device::SampleParams again = DrawSampleParams(o.augment, g, 42, 3, id);
    ASSERT_EQ(again.offset_x, p.offset_x);
    ASSERT_EQ(again.brightness, p.brightness);
  }
  EXPECT_GT(flips, 900);
  EXPECT_LT(flips, 1100);
  // Offsets cover [-pad, in + pad - out] = [-2, 4] and nothing else.
  EXPECT_EQ(ys, (std::set<int>{-2, -1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(xs, ys);
  // Another epoch draws differently.
  int same = 0;
  for (int64_t id = 0; id < 100; ++id) {
    same += DrawSampleParams(o.augment, g, 42, 3, id).brightness ==
            DrawSampleParams(o.augment, g, 42, 4, id).brightness;
  }
  EXPECT_LT(same, 5);
}

TEST(DrawSampleParamsTest, IdentityWithoutAugment) {
  DeviceOptions o;
  const device::BatchGeometry g = MakeBatchGeometry(o, 8, 8).value();
  const device::SampleParams p = DrawSampleParams(o.augment, g, 1, 0, 7);
  EXPECT_EQ(p.flip, 0);
  EXPECT_EQ(p.offset_x, 0);
  EXPECT_EQ(p.brightness, 1.f);
  EXPECT_EQ(p.affine, 0);
}

// Without a driver or a device (or without CUDA in the build), asking for a
// CUDA device fails with an error that says so; a device present: skipped.
TEST(DeviceStageTest, NoDeviceIsAClearError) {
  const Status s = CheckCudaDevice(0);
  if (s.ok()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("device='cuda:0' requested but"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(BuiltWithCuda() ? "cudaGetDeviceCount" : "built without CUDA"),
            std::string::npos)
      << s.message();
  DeviceOptions o;
  const auto stage = DeviceStage::Create(o, 8, 8);
  EXPECT_EQ(stage.status().message(), s.message());
}

}  // namespace
}  // namespace stoker
