// Copyright 2026 The stoker Authors.
//
// Records through the engine (stoker/record.h, pipeline/record_plan.h): a
// source whose samples carry an image, a label, a fixed-shape array, a
// variable-shape array and a text. Every delivered record's fields must come
// from one sample (the label names it), under skip compaction, ranks, both
// caches and any thread count; a bad field is an error naming the sample and
// the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "ops/targets.h"
#include "pipeline/loader_options.h"
#include "pipeline/record_plan.h"
#include "pipeline/record_processor.h"
#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/record.h"
#include "stoker/source.h"
#include "stoker/transform_schema.h"
#include "testing/loader_fixtures.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

constexpr int kW = 20, kH = 16;

// Sample i: pixels MakePixels(kW, kH, i), label i, "pair" int64 [2] =
// {i, 1000 + i}, "ragged" float32 [i % 3 + 1] all i, "caption" text "s<i>"
// (not UTF-8 for the samples in `bad`), read from "s<i>.txt" (its member).
class RecordSource : public RandomAccessSource {
 public:
  RecordSource(int n, std::set<int> bad) : n_(n), bad_(std::move(bad)) {
    for (int i = 0; i < n; ++i) pixels_.push_back(testing::MakePixels(kW, kH, i));
  }
  int64_t size() const override { return n_; }
  std::string Describe() const override { return "RecordSource"; }
  std::string NameOf(int64_t i) const override { return "rec" + std::to_string(i); }
  Schema schema() const override {
    Schema s;
    s.fields = {ImageField("image"), LabelField("label"),
                ArrayField("pair", ElemType::kInt64, {2}),
                ArrayField("ragged", ElemType::kFloat32, {-1}), TextField("caption")};
    return s;
  }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    const int i = static_cast<int>(index);
    scratch->fields.assign(5, FieldValue());
    scratch->field_bytes.resize(5);
    auto& pair = scratch->field_bytes[2];
    const int64_t p[2] = {i, 1000 + i};
    pair.assign(reinterpret_cast<const uint8_t*>(p), reinterpret_cast<const uint8_t*>(p) + 16);
    FieldValue& pv = scratch->fields[2];
    pv.data = pair.data();
    pv.size = 16;
    pv.dtype = ElemType::kInt64;
    pv.ndim = 1;
    pv.dims[0] = 2;
    auto& ragged = scratch->field_bytes[3];
    std::vector<float> r(static_cast<size_t>(i % 3 + 1), static_cast<float>(i));
    ragged.assign(reinterpret_cast<const uint8_t*>(r.data()),
                  reinterpret_cast<const uint8_t*>(r.data()) + r.size() * 4);
    FieldValue& rv = scratch->fields[3];
    rv.data = ragged.data();
    rv.size = ragged.size();
    rv.dtype = ElemType::kFloat32;
    rv.ndim = 1;
    rv.dims[0] = static_cast<int64_t>(r.size());
    auto& text = scratch->field_bytes[4];
    const std::string t = "s" + std::to_string(i);
    text.assign(t.begin(), t.end());
    if (bad_.count(i)) text.push_back(0xFF);
    scratch->fields[4].data = text.data();
    scratch->fields[4].size = text.size();
    scratch->field_members.assign(5, std::string());
    scratch->field_members[4] = "s" + std::to_string(i) + ".txt";  // the caption's own file
    scratch->fields[4].member = scratch->field_members[4];
    *out = SampleData();
    out->id = index;
    out->label = index;
    out->pixels = pixels_[static_cast<size_t>(i)].data();
    out->size = pixels_[static_cast<size_t>(i)].size();
    out->pixel_width = kW;
    out->pixel_height = kH;
    out->pixel_stride = kW * 3;
    out->fields = scratch->fields.data();
    out->num_fields = 5;
    return Status::OK();
  }

 private:
  const int n_;
  const std::set<int> bad_;
  std::vector<std::vector<uint8_t>> pixels_;
};

struct Record {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> pair;
  std::vector<float> ragged;
  std::string caption;
  bool operator==(const Record& o) const {
    return pixels == o.pixels && pair == o.pair && ragged == o.ragged && caption == o.caption;
  }
};

// Label -> record, in delivery order (labels in `order`); the first error.
struct Epoch {
  std::vector<int64_t> order;
  std::map<int64_t, Record> records;
  Status status;
};

Epoch RunRecords(std::shared_ptr<Source> source, const LoaderOptions& o) {
  Epoch e;
  auto loader = Loader::Create(std::move(source), o);
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  if (!loader.ok()) return e;
  EXPECT_TRUE(loader.value()->Start().ok());
  for (;;) {
    BatchPtr b;
    bool end = false;
    e.status = loader.value()->Next(&b, &end);
    if (!e.status.ok() || end) break;
    EXPECT_EQ(b->num_fields(), 3);
    const int pair = b->FindField("pair"), ragged = b->FindField("ragged"),
              caption = b->FindField("caption");
    EXPECT_TRUE(b->field(pair).fixed);
    EXPECT_FALSE(b->field(ragged).fixed);
    for (int i = 0; i < b->size(); ++i) {
      Record r;
      r.pixels.assign(b->sample(i), b->sample(i) + b->sample_bytes(i));
      const int64_t* p = reinterpret_cast<const int64_t*>(b->field_block(pair)) + 2 * i;
      r.pair.assign(p, p + 2);
      const FieldSlot& rs = b->field_sample(ragged, i);
      EXPECT_EQ(rs.ndim, 1);
      const float* f = reinterpret_cast<const float*>(rs.data);
      r.ragged.assign(f, f + rs.dims[0]);
      const FieldSlot& cs = b->field_sample(caption, i);
      r.caption.assign(reinterpret_cast<const char*>(cs.data), cs.bytes);
      const int64_t label = b->labels()[i];
      e.order.push_back(label);
      e.records[label] = std::move(r);
    }
  }
  return e;
}

LoaderOptions Options(int threads) { return testing::SmallAugmentedOptions(threads, 3); }

// Every field of record `label` is sample `label`'s.
void ExpectOwnFields(const Epoch& e) {
  for (const auto& [label, r] : e.records) {
    EXPECT_EQ(r.pair, (std::vector<int64_t>{label, 1000 + label}));
    EXPECT_EQ(r.ragged, std::vector<float>(static_cast<size_t>(label % 3 + 1),
                                           static_cast<float>(label)));
    EXPECT_EQ(r.caption, "s" + std::to_string(label));
  }
}

TEST(RecordTest, FieldsStayWithTheirSampleUnderSkipAndThreads) {
  const std::set<int> bad = {1, 6, 7, 13};
  auto source = std::make_shared<RecordSource>(30, bad);
  LoaderOptions o = Options(1);
  o.on_error = OnError::kSkip;
  const Epoch one = RunRecords(source, o);
  ASSERT_TRUE(one.status.ok()) << one.status.ToString();
  EXPECT_EQ(one.records.size(), 30u - bad.size());
  for (int b : bad) EXPECT_EQ(one.records.count(b), 0u);
  ExpectOwnFields(one);
  for (int threads : {2, 5}) {
    o.threads = threads;
    const Epoch e = RunRecords(source, o);
    EXPECT_EQ(e.order, one.order) << threads << " threads";
    EXPECT_TRUE(e.records == one.records) << threads << " threads";
  }
}

TEST(RecordTest, RanksAndCachesKeepEveryField) {
  const std::set<int> bad = {4, 9};
  auto source = std::make_shared<RecordSource>(26, bad);
  LoaderOptions o = Options(3);
  o.on_error = OnError::kSkip;
  const Epoch whole = RunRecords(source, o);
  ExpectOwnFields(whole);
  std::set<int64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions r = o;
    r.rank = rank;
    r.world_size = 3;
    const Epoch e = RunRecords(source, r);
    ASSERT_TRUE(e.status.ok()) << e.status.ToString();
    ExpectOwnFields(e);
    for (const auto& [label, rec] : e.records) {
      seen.insert(label);
      EXPECT_TRUE(rec == whole.records.at(label));
    }
  }
  EXPECT_EQ(seen.size(), whole.records.size());
  // The output cache serves every field of a sample from its second epoch.
  LoaderOptions c = o;
  c.shuffle = false;
  c.transforms = {Transform::Resize(8), Transform::CenterCrop(8, 8)};
  c.cache_kind = LoaderOptions::CacheKind::kOutput;
  c.cache_bytes = 1 << 24;
  auto loader = Loader::Create(source, c).value();
  for (int epoch = 0; epoch < 2; ++epoch) {
    ASSERT_TRUE(loader->Start().ok());
    int n = 0;
    for (;;) {
      BatchPtr b;
      bool end = false;
      ASSERT_TRUE(loader->Next(&b, &end).ok());
      if (end) break;
      const int pair = b->FindField("pair"), caption = b->FindField("caption");
      for (int i = 0; i < b->size(); ++i, ++n) {
        const int64_t label = b->labels()[i];
        EXPECT_EQ(reinterpret_cast<const int64_t*>(b->field_block(pair))[2 * i], label);
        const FieldSlot& cs = b->field_sample(caption, i);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(cs.data), cs.bytes),
                  "s" + std::to_string(label));
      }
    }
    EXPECT_EQ(n, 24);
  }
  EXPECT_GT(loader->stats().cache_hits, 0);
}

// RecordSource without its image: records of a label, "pair", "ragged" and
// "caption", cheap enough that workers claim positions in runs (ClaimRun).
class ImagelessSource : public RandomAccessSource {
 public:
  ImagelessSource(int n, std::set<int> bad) : inner_(n, std::move(bad)) {}
  int64_t size() const override { return inner_.size(); }
  std::string Describe() const override { return "ImagelessSource"; }
  std::string NameOf(int64_t i) const override { return inner_.NameOf(i); }
  Schema schema() const override {
    Schema s = inner_.schema();
    s.fields.erase(s.fields.begin());
    return s;
  }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    STOKER_RETURN_IF_ERROR(inner_.ReadIndex(index, scratch, out));
    out->pixels = nullptr;
    out->size = 0;
    out->fields = scratch->fields.data() + 1;
    out->num_fields = 4;
    return Status::OK();
  }

 private:
  RecordSource inner_;
};

// Two epochs of `source` under `o`: the labels in delivery order, each
// checked to come with its own "pair" and "caption".
std::vector<int64_t> RunImageless(std::shared_ptr<Source> source, const LoaderOptions& o) {
  std::vector<int64_t> order;
  auto loader = testing::MakeLoader(std::move(source), o);
  if (loader == nullptr) return order;
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_TRUE(loader->Start().ok());
    for (;;) {
      BatchPtr b;
      bool end = false;
      const Status st = loader->Next(&b, &end);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok() || end) break;
      const int pair = b->FindField("pair"), caption = b->FindField("caption");
      for (int i = 0; i < b->size(); ++i) {
        const int64_t label = b->labels()[i];
        order.push_back(label);
        const int64_t* p = reinterpret_cast<const int64_t*>(b->field_block(pair)) + 2 * i;
        EXPECT_EQ(p[0], label);
        EXPECT_EQ(p[1], 1000 + label);
        const FieldSlot& cs = b->field_sample(caption, i);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(cs.data), cs.bytes),
                  "s" + std::to_string(label));
      }
    }
  }
  return order;
}

// Records without an image are claimed in runs of positions (BatchRing::
// Claim, ClaimRun): every position still fills its own slot, so the output
// is the epoch's order, the same for any thread count, with skips, a short
// last batch, runs cut at batch ends and the next epoch's prefetch.
TEST(RecordTest, ImagelessRecordsAreClaimedInRunsWithTheSameOutput) {
  LoaderOptions o;
  Schema arrays;
  arrays.fields = {ArrayField("x", ElemType::kFloat32, {4}), LabelField()};
  auto plan = MakeRecordPlan(arrays, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  o.batch_size = 1024;
  EXPECT_EQ(ClaimRun(o, *plan.value(), 2), kMaxClaimRun);
  o.batch_size = 24;
  EXPECT_EQ(ClaimRun(o, *plan.value(), 3), 4);
  o.batch_size = 3;
  EXPECT_EQ(ClaimRun(o, *plan.value(), 2), 1);
  Schema with_image;
  with_image.fields = {ImageField("image"), ArrayField("x", ElemType::kFloat32, {4})};
  o.batch_size = 1024;
  EXPECT_EQ(ClaimRun(o, *MakeRecordPlan(with_image, LoaderOptions{}).value(), 2), 1);
  Schema other_image;
  other_image.fields = {ImageField("depth", ImageMode::kNative), LabelField()};
  EXPECT_EQ(ClaimRun(o, *MakeRecordPlan(other_image, LoaderOptions{}).value(), 2), 1);

  const std::set<int> bad = {7, 40, 41, 95};
  auto source = std::make_shared<ImagelessSource>(101, bad);
  LoaderOptions l;
  l.batch_size = 24;  // runs of 12 (1 thread), 6, 4, 2 (5 threads)
  l.on_error = OnError::kSkip;
  l.seed = 5;
  std::vector<int64_t> expected;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < 101; ++i) {
      if (bad.count(i) == 0) expected.push_back(i);
    }
  }
  for (bool shuffle : {false, true}) {
    l.shuffle = shuffle;
    l.threads = 1;
    const std::vector<int64_t> one = RunImageless(source, l);
    if (!shuffle) {
      EXPECT_EQ(one, expected);
    } else {
      EXPECT_EQ(std::multiset<int64_t>(one.begin(), one.end()),
                std::multiset<int64_t>(expected.begin(), expected.end()));
      EXPECT_NE(one, expected);
    }
    for (int threads : {2, 3, 5}) {
      l.threads = threads;
      EXPECT_EQ(RunImageless(source, l), one) << threads << " threads, shuffle " << shuffle;
    }
  }
}

TEST(RecordTest, ABadFieldNamesTheSampleAndTheField) {
  auto source = std::make_shared<RecordSource>(8, std::set<int>{5});
  LoaderOptions o = Options(2);
  const Epoch e = RunRecords(source, o);
  ASSERT_FALSE(e.status.ok());
  EXPECT_NE(e.status.message().find("rec5: field 'caption' (member s5.txt): not valid UTF-8"),
            std::string::npos)
      << e.status.ToString();
}

TEST(RecordTest, BatchMovesCarryEveryField) {
  BatchShape shape;
  shape.batch_size = 3;
  shape.height = 2;
  shape.width = 2;
  shape.dtype = DType::kUint8;
  FieldLayout fixed;
  fixed.spec = ArrayField("f", ElemType::kInt32, {2});
  fixed.elem = ElemType::kInt32;
  fixed.dims = {2};
  fixed.fixed = true;
  FieldLayout var;
  var.spec = TextField("t");
  shape.fields = {fixed, var};
  auto pool = BatchPool::Create(shape, HostAllocator(), 2);
  BatchBuffer* a = pool->Acquire().value();
  BatchBuffer* b = pool->Acquire().value();
  for (int i = 0; i < 3; ++i) {
    std::memset(a->slot(i), 10 + i, a->slot_bytes(i));
    const int32_t v[2] = {i, -i};
    std::memcpy(a->ReserveField(0, i, 8, ElemType::kInt32, nullptr, 0).value(), v, 8);
    const std::string t(static_cast<size_t>(i + 1), static_cast<char>('a' + i));
    const int64_t n = static_cast<int64_t>(t.size());
    std::memcpy(a->ReserveField(1, i, t.size(), ElemType::kUint8, &n, 1).value(), t.data(),
                t.size());
    a->labels()[i] = i;
    a->ids()[i] = 100 + i;
  }
  // Wrong size for a fixed field: refused.
  EXPECT_FALSE(a->ReserveField(0, 0, 4, ElemType::kInt32, nullptr, 0).ok());
  ASSERT_TRUE(b->CopySample(0, *a, 2).ok());
  b->MoveSample(1, a, 1);
  for (int to : {0, 1}) {
    const int from = to == 0 ? 2 : 1;
    EXPECT_EQ(b->slot(to)[0], 10 + from);
    EXPECT_EQ(reinterpret_cast<const int32_t*>(b->field_slot(0, to).data)[1], -from);
    const FieldSlot& t = b->field_slot(1, to);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data), t.bytes),
              std::string(static_cast<size_t>(from + 1), static_cast<char>('a' + from)));
    EXPECT_EQ(b->labels()[to], from);
    EXPECT_EQ(b->ids()[to], 100 + from);
  }
  pool->Release(a);
  pool->Release(b);
}

TEST(RecordTest, PlanServesOtherImagesAndRefusesWhatItCannot) {
  LoaderOptions o;
  o.transforms = {Transform::Resize(8)};
  // A second image field (native or RGB) is a batch field, untransformed.
  Schema two;
  two.fields = {ImageField("image"), ImageField("depth", ImageMode::kNative), LabelField(),
                ImageField("rgb2")};
  auto p = MakeRecordPlan(two, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p.value()->image, 0);
  ASSERT_EQ(p.value()->fields.size(), 2u);
  EXPECT_EQ(p.value()->fields[0].spec.name, "depth");
  EXPECT_EQ(p.value()->fields[1].spec.name, "rgb2");
  // Only native images: no transforms (there is no RGB image to apply them to).
  Schema native;
  native.fields = {ImageField("depth", ImageMode::kNative)};
  EXPECT_FALSE(MakeRecordPlan(native, o).ok());
  EXPECT_TRUE(MakeRecordPlan(native, LoaderOptions{}).ok());
  Schema arrays;
  arrays.fields = {ArrayField("x", ElemType::kFloat32, {4})};
  o.transforms = {Transform::Resize(8)};
  EXPECT_FALSE(MakeRecordPlan(arrays, o).ok());
  Schema dup;
  dup.fields = {ArrayField("x", ElemType::kFloat32, {4}), TextField("x")};
  EXPECT_FALSE(CheckSchema(dup).ok());
}

// Field steps (LoaderOptions::field_steps) under collate="pad": a step rewrites
// "caption" to "S<i>" and adds "tok", int64 [i % 4] of 10 * i + k; "tok" and
// "ragged" arrive padded with their lengths, the same for 1 and 3 threads.
TEST(RecordTest, FieldStepsRewriteAndAddFieldsPaddedUnderThreads) {
  FieldStep step;
  step.name = "tokenise";
  step.fields = {"caption"};
  step.adds = {ArrayField("tok", ElemType::kInt64, {-1})};
  step.callback = std::make_shared<const FieldCallback>(
      [](const FieldSpec* specs, FieldValue* v, std::vector<uint8_t>* storage, int n, uint64_t) {
        EXPECT_EQ(n, 2);
        EXPECT_EQ(specs[1].name, "tok");
        const std::string caption(reinterpret_cast<const char*>(v[0].data), v[0].size);
        const int i = std::stoi(caption.substr(1));
        storage[0].assign(caption.begin(), caption.end());
        storage[0][0] = 'S';
        v[0].data = storage[0].data();
        std::vector<int64_t> tok(static_cast<size_t>(i % 4));
        for (size_t k = 0; k < tok.size(); ++k) tok[k] = 10 * i + static_cast<int64_t>(k);
        storage[1].resize(tok.size() * 8);
        if (!tok.empty()) std::memcpy(storage[1].data(), tok.data(), tok.size() * 8);
        v[1] = FieldValue();
        v[1].data = storage[1].data();
        v[1].size = storage[1].size();
        v[1].dtype = ElemType::kInt64;
        v[1].ndim = 1;
        v[1].dims[0] = static_cast<int64_t>(tok.size());
        return Status::OK();
      });
  std::vector<std::vector<int64_t>> orders;
  for (int threads : {1, 3}) {
    LoaderOptions o = Options(threads);
    o.collate = LoaderOptions::Collate::kPad;
    o.pad_value = -1;
    o.field_steps = {step};
    auto loader = Loader::Create(std::make_shared<RecordSource>(10, std::set<int>{}), o);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    ASSERT_TRUE(loader.value()->Start().ok());
    std::vector<int64_t> order;
    for (;;) {
      BatchPtr b;
      bool end = false;
      ASSERT_TRUE(loader.value()->Next(&b, &end).ok());
      if (end) break;
      const int tok = b->FindField("tok"), ragged = b->FindField("ragged"),
                caption = b->FindField("caption");
      ASSERT_GE(tok, 0);
      ASSERT_TRUE(b->field(tok).pad && b->field(ragged).pad && !b->field(caption).pad);
      const PaddedField& t = b->padded_field(tok);
      const PaddedField& r = b->padded_field(ragged);
      int64_t width = 0, rwidth = 0;
      for (int i = 0; i < b->size(); ++i) {
        width = std::max<int64_t>(width, b->labels()[i] % 4);
        rwidth = std::max<int64_t>(rwidth, b->labels()[i] % 3 + 1);
      }
      ASSERT_EQ(t.ndim, 1);
      EXPECT_EQ(t.dims[0], width);
      EXPECT_EQ(r.dims[0], rwidth);
      for (int i = 0; i < b->size(); ++i) {
        const int64_t label = b->labels()[i];
        order.push_back(label);
        const int64_t* row = reinterpret_cast<const int64_t*>(t.data) + i * width;
        for (int64_t k = 0; k < width; ++k) {
          EXPECT_EQ(row[k], k < label % 4 ? 10 * label + k : -1) << label << " " << k;
        }
        EXPECT_EQ(t.lengths[static_cast<size_t>(i)], label % 4);
        const float* rrow = reinterpret_cast<const float*>(r.data) + i * rwidth;
        for (int64_t k = 0; k < rwidth; ++k) {
          EXPECT_EQ(rrow[k], k <= label % 3 ? static_cast<float>(label) : -1.f);
        }
        const FieldSlot& cs = b->field_sample(caption, i);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(cs.data), cs.bytes),
                  "S" + std::to_string(label));
      }
    }
    orders.push_back(order);
  }
  EXPECT_EQ(orders[0].size(), 10u);
  EXPECT_EQ(orders[0], orders[1]);
}

TEST(RecordTest, PlanRefusesFieldStepsItCannotRun) {
  RecordSource src(4, {});
  FieldStep step;
  step.name = "f";
  step.callback = std::make_shared<const FieldCallback>(
      [](const FieldSpec*, FieldValue*, std::vector<uint8_t>*, int, uint64_t) {
        return Status::OK();
      });
  LoaderOptions o;
  step.adds = {TextField("note")};
  o.field_steps = {step};
  auto plain = MakeRecordPlan(Schema::ImageLabel(), o);  // no records: refused
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("(image, label)"), std::string::npos);
  step.adds = {};
  for (const char* name : {"image", "label", "missing"}) {
    step.fields = {name};
    o.field_steps = {step};
    auto p = MakeRecordPlan(src.schema(), o);
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_NE(p.status().message().find(std::string("'") + name + "'"), std::string::npos)
        << p.status().message();
  }
  step.fields = {};
  step.adds = {TextField("caption")};
  o.field_steps = {step};
  auto p = MakeRecordPlan(src.schema(), o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("already a field"), std::string::npos);
  step.adds = {TextField("note")};
  o.field_steps = {step};
  p = MakeRecordPlan(src.schema(), o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p.value()->source_fields, 5);
  EXPECT_EQ(p.value()->schema.fields.size(), 6u);
  EXPECT_EQ(p.value()->layouts.back().spec.name, "note");
}

// One native image field (a 16-bit grey PNG of 256 x 256) and no RGB image.
class DepthSource : public RandomAccessSource {
 public:
  DepthSource() {
    testing::PngSpec spec;
    spec.color_type = 0;
    spec.bit_depth = 16;
    std::vector<uint8_t> expected;
    png_ = testing::EncodePng(testing::MakePixels(256, 256, 1), 256, 256, spec, &expected);
  }
  int64_t size() const override { return 6; }
  std::string Describe() const override { return "DepthSource"; }
  std::string NameOf(int64_t i) const override { return "depth" + std::to_string(i); }
  Schema schema() const override {
    Schema s;
    s.fields = {ImageField("depth", ImageMode::kNative)};
    return s;
  }
  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    scratch->fields.assign(1, FieldValue());
    scratch->fields[0].data = png_.data();
    scratch->fields[0].size = png_.size();
    *out = SampleData();
    out->id = index;
    out->fields = scratch->fields.data();
    out->num_fields = 1;
    return Status::OK();
  }

 private:
  std::vector<uint8_t> png_;
};

// The decode memory of image fields besides the primary one counts in the
// worker's scratch, and the scratch budget releases it.
TEST(RecordTest, NativeImageScratchIsCountedAndTrimmed) {
  const size_t image_bytes = 256 * 256 * 2;
  for (size_t budget : {size_t{64} << 20, size_t{16} << 10}) {
    LoaderOptions o;
    o.batch_size = 3;
    o.threads = 1;
    o.scratch_budget = budget;
    auto loader = Loader::Create(std::make_shared<DepthSource>(), o);
    ASSERT_TRUE(loader.ok()) << loader.status().ToString();
    ASSERT_TRUE(loader.value()->Start().ok());
    int n = 0;
    for (;;) {
      BatchPtr b;
      bool end = false;
      ASSERT_TRUE(loader.value()->Next(&b, &end).ok());
      if (end) break;
      const FieldSlot& d = b->field_sample(0, 0);
      EXPECT_EQ(d.elem, ElemType::kUint16);
      ASSERT_EQ(d.ndim, 3);
      EXPECT_EQ(d.dims[0], 256);
      EXPECT_EQ(d.dims[2], 1);
      n += b->size();
    }
    EXPECT_EQ(n, 6);
    // The end of the epoch does not wait for the workers; Start() does, and each
    // publishes its scratch before it leaves.
    ASSERT_TRUE(loader.value()->Start().ok());
    const LoaderStats st = loader.value()->stats();
    loader.value()->Stop();
    if (budget > image_bytes) {
      EXPECT_GE(st.scratch_bytes, image_bytes);
    } else {
      EXPECT_LE(st.scratch_bytes, budget);
      EXPECT_GT(st.scratch_releases, 0);
    }
  }
}

TEST(RecordTest, AJsonErrorSaysWhereAndMentionsNaNOnlyWhenThere) {
  Status bad = CheckJsonDocument(reinterpret_cast<const uint8_t*>("{bad"), 4);
  EXPECT_EQ(bad.code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.message().find("line 1, column 2"), std::string::npos) << bad.message();
  EXPECT_EQ(bad.message().find("NaN"), std::string::npos) << bad.message();
  const std::string nan = "{\"x\": NaN}";
  Status n = CheckJsonDocument(reinterpret_cast<const uint8_t*>(nan.data()), nan.size());
  EXPECT_NE(n.message().find("allow_nan=False"), std::string::npos) << n.message();
  EXPECT_TRUE(CheckJsonDocument(reinterpret_cast<const uint8_t*>("[1]"), 3).ok());
}

TEST(RecordTest, Utf8Check) {
  auto ok = [](const std::string& s) {
    return IsValidUtf8(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_TRUE(ok("plain"));
  EXPECT_TRUE(ok("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(ok("\xFF"));
  EXPECT_FALSE(ok("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(ok("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(ok("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(ok("\xE2\x82"));          // truncated
}

// RandomIoUCrop draws from the sample's boxes: the plan needs a boxes target
// (its first one is read before decode), and refuses a field step that would
// rewrite it; PlanBoxes gives them as xyxy, a bad field named.
TEST(RecordTest, IoUCropReadsTheBoxesFieldBeforeDecode) {
  Schema s;
  s.fields = {ImageField("image"), LabelField("label"),
              ArrayField("boxes", ElemType::kFloat32, {-1, 4}),
              ArrayField("other", ElemType::kFloat32, {-1, 4})};
  LoaderOptions o;
  o.transforms = {MakeTransform("RandomIoUCrop", {}).value()};
  auto refused = MakeRecordPlan(s, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("RandomIoUCrop"), std::string::npos);
  EXPECT_NE(refused.status().message().find("no field is a boxes target"), std::string::npos)
      << refused.status().message();
  o.targets = {TargetDecl{"boxes", TargetRole::kBoxes, BoxFormat::kXYWH}};
  auto plan = MakeRecordPlan(s, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ((*plan)->plan_boxes, 0);
  EXPECT_EQ((*plan)->fields[0].spec.name, "boxes");
  // Without the transform no boxes are read ahead.
  LoaderOptions plain = o;
  plain.transforms = {Transform::Resize(8)};
  EXPECT_EQ(MakeRecordPlan(s, plain).value()->plan_boxes, -1);

  RecordProcessor rp(plan->get());
  const float boxes[8] = {1, 2, 3, 4, 10, 20, 5, 6};  // xywh
  FieldValue fields[4];
  fields[2].data = reinterpret_cast<const uint8_t*>(boxes);
  fields[2].size = sizeof(boxes);
  fields[2].dtype = ElemType::kFloat32;
  fields[2].ndim = 2;
  fields[2].dims[0] = 2;
  fields[2].dims[1] = 4;
  fields[3] = fields[2];
  SampleData sample;
  sample.fields = fields;
  sample.num_fields = 4;
  std::vector<double> xyxy;
  ASSERT_TRUE(rp.PlanBoxes(sample, &xyxy).ok());
  EXPECT_EQ(xyxy, (std::vector<double>{1, 2, 4, 6, 10, 20, 15, 26}));
  fields[2].dims[0] = 4;  // [4, 2]: not boxes
  fields[2].dims[1] = 2;
  const Status bad = rp.PlanBoxes(sample, &xyxy);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("field 'boxes'"), std::string::npos) << bad.message();

  // A field step rewriting the boxes would change them after the crop was drawn.
  FieldStep step;
  step.name = "touch";
  step.fields = {"boxes"};
  step.callback = std::make_shared<const FieldCallback>(
      [](const FieldSpec*, FieldValue*, std::vector<uint8_t>*, int, uint64_t) {
        return Status::OK();
      });
  o.field_steps = {step};
  auto stepped = MakeRecordPlan(s, o);
  ASSERT_FALSE(stepped.ok());
  EXPECT_NE(stepped.status().message().find("rewrites 'boxes'"), std::string::npos)
      << stepped.status().message();
}

TEST(RecordTest, TargetRolesAndBoxFormatsParseTheirNames) {
  for (TargetRole r : {TargetRole::kNone, TargetRole::kMask, TargetRole::kBoxes,
                       TargetRole::kKeypoints, TargetRole::kPerBox}) {
    auto parsed = ParseTargetRole(TargetRoleName(r));
    ASSERT_TRUE(parsed.ok()) << TargetRoleName(r);
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(ParseTargetRole("segmentation").status().code(), StatusCode::kInvalidArgument);
  for (BoxFormat f : {BoxFormat::kXYXY, BoxFormat::kXYWH, BoxFormat::kCXCYWH}) {
    auto parsed = ParseBoxFormat(BoxFormatName(f));
    ASSERT_TRUE(parsed.ok()) << BoxFormatName(f);
    EXPECT_EQ(*parsed, f);
  }
  auto upper = ParseBoxFormat("XYWH");  // torchvision's enum names
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, BoxFormat::kXYWH);
  EXPECT_EQ(ParseBoxFormat("yxyx").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FieldSpec().target, TargetRole::kNone);
}

// What RecordProcessor::WriteMask does with a PNG mask under a
// RandomResizedCrop-like geometry (crop, resize, flip): the band of rows the
// crop needs, decoded and replayed, is the whole decode's result byte for
// byte, and libpng decoded only down to the crop's last row.
TEST(RecordTest, CroppedPngMaskDecodesOnlyTheCropsRowsAndMatchesTheWholeDecode) {
  const int w = 96, h = 64;
  for (int ct : {0, 3}) {
    testing::PngSpec spec;
    spec.color_type = ct;
    std::vector<uint8_t> unused;
    const std::vector<uint8_t> png =
        testing::EncodePng(testing::MakePixels(w, h, 11), w, h, spec, &unused);
    TargetGeometry g;
    g.Reset(w, h);
    GeometryStep crop;
    crop.kind = GeometryStep::kCrop;
    crop.in_width = w;
    crop.in_height = h;
    crop.crop = Rect{17, 9, 50, 30};
    crop.out_width = 50;
    crop.out_height = 30;
    GeometryStep resize;
    resize.kind = GeometryStep::kResize;
    resize.in_width = 50;
    resize.in_height = 30;
    resize.out_width = resize.out_height = 32;
    GeometryStep flip = resize;
    flip.kind = GeometryStep::kHFlip;
    flip.in_width = flip.in_height = 32;
    g.steps = {crop, resize, flip};

    ImageDecoder dec;
    NativeImage whole_img, band_img;
    ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &whole_img, true).ok());
    ASSERT_EQ(whole_img.channels, 1);
    MaskImage a, b;
    PixelPlane want;
    ASSERT_TRUE(TransformMaskView(g, 255, PixelPlane{whole_img.pixels.data(), w, h, w, 1}, &a,
                                  &b, &want).ok());

    NativeRows rows;
    ASSERT_TRUE(MaskRowsNeeded(g, &rows.begin, &rows.end));
    ASSERT_TRUE(dec.DecodeNative(png.data(), png.size(), &band_img, true, &rows).ok());
    EXPECT_EQ(rows.rows_read, 39) << "decoding should stop after the crop's last row";
    EXPECT_EQ(band_img.height, 30);
    MaskImage a2, b2;
    PixelPlane got;
    ASSERT_TRUE(TransformMaskView(g, 255,
                                  PixelPlane{band_img.pixels.data(), w, band_img.height, w, 1},
                                  &a2, &b2, &got, rows.first, rows.image_height).ok());
    ASSERT_EQ(got.width, 32);
    ASSERT_EQ(got.height, 32);
    for (int y = 0; y < 32; ++y) {
      ASSERT_EQ(std::memcmp(got.data + y * got.stride, want.data + y * want.stride, 32), 0)
          << ct << " row " << y;
    }
  }
}

}  // namespace
}  // namespace stoker
