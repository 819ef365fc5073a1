// Copyright 2026 The stoker Authors.
//
// SampleProcessor: a PNG or a JPEG region decoded row by row into the
// resampler gives the bytes of the buffered path, for every
// PNG flavour, JPEG colour model and DCT scale and the usual geometric chains,
// and never holds the decoded image.
#include "program/sample_processor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "stoker/transform_schema.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using Bytes = std::vector<uint8_t>;
using testing::EncodeJpeg;
using testing::EncodePng;
using testing::JpegSpec;
using testing::MakePixels;
using testing::PngSpec;

struct Output {
  Status status;
  Bytes slot;
  size_t scratch = 0;  // processor scratch after the sample (its high-water mark)
};

// Runs one sample through a fresh processor made with `config`; `seed` feeds
// the sample's random stream (the same draws on both paths).
Output ProcessOnce(const Bytes& file, const ProcessorConfig& config, uint64_t seed) {
  int h = 0, w = 0;
  Output out;
  out.status = StaticOutputSize(config.transforms, &h, &w);
  if (!out.status.ok()) return out;
  PixelWriter writer(DType::kUint8, Layout::kNHWC, h, w, /*normalize=*/false, {0, 0, 0},
                     {1, 1, 1});
  SampleProcessor processor(config, &writer);
  SampleData sample;
  sample.bytes = file.data();
  sample.size = file.size();
  out.slot.assign(writer.sample_bytes(), 0xAB);
  Rng rng(seed);
  StageTimes times;
  out.status = processor.Process(sample, &rng, out.slot.data(), &times);
  out.scratch = processor.scratch_bytes();
  return out;
}

Output ProcessOnce(const Bytes& file, const std::vector<Transform>& transforms, bool stream,
                   uint64_t seed, size_t budget = size_t{64} << 20, bool dct_scaling = true) {
  ProcessorConfig config;
  config.dct_scaling = dct_scaling;
  config.transforms = transforms;
  config.stream_rows = stream;
  config.stream_rows_min_bytes = 0;  // the test images are small: stream them too
  config.scratch_budget = budget;
  config.timing = false;
  return ProcessOnce(file, config, seed);
}

std::vector<std::vector<Transform>> Chains() {
  return {
      {Transform::RandomResizedCrop(24, 24)},
      {Transform::RandomResizedCrop(17, 31), Transform::RandomHorizontalFlip()},
      {Transform::Resize(40), Transform::CenterCrop(32, 32)},
      {Transform::Resize(23), Transform::CenterCrop(19, 21), Transform::RandomVerticalFlip()},
      {Transform::CenterCrop(13, 29)},                // crop only, no resample
      {Transform::Resize(150, 90)},                   // upscales the small images
      {Transform::RandomResizedCrop(16, 16),          // photometric: through out_
       Transform::ColorJitter({0.6, 1.4}, {0.6, 1.4}, {0.6, 1.4}, {-0.1, 0.1})},
  };
}

struct Flavour {
  int color_type, bit_depth;
  bool trns, interlaced;
};

std::string Name(const Flavour& f) {
  return "colour type " + std::to_string(f.color_type) + ", " + std::to_string(f.bit_depth) +
         " bits" + (f.trns ? ", tRNS" : "") + (f.interlaced ? ", interlaced" : "");
}

TEST(SampleProcessorPngRowsTest, StreamedRowsAreBitIdenticalToTheWholeImagePath) {
  std::vector<Flavour> flavours;
  for (int d : {1, 2, 4, 8, 16}) flavours.push_back({0, d, false, false});
  for (int d : {8, 16}) flavours.push_back({2, d, false, false});
  for (int d : {1, 4, 8}) flavours.push_back({3, d, d == 8, false});
  flavours.push_back({4, 8, false, false});
  flavours.push_back({4, 16, false, false});
  flavours.push_back({6, 8, false, false});
  flavours.push_back({6, 16, false, false});
  flavours.push_back({2, 8, false, true});  // interlaced: whole-image path on both sides
  flavours.push_back({3, 4, true, true});
  const int sizes[][2] = {{97, 61}, {61, 97}, {33, 33}, {250, 180}, {31, 400}};
  const auto chains = Chains();
  int streamed_cases = 0;
  for (const Flavour& f : flavours) {
    for (const auto& wh : sizes) {
      const int w = wh[0], h = wh[1];
      PngSpec spec;
      spec.color_type = f.color_type;
      spec.bit_depth = f.bit_depth;
      spec.trns = f.trns;
      spec.interlaced = f.interlaced;
      Bytes expected;
      const Bytes png = EncodePng(MakePixels(w, h, w * 7 + h), w, h, spec, &expected);
      {
        ImageDecoder probe;
        ImageHeader hdr;
        ASSERT_TRUE(probe.Open(png.data(), png.size(), &hdr).ok());
        ASSERT_EQ(probe.CanDecodeRows(), !f.interlaced) << Name(f);
      }
      for (size_t c = 0; c < chains.size(); ++c) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
          const Output whole = ProcessOnce(png, chains[c], /*stream=*/false, seed);
          const Output rows = ProcessOnce(png, chains[c], /*stream=*/true, seed);
          ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
          ASSERT_TRUE(rows.status.ok()) << rows.status.ToString();
          ASSERT_EQ(whole.slot, rows.slot)
              << Name(f) << ", " << w << "x" << h << ", chain " << c << ", seed " << seed;
          if (!f.interlaced) ++streamed_cases;
        }
      }
    }
  }
  EXPECT_GT(streamed_cases, 1000);
}

TEST(SampleProcessorJpegRowsTest, StreamedRowsAreBitIdenticalToTheRegionPath) {
  std::vector<JpegSpec> specs(5);
  specs[1].subsampling = 420;
  specs[2].subsampling = 422;
  specs[2].progressive = true;
  specs[3].color = JpegSpec::kGray;
  specs[4].color = JpegSpec::kCmyk;
  const int sizes[][2] = {{97, 61}, {250, 180}, {31, 400}, {640, 480}};
  const auto chains = Chains();
  for (size_t k = 0; k < specs.size(); ++k) {
    for (const auto& wh : sizes) {
      const int w = wh[0], h = wh[1];
      const Bytes jpeg = EncodeJpeg(MakePixels(w, h, w + 3 * h), w, h, specs[k]);
      for (size_t c = 0; c < chains.size(); ++c) {
        for (bool dct : {false, true}) {
          for (uint64_t seed = 1; seed <= 3; ++seed) {
            const Output whole = ProcessOnce(jpeg, chains[c], false, seed, size_t{64} << 20, dct);
            const Output rows = ProcessOnce(jpeg, chains[c], true, seed, size_t{64} << 20, dct);
            ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
            ASSERT_TRUE(rows.status.ok()) << rows.status.ToString();
            ASSERT_EQ(whole.slot, rows.slot) << "spec " << k << ", " << w << "x" << h
                                             << ", chain " << c << ", dct " << dct
                                             << ", seed " << seed;
          }
        }
      }
    }
  }
}

// A JPEG whose Resize + CenterCrop region (no DCT scaling) is far above a
// small budget: streamed, the scratch stays within it.
TEST(SampleProcessorJpegRowsTest, LargeJpegRegionScratchStaysWithinTheBudget) {
  const int w = 2400, h = 1600;
  const Bytes jpeg = EncodeJpeg(MakePixels(w, h, 6), w, h, JpegSpec{});
  const size_t budget = size_t{2} << 20;
  const std::vector<Transform> chain = {Transform::Resize(40), Transform::CenterCrop(32, 32)};
  const Output rows = ProcessOnce(jpeg, chain, true, 1, budget, /*dct_scaling=*/false);
  const Output whole = ProcessOnce(jpeg, chain, false, 1, budget, /*dct_scaling=*/false);
  ASSERT_TRUE(rows.status.ok()) << rows.status.ToString();
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  EXPECT_EQ(rows.slot, whole.slot);
  EXPECT_LE(rows.scratch, budget);
  EXPECT_GE(whole.scratch, static_cast<size_t>(1280) * 1280 * 3);  // the 80% crop's region
}

// A PNG well above the budget: streamed, the processor's scratch after the
// sample (vectors only grow, so this is its high-water mark) stays within a
// small budget and is not trimmed; whole, the decoded image alone exceeds it.
TEST(SampleProcessorPngRowsTest, LargePngScratchStaysWithinTheBudget) {
  const int w = 2400, h = 1600;  // 11.5 MB of decoded RGB
  Bytes expected;
  const Bytes png = EncodePng(MakePixels(w, h, 5), w, h, PngSpec{}, &expected);
  const size_t budget = size_t{2} << 20;
  const std::vector<std::vector<Transform>> chains = {
      {Transform::Resize(40), Transform::CenterCrop(32, 32)},
      {Transform::RandomResizedCrop(224, 224)},
      {Transform::CenterCrop(224, 224)},
  };
  for (size_t c = 0; c < chains.size(); ++c) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      const Output rows = ProcessOnce(png, chains[c], /*stream=*/true, seed, budget);
      const Output whole = ProcessOnce(png, chains[c], /*stream=*/false, seed, budget);
      ASSERT_TRUE(rows.status.ok()) << rows.status.ToString();
      ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
      EXPECT_EQ(rows.slot, whole.slot) << "chain " << c << " seed " << seed;
      EXPECT_LE(rows.scratch, budget) << "chain " << c << " seed " << seed;
      EXPECT_GE(whole.scratch, static_cast<size_t>(w) * h * 3) << "chain " << c;
    }
  }
  // TrimScratch has nothing to free after a streamed sample.
  ProcessorConfig config;
  config.transforms = chains[0];
  config.scratch_budget = budget;
  config.stream_rows_min_bytes = 0;
  PixelWriter writer(DType::kUint8, Layout::kNHWC, 32, 32, false, {0, 0, 0}, {1, 1, 1});
  SampleProcessor processor(config, &writer);
  SampleData sample;
  sample.bytes = png.data();
  sample.size = png.size();
  Bytes slot(writer.sample_bytes());
  Rng rng(9);
  StageTimes times;
  ASSERT_TRUE(processor.Process(sample, &rng, slot.data(), &times).ok());
  EXPECT_FALSE(processor.TrimScratch()) << processor.scratch_bytes();
}

// Only images whose buffered decode would hold stream_rows_min_bytes or more
// are streamed (the buffered path is faster for ordinary photos).
TEST(SampleProcessorPngRowsTest, OnlyImagesAboveTheThresholdAreStreamed) {
  const std::vector<Transform> chain = {Transform::Resize(40), Transform::CenterCrop(32, 32)};
  for (const auto& [w, h] : {std::pair{400, 300}, std::pair{900, 700}}) {
    Bytes expected;
    const Bytes png = EncodePng(MakePixels(w, h, 3), w, h, PngSpec{}, &expected);
    ProcessorConfig config;
    config.transforms = chain;
    config.stream_rows_min_bytes = size_t{1} << 20;  // 400x300: 0.36 MB; 900x700: 1.9 MB
    const Output out = ProcessOnce(png, config, /*seed=*/4);
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    const size_t image = size_t{3} * w * h;
    if (image < config.stream_rows_min_bytes) {
      EXPECT_GE(out.scratch, image) << w << "x" << h << " buffered";
    } else {
      EXPECT_LT(out.scratch, image / 4) << w << "x" << h << " streamed";
    }
  }
}

// Damage below the rows a crop reads is still an error: the streamed decode
// reads the whole image as the whole-image path does, with the same codes.
TEST(SampleProcessorPngRowsTest, DamageBelowTheCropIsStillAnError) {
  const int w = 300, h = 200;
  Bytes expected;
  const Bytes png = EncodePng(MakePixels(w, h, 11), w, h, PngSpec{}, &expected);
  // The IDAT chunks' data (EncodePng splits it into 8 KiB chunks).
  std::vector<size_t> idat;  // offset of each chunk's middle byte
  for (size_t pos = 8; pos + 8 <= png.size();) {
    const size_t n = (size_t{png[pos]} << 24) | (size_t{png[pos + 1]} << 16) |
                     (size_t{png[pos + 2]} << 8) | png[pos + 3];
    if (std::string(png.begin() + pos + 4, png.begin() + pos + 8) == "IDAT") {
      idat.push_back(pos + 8 + n / 2);
    }
    pos += 12 + n;
  }
  ASSERT_GE(idat.size(), 8u);
  // The crop reads rows 90..109; the damage lies in the data of later rows.
  const std::vector<Transform> chain = {Transform::CenterCrop(20, 20)};
  const Output good = ProcessOnce(png, chain, /*stream=*/true, 1);
  ASSERT_TRUE(good.status.ok()) << good.status.ToString();
  for (int pct : {80, 90, 100}) {
    Bytes bad = png;
    bad[idat[(idat.size() - 1) * pct / 100]] ^= 0x5A;
    const Output rows = ProcessOnce(bad, chain, /*stream=*/true, 1);
    const Output whole = ProcessOnce(bad, chain, /*stream=*/false, 1);
    EXPECT_EQ(rows.status.code(), StatusCode::kDataLoss) << pct << ": " << rows.status.ToString();
    EXPECT_EQ(rows.status.ToString(), whole.status.ToString()) << pct;
  }
}


// Two resizes (ScaleJitter, then Letterbox) plan two stages, the slow path: the first,
// shrinking 4x or more, still decodes the JPEG at a DCT scale; the pixels stay close to the
// full decode's.
TEST(SampleProcessorSlowPathTest, AShrinkingFirstStageDecodesAtADctScale) {
  const int w = 320, h = 240;
  const Bytes jpeg = EncodeJpeg(MakePixels(w, h, 5), w, h, JpegSpec{95});
  const std::vector<Transform> chain = {
      MakeTransform("ScaleJitter", {ArgValue(60)},
                    {{"scale_range", ArgValue({ArgValue(0.9), ArgValue(1.0)})}})
          .value(),
      Transform::RandomHorizontalFlip(), MakeTransform("Letterbox", {ArgValue(48)}).value()};
  int oh = 0, ow = 0;
  ASSERT_TRUE(StaticOutputSize(chain, &oh, &ow).ok());
  PixelWriter writer(DType::kUint8, Layout::kNHWC, oh, ow, false, {0, 0, 0}, {1, 1, 1});
  Bytes out[2];
  int denom[2] = {0, 0};
  for (int dct = 0; dct < 2; ++dct) {
    ProcessorConfig config;
    config.dct_scaling = dct == 1;
    config.transforms = chain;
    config.timing = false;
    SampleProcessor processor(config, &writer);
    SampleData sample;
    sample.bytes = jpeg.data();
    sample.size = jpeg.size();
    out[dct].assign(writer.sample_bytes(), 0);
    Rng rng(7);
    StageTimes times;
    ASSERT_TRUE(processor.Process(sample, &rng, out[dct].data(), &times).ok());
    denom[dct] = processor.last_scale_denom();
  }
  EXPECT_EQ(denom[0], 1);
  EXPECT_GE(denom[1], 2);
  double sum = 0;
  int diff = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    const int d = std::abs(int(out[0][i]) - int(out[1][i]));
    sum += d;
    diff += d != 0;
  }
  EXPECT_GT(diff, 0);
  EXPECT_LT(sum / out[0].size(), 4.0);
  // The letterbox's border (rows above and below a 48 x 36 image) is the fill colour.
  EXPECT_EQ(out[1][0], 114);
  EXPECT_EQ(out[1][out[1].size() - 1], 114);
}

// Raw pixels of only the rectangle RawRegion() names (what a video frame's
// conversion to RGB makes) give the bytes the whole image gives, for every
// chain; chains off the fast path (padding, several resizes) need the whole
// image. A region missing a column the taps read is an internal error.
TEST(SampleProcessorRawRegionTest, TheRegionsPixelsGiveTheWholeImagesOutput) {
  std::vector<std::vector<Transform>> chains = Chains();
  chains.push_back({Transform::Resize(40), Transform::RandomResizedCrop(12, 12)});  // 2 stages
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{64, 48}, {101, 57}}) {
    const Bytes image = MakePixels(w, h, 7);
    const ptrdiff_t stride = static_cast<ptrdiff_t>(w) * 3;
    for (size_t c = 0; c < chains.size(); ++c) {
      ProcessorConfig config;
      config.transforms = chains[c];
      config.timing = false;
      int oh = 0, ow = 0;
      ASSERT_TRUE(StaticOutputSize(config.transforms, &oh, &ow).ok());
      PixelWriter writer(DType::kUint8, Layout::kNCHW, oh, ow, false, {0, 0, 0}, {1, 1, 1});
      SampleProcessor processor(config, &writer);
      int smaller = 0;
      for (uint64_t seed = 0; seed < 24; ++seed) {
        SCOPED_TRACE("chain " + std::to_string(c) + ", " + std::to_string(w) + "x" +
                     std::to_string(h) + ", seed " + std::to_string(seed));
        SampleData whole;
        whole.pixels = image.data();
        whole.pixel_width = w;
        whole.pixel_height = h;
        whole.pixel_stride = stride;
        Bytes expect(writer.sample_bytes(), 0xAB), got(writer.sample_bytes(), 0xCD);
        Rng a(seed), b(seed);
        StageTimes times;
        ASSERT_TRUE(processor.Process(whole, &a, expect.data(), &times).ok());
        StatusOr<Rect> region = processor.RawRegion(w, h, Rng(seed));
        ASSERT_TRUE(region.ok()) << region.status().ToString();
        const Rect r = region.value();
        ASSERT_TRUE(r.x >= 0 && r.y >= 0 && r.right() <= w && r.bottom() <= h && r.width > 0);
        if (r.width * r.height < w * h) ++smaller;
        // Only the region's pixels, in a buffer of their own (rows r.width * 3 apart).
        Bytes part(static_cast<size_t>(r.width) * 3 * r.height + 16, 0);
        for (int y = 0; y < r.height; ++y) {
          std::memcpy(part.data() + static_cast<size_t>(y) * r.width * 3,
                      image.data() + (r.y + y) * stride + r.x * 3,
                      static_cast<size_t>(r.width) * 3);
        }
        SampleData sample = whole;
        sample.pixels = part.data();
        sample.pixel_stride = static_cast<ptrdiff_t>(r.width) * 3;
        ASSERT_TRUE(processor.ProcessRegion(sample, r, &b, got.data(), &times).ok());
        EXPECT_EQ(got, expect);
        if (r.width > 1) {  // one column short of what the taps read
          Rect short_by_one = r;
          short_by_one.x += 1;
          short_by_one.width -= 1;
          sample.pixels = part.data() + 3;
          Rng d(seed);
          EXPECT_EQ(processor.ProcessRegion(sample, short_by_one, &d, got.data(), &times).code(),
                    StatusCode::kInternal);
        }
      }
      // RandomResizedCrop on the fast path reads less than the image for most draws.
      if (c < 2) {
        EXPECT_GT(smaller, 12);
      }
      if (c + 1 == chains.size()) {
        EXPECT_EQ(smaller, 0);  // two stages: the whole image
      }
    }
  }
}

}  // namespace
}  // namespace stoker
