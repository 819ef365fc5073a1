// Copyright 2026 The stoker Authors.
#include "pipeline/loader_stats.h"

#include "base/clock.h"

namespace stoker {

void WorkerCounters::AddVideo(const VideoWork& w) {
  const int64_t v[kVideoCounters] = {1, w.frames_decoded, w.frames_converted,
                                     w.frames_delivered, w.gops_decoded, w.seeks,
                                     w.indexes_built, w.demux_ns, w.seek_ns, w.decode_ns,
                                     w.convert_ns, w.transform_ns};
  for (int k = 0; k < kVideoCounters; ++k) Add(video[k], v[k]);
}

void Totals::AddWorker(const WorkerCounters& c) {
  for (int k = 0; k < kVideoCounters; ++k) video[k] += c.video[k].load(std::memory_order_relaxed);
  read_ns += c.read_ns.load(std::memory_order_relaxed);
  decode_ns += c.decode_ns.load(std::memory_order_relaxed);
  augment_ns += c.augment_ns.load(std::memory_order_relaxed);
  wait_ns += c.wait_ns.load(std::memory_order_relaxed);
  callback_ns += c.callback_ns.load(std::memory_order_relaxed);
  images += c.images.load(std::memory_order_relaxed);
  skipped += c.skipped.load(std::memory_order_relaxed);
  bytes += c.bytes.load(std::memory_order_relaxed);
  boxes_removed += c.boxes_removed.load(std::memory_order_relaxed);
}

Totals& Totals::operator-=(const Totals& b) {
  for (int k = 0; k < kVideoCounters; ++k) video[k] -= b.video[k];
  read_ns -= b.read_ns;
  decode_ns -= b.decode_ns;
  augment_ns -= b.augment_ns;
  wait_ns -= b.wait_ns;
  callback_ns -= b.callback_ns;
  images -= b.images;
  skipped -= b.skipped;
  bytes -= b.bytes;
  boxes_removed -= b.boxes_removed;
  consumer_wait_ns -= b.consumer_wait_ns;
  batches -= b.batches;
  wall_ns -= b.wall_ns;
  return *this;
}

StageStats Totals::ToStageStats() const {
  StageStats s;
  s.images = images;
  s.batches = batches;
  s.skipped = skipped;
  s.boxes_removed = boxes_removed;
  s.seconds = wall_ns * 1e-9;
  s.read_s = read_ns * 1e-9;
  s.decode_s = decode_ns * 1e-9;
  s.augment_s = augment_ns * 1e-9;
  s.callback_s = callback_ns * 1e-9;
  s.worker_wait_s = wait_ns * 1e-9;
  s.consumer_wait_s = consumer_wait_ns * 1e-9;
  s.bytes_read = bytes;
  VideoStageStats& v = s.video;
  v.clips = video[kVideoClips];
  v.frames_decoded = video[kVideoFramesDecoded];
  v.frames_converted = video[kVideoFramesConverted];
  v.frames_delivered = video[kVideoFramesDelivered];
  v.gops_decoded = video[kVideoGops];
  v.seeks = video[kVideoSeeks];
  v.indexes_built = video[kVideoIndexes];
  v.demux_s = video[kVideoDemuxNs] * 1e-9;
  v.seek_s = video[kVideoSeekNs] * 1e-9;
  v.decode_s = video[kVideoDecodeNs] * 1e-9;
  v.convert_s = video[kVideoConvertNs] * 1e-9;
  v.transform_s = video[kVideoTransformNs] * 1e-9;
  return s;
}

void LoaderCounters::BeginEpoch(const Workers& workers) {
  snapshot_ = Sum(workers);
  epoch_start_ns_ = NowNs();
  epoch_done_ = false;
}

void LoaderCounters::EndEpoch() {
  if (epoch_done_) return;
  wall_ns_ += NowNs() - epoch_start_ns_;
  epoch_done_ = true;
}

Totals LoaderCounters::Sum(const Workers& workers) const {
  Totals t;
  for (const WorkerCounters& c : workers) t.AddWorker(c);
  t.consumer_wait_ns = consumer_wait_ns_;
  t.batches = batches_;
  t.wall_ns = wall_ns_;
  return t;
}

void LoaderCounters::Fill(const Workers& workers, bool running, LoaderStats* s) const {
  Totals now = Sum(workers);
  if (running && !epoch_done_) now.wall_ns += NowNs() - epoch_start_ns_;
  s->total = now.ToStageStats();
  Totals e = now;
  e -= snapshot_;
  s->epoch = e.ToStageStats();
}

}  // namespace stoker
