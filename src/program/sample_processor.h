// Copyright 2026 The stoker Authors.
//
// SampleProcessor: everything one worker does to one sample after reading
// it -- header parse, geometry plan, region decode, fused resample + flip +
// normalise + convert into the sample's slot.
//
// Fast path (one resampling stage whose crop lies inside the image, the case
// for RandomResizedCrop and Resize + CenterCrop): the filter taps of the
// output window are computed first, then only the source rectangle they
// touch is decoded (JPEG region decode, with DCT-domain downscaling when the
// crop is at least 2x the output in both directions and `dct_scaling` is
// on), then one resample pass writes rows through the PixelWriter into the
// slot. The JPEG region, or a whole non-interlaced PNG (no region decode),
// is decoded there row by row, each row going straight into the horizontal
// pass, and the vertical pass then runs over the horizontally resampled rows
// (crop rows x output width): the decoded pixels are never held, so a
// 16000 x 16000 image costs a row and those rows, not 768 MB.
// Interlaced PNGs, the other formats and every image on the slow path
// are decoded whole. Slow path (several resizes, or crops
// that pad): full decode, then
// each stage materialised in scratch images. With photometric transforms
// (ColorJitter, ...), the last resample writes into a per-thread output-size
// scratch image, the ops run on it in place (src/ops/color.h), and its rows
// then go through the PixelWriter; without them nothing changes. Callback
// transforms (stoker.Lambda) run in that list too; their errors fail the
// sample and their time is counted apart (StageTimes::callback_ns).
//
// Variable-size output (collate="list"): the sample's size comes from its own
// geometry plan; the slot is then reserved for that size in the batch buffer
// (SampleOutput::buffer) and written exactly as a fixed-size slot is.
//
// Thread-safety: NOT thread-safe; one per worker thread. Owns scratch that
// is reused (no per-sample allocation in steady state).
#ifndef STOKER_PROGRAM_SAMPLE_PROCESSOR_H_
#define STOKER_PROGRAM_SAMPLE_PROCESSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"
#include "codec/decoder.h"
#include "ops/convert.h"
#include "ops/geometry.h"
#include "ops/resample.h"
#include "ops/targets.h"
#include "program/decoded_image.h"
#include "stoker/batch.h"
#include "stoker/source.h"
#include "stoker/transforms.h"
#include "trace/sample_trace.h"

namespace stoker {

struct ProcessorConfig {
  std::vector<Transform> transforms;
  bool dct_scaling = true;
  DecoderOptions decoder;
  // Read the clock around decode and augment (StageTimes stay 0 when off).
  bool timing = true;
  // Scratch (decoded pixels, resampler rows, stage images) kept between
  // samples is at most this many bytes: after a sample that needed more,
  // Process() frees it all (0: keep whatever was needed).
  size_t scratch_budget = size_t{64} << 20;
  // On the fast path, decode a JPEG region or a non-interlaced PNG row by
  // row straight into the resampler's horizontal pass
  // (ImageDecoder::DecodeRows) instead of into a buffer: the same pixels,
  // with one decoded row in memory instead of the region / image. Off only to
  // compare the two paths (tests, benchmarks).
  bool stream_rows = true;
  // ... but only when the buffered path would hold at least this many bytes
  // of decoded pixels (a PNG's whole image, a JPEG's region): for ordinary
  // photos the buffered path is faster (measured: ~15% less decode + resample
  // time per image on 224x224 crops of ImageNet JPEGs), and its memory is small.
  size_t stream_rows_min_bytes = size_t{16} << 20;
  // Keep each sample's geometry (geometry()) for the targets that follow the
  // image (masks, boxes, keypoints; ops/targets.h).
  bool record_geometry = false;
  // Records (Transform::fields): the image field this processor writes, and
  // whether it is the primary image. A transform applies to it when its
  // `fields` name it, or are empty and it is the primary. A photometric
  // transform that does not apply still draws, on a throwaway copy, so every
  // image field of a sample sees the same draws for the transforms they
  // share; a secondary image (not `primary`) skips the kTensor transforms.
  std::string image_field = "image";
  bool primary = true;
};

// Nanoseconds spent in each part of Process(), and what the caller asked to
// see: with `trace` set (tracing on), Process() records a span per step
// (decode with its path, the fused resample, each photometric op, the
// conversion, the ops on the written sample) and NVTX ranges; the sample's
// size before any transform (its header) is reported for the data monitor.
struct StageTimes {
  int64_t decode_ns = 0;
  int64_t augment_ns = 0;
  int64_t callback_ns = 0;  // in Callback transforms; part of augment_ns
  const SampleTrace* trace = nullptr;
  int source_width = 0, source_height = 0;  // set once the header is read
};

// Where Process() writes a sample: `slot`, of the writer's fixed size; or,
// with `buffer` set (a variable-size batch), slot `index` of it, reserved for
// the size the sample's plan gives.
// With `image` set (a record's secondary image field), into *image, resized
// to the plan's size (the writer then writes uint8 HWC rows); `expect_width`
// x `expect_height` (when > 0), the primary image's size: an image of another
// size is InvalidArgument (the draws depend on the size).
struct SampleOutput {
  uint8_t* slot = nullptr;
  BatchBuffer* buffer = nullptr;
  int index = 0;
  RgbImage* image = nullptr;
  int expect_width = 0, expect_height = 0;
};

class SampleProcessor {
 public:
  SampleProcessor(const ProcessorConfig& config, const PixelWriter* writer);

  // Turns `sample` into the final pixels at `out`, drawing random
  // parameters from `rng`. Errors name no file: the caller adds it.
  // `boxes`: the sample's boxes (xyxy, the image's pixels) for the
  // transforms whose draw reads them (RandomIoUCrop; needs record_geometry).
  Status Process(const SampleData& sample, Rng* rng, const SampleOutput& out, StageTimes* times,
                 const std::vector<double>* boxes = nullptr);
  Status Process(const SampleData& sample, Rng* rng, uint8_t* slot, StageTimes* times) {
    return Process(sample, rng, SampleOutput{slot, nullptr, 0}, times);
  }

  // The rectangle of a `width` x `height` raw image (SampleData::pixels)
  // that Process() with `rng`'s draw reads: on the fast path (one crop and
  // resample inside the image) the span of the taps, else the whole image.
  // `rng` is a copy: the caller's draw is not advanced. Lets a producer of
  // raw pixels (a video frame's conversion to RGB) make only those.
  StatusOr<Rect> RawRegion(int width, int height, Rng rng);
  // Process() of raw pixels that cover only `region` of the image
  // (sample.pixel_width x pixel_height; sample.pixels points at the
  // region's first pixel, rows pixel_stride apart). `region` must contain
  // RawRegion()'s for the same draw (else Internal); the pixels written are
  // those Process() gives for the whole image.
  Status ProcessRegion(const SampleData& sample, const Rect& region, Rng* rng, uint8_t* slot,
                       StageTimes* times);

  // Decodes all of `sample`'s encoded bytes at full resolution into `out`
  // (for the decoded-sample cache). Errors name no file.
  Status DecodeWhole(const SampleData& sample, CachedImage* out);

  // Scratch bytes held (for memory accounting), decoder pixels included.
  size_t scratch_bytes() const;
  // Frees the scratch when it holds more than config.scratch_budget; true if
  // it did. Call between samples (the Loader does after each one).
  bool TrimScratch();
  // With config.record_geometry: the last sample's geometry (its size as
  // read, then every geometric step and drawn warp in list order, in the
  // original image's coordinates whatever DCT scale or region was decoded).
  const TargetGeometry& geometry() const { return geometry_; }
  // Last scale denominator used (1 unless DCT scaling kicked in); for tests.
  int last_scale_denom() const { return last_scale_denom_; }

 private:
  // NowNs(), or 0 when timing is off and nothing is traced.
  int64_t Clock(const StageTimes* times) const;
  // NowNs() when tracing (times->trace), else 0: the clock reads only spans need.
  static int64_t TraceClock(const StageTimes* times);
  // The DCT scale denominator (1, 2, 4, 8) for a stage's crop: the largest
  // keeping the crop at least as large as the output, when it is >= 2x.
  static int DctScale(const GeometryStage& st);
  // The stage's taps (into h_, v_) on the image decoded at 1/d, and the
  // request for the region they read.
  DecodeRequest ScaledTaps(const GeometryStage& st, int d, const ImageHeader& header,
                           bool flip, bool vflip);
  // Decodes req's region at its scale: the pixels and where their (0, 0) lies.
  Status DecodeScaled(const DecodeRequest& req, RgbView* view, int* origin_x, int* origin_y);
  // `t0`: when Process() began (decode time is counted from it). A JPEG
  // whose first stage shrinks its crop (inside the image) 2x or more is
  // decoded at a DCT scale, that crop's region only, as on the fast path.
  Status ProcessSlow(const SampleData& sample, const ImageHeader& header,
                     const GeometryPlan& plan, Rng* rng, uint8_t* slot, int64_t t0,
                     StageTimes* times);
  // The last resample (taps in h_, v_) into the slot; with photometric
  // transforms, into out_ first, where they run, then into the slot. Fails
  // only when a Callback does.
  Status Resample(const RgbView& src, int origin_x, int origin_y, Rng* rng, uint8_t* slot,
                  bool tail_padding, StageTimes* times);
  // The rest of Resample() once every input row is in the resampler
  // (resampler_.Begin(h_, v_) and the rows pushed): vertical pass, ops,
  // slot. `start_ns`: when the resample began (TraceClock), for its span.
  Status FinishResample(Rng* rng, uint8_t* slot, StageTimes* times, int64_t start_ns);
  // Callback `t` on out_; its time into times->callback_ns.
  Status RunCallback(const Transform& t, Rng* rng, StageTimes* times);
  // The kTensor transforms (RandomErasing) on the converted sample at
  // `slot`; their span (from `start_ns`) into `trace` when it is not null.
  void RunTensorOps(Rng* rng, uint8_t* slot, const SampleTrace* trace, int64_t start_ns) const;
  void WriteFrom(const RgbView& src, int origin_x, int origin_y, uint8_t* slot);

  const ProcessorConfig& config_;
  const PixelWriter* writer_;
  ImageDecoder decoder_;
  Resampler resampler_;
  AxisCoeffs h_, v_;
  RgbImage stage_a_, stage_b_;
  std::vector<const Transform*> photometric_;  // into config_.transforms, in list order
  std::vector<std::string> op_names_;  // per transform: its name (NVTX ranges)
  std::vector<const Transform*> tensor_ops_;   // kTensor (RandomErasing), on the slot last
  std::vector<bool> applies_;  // per transform: whether it applies to this image field
  RgbImage discard_;  // a photometric op that does not apply draws on this copy
  RgbImage out_, aux_;  // the output-size image and a second buffer for the photometric ops
  int last_scale_denom_ = 1;
  // ProcessRegion(): the rectangle of the image its raw pixels cover
  // (width 0: the whole image, as Process() takes them).
  Rect raw_region_;
  int out_h_ = 0, out_w_ = 0;  // the size of the sample being written
  TargetGeometry geometry_;
  WarpStep warp_;  // the warp being applied
};

}  // namespace stoker

#endif  // STOKER_PROGRAM_SAMPLE_PROCESSOR_H_
