// Copyright 2026 The stoker Authors.
#include "diagnose/diagnose.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "source/memory_source.h"

namespace stoker {
namespace {

// The encoded (or raw) bytes of the first `count` samples of `source`.
StatusOr<std::shared_ptr<MemorySource>> CacheSamples(Source* source, int64_t count) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<EpochReader> reader, source->StartEpoch(EpochSpec{}));
  std::vector<MemorySample> items;
  SampleScratch scratch;
  for (int64_t p = 0; p < count; ++p) {
    SampleData s;
    bool end = false;
    Status st = reader->Read(p, &scratch, &s, &end);
    if (end) break;
    if (!st.ok()) continue;  // the full pipeline will report it
    MemorySample it;
    it.id = s.id;
    it.label = s.label;
    it.name = reader->Name(p);
    if (s.pixels != nullptr) {
      it.raw_width = s.pixel_width;
      it.raw_height = s.pixel_height;
      for (int y = 0; y < s.pixel_height; ++y) {
        const uint8_t* row = s.pixels + y * s.pixel_stride;
        it.bytes.insert(it.bytes.end(), row, row + s.pixel_width * 3);
      }
    } else {
      it.bytes.assign(s.bytes, s.bytes + s.size);
    }
    items.push_back(std::move(it));
  }
  if (items.empty()) return DataLossError("diagnose: no readable sample to cache");
  return std::make_shared<MemorySource>(std::move(items));
}

// Runs `batches` batches of `loader` (restarting epochs as needed) through
// `step`, after one warm-up batch. Returns images per second.
StatusOr<double> RunLoader(Loader* loader, int batches,
                           const std::function<void(const BatchPtr&)>& step) {
  STOKER_RETURN_IF_ERROR(loader->Start());
  int64_t images = 0;
  double t0 = 0;
  for (int done = -1; done < batches;) {
    BatchPtr b;
    STOKER_RETURN_IF_ERROR(NextBatchAcrossEpochs(loader, &b));
    step(b);
    if (done == -1) {
      t0 = NowNs() * 1e-9;  // the clock starts after the warm-up batch
    } else {
      images += b->size();
    }
    ++done;
  }
  const double dt = NowNs() * 1e-9 - t0;
  loader->Stop();
  return dt > 0 ? images / dt : 0;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

Status NextBatchAcrossEpochs(Loader* loader, BatchPtr* batch) {
  bool end = false;
  STOKER_RETURN_IF_ERROR(loader->Next(batch, &end));
  if (!end) return Status::OK();
  STOKER_RETURN_IF_ERROR(loader->Start());
  STOKER_RETURN_IF_ERROR(loader->Next(batch, &end));
  if (end) return DataLossError("the loader yields no batch: an epoch ended before its first");
  return Status::OK();
}

StatusOr<Diagnosis> Diagnose(Loader* loader, const std::function<void(const BatchPtr&)>& step,
                             const DiagnoseOptions& options) {
  const int n = std::max(1, options.batches);
  Diagnosis d;
  if (!loader->source()->schema().IsImageLabel()) {
    // Mode 4 re-reads the source's encoded images only, which a record is more than.
    return UnimplementedError("diagnose: records (" + loader->source()->schema().ToString() +
                              ") are not diagnosed yet; time your loop over the loader");
  }
  // One batch from the pipeline for the cached modes.
  STOKER_RETURN_IF_ERROR(loader->Start());
  BatchPtr batch;
  bool end = false;
  STOKER_RETURN_IF_ERROR(loader->Next(&batch, &end));
  loader->Stop();
  if (end || batch == nullptr) return InvalidArgumentError("diagnose: the loader yields no batch");
  if (batch->variable()) {
    return InvalidArgumentError("diagnose: the loader's batches are lists of separately sized "
                                "samples (collate=\"list\"); diagnose a collate=\"batch\" "
                                "loader with the same source and a fixed-size pipeline");
  }
  const size_t bytes = batch->image_bytes();
  const size_t sample = batch->shape().sample_bytes();
  const int bsz = batch->size();

  auto time_steps = [&](const std::function<void()>& before) {
    before();
    step(batch);  // warm-up
    const double t0 = NowNs() * 1e-9;
    for (int i = 0; i < n; ++i) {
      before();
      step(batch);
    }
    const double dt = NowNs() * 1e-9 - t0;
    return dt > 0 ? n * bsz / dt : 0;
  };
  std::vector<uint8_t> copy(bytes);
  d.modes.push_back({"1 batch cached (host memory: no GPU here)", "", time_steps([] {})});
  d.modes.push_back({"2 batch copied each step (host copy stands in for host-to-device)",
                     "copy", time_steps([&] { std::memcpy(copy.data(), batch->images(), bytes); })});
  d.modes.push_back({"3 one sample copied into every slot (collation)", "collate",
                     time_steps([&] {
                       for (int s = 0; s < bsz; ++s) {
                         std::memcpy(copy.data() + s * sample, batch->images(), sample);
                       }
                     })});
  // Mode 4: the same engine over the encoded bytes of a few batches in memory.
  const int64_t few = int64_t{4} * loader->options().batch_size;
  const int64_t cache_count =  // a stream (-1) caches up to `few`, or all it has
      loader->num_samples() < 0 ? few : std::min<int64_t>(loader->num_samples(), few);
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<MemorySource> cached,
                   CacheSamples(loader->source().get(), cache_count));
  LoaderOptions cached_options = loader->options();
  cached_options.drop_last = false;
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Loader> cached_loader, Loader::Create(cached, cached_options));
  STOKER_ASSIGN_OR_RETURN(double r4, RunLoader(cached_loader.get(), n, step));
  const LoaderStats cached_stats = cached_loader->stats();
  d.modes.push_back({"4 encoded bytes cached in memory (adds decode + augment)", "decode+augment",
                     r4});
  cached_loader.reset();
  // Mode 5: the real thing.
  STOKER_ASSIGN_OR_RETURN(double r5, RunLoader(loader, n, step));
  d.pipeline_stats = loader->stats();
  d.modes.push_back({"5 full pipeline (adds reading from storage)", "read", r5});
  for (size_t i = 1; i < d.modes.size(); ++i) {
    d.modes[i].ratio_to_previous =
        d.modes[i].images_per_sec > 0 ? d.modes[i - 1].images_per_sec / d.modes[i].images_per_sec
                                      : 0;
  }

  const double r1 = d.modes[0].images_per_sec;
  d.cost_factor = r5 > 0 ? r1 / r5 : 0;
  d.data_bound = r5 < 0.95 * r1;
  const int threads = d.pipeline_stats.threads;
  if (!d.data_bound) {
    d.verdict = "not data-bound: the full pipeline delivers " + Fmt("%.0f", r5) +
                " images/s, within 5% of what the step alone consumes (" + Fmt("%.0f", r1) +
                "); fewer threads would do (stoker tune finds how few)";
    return d;
  }
  // Each mode runs at the speed of the slowest stage it includes, so the
  // last stage whose addition cuts throughput clearly (by more than 1.5x:
  // smaller steps are within timing noise) sets the pipeline's speed; when
  // no drop is that clear, the largest one.
  // A drop at the read stage counts only when the counters agree that
  // reading takes a real share of the workers' busy time: otherwise it is
  // the machine's load shifting between the two runs, not storage.
  const StageStats& full = d.pipeline_stats.total;
  const double busy = full.read_s + full.decode_s + full.augment_s;
  const bool read_counts = busy <= 0 || full.read_s >= 0.25 * busy;
  auto eligible = [&](size_t i) { return d.modes[i].stage != "read" || read_counts; };
  size_t worst = 0;
  for (size_t i = 1; i < d.modes.size(); ++i) {
    if (d.modes[i].ratio_to_previous > 1.5 && eligible(i)) worst = i;
  }
  if (worst == 0) {
    worst = 1;
    for (size_t i = 2; i < d.modes.size(); ++i) {
      if (eligible(i) && d.modes[i].ratio_to_previous > d.modes[worst].ratio_to_previous) {
        worst = i;
      }
    }
  }
  const double f = d.modes[worst].ratio_to_previous;
  const std::string stage = d.modes[worst].stage;
  const std::string times = Fmt("%.2fx", f) + "; the pipeline delivers " +
                            Fmt("%.0f%%", 100.0 / d.cost_factor) + " of what the step consumes";
  if (stage == "read") {
    d.bottleneck = "read";
    d.verdict = "data-bound by reading from storage (it cuts throughput " + times +
                "): use faster storage or keep the data in the page "
                "cache, pack small files into shards for sequential reads, or add threads to "
                "hide latency (now " + std::to_string(threads) + ")";
  } else if (stage == "decode+augment") {
    const bool decode = cached_stats.total.decode_s >= cached_stats.total.augment_s;
    d.bottleneck = decode ? "decode" : "augment";
    d.verdict = decode
        ? "data-bound by decoding (decode + augment cut throughput " + times +
              "): add threads (now " +
              std::to_string(threads) + "), keep dct_scaling on, or store pre-resized images "
              "so less is decoded"
        : "data-bound by augmentation (decode + augment cut throughput " + times +
              "): add threads "
              "(now " + std::to_string(threads) + "), output uint8 and normalise on the GPU, or "
              "drop costly transforms";
  } else if (stage == "copy") {
    d.bottleneck = "copy";
    d.verdict = "data-bound by the batch copy (it cuts throughput " + times +
                "): ship uint8 and use device='cuda' (pinned memory, async copies)";
  } else {
    d.bottleneck = "collate";
    d.verdict = "data-bound by batch assembly (it cuts throughput " + times + ")";
  }
  return d;
}

std::string FormatDiagnosis(const Diagnosis& d) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-68s %10s %9s\n", "mode", "images/s", "vs prev");
  out += line;
  for (const ModeResult& m : d.modes) {
    std::snprintf(line, sizeof line, "%-68s %10.1f %8.2fx\n", m.name.c_str(), m.images_per_sec,
                  m.ratio_to_previous);
    out += line;
  }
  const StageStats& s = d.pipeline_stats.total;
  const double busy = s.read_s + s.decode_s + s.augment_s;
  auto pct = [&](double v) { return busy > 0 ? 100 * v / busy : 0.0; };
  std::snprintf(line, sizeof line,
                "busy time (full pipeline, %d threads): read %.0f%%  decode %.0f%%  augment "
                "%.0f%%; consumer waited %.2f s\n",
                d.pipeline_stats.threads, pct(s.read_s), pct(s.decode_s), pct(s.augment_s),
                s.consumer_wait_s);
  out += line;
  const LoaderStats& ps = d.pipeline_stats;
  if (ps.cache_capacity > 0) {
    const int64_t lookups = ps.cache_hits + ps.cache_misses;
    std::snprintf(line, sizeof line,
                  "cache: hit rate %.0f%% (%lld hits, %lld misses), %.1f of %.1f MiB, %lld "
                  "evicted\n",
                  lookups > 0 ? 100.0 * ps.cache_hits / lookups : 0.0,
                  static_cast<long long>(ps.cache_hits), static_cast<long long>(ps.cache_misses),
                  ps.cache_bytes / 1048576.0, ps.cache_capacity / 1048576.0,
                  static_cast<long long>(ps.cache_evicted));
    out += line;
    if (!ps.cache_advice.empty()) out += "cache: " + ps.cache_advice + "\n";
  }
  out += "verdict: " + d.verdict + "\n";
  return out;
}

}  // namespace stoker
