// Copyright 2026 The stoker Authors.
#include "testing/loader_fixtures.h"

#include <gtest/gtest.h>

#include <cstring>

#include "testing/test_images.h"

namespace stoker::testing {

int JpegSampleWidth(int i) { return 24 + (i * 5) % 17; }
int JpegSampleHeight(int i) { return 20 + (i * 3) % 13; }

std::vector<MemorySample> JpegSamples(int n, const JpegSampleOptions& options) {
  std::vector<MemorySample> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int w = JpegSampleWidth(i), h = JpegSampleHeight(i);
    MemorySample s;
    s.label = i % options.labels;
    s.name = "mem/" + std::to_string(i) + ".jpg";
    if (options.bad.count(i)) {
      s.bytes = {'n', 'o', 'p', 'e'};
      if (options.rename_bad) s.name = "mem/bad" + std::to_string(i) + ".jpg";
    } else {
      s.bytes = EncodeJpeg(MakePixels(w, h, static_cast<uint64_t>(i)), w, h, JpegSpec());
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::map<int64_t, std::vector<uint8_t>> Delivered::ById() const {
  std::map<int64_t, std::vector<uint8_t>> m;
  for (size_t i = 0; i < ids.size(); ++i) m[ids[i]] = samples[i];
  return m;
}

std::map<int64_t, std::vector<uint8_t>> Delivered::ByLabel() const {
  std::map<int64_t, std::vector<uint8_t>> m;
  for (size_t i = 0; i < labels.size(); ++i) m[labels[i]] = samples[i];
  return m;
}

int64_t SampleLabel(const Batch& b, int i) {
  if (b.labels()[i] >= 0) return b.labels()[i];
  const int labels = b.FindField("labels");
  if (labels >= 0) {
    const FieldSlot& s = b.field_sample(labels, i);
    if (s.elem == ElemType::kInt64 && s.bytes >= 8) {
      int64_t v;
      std::memcpy(&v, s.data, 8);
      return v;
    }
  }
  const int mask = b.FindField("mask");
  if (mask >= 0) {
    const FieldSlot& s = b.field_sample(mask, i);
    if (s.bytes > 0) return s.data[0];
  }
  return b.labels()[i];
}

void TakeBatches(Loader* loader, Delivered* out, int max_batches) {
  for (int k = 0; k < max_batches; ++k) {
    BatchPtr b;
    bool end = false;
    out->status = loader->Next(&b, &end);
    if (!out->status.ok() || end) return;
    out->sizes.push_back(b->size());
    for (int i = 0; i < b->size(); ++i) {
      out->ids.push_back(b->ids()[i]);
      out->labels.push_back(SampleLabel(*b, i));
      // A clip source (VideoClips) has no image: its pixels are the field "video".
      const int video = b->FindField("video");
      const uint8_t* bytes = b->sample(i);
      size_t size = b->sample_bytes(i);
      if (video >= 0) {
        const FieldSlot& f = b->field_sample(video, i);
        bytes = f.data;
        size = f.bytes;
      }
      out->samples.emplace_back(bytes, bytes + size);
      out->dims.push_back(b->sample_dims(i));
      out->pixels.insert(out->pixels.end(), bytes, bytes + size);
    }
  }
}

Delivered RunEpoch(Loader* loader) {
  Delivered d;
  d.status = loader->Start();
  if (d.status.ok()) TakeBatches(loader, &d);
  return d;
}

LoaderOptions SmallAugmentedOptions(int threads, uint64_t seed, int rank, int world_size) {
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = threads;
  o.shuffle = true;
  o.seed = seed;
  o.dtype = DType::kUint8;
  o.transforms = {Transform::RandomResizedCrop(8, 8), Transform::RandomHorizontalFlip()};
  o.rank = rank;
  o.world_size = world_size;
  return o;
}

std::unique_ptr<Loader> MakeLoader(std::shared_ptr<Source> source, const LoaderOptions& options) {
  auto made = Loader::Create(std::move(source), options);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(made).value() : nullptr;
}

std::shared_ptr<BatchPool> BareBatchPool(int batch_size) {
  BatchShape shape;
  shape.batch_size = batch_size;
  shape.image = false;
  shape.records = true;
  return BatchPool::Create(shape, HostAllocator(), 2);
}

}  // namespace stoker::testing
