// Copyright 2026 The stoker Authors.
//
// The photometric ops' own properties. Parity with Pillow, pixel for pixel,
// is checked by python/tests/test_color.py (it needs Pillow).
#include "ops/color.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "stoker/transform_schema.h"

namespace stoker {
namespace {

RgbImage Gradient(int w, int h) {
  RgbImage img;
  img.Resize(w, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = img.row(y) + x * 3;
      p[0] = static_cast<uint8_t>(40 + x * 3);
      p[1] = static_cast<uint8_t>(60 + y * 2);
      p[2] = static_cast<uint8_t>((x * 7 + y * 5) % 256);
    }
  }
  return img;
}

std::vector<uint8_t> Pixels(RgbImage& img) {
  return std::vector<uint8_t>(img.data(), img.data() + img.width() * img.height() * 3);
}

TEST(ColorTest, IdentityFactorsLeaveTheImage) {
  RgbImage ref = Gradient(37, 29);
  for (int op = 0; op < 4; ++op) {
    RgbImage img = Gradient(37, 29), scratch;
    if (op == 0) AdjustBrightness(&img, 1.0f);
    if (op == 1) AdjustContrast(&img, 1.0f);
    if (op == 2) AdjustSaturation(&img, 1.0f);
    if (op == 3) AdjustSharpness(&img, 1.0f, &scratch);
    EXPECT_EQ(Pixels(img), Pixels(ref)) << "op " << op;
  }
}

TEST(ColorTest, BrightnessTruncatesAndClips) {
  RgbImage img;
  img.Resize(2, 1);
  const uint8_t v[6] = {0, 1, 100, 200, 255, 7};
  std::copy(v, v + 6, img.data());
  AdjustBrightness(&img, 1.5f);
  const uint8_t want[6] = {0, 1, 150, 255, 255, 10};  // 1.5 -> 1, 10.5 -> 10, clipped at 255
  EXPECT_EQ(std::vector<uint8_t>(img.data(), img.data() + 6), std::vector<uint8_t>(want, want + 6));
}

TEST(ColorTest, GrayscaleUsesPillowLuma) {
  RgbImage img;
  img.Resize(1, 1);
  img.data()[0] = 10, img.data()[1] = 200, img.data()[2] = 37;
  ToGrayscale(&img);
  // (10 * 19595 + 200 * 38470 + 37 * 7471 + 32768) >> 16 = 125 (Pillow's convert("L")).
  EXPECT_EQ(img.data()[0], 125);
  EXPECT_EQ(img.data()[1], 125);
  EXPECT_EQ(img.data()[2], 125);
}

TEST(ColorTest, PosterizeAndSolarize) {
  RgbImage img;
  img.Resize(1, 1);
  img.data()[0] = 0xB7, img.data()[1] = 0x7F, img.data()[2] = 0x80;
  Posterize(&img, 3);
  EXPECT_EQ(img.data()[0], 0xA0);
  EXPECT_EQ(img.data()[1], 0x60);
  EXPECT_EQ(img.data()[2], 0x80);
  img.data()[0] = 127, img.data()[1] = 128, img.data()[2] = 255;
  Solarize(&img, 128);
  EXPECT_EQ(img.data()[0], 127);
  EXPECT_EQ(img.data()[1], 127);
  EXPECT_EQ(img.data()[2], 0);
}

TEST(ColorTest, AutocontrastStretchesEachChannel) {
  RgbImage img = Gradient(40, 30);
  Autocontrast(&img);
  for (int c = 0; c < 3; ++c) {
    int lo = 255, hi = 0;
    for (int y = 0; y < img.height(); ++y) {
      for (int x = 0; x < img.width(); ++x) {
        lo = std::min<int>(lo, img.row(y)[x * 3 + c]);
        hi = std::max<int>(hi, img.row(y)[x * 3 + c]);
      }
    }
    EXPECT_EQ(lo, 0) << c;
    // int(hi * scale + offset) in double: 255 or, rounded down, 254 (as Pillow).
    EXPECT_GE(hi, 254) << c;
  }
}

TEST(ColorTest, EqualizeOfAConstantChannelIsTheIdentity) {
  RgbImage img;
  img.Resize(8, 8);
  std::fill(img.data(), img.data() + 8 * 8 * 3, 77);
  Equalize(&img);
  EXPECT_EQ(img.data()[0], 77);
}

TEST(ColorTest, SharpnessKeepsTheBorder) {
  RgbImage img = Gradient(20, 15), scratch;
  for (int i = 0; i < 20 * 15 * 3; i += 7) img.data()[i] = 255;  // edges to sharpen
  RgbImage ref = img;
  AdjustSharpness(&img, 2.0f, &scratch);
  // Pillow's filter copies the border pixels; blending them with themselves is the identity.
  for (int x = 0; x < 20 * 3; ++x) {
    EXPECT_EQ(img.row(0)[x], ref.row(0)[x]);
    EXPECT_EQ(img.row(14)[x], ref.row(14)[x]);
  }
  EXPECT_NE(Pixels(img), Pixels(ref));
}

TEST(ColorTest, HueZeroShiftKeepsGreys) {
  RgbImage img;
  img.Resize(1, 1);
  img.data()[0] = img.data()[1] = img.data()[2] = 99;
  AdjustHue(&img, 0.3);
  EXPECT_EQ(img.data()[0], 99);
  EXPECT_EQ(img.data()[2], 99);
}

TEST(ColorJitterTest, DrawsAPermutationAndFactorsInRange) {
  const Transform t = Transform::ColorJitter({0.6, 1.4}, {1.0, 1.0}, {0.5, 1.5}, {-0.1, 0.1});
  std::set<std::vector<int>> orders;
  for (uint64_t s = 0; s < 2000; ++s) {
    Rng rng(s);
    const ColorJitterParams p = DrawColorJitter(t, &rng);
    std::vector<int> o(p.order.begin(), p.order.end());
    std::vector<int> sorted = o;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<int>{0, 1, 2, 3}));
    orders.insert(o);
    EXPECT_TRUE(p.enabled[0] && !p.enabled[1] && p.enabled[2] && p.enabled[3]);
    EXPECT_GE(p.factor[0], 0.6);
    EXPECT_LT(p.factor[0], 1.4);
    EXPECT_GE(p.factor[3], -0.1);
    EXPECT_LT(p.factor[3], 0.1);
  }
  EXPECT_EQ(orders.size(), 24u);  // every permutation occurs
}

// JitterColors fuses the steps; the reference applies them one after the
// other. Every order of brightness, contrast and saturation (and of all four
// with hue), every subset, factors inside and outside [0, 1], on random and
// flat images under and over saturation's 65536-pixel table size.
std::vector<uint8_t> Sequential(const ColorJitterParams& p, RgbImage img) {
  for (int k : p.order) {
    if (!p.enabled[k]) continue;
    const float f = static_cast<float>(p.factor[k]);
    if (k == 0) AdjustBrightness(&img, f);
    if (k == 1) AdjustContrast(&img, f);
    if (k == 2) AdjustSaturation(&img, f);
    if (k == 3) AdjustHue(&img, p.factor[3]);
  }
  return Pixels(img);
}

std::vector<RgbImage> JitterImages() {
  std::vector<RgbImage> images;
  Rng rng(11);
  // 97 x 61 and 257 x 255 (65535 pixels) blend each sample; 257 x 256 uses the table.
  for (auto [w, h] : {std::pair{97, 61}, std::pair{257, 255}, std::pair{257, 256}}) {
    RgbImage noise;
    noise.Resize(w, h);
    for (int i = 0; i < w * h * 3; ++i) noise.data()[i] = static_cast<uint8_t>(rng.Next() >> 56);
    images.push_back(noise);
    RgbImage flat;
    flat.Resize(w, h);
    for (int i = 0; i < w * h * 3; ++i) flat.data()[i] = static_cast<uint8_t>(i % 3 == 0 ? 200 : 90);
    images.push_back(flat);
  }
  return images;
}

TEST(ColorJitterTest, FusedStepsGiveTheSequentialBytes) {
  const double factors[4] = {0.0, 0.6, 1.4, 1.9};
  std::array<int, 3> order3 = {0, 1, 2};
  int checked = 0;
  for (RgbImage& image : JitterImages()) {
    std::sort(order3.begin(), order3.end());
    do {
      for (int subset = 1; subset < 8; ++subset) {
        // Each pair of steps sees every pair of factors: (i, j, (i + j) % 4).
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) {
            ColorJitterParams p;
            p.order = {order3[0], order3[1], order3[2], 3};
            const double f[3] = {factors[i], factors[j], factors[(i + j) % 4]};
            for (int k = 0; k < 3; ++k) {
              p.enabled[k] = (subset >> k) & 1;
              p.factor[k] = f[k];
            }
            RgbImage img = image;
            JitterColors(p, &img);
            ASSERT_EQ(Pixels(img), Sequential(p, image))
                << image.width() << "x" << image.height() << " order " << order3[0]
                << order3[1] << order3[2] << " subset " << subset << " factors " << f[0]
                << " " << f[1] << " " << f[2];
            ++checked;
          }
        }
      }
    } while (std::next_permutation(order3.begin(), order3.end()));
  }
  EXPECT_EQ(checked, 6 * 6 * 7 * 16);
}

TEST(ColorJitterTest, FusedStepsAroundHueGiveTheSequentialBytes) {
  std::array<int, 4> order = {0, 1, 2, 3};
  std::vector<RgbImage> images = JitterImages();
  do {
    for (int image : {0, 5}) {  // small noise, large flat
      ColorJitterParams p;
      p.order = order;
      for (int k = 0; k < 4; ++k) p.enabled[k] = true;
      p.factor[0] = 1.4;
      p.factor[1] = 0.6;
      p.factor[2] = 1.9;
      p.factor[3] = 0.1;
      RgbImage img = images[image];
      JitterColors(p, &img);
      ASSERT_EQ(Pixels(img), Sequential(p, images[image]))
          << "order " << order[0] << order[1] << order[2] << order[3];
    }
  } while (std::next_permutation(order.begin(), order.end()));
  // The transform draws its parameters and applies them.
  const Transform t = Transform::ColorJitter({0.6, 1.4}, {0.6, 1.4}, {0.6, 1.4}, {-0.1, 0.1});
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Rng draw(seed), apply(seed);
    RgbImage img = images[0], scratch;
    ApplyColorJitter(t, &apply, &img, &scratch);
    EXPECT_EQ(Pixels(img), Sequential(DrawColorJitter(t, &draw), images[0])) << seed;
  }
}

TEST(RandomInvertTest, InvertsWithProbabilityP) {
  const Transform t = MakeTransform("RandomInvert", {0.3}).value();
  RgbImage ref = Gradient(9, 7);
  int inverted = 0;
  for (uint64_t s = 0; s < 4000; ++s) {
    RgbImage img = Gradient(9, 7), scratch;
    Rng rng(s), same(s);
    ApplyRandomInvert(t, &rng, &img, &scratch);
    const bool applied = same.Uniform() < 0.3;  // one draw, as RandomInvert.forward
    EXPECT_EQ(rng.Next(), same.Next());
    for (size_t i = 0; i < Pixels(img).size(); ++i) {
      const uint8_t want = applied ? 255 - ref.data()[i] : ref.data()[i];
      ASSERT_EQ(img.data()[i], want) << "seed " << s << " byte " << i;
    }
    inverted += applied;
  }
  EXPECT_NEAR(inverted / 4000.0, 0.3, 0.03);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Issue 32, item 21: sigma = inf and 1e-320 made every image black (NaN
// kernels); torchvision's kernel gives the box blur and the identity.
TEST(GaussianBlurTest, InfiniteSigmaIsTheBoxBlurAndATinyOneTheIdentity) {
  const RgbImage src = Gradient(19, 13);
  auto blur = [&](double sigma) {
    RgbImage img = src, scratch;
    GaussianBlur(&img, 3, 3, sigma, sigma, &scratch);
    return Pixels(img);
  };
  RgbImage copy = src;
  const std::vector<uint8_t> original = Pixels(copy);
  const double inf = std::numeric_limits<double>::infinity();
  // 1e30: x / sigma underflows to 0, every tap weighs 1 -- the box kernel.
  const std::vector<uint8_t> box = blur(1e30);
  EXPECT_NE(box, original);
  EXPECT_EQ(blur(inf), box);
  EXPECT_EQ(blur(1e300), box);  // finite in double, inf in float32
  EXPECT_EQ(blur(1e-320), original);  // 0 in float32
  EXPECT_EQ(blur(1e-40), original);   // a float32 denormal: exp(-inf) off the centre
  EXPECT_EQ(blur(std::numeric_limits<double>::quiet_NaN()), original);
  // Through the transform, whose sigma is drawn from its range (inf - inf
  // was NaN there).
  for (auto [sigma, want] : {std::pair{inf, &box}, std::pair{1e-320, &original}}) {
    RgbImage img = src, scratch;
    Rng rng(3);
    ApplyGaussianBlur(Transform::GaussianBlur({3, 3}, {sigma, sigma}), &rng, &img, &scratch);
    EXPECT_EQ(Pixels(img), *want) << sigma;
  }
}

}  // namespace
}  // namespace stoker
