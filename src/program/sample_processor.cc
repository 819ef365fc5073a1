// Copyright 2026 The stoker Authors.
#include "program/sample_processor.h"

#include "base/clock.h"
#include "ops/transform_ops.h"
#include "trace/nvtx.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

namespace stoker {
namespace {

struct SinkCtx {
  const PixelWriter* writer;
  uint8_t* slot;
  int height;
};

void SinkToSlot(void* ctx, int y, const uint8_t* rgb, int width) {
  auto* c = static_cast<SinkCtx*>(ctx);
  c->writer->WriteRow(rgb, y, c->height, width, c->slot);
}

void SinkToImage(void* ctx, int y, const uint8_t* rgb, int width) {
  auto* img = static_cast<RgbImage*>(ctx);
  std::memcpy(img->row(y), rgb, static_cast<size_t>(width) * 3);
}

RgbView RawView(const SampleData& s) {
  return RgbView{s.pixels, s.pixel_width, s.pixel_height, s.pixel_stride};
}

bool Inside(const Rect& r, int w, int h) {
  return r.x >= 0 && r.y >= 0 && r.right() <= w && r.bottom() <= h && r.width > 0 &&
         r.height > 0;
}

// Copies `crop` of `src` (which may extend outside it) into `dst`, zero
// outside: torchvision's padding.
void CropWithPadding(const RgbView& src, const Rect& crop, RgbImage* dst) {
  dst->Resize(crop.width, crop.height);
  for (int y = 0; y < crop.height; ++y) {
    uint8_t* out = dst->row(y);
    std::memset(out, 0, static_cast<size_t>(crop.width) * 3);
    const int sy = crop.y + y;
    if (sy < 0 || sy >= src.height) continue;
    const int x0 = std::max(0, crop.x), x1 = std::min(src.width, crop.right());
    if (x1 > x0) {
      std::memcpy(out + (x0 - crop.x) * 3, src.row(sy) + x0 * 3,
                  static_cast<size_t>(x1 - x0) * 3);
    }
  }
}

// RandomCrop's padding_mode / fill (GeometryStage::pad_mode): the crop of
// `src` with its outside filled as torchvision's F.pad calls fill it
// (padding, then pad_if_needed's pad of the padded image).
void CropWithPaddingMode(const RgbView& src, const GeometryStage& st, RgbImage* dst) {
  const Rect& crop = st.crop;
  dst->Resize(crop.width, crop.height);
  auto map = [&](int u, int n, int lo, int hi) { return PaddedCoord(u, n, lo, hi, st.pad_mode); };
  std::vector<int> xs(static_cast<size_t>(crop.width));
  for (int x = 0; x < crop.width; ++x) {
    xs[x] = map(crop.x + x, src.width, st.pad1[0], st.pad1[2]);
  }
  for (int y = 0; y < crop.height; ++y) {
    uint8_t* out = dst->row(y);
    const int sy = map(crop.y + y, src.height, st.pad1[1], st.pad1[3]);
    for (int x = 0; x < crop.width; ++x) {
      const uint8_t* in = (sy < 0 || xs[x] < 0) ? st.pad_fill.data() : src.row(sy) + 3 * xs[x];
      out[3 * x] = in[0];
      out[3 * x + 1] = in[1];
      out[3 * x + 2] = in[2];
    }
  }
}

}  // namespace

int64_t SampleProcessor::Clock(const StageTimes* times) const {
  return config_.timing || times->trace != nullptr ? NowNs() : 0;
}

int64_t SampleProcessor::TraceClock(const StageTimes* times) {
  return times->trace != nullptr ? NowNs() : 0;
}

SampleProcessor::SampleProcessor(const ProcessorConfig& config, const PixelWriter* writer)
    : config_(config), writer_(writer), decoder_(config.decoder) {
  for (const Transform& t : config_.transforms) {
    op_names_.push_back(TransformShortName(t));
    const bool applies =
        t.fields.empty() ? config_.primary
                         : std::find(t.fields.begin(), t.fields.end(), config_.image_field) !=
                               t.fields.end();
    applies_.push_back(applies);
    if (t.photometric()) photometric_.push_back(&t);
    if (StageOf(t) == TransformStage::kTensor && config_.primary) tensor_ops_.push_back(&t);
  }
}

size_t SampleProcessor::scratch_bytes() const {
  return resampler_.scratch_bytes() + stage_a_.capacity_bytes() + stage_b_.capacity_bytes() +
         out_.capacity_bytes() + aux_.capacity_bytes() + discard_.capacity_bytes() +
         decoder_.scratch_bytes();
}

bool SampleProcessor::TrimScratch() {
  if (config_.scratch_budget == 0 || scratch_bytes() <= config_.scratch_budget) return false;
  decoder_.ReleaseScratch();
  resampler_.ReleaseScratch();
  stage_a_.Release();
  stage_b_.Release();
  out_.Release();
  aux_.Release();
  discard_.Release();
  return true;
}

int SampleProcessor::DctScale(const GeometryStage& st) {
  // The largest 1/d keeping the crop at least as large as the output in both
  // directions, when the crop is >= 2x.
  int d = 1;
  while (d < 8 && st.crop.width >= 2 * d * st.out_width &&
         st.crop.height >= 2 * d * st.out_height) {
    d *= 2;
  }
  return d;
}

Status SampleProcessor::DecodeScaled(const DecodeRequest& req, RgbView* view, int* origin_x,
                                     int* origin_y) {
  DecodedRegion region;
  STOKER_RETURN_IF_ERROR(decoder_.Decode(req, &region));
  if (region.scale_denom != req.scale_denom) {
    return InternalError("decoder ignored the DCT scale");
  }
  *view = region.pixels;
  *origin_x = region.region.x;
  *origin_y = region.region.y;
  return Status::OK();
}

DecodeRequest SampleProcessor::ScaledTaps(const GeometryStage& st, int d,
                                          const ImageHeader& header, bool flip, bool vflip) {
  const double inv = 1.0 / d;
  const int sw = (header.width + d - 1) / d, sh = (header.height + d - 1) / d;
  auto span = [&](int a, int b, int limit, int* lo, int* hi) {
    *lo = static_cast<int>(std::floor(a * inv));
    *hi = std::min(limit, static_cast<int>(std::ceil(b * inv)));
  };
  int xlo, xhi, ylo, yhi;
  span(st.crop.x, st.crop.right(), sw, &xlo, &xhi);
  span(st.crop.y, st.crop.bottom(), sh, &ylo, &yhi);
  ComputeAxisCoeffs(st.crop.x * inv, st.crop.right() * inv, xlo, xhi, st.out_width,
                    st.window.x, st.window.width, flip, &h_, /*fixed_taps=*/true);
  ComputeAxisCoeffs(st.crop.y * inv, st.crop.bottom() * inv, ylo, yhi, st.out_height,
                    st.window.y, st.window.height, vflip, &v_);
  // The rectangle the taps read (full-resolution coordinates).
  DecodeRequest req;
  req.scale_denom = d;
  req.region = Rect{h_.min_input * d, v_.min_input * d, (h_.max_input - h_.min_input) * d,
                    (v_.max_input - v_.min_input) * d};
  return req;
}

Status SampleProcessor::Resample(const RgbView& src, int origin_x, int origin_y, Rng* rng,
                                 uint8_t* slot, bool tail_padding, StageTimes* times) {
  const int64_t start = TraceClock(times);
  resampler_.Begin(h_, v_);
  resampler_.PushRows(src, origin_x, origin_y, tail_padding);
  return FinishResample(rng, slot, times, start);
}

Status SampleProcessor::FinishResample(Rng* rng, uint8_t* slot, StageTimes* times,
                                       int64_t start_ns) {
  const SampleTrace* trace = times->trace;
  if (photometric_.empty()) {  // fast path: rows go straight into the slot
    SinkCtx ctx{writer_, slot, out_h_};
    {
      nvtx::Range range("resample+write");
      if (!resampler_.Finish(&SinkToSlot, &ctx)) {
        return InternalError("resampler: input rows missing");
      }
    }
    int64_t t = TraceClock(times);
    if (trace != nullptr) trace->Add(SpanKind::kTransform, start_ns, t, trace->names->resample_write);
    RunTensorOps(rng, slot, trace, t);
    return Status::OK();
  }
  // Photometric ops: the output-size image in scratch, the ops in place,
  // then the rows into the slot.
  out_.Resize(h_.length, v_.length);
  {
    nvtx::Range range("resample");
    if (!resampler_.Finish(&SinkToImage, &out_)) {
      return InternalError("resampler: input rows missing");
    }
  }
  int64_t t = TraceClock(times);
  if (trace != nullptr) trace->Add(SpanKind::kTransform, start_ns, t, trace->names->resample);
  for (const Transform* op : photometric_) {
    const size_t index = static_cast<size_t>(op - config_.transforms.data());
    nvtx::Range range(op_names_[index].c_str());
    if (!applies_[index] && StageOf(*op) != TransformStage::kWarp) {
      // Not this field's: the same draws on a throwaway copy (a callback
      // draws one seed), so the next transforms draw as on the other fields.
      if (op->callback != nullptr) {
        (void)rng->Next();
      } else {
        discard_.Resize(out_.width(), out_.height());
        std::memcpy(discard_.data(), out_.data(),
                    static_cast<size_t>(out_.width()) * out_.height() * 3);
        OpsOf(*op).image(*op, rng, &discard_, &aux_);
      }
    } else if (op->callback != nullptr) {
      STOKER_RETURN_IF_ERROR(RunCallback(*op, rng, times));
    } else if (StageOf(*op) == TransformStage::kWarp) {
      // Drawn, then applied: the draw is kept for the targets.
      DrawWarp(*op, rng, out_.width(), out_.height(), &warp_);
      ApplyDrawnWarp(*op, warp_, &out_, &aux_);
      if (config_.record_geometry) {
        GeometryStep step;
        step.kind = GeometryStep::kWarp;
        step.in_width = step.out_width = out_.width();
        step.in_height = step.out_height = out_.height();
        step.warp = warp_;
        geometry_.steps.push_back(step);
      }
    } else {
      OpsOf(*op).image(*op, rng, &out_, &aux_);
    }
    if (trace != nullptr) {
      const int64_t now = NowNs();
      trace->Add(SpanKind::kTransform, t, now,
                 trace->names->transform[static_cast<size_t>(op - config_.transforms.data())]);
      t = now;
    }
  }
  {
    nvtx::Range range("write");
    for (int y = 0; y < out_.height(); ++y) {
      writer_->WriteRow(out_.row(y), y, out_.height(), out_.width(), slot);
    }
  }
  if (trace != nullptr) {
    const int64_t now = NowNs();
    trace->Add(SpanKind::kTransform, t, now, trace->names->write);
    t = now;
  }
  RunTensorOps(rng, slot, trace, t);
  return Status::OK();
}

Status SampleProcessor::RunCallback(const Transform& t, Rng* rng, StageTimes* times) {
  const uint64_t seed = rng->Next();  // drawn whatever the callback does with it
  // RgbImage rows are packed (stride = width * 3), as SampleCallback promises.
  const int64_t t0 = Clock(times);
  Status st = (*t.callback)(out_.data(), out_.width(), out_.height(), seed);
  times->callback_ns += Clock(times) - t0;
  if (!st.ok()) return st.WithContext(t.ToString());
  return Status::OK();
}

void SampleProcessor::RunTensorOps(Rng* rng, uint8_t* slot, const SampleTrace* trace,
                                   int64_t start_ns) const {
  if (tensor_ops_.empty()) return;
  nvtx::Range range("tensor ops");
  const OutputTensor out{slot, out_h_, out_w_, DTypeSize(writer_->dtype()),
                         writer_->layout() == Layout::kNCHW};
  for (const Transform* t : tensor_ops_) OpsOf(*t).tensor(*t, rng, out);
  if (trace != nullptr) trace->Add(SpanKind::kTransform, start_ns, NowNs(), trace->names->tensor);
}

Status SampleProcessor::Process(const SampleData& sample, Rng* rng, const SampleOutput& out,
                                StageTimes* times, const std::vector<double>* boxes) {

  const int64_t t0 = Clock(times);
  nvtx::Range decode_range("decode");
  ImageHeader header;
  const bool raw = sample.pixels != nullptr;
  if (raw) {
    header.width = sample.pixel_width;
    header.height = sample.pixel_height;
  } else {
    STOKER_RETURN_IF_ERROR(decoder_.Open(sample.bytes, sample.size, &header));
  }
  times->source_width = header.width;
  times->source_height = header.height;
  if (out.expect_width > 0 &&
      (header.width != out.expect_width || header.height != out.expect_height)) {
    return InvalidArgumentError(
        "image is " + std::to_string(header.height) + "x" + std::to_string(header.width) +
        " (HxW), the primary image " + std::to_string(out.expect_height) + "x" +
        std::to_string(out.expect_width) + ": image fields transformed together need one size");
  }
  GeometryPlan plan;
  std::vector<GeometryStep>* steps = nullptr;
  if (config_.record_geometry) {
    geometry_.Reset(header.width, header.height);
    steps = &geometry_.steps;
  }
  STOKER_RETURN_IF_ERROR(
      PlanGeometry(config_.transforms, header.width, header.height, rng, &plan, steps, boxes));
  uint8_t* slot = out.slot;
  if ((out.image != nullptr || out.buffer != nullptr) &&
      (plan.width() <= 0 || plan.height() <= 0)) {
    return InvalidArgumentError("the transforms give an empty image (" +
                                std::to_string(plan.height()) + "x" +
                                std::to_string(plan.width()) + ")");
  }
  if (out.image != nullptr) {  // a secondary image field: uint8 HWC rows
    out.image->Resize(plan.width(), plan.height());
    slot = out.image->data();
  } else if (out.buffer != nullptr) {  // variable size: this sample's own
    STOKER_ASSIGN_OR_RETURN(slot, out.buffer->ReserveSlot(out.index, plan.height(),
                                                          plan.width()));
  } else if (plan.width() != writer_->width() || plan.height() != writer_->height()) {
    return InternalError("planned output size does not match the batch");
  }
  out_h_ = plan.height();
  out_w_ = plan.width();
  const GeometryStage& st = plan.stages[0];
  if (plan.num_stages != 1 || !Inside(st.crop, header.width, header.height)) {
    decode_range.End();  // ProcessSlow opens its own
    return ProcessSlow(sample, header, plan, rng, slot, t0, times);
  }
  // The decode span's path: region (JPEG), DCT scale, rows, raw pixels.
  const SampleTrace* trace = times->trace;
  uint8_t path = raw ? kDecodeRaw
                     : header.format == ImageFormat::kJpeg ? kDecodeRegion : kDecodeWhole;

  // Fast path: the DCT scale (DctScale), the taps, the region they read.
  const int d = config_.dct_scaling && !raw && header.format == ImageFormat::kJpeg
                    ? DctScale(st)
                    : 1;
  last_scale_denom_ = d;
  const DecodeRequest req = ScaledTaps(st, d, header, plan.flip, plan.vflip);
  resampler_.SetPadFill(st.window_filled ? &st.window_fill : nullptr);
  // What the buffered path would hold: PNG decodes the whole image, JPEG the
  // region (at the DCT scale).
  const size_t buffered_bytes =
      header.format == ImageFormat::kPng
          ? size_t{3} * static_cast<size_t>(header.width) * static_cast<size_t>(header.height)
          : size_t{3} * static_cast<size_t>(h_.max_input - h_.min_input) *
                static_cast<size_t>(v_.max_input - v_.min_input);
  if (!raw && config_.stream_rows && buffered_bytes >= config_.stream_rows_min_bytes &&
      decoder_.CanDecodeRows()) {
    // Row by row (JPEG, non-interlaced PNG): each decoded row of the region
    // goes straight into the horizontal pass, so the region is never held;
    // decode_ns then includes that pass.
    resampler_.Begin(h_, v_);
    struct RowCtx {
      Resampler* resampler;
      int origin_x;
    } ctx{&resampler_, h_.min_input};
    DecodedRegion region;
    STOKER_RETURN_IF_ERROR(decoder_.DecodeRows(
        req,
        [](void* p, int /*y*/, const uint8_t* rgb) {
          auto* c = static_cast<RowCtx*>(p);
          c->resampler->PushRow(rgb, c->origin_x, /*padded=*/true);  // 16 bytes of slack
        },
        &ctx, &region));
    if (region.scale_denom != d) return InternalError("decoder ignored the DCT scale");
    if (region.region.x != h_.min_input || region.region.y != v_.min_input) {
      return InternalError("decoded rows do not start where the taps do");
    }
    const int64_t t1 = Clock(times);
    times->decode_ns += t1 - t0;
    decode_range.End();
    if (trace != nullptr) {
      trace->Add(SpanKind::kDecode, t0, t1, 0,
                 static_cast<uint8_t>(path | kDecodeRows | (d > 1 ? kDecodeScaled : 0)), d);
    }
    const Status status = FinishResample(rng, slot, times, t1);
    times->augment_ns += Clock(times) - t1;
    return status;
  }
  RgbView view;
  int origin_x = 0, origin_y = 0;
  bool tail_padding = false;
  if (raw) {
    view = RawView(sample);
    if (raw_region_.width > 0) {  // ProcessRegion: the pixels of the region only
      const Rect& r = raw_region_;
      if (h_.min_input < r.x || h_.max_input > r.right() || v_.min_input < r.y ||
          v_.max_input > r.bottom()) {
        return InternalError("raw pixels do not cover the region the taps read");
      }
      view.width = r.width;
      view.height = r.height;
      origin_x = r.x;
      origin_y = r.y;
    }
  } else {
    STOKER_RETURN_IF_ERROR(DecodeScaled(req, &view, &origin_x, &origin_y));
    tail_padding = true;  // decoder buffers keep slack after the last row
  }
  const int64_t t1 = Clock(times);
  times->decode_ns += t1 - t0;
  decode_range.End();
  if (trace != nullptr) {
    trace->Add(SpanKind::kDecode, t0, t1, 0,
               static_cast<uint8_t>(path | (d > 1 ? kDecodeScaled : 0)), d);
  }
  const Status status = Resample(view, origin_x, origin_y, rng, slot, tail_padding, times);
  times->augment_ns += Clock(times) - t1;
  return status;
}

StatusOr<Rect> SampleProcessor::RawRegion(int width, int height, Rng rng) {
  const Rect whole{0, 0, width, height};
  GeometryPlan plan;
  STOKER_RETURN_IF_ERROR(PlanGeometry(config_.transforms, width, height, &rng, &plan));
  if (plan.num_stages != 1 || !Inside(plan.stages[0].crop, width, height)) return whole;
  const GeometryStage& st = plan.stages[0];
  ImageHeader header;
  header.width = width;
  header.height = height;
  // Process() computes the same taps again (h_, v_ are its scratch).
  return ScaledTaps(st, 1, header, plan.flip, plan.vflip).region;
}

Status SampleProcessor::ProcessRegion(const SampleData& sample, const Rect& region, Rng* rng,
                                      uint8_t* slot, StageTimes* times) {
  raw_region_ = region;
  const Status st = Process(sample, rng, slot, times);
  raw_region_ = Rect{};
  return st;
}

Status SampleProcessor::DecodeWhole(const SampleData& sample, CachedImage* out) {
  DecodedRegion r;
  STOKER_RETURN_IF_ERROR(decoder_.DecodeAll(sample.bytes, sample.size, &r));
  const size_t row = static_cast<size_t>(r.pixels.width) * 3;
  out->width = r.pixels.width;
  out->height = r.pixels.height;
  out->pixels.resize(row * static_cast<size_t>(r.pixels.height) + 16);
  out->pixels.shrink_to_fit();
  for (int y = 0; y < r.pixels.height; ++y) {
    std::memcpy(out->pixels.data() + row * static_cast<size_t>(y), r.pixels.row(y), row);
  }
  return Status::OK();
}

Status SampleProcessor::ProcessSlow(const SampleData& sample, const ImageHeader& header,
                                    const GeometryPlan& plan, Rng* rng, uint8_t* slot,
                                    int64_t t0, StageTimes* times) {
  last_scale_denom_ = 1;
  nvtx::Range decode_range("decode");
  const bool raw = sample.pixels != nullptr;
  const GeometryStage& first = plan.stages[0];
  // The first stage's DCT scale, as the fast path picks it (a crop inside the
  // image, shrunk 2x or more in both directions).
  const int d = config_.dct_scaling && !raw && header.format == ImageFormat::kJpeg &&
                        Inside(first.crop, header.width, header.height)
                    ? DctScale(first)
                    : 1;
  RgbView current;
  int origin_x = 0, origin_y = 0;  // of `current`'s pixel (0, 0), for the first stage
  if (raw) {
    if (raw_region_.width > 0 &&
        !(raw_region_ == Rect{0, 0, header.width, header.height})) {
      return InternalError("raw pixels of a region on the slow path (it reads the whole image)");
    }
    current = RawView(sample);
  } else if (d > 1) {
    // The first stage's taps on the 1/d image, then only the region they read.
    const bool last = plan.num_stages == 1;
    const DecodeRequest req =
        ScaledTaps(first, d, header, last && plan.flip, last && plan.vflip);
    STOKER_RETURN_IF_ERROR(DecodeScaled(req, &current, &origin_x, &origin_y));
    last_scale_denom_ = d;
  } else {
    DecodedRegion all;
    STOKER_RETURN_IF_ERROR(decoder_.Decode(DecodeRequest{}, &all));
    current = all.pixels;
  }
  const SampleTrace* trace = times->trace;
  const int64_t t1 = Clock(times);
  times->decode_ns += t1 - t0;
  decode_range.End();
  if (trace != nullptr) {
    trace->Add(SpanKind::kDecode, t0, t1, 0,
               raw ? kDecodeRaw
                   : static_cast<uint8_t>(d > 1 ? (kDecodeRegion | kDecodeScaled) : kDecodeWhole),
               d);
  }
  RgbImage* bufs[2] = {&stage_a_, &stage_b_};
  int which = 0;
  for (int s = 0; s < plan.num_stages; ++s) {
    const GeometryStage& st = plan.stages[s];
    const bool last = s + 1 == plan.num_stages;
    RgbView cropped = current;
    int lo_x = st.crop.x, lo_y = st.crop.y;
    int ox = 0, oy = 0;
    const bool scaled = s == 0 && d > 1;  // taps already in h_, v_
    if (scaled) {
      ox = origin_x;
      oy = origin_y;
    } else if (!Inside(st.crop, current.width, current.height)) {
      if (st.pad_mode != kPadConstant || st.pad_fill != std::array<uint8_t, 3>{0, 0, 0}) {
        CropWithPaddingMode(current, st, bufs[which]);
      } else {
        CropWithPadding(current, st.crop, bufs[which]);
      }
      cropped = bufs[which]->view();
      which ^= 1;
      lo_x = lo_y = 0;
    }
    if (!scaled) {
      ComputeAxisCoeffs(lo_x, lo_x + st.crop.width, lo_x, lo_x + st.crop.width, st.out_width,
                        st.window.x, st.window.width, last && plan.flip, &h_,
                        /*fixed_taps=*/true);
      ComputeAxisCoeffs(lo_y, lo_y + st.crop.height, lo_y, lo_y + st.crop.height,
                        st.out_height, st.window.y, st.window.height, last && plan.vflip, &v_);
    }
    resampler_.SetPadFill(st.window_filled ? &st.window_fill : nullptr);
    if (last) {
      // The span of the last resample covers the earlier stages too.
      resampler_.Begin(h_, v_);
      resampler_.PushRows(cropped, ox, oy, /*tail_padding=*/false);
      const Status st = FinishResample(rng, slot, times, t1);
      if (!st.ok()) {
        times->augment_ns += Clock(times) - t1;
        return st;
      }
    } else {
      resampler_.RunToImage(cropped, ox, oy, h_, v_, bufs[which]);
      current = bufs[which]->view();
      which ^= 1;
    }
  }
  times->augment_ns += Clock(times) - t1;
  return Status::OK();
}

}  // namespace stoker
