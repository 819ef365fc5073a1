// Copyright 2026 The stoker Authors.
#include "source/coco.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::TempDir;
using testing::WriteFile;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Images 9 (8 x 6, two annotations and a crowd), 2 (4 x 4, none) and 5 (one),
// categories 7 "cat" and 3 "dog" (labels: 3 -> 0, 7 -> 1).
const char* const kAnnotations = R"({
  "images": [
    {"id": 9, "file_name": "nine.png", "height": 6, "width": 8},
    {"id": 2, "file_name": "two.png", "height": 4, "width": 4},
    {"id": 5, "file_name": "sub/five.png", "height": 4, "width": 4}
  ],
  "categories": [{"id": 7, "name": "cat"}, {"id": 3, "name": "dog"}],
  "annotations": [
    {"id": 100, "image_id": 9, "category_id": 7, "bbox": [1, 1, 3, 3], "area": 9, "iscrowd": 0,
     "segmentation": [[1, 1, 4, 1, 4, 4, 1, 4]]},
    {"id": 101, "image_id": 5, "category_id": 3, "bbox": [0, 0, 2.5, 1], "area": 2.5,
     "iscrowd": 0, "segmentation": [[0, 0, 2, 0, 2, 2, 0, 2]]},
    {"id": 102, "image_id": 9, "category_id": 3, "bbox": [3, 0, 2, 2], "area": 4, "iscrowd": 0,
     "segmentation": [[3, 0, 5, 0, 5, 2, 3, 2]]},
    {"id": 103, "image_id": 9, "category_id": 3, "bbox": [6, 4, 2, 2], "area": 4, "iscrowd": 1,
     "segmentation": {"size": [6, 8], "counts": [46, 2]}}
  ]
})";

class CocoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeDirs(dir_.path() + "/img/sub");
    // Each image of the size its annotations declare.
    const struct {
      const char* file;
      int w, h;
    } files[] = {{"nine.png", 8, 6}, {"two.png", 4, 4}, {"sub/five.png", 4, 4}};
    for (const auto& f : files) {
      std::vector<uint8_t> expected;
      WriteFile(dir_.path() + "/img/" + f.file,
                testing::EncodePng(testing::MakePixels(f.w, f.h, 1), f.w, f.h, {}, &expected));
    }
  }
  std::string Json(const std::string& text) {
    const std::string p = dir_.path() + "/ann" + std::to_string(files_++) + ".json";
    WriteFile(p, Bytes(text));
    return p;
  }
  StatusOr<std::shared_ptr<CocoSource>> Open(const std::string& text, CocoOptions o = {}) {
    return CocoSource::Open(dir_.path() + "/img", Json(text), o);
  }
  TempDir dir_;
  int files_ = 0;
};

template <typename T>
std::vector<T> Values(const FieldValue& v) {
  std::vector<T> out(v.size / sizeof(T));
  if (v.size) std::memcpy(out.data(), v.data, v.size);
  return out;
}

// torchvision's detection conventions by default: labels are the category
// ids as written (0 is the models' background) and crowds are left out.
TEST_F(CocoTest, DefaultLabelsAreCategoryIdsAndCrowdsAreLeftOut) {
  auto src = Open(kAnnotations);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const CocoSource& c = *src.value();
  EXPECT_EQ(c.category_ids(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(c.category_labels(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(c.num_classes(), 8);
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(c.ReadIndex(2, &scratch, &d).ok());  // image 9: 100 and 102; the crowd 103 left out
  EXPECT_EQ(Values<float>(d.fields[1]), (std::vector<float>{1, 1, 3, 3, 3, 0, 2, 2}));
  EXPECT_EQ(Values<int64_t>(d.fields[2]), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(Values<int64_t>(d.fields[3]), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Values<float>(d.fields[4]), (std::vector<float>{9, 4}));
  EXPECT_EQ(d.fields[1].dims[0], 2);
  CocoOptions from1;
  from1.labels = CocoOptions::Labels::kFrom1;
  src = Open(kAnnotations, from1);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(src.value()->category_labels(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(src.value()->num_classes(), 3);
  ASSERT_TRUE(src.value()->ReadIndex(2, &scratch, &d).ok());
  EXPECT_EQ(Values<int64_t>(d.fields[2]), (std::vector<int64_t>{2, 1}));
}

TEST_F(CocoTest, ACategoryIdZeroIsRefusedAsALabelNamingTheWayOut) {
  std::string text = kAnnotations;  // dog's id 3 becomes 0
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, from.size(), to);
  };
  replace_all("\"id\": 3, \"name\"", "\"id\": 0, \"name\"");
  replace_all("\"category_id\": 3", "\"category_id\": 0");
  auto src = Open(text);
  ASSERT_FALSE(src.ok());
  EXPECT_NE(src.status().message().find("category id 0 (\"dog\") as a label would be the "
                                        "background"), std::string::npos)
      << src.status().message();
  EXPECT_NE(src.status().message().find("1..K"), std::string::npos);
  CocoOptions from1;
  from1.labels = CocoOptions::Labels::kFrom1;
  src = Open(text, from1);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(src.value()->category_labels(), (std::vector<int64_t>{1, 2}));
}

// Contiguous labels from 0 with the crowds kept: every annotation in file order.
CocoOptions ContiguousWithCrowds() {
  CocoOptions o;
  o.labels = CocoOptions::Labels::kFrom0;
  o.drop_crowd = false;
  return o;
}

TEST_F(CocoTest, ImagesInIdOrderWithTheirAnnotations) {
  auto src = Open(kAnnotations, ContiguousWithCrowds());
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const CocoSource& c = *src.value();
  ASSERT_EQ(c.size(), 3);
  EXPECT_EQ(c.image_id(0), 2);
  EXPECT_EQ(c.image_id(1), 5);
  EXPECT_EQ(c.image_id(2), 9);
  EXPECT_EQ(c.category_ids(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(c.classes(), (std::vector<std::string>{"dog", "cat"}));
  const Schema s = c.schema();
  ASSERT_EQ(s.fields.size(), 5u);
  EXPECT_EQ(s.fields[1].target, TargetRole::kBoxes);
  EXPECT_EQ(s.fields[1].box_format, BoxFormat::kXYWH);
  EXPECT_EQ(s.fields[2].target, TargetRole::kPerBox);
  EXPECT_EQ(s.fields[2].follows, "boxes");
  SampleScratch scratch;
  SampleData d;
  // Image 2: no annotations, kept with N = 0.
  ASSERT_TRUE(c.ReadIndex(0, &scratch, &d).ok());
  EXPECT_EQ(d.fields[1].dims[0], 0);
  EXPECT_EQ(d.fields[1].size, 0u);
  EXPECT_GT(d.size, 0u);  // the PNG's bytes
  // Image 9: annotations 100, 102, 103 in file order.
  ASSERT_TRUE(c.ReadIndex(2, &scratch, &d).ok());
  EXPECT_EQ(Values<float>(d.fields[1]),
            (std::vector<float>{1, 1, 3, 3, 3, 0, 2, 2, 6, 4, 2, 2}));
  EXPECT_EQ(Values<int64_t>(d.fields[2]), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(Values<int64_t>(d.fields[3]), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(Values<float>(d.fields[4]), (std::vector<float>{9, 4, 4}));
  EXPECT_EQ(d.fields[1].dims[0], 3);
  EXPECT_EQ(d.fields[1].dims[1], 4);
}

TEST_F(CocoTest, DropEmptyLeavesOutImagesWithoutAnnotations) {
  CocoOptions o;
  o.drop_empty = true;
  auto src = Open(kAnnotations, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ASSERT_EQ(src.value()->size(), 2);
  EXPECT_EQ(src.value()->image_id(0), 5);
  EXPECT_EQ(src.value()->image_id(1), 9);
}

TEST_F(CocoTest, SemanticMaskLabelsCrowdsAndOverlaps) {
  CocoOptions o = ContiguousWithCrowds();
  o.masks = CocoOptions::Masks::kSemantic;
  auto src = Open(kAnnotations, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(src.value()->ReadIndex(2, &scratch, &d).ok());
  const FieldValue& m = d.fields[5];
  ASSERT_EQ(m.ndim, 2);
  ASSERT_EQ(m.dims[0], 6);
  ASSERT_EQ(m.dims[1], 8);
  // cat (label 1 -> 2) at columns 1..3 rows 1..3; dog (label 0 -> 1) at
  // columns 3..4 rows 0..1: (x 3, y 1) is covered by both -> 255; the crowd
  // RLE [46, 2] (column-major: skip 46 pixels, set 2) covers column 7, rows
  // 4 and 5 -> 255.
  const std::vector<uint8_t> want = {
      0, 0, 0, 1, 1, 0, 0, 0,
      0, 2, 2, 255, 1, 0, 0, 0,
      0, 2, 2, 2, 0, 0, 0, 0,
      0, 2, 2, 2, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 255,
      0, 0, 0, 0, 0, 0, 0, 255,
  };
  EXPECT_EQ(Values<uint8_t>(m), want);
}

TEST_F(CocoTest, InstanceMasksOnePerAnnotation) {
  CocoOptions o;
  o.masks = CocoOptions::Masks::kInstances;
  auto src = Open(kAnnotations, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(src.value()->schema().fields[5].name, "masks");
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(src.value()->ReadIndex(1, &scratch, &d).ok());  // image 5: 4 x 4, one square
  const FieldValue& m = d.fields[5];
  ASSERT_EQ(m.ndim, 3);
  EXPECT_EQ(m.dims[0], 1);
  EXPECT_EQ(Values<uint8_t>(m), (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 0, 0,
                                                      0, 0, 0, 0, 0, 0, 0, 0}));
}

// By default the semantic mask holds the category ids, and a crowd left out
// of the boxes still marks its pixels ignored; the instance masks are one per
// box (the crowd's is not there).
TEST_F(CocoTest, DefaultMasksFollowTheLabelsAndTheKeptBoxes) {
  CocoOptions o;
  o.masks = CocoOptions::Masks::kSemantic;
  auto src = Open(kAnnotations, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(src.value()->ReadIndex(2, &scratch, &d).ok());
  const std::vector<uint8_t> want = {
      0, 0, 0, 3, 3, 0, 0, 0,
      0, 7, 7, 255, 3, 0, 0, 0,
      0, 7, 7, 7, 0, 0, 0, 0,
      0, 7, 7, 7, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 255,
      0, 0, 0, 0, 0, 0, 0, 255,
  };
  EXPECT_EQ(Values<uint8_t>(d.fields[5]), want);
  o.masks = CocoOptions::Masks::kInstances;
  src = Open(kAnnotations, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ASSERT_TRUE(src.value()->ReadIndex(2, &scratch, &d).ok());
  EXPECT_EQ(d.fields[5].dims[0], 2);
  const std::vector<uint8_t> planes = Values<uint8_t>(d.fields[5]);
  ASSERT_EQ(planes.size(), 2u * 48);
  EXPECT_EQ(planes[1 * 8 + 1], 1);       // the cat's square in plane 0
  EXPECT_EQ(planes[48 + 0 * 8 + 3], 1);  // the dog's in plane 1
  for (size_t i = 0; i < planes.size(); ++i) {
    EXPECT_EQ(planes[i] != 0 && (i % 48) / 8 >= 4, false) << "the crowd's pixels at " << i;
  }
}

TEST_F(CocoTest, CompressedRleSegmentation) {
  // "0<0" = counts [0, 12, 0]... as a string: '0' 0, '<' 12, '4' 4 -> [0, 12, 4]:
  // the first 12 pixels of a 4 x 4 image in column order = columns 0..2.
  CocoOptions o;
  o.masks = CocoOptions::Masks::kSemantic;
  auto src = Open(R"({"images": [{"id": 1, "file_name": "two.png", "height": 4, "width": 4}],
    "categories": [{"id": 1}], "annotations": [{"id": 1, "image_id": 1, "category_id": 1,
    "bbox": [0, 0, 3, 4], "segmentation": {"size": [4, 4], "counts": "0<4"}}]})", o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(src.value()->ReadIndex(0, &scratch, &d).ok());
  EXPECT_EQ(Values<uint8_t>(d.fields[5]),
            (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0}));
}

TEST_F(CocoTest, BadInputNamesTheImageOrAnnotation) {
  const std::string head = R"({"categories": [{"id": 1}], )";
  struct Case {
    std::string json, needle;
  } cases[] = {
      {head + R"("images": [{"id": 4, "height": 2, "width": 2}], "annotations": []})",
       "image id 4 has no file_name"},
      {head + R"("images": [{"id": 4, "file_name": "two.png"}],
         "annotations": [{"id": 8, "image_id": 5, "category_id": 1, "bbox": [0, 0, 1, 1]}]})",
       "annotation id 8 is of image id 5, which is not in \"images\""},
      {head + R"("images": [{"id": 4, "file_name": "two.png"}],
         "annotations": [{"id": 8, "image_id": 4, "category_id": 2, "bbox": [0, 0, 1, 1]}]})",
       "annotation id 8 (image id 4) has category_id 2, which is not in \"categories\""},
      {head + R"("images": [{"id": 4, "file_name": "two.png"}],
         "annotations": [{"id": 8, "image_id": 4, "category_id": 1, "bbox": [0, 0, -1, 1]}]})",
       "annotation id 8 (image id 4): bbox [0, 0, -1, 1] has a negative width or height"},
      {head + R"("images": [{"id": 4, "file_name": "two.png"}, {"id": 4, "file_name": "x"}],
         "annotations": []})",
       "image id 4 appears twice"},
      {"[1, 2", "not a valid JSON document"},
  };
  for (const Case& c : cases) {
    auto src = Open(c.json);
    ASSERT_FALSE(src.ok()) << c.json;
    EXPECT_EQ(src.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(src.status().message().find(c.needle), std::string::npos)
        << src.status().message();
  }
}

// A declared size that is not the file's is the sample's error, found from
// the image's header before any mask is rasterised (a 1 KB file declaring
// 16000 x 16000 once cost GBs first), with masks or without (the boxes would
// be in another frame).
TEST_F(CocoTest, ADeclaredSizeThatIsNotTheFilesIsRefusedBeforeRasterising) {
  for (const auto masks : {CocoOptions::Masks::kInstances, CocoOptions::Masks::kSemantic,
                           CocoOptions::Masks::kNone}) {
    CocoOptions o;
    o.masks = masks;
    auto src = Open(R"({"images": [{"id": 3, "file_name": "two.png", "height": 16000,
      "width": 16000}], "categories": [{"id": 1}], "annotations": [{"id": 1, "image_id": 3,
      "category_id": 1, "bbox": [0, 0, 2, 2], "segmentation": [[0, 0, 16000, 0, 16000, 16000,
      0, 16000]]}]})", o);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    SampleScratch scratch;
    SampleData d;
    const Status st = src.value()->ReadIndex(0, &scratch, &d);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("declare 16000x16000 (width x height) for image id 3, the file "
                                "is 4x4"), std::string::npos) << st.message();
    EXPECT_LT(scratch.field_bytes.empty() ? 0 : scratch.field_bytes[0].capacity(), 1u << 20)
        << "a mask was rasterised at the declared size";
  }
}

TEST_F(CocoTest, MissingImageFileIsAnErrorOfItsSample) {
  auto src = Open(R"({"images": [{"id": 1, "file_name": "gone.png"}], "categories": [],
                      "annotations": []})");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  SampleScratch scratch;
  SampleData d;
  const Status st = src.value()->ReadIndex(0, &scratch, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gone.png"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace stoker
