// Copyright 2026 The stoker Authors.
//
// The engine with sources of unknown length (size() == -1): the epoch ends at
// the first position whose Read reports the end; the batch holding it is
// short (or dropped under drop_last); errors mid-stream; skipped samples
// close up inside their batch.
#include <gtest/gtest.h>

#include <set>

#include "stoker/loader.h"
#include "testing/loader_fixtures.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

// A stream over in-memory JPEGs: positions in order, no random access.
// Samples whose index is in `bad` are read as errors naming them.
class StreamSource : public Source {
 public:
  StreamSource(int n, std::set<int64_t> bad = {}) : bad_(std::move(bad)) {
    for (int i = 0; i < n; ++i) {
      const int w = 40 + i % 17, h = 36 + i % 11;
      jpegs_.push_back(testing::EncodeJpeg(testing::MakePixels(w, h, i), w, h));
    }
  }
  int64_t size() const override { return -1; }
  std::string Describe() const override { return "StreamSource"; }
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec&) override {
    return std::unique_ptr<EpochReader>(new Reader(this));
  }

 private:
  class Reader : public EpochReader {
   public:
    explicit Reader(const StreamSource* s) : s_(s) {}
    int64_t size() const override { return -1; }
    bool random_access() const override { return false; }
    Status Read(int64_t p, SampleScratch*, SampleData* out, bool* end) override {
      *end = p >= static_cast<int64_t>(s_->jpegs_.size());
      if (*end) return Status::OK();
      if (s_->bad_.count(p)) return DataLossError(Name(p) + ": corrupt");
      out->id = p;
      out->label = p % 7;
      out->bytes = s_->jpegs_[p].data();
      out->size = s_->jpegs_[p].size();
      return Status::OK();
    }
    std::string Name(int64_t p) const override { return "stream/" + std::to_string(p); }

   private:
    const StreamSource* s_;
  };
  std::vector<std::vector<uint8_t>> jpegs_;
  std::set<int64_t> bad_;
};

LoaderOptions Options(int batch, int threads) {
  LoaderOptions o;
  o.batch_size = batch;
  o.threads = threads;
  o.prefetch = 2;
  o.dtype = DType::kUint8;
  o.transforms = {Transform::RandomResizedCrop(16, 16), Transform::RandomHorizontalFlip()};
  return o;
}

using Result = testing::Delivered;

// The last of `epochs` epochs.
Result RunStream(std::shared_ptr<Source> src, const LoaderOptions& o, int epochs = 1) {
  auto loader = testing::MakeLoader(std::move(src), o);
  if (!loader) return {};
  EXPECT_EQ(loader->num_batches(), -1);
  Result r;
  for (int e = 0; e < epochs; ++e) {
    r = testing::RunEpoch(loader.get());
    // Next after the end keeps reporting the end.
    BatchPtr b;
    bool end = false;
    EXPECT_TRUE(loader->Next(&b, &end).ok());
    EXPECT_TRUE(end);
  }
  return r;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(StreamLoaderTest, ShortLastBatch) {
  for (int threads : {1, 2, 5}) {
    Result r = RunStream(std::make_shared<StreamSource>(23), Options(5, threads), /*epochs=*/2);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.sizes, (std::vector<int>{5, 5, 5, 5, 3})) << threads;
    EXPECT_EQ(r.ids, Iota(23));
  }
}

TEST(StreamLoaderTest, EndOnABatchBoundary) {
  for (int threads : {1, 3}) {
    Result r = RunStream(std::make_shared<StreamSource>(20), Options(5, threads));
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(r.sizes, (std::vector<int>{5, 5, 5, 5}));
    EXPECT_EQ(r.ids, Iota(20));
  }
}

TEST(StreamLoaderTest, EmptyStreamEndsAtOnce) {
  Result r = RunStream(std::make_shared<StreamSource>(0), Options(4, 3));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.sizes.empty());
}

TEST(StreamLoaderTest, StreamShorterThanOneBatch) {
  Result r = RunStream(std::make_shared<StreamSource>(3), Options(8, 4));
  EXPECT_EQ(r.sizes, (std::vector<int>{3}));
  LoaderOptions o = Options(8, 4);
  o.drop_last = true;  // accepted: the length is not known in advance
  r = RunStream(std::make_shared<StreamSource>(3), o);
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.sizes.empty());
}

TEST(StreamLoaderTest, DropLastDropsTheShortBatchOnly) {
  LoaderOptions o = Options(5, 3);
  o.drop_last = true;
  Result r = RunStream(std::make_shared<StreamSource>(23), o);
  EXPECT_EQ(r.sizes, (std::vector<int>{5, 5, 5, 5}));
  EXPECT_EQ(r.ids, Iota(20));
  r = RunStream(std::make_shared<StreamSource>(20), o);
  EXPECT_EQ(r.sizes, (std::vector<int>{5, 5, 5, 5}));
}

TEST(StreamLoaderTest, SameOutputForAnyThreadCount) {
  Result ref = RunStream(std::make_shared<StreamSource>(31), Options(4, 1));
  for (int threads : {2, 4}) {
    Result r = RunStream(std::make_shared<StreamSource>(31), Options(4, threads));
    EXPECT_EQ(r.ids, ref.ids);
    EXPECT_EQ(r.pixels, ref.pixels);
  }
}

TEST(StreamLoaderTest, ErrorMidStreamRaisesNamingTheSample) {
  Result r = RunStream(std::make_shared<StreamSource>(30, std::set<int64_t>{12}), Options(5, 3));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("stream/12"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(r.sizes, (std::vector<int>{5, 5}));  // batches before the bad one
}

TEST(StreamLoaderTest, SkipClosesTheGapAndCounts) {
  LoaderOptions o = Options(5, 3);
  o.on_error = OnError::kSkip;
  auto loader = Loader::Create(std::make_shared<StreamSource>(23, std::set<int64_t>{1, 10, 11, 12, 13, 14, 22}), o).value();
  ASSERT_TRUE(loader->Start().ok());
  std::vector<int> sizes;
  std::vector<int64_t> ids;
  for (;;) {
    BatchPtr b;
    bool end = false;
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    if (end) break;
    sizes.push_back(b->size());
    ids.insert(ids.end(), b->ids(), b->ids() + b->size());
  }
  // The 16 good samples in order, packed: only the last batch is short.
  EXPECT_EQ(sizes, (std::vector<int>{5, 5, 5, 1}));
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 23; ++i) {
    if (i != 1 && (i < 10 || i > 14) && i != 22) want.push_back(i);
  }
  EXPECT_EQ(ids, want);
  EXPECT_EQ(loader->stats().epoch.skipped, 7);
  EXPECT_EQ(loader->stats().epoch.skipped_files, 7);
  EXPECT_EQ(loader->stats().epoch.images, 16);
}

// Issue 17 item 16: the packing is the same for any thread count, and
// drop_last drops only the short last batch.
TEST(StreamLoaderTest, SkipPacksTheSameForAnyThreadCountAndDropLast) {
  const std::set<int64_t> bad = {0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 30, 36};
  LoaderOptions o = Options(4, 1);
  o.on_error = OnError::kSkip;
  Result ref = RunStream(std::make_shared<StreamSource>(37, bad), o);
  ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
  EXPECT_EQ(ref.sizes, (std::vector<int>{4, 4, 4, 4, 4, 4, 1}));  // 25 good
  for (int threads : {2, 4}) {
    o.threads = threads;
    Result r = RunStream(std::make_shared<StreamSource>(37, bad), o);
    EXPECT_EQ(r.ids, ref.ids);
    EXPECT_EQ(r.pixels, ref.pixels);
  }
  o.drop_last = true;
  Result dropped = RunStream(std::make_shared<StreamSource>(37, bad), o);
  EXPECT_EQ(dropped.sizes, (std::vector<int>{4, 4, 4, 4, 4, 4}));
  EXPECT_EQ(dropped.ids, std::vector<int64_t>(ref.ids.begin(), ref.ids.begin() + 24));
}

TEST(StreamLoaderTest, StopMidStreamThenRestart) {
  auto loader = Loader::Create(std::make_shared<StreamSource>(40), Options(4, 3)).value();
  ASSERT_TRUE(loader->Start().ok());
  BatchPtr b;
  bool end = false;
  ASSERT_TRUE(loader->Next(&b, &end).ok());
  loader->Stop();
  ASSERT_TRUE(loader->Start().ok());
  int n = 0;
  for (;;) {
    ASSERT_TRUE(loader->Next(&b, &end).ok());
    if (end) break;
    n += b->size();
  }
  EXPECT_EQ(n, 40);
}

}  // namespace
}  // namespace stoker
