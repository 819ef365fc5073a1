// Copyright 2026 The stoker Authors.
//
// A record source for the device path's tests (the host fallback in
// device/device_loader_test.cc, the CUDA DeviceLoader in
// cuda/device_stage_test.cc) and the check that a DeviceBatch of records
// holds, bit for bit, what the CPU Loader's batch holds.
//
// Header-only; thread-compatible.
#ifndef STOKER_TESTING_DEVICE_RECORDS_H_
#define STOKER_TESTING_DEVICE_RECORDS_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "source/memory_source.h"
#include "stoker/batch.h"
#include "stoker/device_loader.h"
#include "stoker/record.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker::testing {

// Sample i: raw pixels (width 12 + i % 3, height 10 + i % 2, so a
// CenterCrop makes the batch fixed), label i % 3, "aux" int32 [2] = {i, -i},
// "feat" float32 [3] = {i / 2, -i, 1 / (i + 1)}, "tokens" int64 of length
// i % 3 + 1 = {10 i, 10 i + 1, ...} (variable: a list, or padded under
// collate="pad"), "caption" text "c<i>".
inline std::shared_ptr<Source> DeviceRecordSamples(int n) {
  Schema schema;
  schema.fields = {ImageField("image"),
                   LabelField("label"),
                   ArrayField("aux", ElemType::kInt32, {2}),
                   ArrayField("feat", ElemType::kFloat32, {3}),
                   ArrayField("tokens", ElemType::kInt64, {-1}),
                   TextField("caption")};
  std::vector<MemorySample> samples(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[static_cast<size_t>(i)];
    s.name = "r" + std::to_string(i);
    s.label = i % 3;
    s.raw_width = 12 + i % 3;
    s.raw_height = 10 + i % 2;
    s.bytes = MakePixels(s.raw_width, s.raw_height, 300 + i);
    s.field_bytes.reserve(6);  // the values point into these
    AppendField(&s);           // the primary image: s.bytes
    AppendField(&s);           // the primary label: s.label
    AppendField(&s, BytesOf<int32_t>({i, -i}), ElemType::kInt32, {2});
    AppendField(&s, BytesOf<float>({i / 2.f, static_cast<float>(-i), 1.f / (i + 1)}),
                ElemType::kFloat32, {3});
    std::vector<int64_t> tokens;
    for (int k = 0; k <= i % 3; ++k) tokens.push_back(10 * i + k);
    std::vector<uint8_t> token_bytes(tokens.size() * sizeof(int64_t));
    std::memcpy(token_bytes.data(), tokens.data(), token_bytes.size());
    AppendField(&s, std::move(token_bytes), ElemType::kInt64,
                {static_cast<int64_t>(tokens.size())});
    const std::string caption = "c" + std::to_string(i);
    AppendField(&s, std::vector<uint8_t>(caption.begin(), caption.end()));
  }
  return std::make_shared<stoker::MemorySource>(std::move(samples), std::move(schema));
}

// A record without an image: sample i is label 100 + i, "aux" int32 [2] =
// {i, -i}, "feat" float32 [3] = {i / 2, 1, -2 i}: every field fixed.
inline std::shared_ptr<Source> DeviceArrayRecordSamples(int n) {
  Schema schema;
  schema.fields = {LabelField("label"), ArrayField("aux", ElemType::kInt32, {2}),
                   ArrayField("feat", ElemType::kFloat32, {3})};
  std::vector<MemorySample> samples(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[static_cast<size_t>(i)];
    s.label = 100 + i;
    s.name = "a" + std::to_string(i);
    s.field_bytes.reserve(3);
    AppendField(&s);
    AppendField(&s, BytesOf<int32_t>({i, -i}), ElemType::kInt32, {2});
    AppendField(&s, BytesOf<float>({i * 0.5f, 1.f, -2.f * i}), ElemType::kFloat32, {3});
  }
  return std::make_shared<stoker::MemorySource>(std::move(samples), std::move(schema));
}

// Targets: sample i is raw pixels 16 x (12 + i % 2), label i % 3,
// "mask" uint8 [H, W] (target kMask: (x / 4 + 3 * (y / 4) + i) % 7, blocks
// that show where the geometry moved them) and "boxes" float32 [2, 4] xyxy
// (target kBoxes: {i % 5, 1, 9, 7} and a 1-px box in the corner that crops
// remove). Under a fixed output size the mask is a fixed field; the boxes a
// variable one.
inline std::shared_ptr<Source> DeviceTargetSamples(int n) {
  Schema schema;
  FieldSpec mask = ArrayField("mask", ElemType::kUint8, {-1, -1});
  mask.target = TargetRole::kMask;
  FieldSpec boxes = ArrayField("boxes", ElemType::kFloat32, {-1, 4});
  boxes.target = TargetRole::kBoxes;
  schema.fields = {ImageField("image"), LabelField("label"), mask, boxes};
  std::vector<MemorySample> samples(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    MemorySample& s = samples[static_cast<size_t>(i)];
    s.name = "t" + std::to_string(i);
    s.label = i % 3;
    s.raw_width = 16;
    s.raw_height = 12 + i % 2;
    s.bytes = MakePixels(s.raw_width, s.raw_height, 500 + i);
    s.field_bytes.reserve(4);
    AppendField(&s);
    AppendField(&s);
    std::vector<uint8_t> m(static_cast<size_t>(s.raw_width * s.raw_height));
    for (int y = 0; y < s.raw_height; ++y) {
      for (int x = 0; x < s.raw_width; ++x) {
        m[static_cast<size_t>(y * s.raw_width + x)] =
            static_cast<uint8_t>((x / 4 + 3 * (y / 4) + i) % 7);
      }
    }
    AppendField(&s, std::move(m), ElemType::kUint8, {s.raw_height, s.raw_width});
    AppendField(&s, BytesOf<float>({static_cast<float>(i % 5), 1.f, 9.f, 7.f, 15.f, 0.f, 16.f,
                                    1.f}),
                ElemType::kFloat32, {2, 4});
  }
  return std::make_shared<stoker::MemorySource>(std::move(samples), std::move(schema));
}

// Copies `bytes` of a DeviceBatch's memory to the host (memcpy in the host
// fallback, cudaMemcpy on a GPU).
using FetchBytes = std::function<std::vector<uint8_t>(const void* data, size_t bytes)>;

// "" when `d` (a DeviceLoader's record batch) carries what `cpu` (the CPU
// Loader's batch of the same options) does: the images (`image_bytes` of
// output), labels and ids; each fixed-shape and padded field, in order, as
// a DeviceField of the same name, type, dims and bytes; and the variable
// fields and padded lengths in d.host. Else what differs first.
inline std::string DiffDeviceRecordBatch(const DeviceBatch& d, const Batch& cpu,
                                         size_t image_bytes, const FetchBytes& fetch) {
  const std::string at = "batch " + std::to_string(cpu.index()) + ": ";
  if (!d.records) return at + "not a record batch";
  if (d.size != cpu.size()) return at + "size " + std::to_string(d.size);
  if (d.ids != std::vector<int64_t>(cpu.ids(), cpu.ids() + cpu.size())) return at + "ids differ";
  if (fetch(d.images, image_bytes) !=
      std::vector<uint8_t>(cpu.images(), cpu.images() + image_bytes)) {
    return at + "images differ";
  }
  const auto* labels = reinterpret_cast<const uint8_t*>(cpu.labels());
  if (fetch(d.labels, sizeof(int64_t) * d.size) !=
      std::vector<uint8_t>(labels, labels + sizeof(int64_t) * d.size)) {
    return at + "labels differ";
  }
  size_t next = 0;
  bool host_fields = false;
  for (int f = 0; f < cpu.num_fields(); ++f) {
    const FieldLayout& l = cpu.field(f);
    const std::string name = at + "field '" + l.spec.name + "': ";
    if (!l.fixed && !l.pad) {
      host_fields = true;
      if (d.host == nullptr) return name + "no host batch for a variable field";
      for (int i = 0; i < cpu.size(); ++i) {
        const FieldSlot& want = cpu.field_sample(f, i);
        const FieldSlot& got = d.host->field_sample(f, i);
        if (got.bytes != want.bytes || (want.bytes > 0 && std::memcmp(got.data, want.data,
                                                                      want.bytes) != 0)) {
          return name + "sample " + std::to_string(i) + " differs on the host";
        }
      }
      continue;
    }
    if (next >= d.fields.size()) return name + "missing from DeviceBatch::fields";
    const DeviceField& got = d.fields[next++];
    std::vector<int64_t> dims = {cpu.size()};
    const uint8_t* want = nullptr;
    size_t bytes = 0;
    ElemType elem = l.elem;
    if (l.fixed) {
      dims.insert(dims.end(), l.dims.begin(), l.dims.end());
      want = cpu.field_block(f);
      bytes = l.sample_bytes() * static_cast<size_t>(cpu.size());
    } else {
      host_fields = true;
      const PaddedField& p = cpu.padded_field(f);
      dims.insert(dims.end(), p.dims.begin(), p.dims.begin() + p.ndim);
      want = p.data;
      bytes = p.bytes;
      elem = p.elem;
      if (d.host == nullptr || d.host->padded_field(f).lengths != p.lengths) {
        return name + "lengths differ (or no host batch)";
      }
    }
    if (got.name != l.spec.name) return name + "DeviceField is '" + got.name + "'";
    if (got.elem != elem) return name + "element type differs";
    if (got.dims != dims) return name + "dims differ";
    if (got.padded != l.pad) return name + "padded flag differs";
    if (fetch(got.data, bytes) != std::vector<uint8_t>(want, want + bytes)) {
      return name + "bytes differ from the host batch";
    }
  }
  if (next != d.fields.size()) return at + "extra DeviceBatch::fields";
  if (!host_fields && d.host != nullptr) return at + "host batch kept without host fields";
  return "";
}

}  // namespace stoker::testing

#endif  // STOKER_TESTING_DEVICE_RECORDS_H_
