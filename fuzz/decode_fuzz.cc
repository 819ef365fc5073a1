// Copyright 2026 The stoker Authors.
//
// libFuzzer target: image decoding (JPEG, PNG, WebP, TIFF, BMP, PNM) as the
// loader does it, including the region/scaled JPEG path and the resample
// into a batch slot.
//
// The input is an encoded image. A hash of it picks the decode region, the
// DCT scale and a transform chain, so every input exercises header parsing,
// a full decode, a region decode, a label map's decode (whole and a band of
// rows) and a whole SampleProcessor run.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "codec/decoder.h"
#include "ops/convert.h"
#include "program/sample_processor.h"

namespace {

uint64_t Fnv(const uint8_t* d, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ d[i]) * 1099511628211ull;
  return h;
}

// Pixel work is capped so the fuzzer spends its time on parsing.
constexpr int64_t kMaxPixels = int64_t{1} << 22;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const uint64_t h = Fnv(data, size);
  Rng rng(h);

  // 1. Full decode.
  ImageDecoder decoder(DecoderOptions{kMaxPixels});
  ImageHeader header;
  if (!decoder.Open(data, size, &header).ok()) return 0;
  Check(header.width > 0 && header.height > 0);
  Check(static_cast<int64_t>(header.width) * header.height <= kMaxPixels);
  DecodedRegion all;
  if (decoder.Decode(DecodeRequest{}, &all).ok()) {
    Check(all.pixels.width == header.width && all.pixels.height == header.height);
  }

  // 2. A region at a scale.
  if (decoder.Open(data, size, &header).ok()) {
    DecodeRequest req;
    req.scale_denom = 1 << rng.Below(4);
    req.region.x = static_cast<int>(rng.Below(header.width));
    req.region.y = static_cast<int>(rng.Below(header.height));
    req.region.width = 1 + static_cast<int>(rng.Below(header.width - req.region.x));
    req.region.height = 1 + static_cast<int>(rng.Below(header.height - req.region.y));
    DecodedRegion r;
    if (decoder.Decode(req, &r).ok()) {
      Check(r.region.x >= 0 && r.region.y >= 0 && r.region.width > 0 && r.region.height > 0);
      Check(r.region.right() <= r.scaled_width && r.region.bottom() <= r.scaled_height);
      Check(r.pixels.width == r.region.width && r.pixels.height == r.region.height);
      // Touch the last byte of every row (ASan checks the bounds); the volatile store keeps
      // the reads (C++20 deprecates compound assignment to a volatile, hence `acc`).
      uint8_t acc = 0;
      for (int y = 0; y < r.pixels.height; ++y) acc ^= r.pixels.row(y)[r.pixels.width * 3 - 1];
      volatile uint8_t sink = acc;
      (void)sink;
    }
  }

  // 3. As a label map (a mask field's decode): whole, then a band of rows,
  // which must be the whole decode's rows whenever that succeeded.
  {
    NativeImage whole, band;
    const bool whole_ok = decoder.DecodeNative(data, size, &whole, true).ok();
    NativeRows rows;
    rows.begin = static_cast<int>(rng.Below(static_cast<uint64_t>(header.height)));
    rows.end = rows.begin + 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(header.height)));
    const bool band_ok = decoder.DecodeNative(data, size, &band, true, &rows).ok();
    if (whole_ok) {
      Check(band_ok);
      Check(band.row_bytes() == whole.row_bytes());
      Check(rows.first >= 0 && rows.first + band.height <= whole.height);
      for (int y = 0; y < band.height; ++y) {
        Check(std::memcmp(band.row(y), whole.row(rows.first + y), band.row_bytes()) == 0);
      }
    }
  }

  // 4. The loader's per-sample work: plan, region decode, resample, convert.
  const int out = 8 + static_cast<int>(rng.Below(40));
  ProcessorConfig config;
  switch (rng.Below(3)) {
    case 0:
      config.transforms = {Transform::RandomResizedCrop(out, out),
                           Transform::RandomHorizontalFlip()};
      break;
    case 1:
      config.transforms = {Transform::Resize(out + 4), Transform::CenterCrop(out, out)};
      break;
    default:
      config.transforms = {Transform::CenterCrop(out, out + 3)};
      break;
  }
  config.dct_scaling = rng.Below(2) == 0;
  config.decoder.max_pixels = kMaxPixels;
  int oh = out, ow = config.transforms.back().width;
  if (config.transforms.back().name() == "RandomHorizontalFlip") ow = out;
  PixelWriter writer(DType::kFloat32, Layout::kNCHW, oh, ow, false, {0, 0, 0}, {1, 1, 1});
  SampleProcessor processor(config, &writer);
  std::vector<uint8_t> slot(writer.sample_bytes());
  SampleData sample;
  sample.bytes = data;
  sample.size = size;
  StageTimes times;
  (void)processor.Process(sample, &rng, slot.data(), &times);
  return 0;
}
