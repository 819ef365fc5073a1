// Copyright 2026 The stoker Authors.
#include "source/shard_records.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "source/shards.h"
#include "testing/test_arrays.h"
#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker {
namespace {

using testing::MakeTar;
using testing::TarEntry;
using testing::TarFilter;
using testing::Text;

TEST(ShardFieldKindTest, FollowsTheLastPartOfTheExtension) {
  auto kind = [](std::vector<std::string> exts) {
    return ShardFieldKind(ShardField{"f", std::move(exts)}).value();
  };
  EXPECT_EQ(kind({"jpg", "PNG"}), FieldKind::kImage);
  EXPECT_EQ(kind({"depth.png"}), FieldKind::kImage);
  EXPECT_EQ(kind({"txt"}), FieldKind::kText);
  EXPECT_EQ(kind({"meta.json"}), FieldKind::kJson);
  EXPECT_EQ(kind({"npy"}), FieldKind::kArray);
  EXPECT_EQ(kind({"cls"}), FieldKind::kLabel);
  EXPECT_EQ(kind({"index"}), FieldKind::kLabel);
  EXPECT_EQ(kind({"mp3"}), FieldKind::kBytes);
  auto mixed = ShardFieldKind(ShardField{"x", {"jpg", "txt"}});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("field 'x'"), std::string::npos);
  EXPECT_FALSE(ShardFieldKind(ShardField{"x", {}}).ok());
  EXPECT_FALSE(ShardFieldKind(ShardField{"x", {".jpg"}}).ok());
  EXPECT_FALSE(ShardSchema({{"a", {"jpg"}}, {"a", {"txt"}}}).ok());  // duplicate name
}

TEST(ShardSchemaTest, TargetsTakeTheirRolesAndAreChecked) {
  ShardField image{"photo", {"jpg"}};
  ShardField mask{"mask", {"mask.png"}};  // a mask is never the primary image, even first
  mask.target = TargetRole::kMask;
  mask.ignore_index = 7;
  ShardField boxes{"b", {"boxes.npy"}};
  boxes.target = TargetRole::kBoxes;
  boxes.box_format = BoxFormat::kCXCYWH;
  ShardField labels{"labels", {"labels.npy"}};
  labels.target = TargetRole::kPerBox;
  labels.follows = "b";
  auto s = ShardSchema({mask, image, boxes, labels});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Schema& schema = s.value();
  EXPECT_EQ(schema.image(), 1);
  EXPECT_EQ(schema.fields[0].target, TargetRole::kMask);
  EXPECT_EQ(schema.fields[0].image_mode, ImageMode::kNative);
  EXPECT_EQ(schema.fields[0].ignore_index, 7);
  EXPECT_EQ(schema.fields[2].target, TargetRole::kBoxes);
  EXPECT_EQ(schema.fields[2].box_format, BoxFormat::kCXCYWH);
  EXPECT_EQ(schema.fields[2].dtype, ElemType::kFloat32);
  EXPECT_EQ(schema.fields[2].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(schema.fields[3].follows, "b");
  // Refusals: an RGB mask, boxes in a text member, per-box rows of no boxes field.
  ShardField rgb_mask = mask;
  rgb_mask.mode_set = true;
  rgb_mask.mode = ImageMode::kRGB;
  EXPECT_FALSE(ShardSchema({image, rgb_mask}).ok());
  ShardField text_boxes{"b", {"txt"}};
  text_boxes.target = TargetRole::kBoxes;
  EXPECT_FALSE(ShardSchema({image, text_boxes}).ok());
  labels.follows = "";  // "boxes": absent
  auto orphan = ShardSchema({image, boxes, labels});
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find("follow the boxes field 'boxes'"), std::string::npos)
      << orphan.status().message();
}

// A bytes member declared with a dtype and shape is raw elements: an array
// field, its size checked, big-endian elements swapped, one -1 dimension
// following from the size.
TEST(ShardSchemaTest, RawMembersAreArraysOfTheirDeclaration) {
  ShardField emb{"emb", {"emb.f32"}};
  emb.declared = true;
  emb.dtype = ElemType::kFloat32;
  emb.shape = {3};
  ShardField be{"be", {"bin"}};
  be.declared = true;
  be.dtype = ElemType::kUint16;
  be.shape = {-1};
  be.big_endian = true;
  const std::vector<ShardField> fields = {emb, be};
  Schema s = ShardSchema(fields).value();
  EXPECT_EQ(s.fields[0].kind, FieldKind::kArray);
  EXPECT_TRUE(s.fields[0].fixed());
  EXPECT_FALSE(s.fields[1].fixed());
  const std::vector<ShardMemberFormat> formats = ShardMemberFormats(fields);
  ASSERT_EQ(formats.size(), 2u);
  EXPECT_TRUE(formats[0].raw && !formats[0].big_endian);
  EXPECT_TRUE(formats[1].raw && formats[1].big_endian);

  const float f[3] = {1.5f, -2.0f, 3.25f};
  std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(f),
                             reinterpret_cast<const uint8_t*>(f) + 12);
  for (uint8_t b : {0x01, 0x02, 0xA0, 0x0B}) bytes.push_back(b);  // big-endian 0x0102, 0xA00B
  const size_t starts[2] = {0, 12};
  int64_t sizes[2] = {12, 4};
  SampleScratch scratch;
  SampleData out;
  ASSERT_TRUE(FillShardRecord(s, bytes.data(), starts, sizes, false, &scratch, &out, &formats)
                  .ok());
  const FieldValue& v0 = out.fields[0];
  EXPECT_EQ(v0.dtype, ElemType::kFloat32);
  EXPECT_EQ(v0.ndim, 1);
  EXPECT_EQ(v0.dims[0], 3);
  EXPECT_EQ(std::memcmp(v0.data, f, 12), 0);
  const FieldValue& v1 = out.fields[1];
  EXPECT_EQ(v1.dims[0], 2);
  uint16_t u[2];
  std::memcpy(u, v1.data, 4);
  EXPECT_EQ(u[0], 0x0102);
  EXPECT_EQ(u[1], 0xA00B);

  sizes[0] = 8;  // 8 bytes for float32 [3] (12)
  Status st = FillShardRecord(s, bytes.data(), starts, sizes, false, &scratch, &out, &formats);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("field 'emb'"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("8 bytes"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("12 bytes"), std::string::npos) << st.ToString();
  sizes[0] = 12;
  sizes[1] = 3;  // not a whole number of uint16
  EXPECT_FALSE(
      FillShardRecord(s, bytes.data(), starts, sizes, false, &scratch, &out, &formats).ok());

  ShardField npy{"x", {"npy"}};
  npy.declared = true;
  npy.shape = {2};
  npy.big_endian = true;  // .npy members carry their own byte order
  EXPECT_FALSE(ShardSchema({npy}).ok());
  ShardField two{"x", {"bin"}};
  two.declared = true;
  two.shape = {-1, -1};
  EXPECT_FALSE(ShardSchema({two}).ok());
}

TEST(ShardSchemaTest, OtherImageFieldsAreNativeUnlessTold) {
  // The primary image ("image", else the first) is RGB; the others native,
  // of the dtype each file holds.
  Schema s = ShardSchema({{"depth", {"depth.png"}}, {"image", {"jpg"}}, {"mask", {"png"}}})
                 .value();
  EXPECT_EQ(s.image(), 1);
  EXPECT_EQ(s.fields[0].image_mode, ImageMode::kNative);
  EXPECT_FALSE(s.fields[0].dtype_known);
  EXPECT_FALSE(s.fields[0].fixed());
  EXPECT_EQ(s.fields[1].image_mode, ImageMode::kRGB);
  EXPECT_EQ(s.fields[2].image_mode, ImageMode::kNative);
  EXPECT_EQ(ShardSchema({{"a", {"png"}}, {"b", {"png"}}}).value().image(), 0);

  // Modes given: a native "image" leaves "b" (unset) the primary one; "rgb"
  // on a secondary field keeps it RGB and untransformed.
  ShardField image{"image", {"png"}};
  image.mode_set = true;
  image.mode = ImageMode::kNative;
  ShardField b{"b", {"png"}};
  s = ShardSchema({image, b}).value();
  EXPECT_EQ(s.image(), 1);
  EXPECT_EQ(s.fields[0].image_mode, ImageMode::kNative);
  s = ShardSchema({image}).value();
  EXPECT_EQ(s.image(), -1);  // no RGB image at all
  ShardField rgb{"c", {"png"}};
  rgb.mode_set = true;
  rgb.mode = ImageMode::kRGB;
  s = ShardSchema({ShardField{"image", {"jpg"}}, rgb}).value();
  EXPECT_EQ(s.image(), 0);
  EXPECT_EQ(s.fields[1].image_mode, ImageMode::kRGB);

  // Declared dtype and shape: fixed; uint8/uint16 HWC only; never on the
  // primary image; a mode on a non-image field is refused.
  ShardField depth{"depth", {"png"}};
  depth.declared = true;
  depth.dtype = ElemType::kUint16;
  depth.shape = {4, 5, 1};
  s = ShardSchema({ShardField{"image", {"jpg"}}, depth}).value();
  EXPECT_TRUE(s.fields[1].fixed());
  EXPECT_EQ(s.fields[1].sample_bytes(), 40u);
  auto refused = [](std::vector<ShardField> f, const char* what) {
    auto r = ShardSchema(f);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().ToString();
  };
  ShardField bad = depth;
  bad.dtype = ElemType::kFloat32;
  refused({bad}, "uint8 or uint16");
  bad = depth;
  bad.shape = {4, 5};
  refused({ShardField{"image", {"jpg"}}, bad}, "(height, width, channels)");
  bad = depth;
  bad.name = "image";
  refused({bad}, "primary");
  ShardField text{"t", {"txt"}};
  text.mode_set = true;
  refused({text}, "image fields only");
}

struct Got {
  Status status;
  int64_t label = -1;
  std::vector<uint8_t> image;
  std::string caption;
  std::string meta;
  ElemType emb_type = ElemType::kUint8;
  std::vector<int64_t> emb_dims;
  std::vector<uint8_t> emb;
  std::vector<std::string> members;  // each field's FieldValue::member
};

// Each sample i: a JPEG (as "x.JPG": extensions match in any case; samples 1
// and 3 also have a PNG, before and after it, which "jpg;png" ranks second), a caption, a
// "meta.json" and an "emb.npy" of float32 [i + 1, 2] (its shape varies),
// under a directory with a dot in its name (the key is cut at the
// basename's first dot). Sample `missing` lacks its caption.
std::vector<uint8_t> RecordShard(int n, int missing, std::vector<std::vector<uint8_t>>* jpegs,
                                 std::vector<std::vector<float>>* embs) {
  std::vector<TarEntry> entries;
  for (int i = 0; i < n; ++i) {
    const std::string key = "d.v1/k" + std::to_string(i);
    const auto pixels = testing::MakePixels(12, 10, i);
    jpegs->push_back(testing::EncodeJpeg(pixels, 12, 10));
    std::vector<uint8_t> decoded;
    if (i == 1) {
      entries.push_back({key + ".png", testing::EncodePng(pixels, 12, 10, {}, &decoded)});
    }
    entries.push_back({key + ".JPG", jpegs->back()});
    if (i == 3) {  // after the JPEG this time
      entries.push_back({key + ".png", testing::EncodePng(pixels, 12, 10, {}, &decoded)});
    }
    if (i != missing) entries.push_back({key + ".txt", Text("caption " + std::to_string(i))});
    entries.push_back({key + ".meta.json", Text("{\"i\": " + std::to_string(i) + "}")});
    std::vector<float> e;
    for (int k = 0; k < 2 * (i + 1); ++k) e.push_back(static_cast<float>(i) + 0.25f * k);
    embs->push_back(e);
    const auto* b = reinterpret_cast<const uint8_t*>(e.data());
    entries.push_back({key + ".emb.npy",
                       testing::NpyBytes("<f4", {i + 1, 2},
                                         std::vector<uint8_t>(b, b + e.size() * sizeof(float)))});
    entries.push_back({key + ".cls", Text(std::to_string(10 + i))});
  }
  return MakeTar(entries);
}

SampleSpec Spec() {
  SampleSpec spec;
  spec.fields = {{"image", {"jpg", "png"}},
                 {"caption", {"txt"}},
                 {"meta", {"meta.json"}},
                 {"emb", {"emb.npy"}},
                 {"label", {"cls"}}};
  return spec;
}

std::vector<Got> ReadAll(const std::shared_ptr<Source>& source) {
  EpochSpec spec;
  auto reader = source->StartEpoch(spec);
  EXPECT_TRUE(reader.ok());
  std::vector<Got> out;
  SampleScratch scratch;
  for (int64_t p = 0;; ++p) {
    SampleData d;
    bool end = false;
    Got g;
    g.status = reader.value()->Read(p, &scratch, &d, &end);
    if (end) break;
    if (g.status.ok()) {
      const Schema schema = source->schema();
      EXPECT_EQ(d.num_fields, 5);
      g.label = d.label;
      g.image.assign(d.bytes, d.bytes + d.size);
      const FieldValue& c = d.fields[schema.Find("caption")];
      g.caption.assign(reinterpret_cast<const char*>(c.data), c.size);
      const FieldValue& m = d.fields[schema.Find("meta")];
      g.meta.assign(reinterpret_cast<const char*>(m.data), m.size);
      const FieldValue& e = d.fields[schema.Find("emb")];
      g.emb_type = e.dtype;
      g.emb_dims.assign(e.dims.begin(), e.dims.begin() + e.ndim);
      g.emb.assign(e.data, e.data + e.size);
      EXPECT_EQ(d.fields[schema.Find("label")].i, d.label);
      for (int f = 0; f < d.num_fields; ++f) g.members.emplace_back(d.fields[f].member);
    }
    out.push_back(std::move(g));
  }
  return out;
}

class ShardRecordsTest : public ::testing::TestWithParam<ShardMode> {};

TEST_P(ShardRecordsTest, EveryFieldIsItsSamplesMember) {
  testing::TempDir tmp;
  const std::string& dir = tmp.path();
  std::vector<std::vector<uint8_t>> jpegs;
  std::vector<std::vector<float>> embs;
  const int kMissing = 2;
  testing::WriteFile(dir + "/a.tar", RecordShard(5, kMissing, &jpegs, &embs));
  ShardOptions o;
  o.patterns = {dir + "/a.tar"};
  o.mode = GetParam();
  o.shuffle_buffer = 0;
  o.spec = Spec();
  auto source = OpenShards(o);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const Schema schema = source.value()->schema();
  ASSERT_EQ(schema.fields.size(), 5u);
  EXPECT_EQ(schema.fields[1].kind, FieldKind::kText);
  EXPECT_EQ(schema.fields[2].kind, FieldKind::kJson);
  EXPECT_EQ(schema.fields[3].kind, FieldKind::kArray);
  EXPECT_FALSE(schema.fields[3].fixed());
  const std::vector<Got> got = ReadAll(source.value());
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const Got& g = got[static_cast<size_t>(i)];
    if (i == kMissing) {
      ASSERT_FALSE(g.status.ok());
      EXPECT_EQ(g.status.code(), StatusCode::kDataLoss);
      EXPECT_NE(g.status.message().find("sample d.v1/k2"), std::string::npos)
          << g.status.message();
      EXPECT_NE(g.status.message().find("field 'caption'"), std::string::npos)
          << g.status.message();
      continue;
    }
    ASSERT_TRUE(g.status.ok()) << i << ": " << g.status.ToString();
    EXPECT_EQ(g.label, 10 + i);
    EXPECT_EQ(g.image, jpegs[static_cast<size_t>(i)]) << i;  // the JPEG, even where a PNG came first
    EXPECT_EQ(g.caption, "caption " + std::to_string(i));
    EXPECT_EQ(g.meta, "{\"i\": " + std::to_string(i) + "}");
    // Each value names its own member (for its errors), as written: the JPEG
    // in its own case, where a PNG of the same key came first or after.
    const std::string key = "d.v1/k" + std::to_string(i);
    EXPECT_EQ(g.members, (std::vector<std::string>{key + ".JPG", key + ".txt", key + ".meta.json",
                                                   key + ".emb.npy", key + ".cls"}));
    EXPECT_EQ(g.emb_type, ElemType::kFloat32);
    EXPECT_EQ(g.emb_dims, (std::vector<int64_t>{i + 1, 2}));
    const auto& e = embs[static_cast<size_t>(i)];
    ASSERT_EQ(g.emb.size(), e.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(g.emb.data(), e.data(), g.emb.size()), 0);
  }
}

TEST_P(ShardRecordsTest, ABadNpyMemberIsAnErrorOfItsSampleNamingTheField) {
  testing::TempDir tmp;
  const std::string& dir = tmp.path();
  std::vector<TarEntry> entries;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "k" + std::to_string(i);
    entries.push_back({key + ".txt", Text("t")});
    entries.push_back({key + ".npy", i == 1 ? Text("not an array")
                                            : testing::NpyBytes("|u1", {1}, {uint8_t(i)})});
  }
  testing::WriteFile(dir + "/a.tar", MakeTar(entries));
  ShardOptions o;
  o.patterns = {dir + "/a.tar"};
  o.mode = GetParam();
  o.spec.fields = {{"t", {"txt"}}, {"x", {"npy"}}};
  auto source = OpenShards(o);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EpochSpec spec;
  auto reader = source.value()->StartEpoch(spec);
  ASSERT_TRUE(reader.ok());
  SampleScratch scratch;
  for (int p = 0; p < 3; ++p) {
    SampleData d;
    bool end = false;
    Status st = reader.value()->Read(p, &scratch, &d, &end);
    ASSERT_FALSE(end);
    if (p == 1) {
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.message().find("sample k1: field 'x' (member k1.npy): not a .npy array"),
                std::string::npos)
          << st.message();
    } else {
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(d.fields[1].data[0], p);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardRecordsTest,
                         ::testing::Values(ShardMode::kIndexed, ShardMode::kStream),
                         [](const auto& info) {
                           return info.param == ShardMode::kIndexed ? std::string("Indexed")
                                                                    : std::string("Stream");
                         });

}  // namespace
}  // namespace stoker
