// Copyright 2026 The stoker Authors.
#include "synth/synth.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

namespace stoker {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Helpers.

struct Decoded {
  bool ok = false;
  int width = 0;
  int height = 0;
  int components = 0;
  int h_samp[3] = {0, 0, 0};
  int v_samp[3] = {0, 0, 0};
  std::vector<uint8_t> rgb;
};

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void ErrorExit(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<ErrorManager*>(cinfo->err)->jump, 1);
}

void Silent(j_common_ptr) {}

// Decodes with plain libjpeg; Decoded::ok is false for a corrupt stream.
// No C++ objects with destructors live in the frames a longjmp may skip.
bool DecodeInto(const std::vector<uint8_t>& jpeg, Decoded* out) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = ErrorExit;
  err.pub.output_message = Silent;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));  // NOLINT
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  out->width = static_cast<int>(cinfo.image_width);
  out->height = static_cast<int>(cinfo.image_height);
  out->components = cinfo.num_components;
  for (int c = 0; c < std::min(3, cinfo.num_components); ++c) {
    out->h_samp[c] = cinfo.comp_info[c].h_samp_factor;
    out->v_samp[c] = cinfo.comp_info[c].v_samp_factor;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const size_t stride = static_cast<size_t>(cinfo.output_width) * cinfo.output_components;
  out->rgb.resize(stride * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->rgb.data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

Decoded Decode(const std::vector<uint8_t>& jpeg) {
  Decoded d;
  d.ok = DecodeInto(jpeg, &d);
  return d;
}

double Psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    se += d * d;
  }
  const double mse = se / static_cast<double>(a.size());
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh directory under /tmp, removed with everything in it afterwards.
class SynthFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stoker_synth_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  fs::path root_;
};

// ---------------------------------------------------------------------------
// In-memory images.

TEST(SynthesizePixelsTest, IsDeterministicAndSized) {
  const std::vector<uint8_t> a = SynthesizePixels(123, 77, 42);
  const std::vector<uint8_t> b = SynthesizePixels(123, 77, 42);
  ASSERT_EQ(a.size(), 123u * 77u * 3u);
  EXPECT_EQ(a, b);
}

TEST(SynthesizePixelsTest, HasStructureAndTexture) {
  // Not flat and not saturated: many distinct values per channel, and a mean
  // absolute difference between horizontal neighbours that is neither
  // gradient-smooth (< 2) nor pure noise (> 40).
  const int w = 500, h = 375;
  const std::vector<uint8_t> p = SynthesizePixels(w, h, 3);
  std::set<uint8_t> values(p.begin(), p.end());
  EXPECT_GT(values.size(), 150u);
  double diff = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 1; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        diff += std::abs(p[(y * w + x) * 3 + c] - p[(y * w + x - 1) * 3 + c]);
      }
    }
  }
  diff /= static_cast<double>(h) * (w - 1) * 3;
  EXPECT_GT(diff, 2.0);
  EXPECT_LT(diff, 40.0);
}

TEST(SynthesizeJpegTest, IsDeterministic) {
  const std::vector<uint8_t> a = SynthesizeJpeg(500, 375, 7, 90);
  const std::vector<uint8_t> b = SynthesizeJpeg(500, 375, 7, 90);
  ASSERT_GT(a.size(), 4u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0], 0xFF);
  EXPECT_EQ(a[1], 0xD8);  // SOI
  EXPECT_EQ(a[a.size() - 2], 0xFF);
  EXPECT_EQ(a[a.size() - 1], 0xD9);  // EOI
  EXPECT_EQ(SynthesizeJpeg(64, 48, 7, 75, 420), SynthesizeJpeg(64, 48, 7, 75, 420));
}

TEST(SynthesizeJpegTest, DifferentSeedsGiveDifferentImages) {
  // Same class (seeds differ in the low bits), other classes, large seeds.
  const uint64_t seeds[] = {0, 1, 2, uint64_t{1} << 20, 12345, ~uint64_t{0}};
  std::vector<std::vector<uint8_t>> pixels, jpegs;
  for (uint64_t seed : seeds) {
    pixels.push_back(SynthesizePixels(160, 120, seed));
    jpegs.push_back(SynthesizeJpeg(160, 120, seed, 90));
  }
  for (size_t i = 0; i < pixels.size(); ++i) {
    for (size_t j = i + 1; j < pixels.size(); ++j) {
      EXPECT_NE(jpegs[i], jpegs[j]) << seeds[i] << " vs " << seeds[j];
      // Different throughout, not in a few bytes.
      size_t differing = 0;
      for (size_t k = 0; k < pixels[i].size(); ++k) differing += pixels[i][k] != pixels[j][k];
      EXPECT_GT(differing, pixels[i].size() * 8 / 10) << seeds[i] << " vs " << seeds[j];
    }
  }
}

TEST(SynthesizeJpegTest, DecodesToRequestedDimensions) {
  const int sizes[][2] = {{500, 375}, {375, 500}, {1, 1}, {7, 3}, {33, 17}, {640, 480}, {9, 300}};
  for (const auto& size : sizes) {
    for (int subsampling : {444, 422, 420}) {
      SCOPED_TRACE(std::to_string(size[0]) + "x" + std::to_string(size[1]) + " " +
                   std::to_string(subsampling));
      const Decoded d = Decode(SynthesizeJpeg(size[0], size[1], 99, 90, subsampling));
      ASSERT_TRUE(d.ok);
      EXPECT_EQ(d.width, size[0]);
      EXPECT_EQ(d.height, size[1]);
      EXPECT_EQ(d.components, 3);
    }
  }
}

TEST(SynthesizeJpegTest, EncodesThePixels) {
  const std::vector<uint8_t> pixels = SynthesizePixels(500, 375, 11);
  const Decoded d = Decode(SynthesizeJpeg(500, 375, 11, 90, 444));
  ASSERT_TRUE(d.ok);
  ASSERT_EQ(d.rgb.size(), pixels.size());
  EXPECT_GT(Psnr(d.rgb, pixels), 30.0);
  // Another image's pixels are far off.
  EXPECT_LT(Psnr(d.rgb, SynthesizePixels(500, 375, 12)), 20.0);
}

TEST(SynthesizeJpegTest, SamplingFactors) {
  struct Case {
    int subsampling, h, v;
  };
  for (const Case& c : {Case{444, 1, 1}, Case{422, 2, 1}, Case{420, 2, 2}}) {
    SCOPED_TRACE(c.subsampling);
    const Decoded d = Decode(SynthesizeJpeg(96, 64, 5, 90, c.subsampling));
    ASSERT_TRUE(d.ok);
    EXPECT_EQ(d.h_samp[0], c.h);
    EXPECT_EQ(d.v_samp[0], c.v);
    for (int comp = 1; comp < 3; ++comp) {
      EXPECT_EQ(d.h_samp[comp], 1);
      EXPECT_EQ(d.v_samp[comp], 1);
    }
  }
}

TEST(SynthesizeJpegTest, CompressedSizeIsPhotoLike) {
  // Real photos of this size at quality 90 are ~110 KB; gradients would be a
  // few KB, white noise far more.
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const size_t size = SynthesizeJpeg(500, 375, seed * 7919 + (seed << 20), 90, 444).size();
    EXPECT_GE(size, 40u * 1024) << "seed " << seed;
    EXPECT_LE(size, 200u * 1024) << "seed " << seed;
  }
  // Quality matters as it does for photos.
  EXPECT_LT(SynthesizeJpeg(500, 375, 1, 50).size() * 2, SynthesizeJpeg(500, 375, 1, 90).size());
}

TEST(SynthesizeJpegTest, InvalidArgumentsGiveEmpty) {
  EXPECT_TRUE(SynthesizeJpeg(0, 10, 1, 90).empty());
  EXPECT_TRUE(SynthesizeJpeg(10, -1, 1, 90).empty());
  EXPECT_TRUE(SynthesizeJpeg(70000, 10, 1, 90).empty());
  EXPECT_TRUE(SynthesizeJpeg(10, 10, 1, 0).empty());
  EXPECT_TRUE(SynthesizeJpeg(10, 10, 1, 101).empty());
  EXPECT_TRUE(SynthesizeJpeg(10, 10, 1, 90, 411).empty());
  EXPECT_TRUE(SynthesizePixels(-1, 5, 1).empty());
  EXPECT_TRUE(SynthesizePixels(5, 65501, 1).empty());
  EXPECT_FALSE(SynthesizeJpeg(10, 10, 1, 1).empty());
  EXPECT_FALSE(SynthesizeJpeg(10, 10, 1, 100).empty());
}

// ---------------------------------------------------------------------------
// Folder specs.

TEST(SynthImageSpecTest, SizesVaryAroundTheRequestedSize) {
  const SynthOptions options;  // 500x375
  std::set<int> widths;
  std::set<uint64_t> seeds;
  int taller = 0, subsampled = 0, total = 0;
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 300; ++i) {
      const SynthImageSpec s = SynthImageSpecFor(options, c, i);
      const SynthImageSpec again = SynthImageSpecFor(options, c, i);
      EXPECT_EQ(s.width, again.width);
      EXPECT_EQ(s.height, again.height);
      EXPECT_EQ(s.seed, again.seed);
      EXPECT_EQ(s.subsampling, again.subsampling);
      const bool landscape = s.width >= 400 && s.width <= 600 && s.height >= 300 && s.height <= 450;
      const bool portrait = s.height >= 400 && s.height <= 600 && s.width >= 300 && s.width <= 450;
      EXPECT_TRUE(landscape || portrait) << s.width << "x" << s.height;
      EXPECT_TRUE(s.subsampling == 444 || s.subsampling == 420) << s.subsampling;
      widths.insert(s.width);
      seeds.insert(s.seed);
      taller += s.height > s.width;
      subsampled += s.subsampling == 420;
      ++total;
    }
  }
  EXPECT_GT(widths.size(), 100u);  // the sizes really vary
  EXPECT_EQ(seeds.size(), static_cast<size_t>(total));
  // ~1/6 portrait, plus the few landscape draws with height > width.
  EXPECT_GT(taller, total * 12 / 100);
  EXPECT_LT(taller, total * 28 / 100);
  EXPECT_GT(subsampled, total * 18 / 100);  // ~1/4
  EXPECT_LT(subsampled, total * 32 / 100);
}

TEST(SynthImageSpecTest, DependsOnSeed) {
  SynthOptions a, b;
  b.seed = 1;
  int same = 0;
  for (int i = 0; i < 50; ++i) {
    same += SynthImageSpecFor(a, 0, i).seed == SynthImageSpecFor(b, 0, i).seed;
  }
  EXPECT_EQ(same, 0);
}

TEST(SynthImageSpecTest, ClassesLookDifferent) {
  // Mean colour per class over several images: classes are told apart.
  const SynthOptions options;
  std::vector<std::array<double, 3>> means;
  for (int c = 0; c < 4; ++c) {
    std::array<double, 3> sum = {0, 0, 0};
    for (int i = 0; i < 12; ++i) {
      const SynthImageSpec s = SynthImageSpecFor(options, c, i);
      const std::vector<uint8_t> p = SynthesizePixels(100, 75, s.seed);
      for (size_t k = 0; k < p.size(); ++k) sum[k % 3] += p[k];
    }
    for (double& v : sum) v /= 12.0 * 100 * 75;
    means.push_back(sum);
  }
  for (size_t i = 0; i < means.size(); ++i) {
    for (size_t j = i + 1; j < means.size(); ++j) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k) d2 += (means[i][k] - means[j][k]) * (means[i][k] - means[j][k]);
      EXPECT_GT(std::sqrt(d2), 20.0) << "classes " << i << " and " << j;
    }
  }
}

// ---------------------------------------------------------------------------
// Writing folders.

TEST_F(SynthFolderTest, LayoutAndContents) {
  SynthOptions options;
  options.classes = 3;
  options.images_per_class = 4;
  options.width = 64;
  options.height = 48;
  options.seed = 5;
  const fs::path dir = root_ / "data";  // does not exist yet
  const StatusOr<int64_t> written = WriteSyntheticImageFolder(dir.string(), options);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written.value(), 12);

  std::set<std::string> class_dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    EXPECT_TRUE(e.is_directory()) << e.path();
    class_dirs.insert(e.path().filename().string());
  }
  EXPECT_EQ(class_dirs, (std::set<std::string>{"class_000", "class_001", "class_002"}));

  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    files += e.is_regular_file();
  }
  EXPECT_EQ(files, 12);

  std::set<std::string> distinct;  // the files' bytes
  for (int c = 0; c < 3; ++c) {
    char class_name[32];
    std::snprintf(class_name, sizeof(class_name), "class_%03d", c);
    std::set<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(dir / class_name)) {
      names.insert(e.path().filename().string());
    }
    std::set<std::string> expected;
    for (int i = 0; i < 4; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "img_%06d.jpg", c * 4 + i);
      expected.insert(name);
      const std::vector<uint8_t> bytes = ReadFile(dir / class_name / name);
      const SynthImageSpec s = SynthImageSpecFor(options, c, i);
      EXPECT_EQ(bytes, SynthesizeJpeg(s.width, s.height, s.seed, options.quality, s.subsampling))
          << class_name << "/" << name;
      const Decoded d = Decode(bytes);
      ASSERT_TRUE(d.ok) << name;
      EXPECT_EQ(d.width, s.width);
      EXPECT_EQ(d.height, s.height);
      EXPECT_EQ(d.h_samp[0], s.subsampling == 420 ? 2 : 1);
      EXPECT_EQ(d.v_samp[0], s.subsampling == 420 ? 2 : 1);
      distinct.insert(std::string(bytes.begin(), bytes.end()));
    }
    EXPECT_EQ(names, expected) << "class " << c;
  }
  EXPECT_EQ(distinct.size(), 12u);
}

TEST_F(SynthFolderTest, RepeatableAndOverwrites) {
  SynthOptions options;
  options.classes = 2;
  options.images_per_class = 3;
  options.width = 40;
  options.height = 30;
  const fs::path dir = root_ / "a";
  ASSERT_TRUE(WriteSyntheticImageFolder(dir.string(), options).ok());
  const fs::path victim = dir / "class_001" / "img_000004.jpg";
  const std::vector<uint8_t> original = ReadFile(victim);
  ASSERT_FALSE(original.empty());
  WriteText(victim, "not a jpeg");
  WriteText(dir / "class_001" / "other.txt", "left alone");

  const StatusOr<int64_t> again = WriteSyntheticImageFolder(dir.string(), options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again.value(), 6);
  EXPECT_EQ(ReadFile(victim), original);
  EXPECT_TRUE(fs::exists(dir / "class_001" / "other.txt"));

  // A different seed gives different files.
  options.seed = 1;
  ASSERT_TRUE(WriteSyntheticImageFolder((root_ / "b").string(), options).ok());
  EXPECT_NE(ReadFile(root_ / "b" / "class_001" / "img_000004.jpg"), original);
}

TEST_F(SynthFolderTest, DefaultOptionsWriteTheDefaultDataset) {
  SynthOptions options;
  options.images_per_class = 2;  // keep it quick; the rest stays default
  options.progress = true;       // no TTY under test: prints nothing, changes nothing
  const StatusOr<int64_t> written = WriteSyntheticImageFolder(root_.string(), options);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written.value(), 8);
  EXPECT_TRUE(fs::is_regular_file(root_ / "class_003" / "img_000007.jpg"));
}

TEST_F(SynthFolderTest, TrailingSeparatorsAndNesting) {
  SynthOptions options;
  options.classes = 2;
  options.images_per_class = 1;
  options.width = 24;
  options.height = 24;
  const StatusOr<int64_t> written =
      WriteSyntheticImageFolder((root_ / "x" / "y").string() + "//", options);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written.value(), 2);
  EXPECT_TRUE(fs::is_regular_file(root_ / "x" / "y" / "class_001" / "img_000001.jpg"));
}

TEST_F(SynthFolderTest, ZeroImagesIsFine) {
  SynthOptions options;
  options.classes = 0;
  const StatusOr<int64_t> written = WriteSyntheticImageFolder((root_ / "empty").string(), options);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written.value(), 0);
  EXPECT_TRUE(fs::is_directory(root_ / "empty"));
}

TEST_F(SynthFolderTest, ErrorsNameThePath) {
  SynthOptions options;
  options.classes = 2;
  options.images_per_class = 2;
  options.width = 16;
  options.height = 16;

  // The directory cannot be created: a file is in the way.
  WriteText(root_ / "blocker", "x");
  StatusOr<int64_t> r = WriteSyntheticImageFolder((root_ / "blocker" / "sub").string(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("blocker"), std::string::npos) << r.status().ToString();

  // A class directory is a file.
  fs::create_directories(root_ / "c");
  WriteText(root_ / "c" / "class_001", "x");
  r = WriteSyntheticImageFolder((root_ / "c").string(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("class_001"), std::string::npos) << r.status().ToString();

  // An image path is a directory.
  fs::create_directories(root_ / "d" / "class_000" / "img_000001.jpg");
  r = WriteSyntheticImageFolder((root_ / "d").string(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("img_000001.jpg"), std::string::npos)
      << r.status().ToString();
}

TEST_F(SynthFolderTest, InvalidOptions) {
  const std::string dir = (root_ / "x").string();
  const auto expect_invalid = [&](const SynthOptions& options) {
    const StatusOr<int64_t> r = WriteSyntheticImageFolder(dir, options);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  };
  SynthOptions o;
  o.classes = -1;
  expect_invalid(o);
  o = SynthOptions();
  o.images_per_class = -1;
  expect_invalid(o);
  o = SynthOptions();
  o.images_per_class = kSynthMaxImagesPerClass + 1;
  expect_invalid(o);
  o = SynthOptions();
  o.width = 0;
  expect_invalid(o);
  o = SynthOptions();
  o.height = kSynthMaxSide + 1;
  expect_invalid(o);
  o = SynthOptions();
  o.quality = 0;
  expect_invalid(o);
  o = SynthOptions();
  o.quality = 101;
  expect_invalid(o);
  EXPECT_FALSE(fs::exists(dir));  // nothing was created

  const StatusOr<int64_t> r = WriteSyntheticImageFolder("", SynthOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
