// Copyright 2026 The stoker Authors.
#include "source/segmentation_folder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "stoker/loader.h"
#include "testing/loader_fixtures.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

constexpr int kW = 6, kH = 4;

// A PNG of kW x kH whose first channel is `value` everywhere (grey: value;
// palette: index value / 16).
std::vector<uint8_t> Png(int value, int color_type) {
  std::vector<uint8_t> rgb(kW * kH * 3, static_cast<uint8_t>(value));
  std::vector<uint8_t> expected;
  testing::PngSpec spec;
  spec.color_type = color_type;
  return testing::EncodePng(rgb, kW, kH, spec, &expected);
}

TEST(SegmentationKeyTest, StemAndSuffix) {
  std::string key;
  ASSERT_TRUE(SegmentationKey("a/b.c/x.png", "", &key));
  EXPECT_EQ(key, "a/b.c/x");
  ASSERT_TRUE(SegmentationKey("aachen/a_1_gtFine_labelIds.png", "_gtFine_labelIds", &key));
  EXPECT_EQ(key, "aachen/a_1");
  EXPECT_FALSE(SegmentationKey("aachen/a_1_gtFine_color.png", "_gtFine_labelIds", &key));
}

TEST(SegmentationFolderTest, PairsByStemInKeyOrder) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/img/sub");
  MakeDirs(r + "/ann/sub");
  WriteFile(r + "/img/b.jpg", {1});
  WriteFile(r + "/img/a.jpg", {1});
  WriteFile(r + "/img/sub/c.JPG", {1});
  WriteFile(r + "/img/notes.txt", {1});  // not an image: ignored
  WriteFile(r + "/ann/a.png", {1});
  WriteFile(r + "/ann/b.png", {1});
  WriteFile(r + "/ann/sub/c.png", {1});
  auto f = SegmentationFolder::Open(r + "/img/", r + "/ann");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f.value()->size(), 3);
  EXPECT_EQ(f.value()->ImagePath(0), r + "/img/a.jpg");
  EXPECT_EQ(f.value()->MaskPath(0), r + "/ann/a.png");
  EXPECT_EQ(f.value()->ImagePath(2), r + "/img/sub/c.JPG");
  EXPECT_EQ(f.value()->MaskPath(2), r + "/ann/sub/c.png");
  const Schema s = f.value()->schema();
  ASSERT_EQ(s.fields.size(), 2u);
  EXPECT_EQ(s.image(), 0);
  EXPECT_EQ(s.fields[1].name, "mask");
  EXPECT_EQ(s.fields[1].target, TargetRole::kMask);
  EXPECT_EQ(s.fields[1].image_mode, ImageMode::kNative);
}

// VOC's layout: JPEGImages holds every image, SegmentationClass the masks of
// some, and ImageSets/Segmentation/train.txt the keys of one split.
TEST(SegmentationFolderTest, ASplitFileTakesItsKeysInItsOrderAndLeavesTheRest) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/JPEGImages");
  MakeDirs(r + "/SegmentationClass");
  for (const char* k : {"a", "b", "c", "d", "e"}) WriteFile(r + "/JPEGImages/" + k + ".jpg", {1});
  for (const char* k : {"b", "c", "d"}) WriteFile(r + "/SegmentationClass/" + k + ".png", {1});
  const std::string split = r + "/train.txt";
  const std::string text = "d\n  b \r\n\n";
  WriteFile(split, std::vector<uint8_t>(text.begin(), text.end()));
  SegmentationFolderOptions o;
  o.split = split;
  auto f = SegmentationFolder::Open(r + "/JPEGImages", r + "/SegmentationClass", o);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f.value()->size(), 2);
  EXPECT_EQ(f.value()->ImagePath(0), r + "/JPEGImages/d.jpg");  // the file's order
  EXPECT_EQ(f.value()->MaskPath(1), r + "/SegmentationClass/b.png");
  // Without the split the unpaired images are an error, as before.
  EXPECT_FALSE(SegmentationFolder::Open(r + "/JPEGImages", r + "/SegmentationClass").ok());
  // Keys it cannot take are named.
  auto refused = [&](const std::string& body) {
    WriteFile(split, std::vector<uint8_t>(body.begin(), body.end()));
    auto g = SegmentationFolder::Open(r + "/JPEGImages", r + "/SegmentationClass", o);
    EXPECT_FALSE(g.ok()) << body;
    return g.ok() ? std::string() : g.status().message();
  };
  EXPECT_NE(refused("b\na\nz\n").find("split " + split + " lists 1 key(s) without an image: 'z'; "
                                       "2 key(s) without a mask: 'a', 'z'"),
            std::string::npos)
      << refused("b\na\nz\n");
  EXPECT_NE(refused("b\nc\nb\n").find("1 key(s) listed twice: 'b'"), std::string::npos);
  EXPECT_NE(refused("\n \n").find("lists no key"), std::string::npos);
  o.split = r + "/missing.txt";
  auto missing = SegmentationFolder::Open(r + "/JPEGImages", r + "/SegmentationClass", o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.txt"), std::string::npos)
      << missing.status().message();
}

TEST(SegmentationFolderTest, MissingStemsAreNamedOnBothSides) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/img");
  MakeDirs(r + "/ann");
  for (const char* k : {"a", "b", "c", "d", "e", "f", "g", "h"}) {
    WriteFile(r + "/img/" + k + ".jpg", {1});
  }
  WriteFile(r + "/ann/a.png", {1});
  WriteFile(r + "/ann/zz.png", {1});
  auto f = SegmentationFolder::Open(r + "/img", r + "/ann");
  ASSERT_FALSE(f.ok());
  const std::string m = f.status().message();
  EXPECT_NE(m.find("7 image(s) without a mask: 'b', 'c', 'd', 'e', 'f' and 2 more"),
            std::string::npos) << m;
  EXPECT_NE(m.find("1 mask(s) without an image: 'zz'"), std::string::npos) << m;
}

TEST(SegmentationFolderTest, CityscapesSuffixes) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/leftImg8bit/aachen");
  MakeDirs(r + "/gtFine/aachen");
  WriteFile(r + "/leftImg8bit/aachen/aachen_000000_000019_leftImg8bit.png", {1});
  for (const char* kind : {"labelIds", "color", "instanceIds"}) {
    WriteFile(r + "/gtFine/aachen/aachen_000000_000019_gtFine_" + kind + ".png", {1});
  }
  SegmentationFolderOptions o;
  o.image_suffix = "_leftImg8bit";
  o.mask_suffix = "_gtFine_labelIds";
  auto f = SegmentationFolder::Open(r + "/leftImg8bit", r + "/gtFine", o);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f.value()->size(), 1);
  EXPECT_EQ(f.value()->MaskPath(0),
            r + "/gtFine/aachen/aachen_000000_000019_gtFine_labelIds.png");
  // Two files of one key in a folder are an error naming both.
  WriteFile(r + "/leftImg8bit/aachen/aachen_000000_000019_leftImg8bit.jpg", {1});
  auto dup = SegmentationFolder::Open(r + "/leftImg8bit", r + "/gtFine", o);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("same key 'aachen/aachen_000000_000019'"),
            std::string::npos) << dup.status().message();
}

// Through the Loader: grey and palette masks arrive as one channel of their
// values / indices, untouched, with their image; an RGB mask is an error
// naming its file.
TEST(SegmentationFolderTest, MasksThroughTheLoader) {
  TempDir dir;
  const std::string r = dir.path();
  MakeDirs(r + "/img");
  MakeDirs(r + "/ann");
  for (int i = 0; i < 6; ++i) {
    std::vector<uint8_t> expected;
    const std::string key = "s" + std::to_string(i);
    WriteFile(r + "/img/" + key + ".png",
              testing::EncodePng(testing::MakePixels(kW, kH, i), kW, kH, {}, &expected));
    // Even samples grey (value 10 i), odd ones palette (index i, value 16 i).
    WriteFile(r + "/ann/" + key + ".png", i % 2 == 0 ? Png(10 * i, 0) : Png(16 * i, 3));
  }
  auto f = SegmentationFolder::Open(r + "/img", r + "/ann");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (int threads : {1, 3}) {
    LoaderOptions o;
    o.batch_size = 2;
    o.threads = threads;
    o.dtype = DType::kUint8;
    o.transforms = {Transform::CenterCrop(kH, kW)};
    auto loader = testing::MakeLoader(f.value(), o);
    ASSERT_TRUE(loader);
    ASSERT_TRUE(loader->Start().ok());
    int seen = 0;
    for (;;) {
      BatchPtr b;
      bool end = false;
      ASSERT_TRUE(loader->Next(&b, &end).ok());
      if (end) break;
      const int mf = b->FindField("mask");
      ASSERT_GE(mf, 0);
      for (int i = 0; i < b->size(); ++i) {
        const int64_t id = b->ids()[i];
        const FieldSlot& m = b->field_sample(mf, i);
        ASSERT_EQ(m.ndim, 2);  // a label map [H, W], as the target path delivers masks
        EXPECT_EQ(m.dims[0], kH);
        EXPECT_EQ(m.dims[1], kW);
        const uint8_t want = static_cast<uint8_t>(id % 2 == 0 ? 10 * id : id);
        EXPECT_EQ(std::vector<uint8_t>(m.data, m.data + m.bytes),
                  std::vector<uint8_t>(kW * kH, want)) << "sample " << id;
        ++seen;
      }
    }
    EXPECT_EQ(seen, 6);
  }
  // An RGB mask.
  std::vector<uint8_t> expected;
  WriteFile(r + "/ann/s3.png", testing::EncodePng(testing::MakePixels(kW, kH, 3), kW, kH, {},
                                                  &expected));
  LoaderOptions o;
  o.batch_size = 6;
  o.transforms = {Transform::CenterCrop(kH, kW)};
  auto loader = testing::MakeLoader(f.value(), o);
  ASSERT_TRUE(loader);
  const testing::Delivered d = testing::RunEpoch(loader.get());
  ASSERT_FALSE(d.status.ok());
  const std::string m = d.status.message();
  EXPECT_NE(m.find(r + "/ann/s3.png"), std::string::npos) << m;
  EXPECT_NE(m.find("one channel, this image decodes to 3 (RGB)"), std::string::npos) << m;
}

}  // namespace
}  // namespace stoker
