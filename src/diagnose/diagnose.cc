// Copyright 2026 The stoker Authors.
#include "diagnose/diagnose.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "base/process.h"
#include "source/memory_source.h"
#include "stoker/video.h"

namespace stoker {
namespace {

// The encoded (or raw) bytes of the first `count` samples of `source`, and
// their record fields.
StatusOr<std::shared_ptr<MemorySource>> CacheSamples(Source* source, int64_t count) {
  const Schema schema = source->schema();
  const int image = schema.image(), label = schema.label();
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
    } else if (s.bytes != nullptr) {
      it.bytes.assign(s.bytes, s.bytes + s.size);
    }
    // Records: every field's value and bytes (the primary image's and label's
    // entries are not read, so their bytes are not kept).
    for (int k = 0; k < s.num_fields; ++k) {
      const FieldValue& v = s.fields[k];
      it.fields.push_back(v);
      it.fields.back().member = {};  // it points into the reader's scratch
      const bool primary = k == image || k == label;
      it.field_bytes.emplace_back(primary || v.data == nullptr ? nullptr : v.data,
                                  primary || v.data == nullptr ? nullptr : v.data + v.size);
      if (primary) it.fields.back().data = nullptr;
    }
    items.push_back(std::move(it));
  }
  if (items.empty()) return DataLossError("diagnose: no readable sample to cache");
  return std::make_shared<MemorySource>(std::move(items), schema);
}

// One round of a started loader feeding `step`: how long the step waited
// for a batch inside Next() (the loader's own consumer-wait counter: blocked
// until a batch was ready) and how long it spent inside Next() in all (hand-
// off and epoch restarts too, which a loaded machine lengthens without any
// lack of data), against the round's wall time; and the CPU used meanwhile
// (this process; the machine).
struct Round {
  double wall = 0;
  double wait = 0;     // blocked for a batch
  double in_next = 0;  // inside Next(), restarts included
  double process_cpu = 0;
  double machine_busy = 0;
  int64_t images = 0;
};

StatusOr<Round> RunRound(Loader* loader, int steps,
                         const std::function<void(const BatchPtr&)>& step) {
  Round r;
  const MachineCpu m0 = ReadMachineCpu();
  const double c0 = CpuSeconds();
  const double wait0 = loader->stats().total.consumer_wait_s;
  const double t0 = NowNs() * 1e-9;
  for (int i = 0; i < steps; ++i) {
    BatchPtr b;
    const double n0 = NowNs() * 1e-9;
    STOKER_RETURN_IF_ERROR(NextBatchAcrossEpochs(loader, &b));
    r.in_next += NowNs() * 1e-9 - n0;
    step(b);
    r.images += b->size();
  }
  r.wall = NowNs() * 1e-9 - t0;
  r.wait = loader->stats().total.consumer_wait_s - wait0;
  r.process_cpu = CpuSeconds() - c0;
  r.machine_busy = ReadMachineCpu().busy_s - m0.busy_s;
  return r;
}

// Starts `loader`, feeds `step` one warm-up batch (not counted).
Status StartWarm(Loader* loader, const std::function<void(const BatchPtr&)>& step) {
  STOKER_RETURN_IF_ERROR(loader->Start());
  BatchPtr b;
  STOKER_RETURN_IF_ERROR(NextBatchAcrossEpochs(loader, &b));
  step(b);
  return Status::OK();
}

// Runs `batches` batches of `loader` (restarting epochs as needed) through
// `step`, after one warm-up batch. Returns images per second.
StatusOr<double> RunLoader(Loader* loader, int batches,
                           const std::function<void(const BatchPtr&)>& step) {
  STOKER_RETURN_IF_ERROR(StartWarm(loader, step));
  STOKER_ASSIGN_OR_RETURN(Round r, RunRound(loader, batches, step));
  loader->Stop();
  return r.wall > 0 ? r.images / r.wall : 0;
}

// 0: fed, 1: marginal, 2: data-bound.
int WaitClass(double wait, const DiagnoseOptions& o) {
  return wait < o.fed_below ? 0 : wait > o.starved_above ? 2 : 1;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string VideoStageLine(const VideoStageStats& v) {
  const double busy = v.demux_s + v.seek_s + v.decode_s + v.convert_s + v.transform_s;
  auto pct = [&](double x) { return Fmt("%.0f%%", busy > 0 ? 100 * x / busy : 0.0); };
  const double clips = v.clips > 0 ? static_cast<double>(v.clips) : 1;
  return "demux " + pct(v.demux_s) + ", seek " + pct(v.seek_s) + ", decode " +
         pct(v.decode_s) + ", convert " + pct(v.convert_s) + ", transforms " +
         pct(v.transform_s) + "; " + std::to_string(v.frames_decoded) + " frames decoded for " +
         std::to_string(v.frames_delivered) + " delivered (" +
         Fmt("%.1f", v.frames_decoded / clips) + " decoded, " +
         Fmt("%.1f", (v.frames_decoded - v.frames_converted) / clips) + " of them unused, and " +
         Fmt("%.1f", v.gops_decoded / clips) + " GOPs per clip of " +
         std::to_string(v.clips) + ")";
}

std::string VideoAdvice(const VideoStageStats& v, int threads, int codec_threads,
                        const CpuUse& cpu) {
  std::string out = VideoStageLine(v);
  const int cores = std::max(1, cpu.cores);
  const int used = threads * codec_threads;
  std::vector<std::string> tips;
  if (used > cores) {
    tips.push_back("workers x codec_threads (" + std::to_string(threads) + " x " +
                   std::to_string(codec_threads) + ") oversubscribe the " +
                   std::to_string(cores) + " cores: set codec_threads=" +
                   std::to_string(std::max(1, cores / threads)));
  } else if (used < cores && !cpu.contended) {
    tips.push_back("workers x codec_threads (" + std::to_string(threads) + " x " +
                   std::to_string(codec_threads) + ") leave cores idle: threads=" +
                   std::to_string(cores / codec_threads) +
                   " (many videos), or codec_threads=" + std::to_string(cores / threads) +
                   " (few large ones)");
  }
  if (v.frames_delivered > 0 && v.frames_decoded > 2 * v.frames_delivered) {
    tips.push_back("most decoded frames are not delivered (" +
                   Fmt("%.1f", static_cast<double>(v.frames_decoded) / v.frames_delivered) +
                   " per delivered frame, " +
                   Fmt("%.0f", (v.frames_decoded - v.frames_converted) /
                                   std::max<double>(1, static_cast<double>(v.clips))) +
                   " decoded but unused per clip: long GOPs): shorter GOPs (re-encode with a "
                   "keyframe every second or less, e.g. ffmpeg -g 25) or a smaller "
                   "frame_stride decode less per clip");
  }
  if (v.convert_s + v.transform_s > v.decode_s) {
    tips.push_back("conversion and transforms take longer than decoding: a smaller output "
                   "size, or uint8 output normalised on the GPU");
  }
  if (tips.empty()) tips.push_back("store the videos at the resolution trained on");
  out += "; ";
  for (size_t i = 0; i < tips.size(); ++i) out += (i ? "; " : "") + tips[i];
  return out;
}

Status NextBatchAcrossEpochs(Loader* loader, BatchPtr* batch) {
  bool end = false;
  STOKER_RETURN_IF_ERROR(loader->Next(batch, &end));
  if (!end) return Status::OK();
  STOKER_RETURN_IF_ERROR(loader->Start());
  STOKER_RETURN_IF_ERROR(loader->Next(batch, &end));
  if (end) return DataLossError("the loader yields no batch: an epoch ended before its first");
  return Status::OK();
}

namespace {

// Fills d->cpu from the rounds (and the step alone, cores busy in mode 1).
void JudgeCpu(const std::vector<Round>& rounds, double step_alone, double wait, Diagnosis* d) {
  double wall = 0, process = 0, machine = 0;
  for (const Round& r : rounds) {
    wall += r.wall;
    process += r.process_cpu;
    machine += r.machine_busy;
  }
  d->cpu = JudgeCpuUse(AvailableCores(), ReadMachineCpu().cpus, wall, process, machine,
                       step_alone, wait);
}

std::string Pct(double f) { return Fmt(f < 0.1 ? "%.1f%%" : "%.0f%%", 100 * f); }

}  // namespace

CpuUse JudgeCpuUse(int cores, int machine_cores, double wall, double process_cpu_s,
                   double machine_busy_s, double step_alone, double wait) {
  CpuUse c;
  c.cores = cores;
  c.machine_cores = machine_cores;
  c.step_alone = step_alone;
  if (wall > 0) {
    c.process_busy = process_cpu_s / wall;
    c.machine_busy = machine_busy_s / wall;
  }
  c.others_busy = std::max(0.0, c.machine_busy - c.process_busy);
  // Machine-wide busy time speaks for our cores only when they are all the
  // machine has; otherwise only this process's own use can show saturation.
  const bool whole_machine = machine_cores == cores && machine_cores > 0;
  c.saturated = wall > 0 && ((whole_machine && c.machine_busy >= 0.9 * cores) ||
                             c.process_busy >= 0.9 * cores);
  // What competes with the workers: other processes, and the step's own
  // threads for the share of the time the step runs.
  const double competitors = (whole_machine ? c.others_busy : 0) + step_alone * (1 - wait);
  c.contended = c.saturated && competitors >= std::max(0.5, 0.25 * cores);
  c.summary = Fmt("%.2f", c.machine_busy) + " of the machine's " + std::to_string(machine_cores) +
              " cores busy (this process " + Fmt("%.2f", c.process_busy) +
              ", other processes " + Fmt("%.2f", c.others_busy) + "; the step alone used " +
              Fmt("%.2f", step_alone) + "); " + std::to_string(cores) + " usable here" +
              (c.saturated ? ": saturated" : "");
  return c;
}

StatusOr<Diagnosis> Diagnose(Loader* loader, const std::function<void(const BatchPtr&)>& step,
                             const DiagnoseOptions& options) {
  if (options.batches < 1) {
    return InvalidArgumentError("diagnose: batches must be >= 1, got " +
                                std::to_string(options.batches));
  }
  if (options.agree < 1 || options.agree > options.max_rounds) {
    return InvalidArgumentError("diagnose: agree must be in [1, max_rounds=" +
                                std::to_string(options.max_rounds) + "], got " +
                                std::to_string(options.agree));
  }
  if (!(options.fed_below >= 0 && options.fed_below < options.starved_above &&
        options.starved_above <= 1)) {
    return InvalidArgumentError("diagnose: need 0 <= fed_below < starved_above <= 1, got " +
                                Fmt("%g", options.fed_below) + " and " +
                                Fmt("%g", options.starved_above));
  }
  const int n = options.batches;
  Diagnosis d;
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
  // What modes 2 and 3 copy: the image block and, for records, every
  // stacked field's block (the variable fields are lists, not copied as one).
  struct Block {
    const uint8_t* data;
    size_t sample;
  };
  std::vector<Block> blocks;
  if (batch->shape().image) blocks.push_back({batch->images(), batch->shape().sample_bytes()});
  for (int f = 0; f < batch->num_fields(); ++f) {
    if (batch->field(f).fixed) blocks.push_back({batch->field_block(f), batch->field(f).sample_bytes()});
  }
  const int bsz = batch->size();
  size_t bytes = 0;
  for (const Block& b : blocks) bytes += b.sample * static_cast<size_t>(bsz);

  double step_alone = 0;  // cores the step used in mode 1 (the loader stopped)
  auto time_steps = [&](const std::function<void()>& before, bool alone) {
    before();
    step(batch);  // warm-up
    const double c0 = CpuSeconds();
    const double t0 = NowNs() * 1e-9;
    for (int i = 0; i < n; ++i) {
      before();
      step(batch);
    }
    const double dt = NowNs() * 1e-9 - t0;
    if (alone && dt > 0) step_alone = (CpuSeconds() - c0) / dt;
    return dt > 0 ? n * bsz / dt : 0;
  };
  std::vector<uint8_t> copy(bytes);
  d.modes.push_back({"1 batch cached (host memory: no GPU here)", "", time_steps([] {}, true)});
  d.modes.push_back({"2 batch copied each step (host copy stands in for host-to-device)",
                     "copy", time_steps([&] {
                       uint8_t* to = copy.data();
                       for (const Block& b : blocks) {
                         std::memcpy(to, b.data, b.sample * bsz);
                         to += b.sample * bsz;
                       }
                     }, false)});
  d.modes.push_back({"3 one sample copied into every slot (collation)", "collate",
                     time_steps([&] {
                       uint8_t* to = copy.data();
                       for (const Block& b : blocks) {
                         for (int s = 0; s < bsz; ++s, to += b.sample) {
                           std::memcpy(to, b.data, b.sample);
                         }
                       }
                     }, false)});
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
  // A clip source's cached samples are its decoded clips (the record's
  // field): mode 4 adds their copy into the batch, and mode 5 the clip's
  // demuxing, decoding and transforms (the decode-video stage).
  const auto* video = dynamic_cast<const VideoClips*>(loader->source().get());
  if (video != nullptr) {
    d.modes.push_back({"4 decoded clips cached in memory (adds the clip's copy)", "fields", r4});
  } else {
    d.modes.push_back({"4 encoded bytes cached in memory (adds decode + augment)",
                       "decode+augment", r4});
  }
  cached_loader.reset();
  // Mode 5: the real thing, in rounds until the last `agree` say the same.
  STOKER_RETURN_IF_ERROR(StartWarm(loader, step));
  std::vector<Round> rounds;
  for (int i = 0; i < options.max_rounds; ++i) {
    STOKER_ASSIGN_OR_RETURN(Round r, RunRound(loader, n, step));
    rounds.push_back(r);
    d.round_waits.push_back(r.wall > 0 ? r.wait / r.wall : 0);
    if (static_cast<int>(rounds.size()) >= options.agree) {
      const int c = WaitClass(d.round_waits.back(), options);
      bool same = true;
      for (size_t k = d.round_waits.size() - options.agree; k < d.round_waits.size(); ++k) {
        same = same && WaitClass(d.round_waits[k], options) == c;
      }
      if (same) {
        d.decided = true;
        break;
      }
    }
  }
  loader->Stop();
  d.pipeline_stats = loader->stats();
  double images = 0, wall = 0, in_next = 0;
  for (const Round& r : rounds) {
    images += r.images;
    wall += r.wall;
    in_next += r.in_next;
  }
  d.next_fraction = wall > 0 ? in_next / wall : 0;
  const double r5 = wall > 0 ? images / wall : 0;
  if (video != nullptr) {
    d.modes.push_back(
        {"5 full pipeline (adds demux + decode video + the clip's transforms)", "decode-video", r5});
  } else {
    d.modes.push_back({"5 full pipeline (adds reading from storage)", "read", r5});
  }
  for (size_t i = 1; i < d.modes.size(); ++i) {
    d.modes[i].ratio_to_previous =
        d.modes[i].images_per_sec > 0 ? d.modes[i - 1].images_per_sec / d.modes[i].images_per_sec
                                      : 0;
  }
  const double r1 = d.modes[0].images_per_sec;
  d.cost_factor = r5 > 0 ? r1 / r5 : 0;
  // The step's own time per image with the pipeline running (the rounds'
  // wall time outside Next()) against mode 1's, where it ran alone.
  if (images > 0 && r1 > 0) d.step_slowdown = ((wall - in_next) / images) * r1;
  d.wait_fraction = d.decided ? Median(std::vector<double>(d.round_waits.end() - options.agree,
                                                           d.round_waits.end()))
                              : Median(d.round_waits);
  JudgeCpu(rounds, step_alone, d.wait_fraction, &d);
  const int threads = d.pipeline_stats.threads;
  const std::string waited = "the step waited " + Pct(d.wait_fraction) +
                             " of the time for data (median of " +
                             std::to_string(d.decided ? options.agree
                                                      : static_cast<int>(rounds.size())) +
                             " rounds of " + std::to_string(n) + " steps)";
  const std::string contention =
      "CPU contention: " + d.cpu.summary + "; " +
      (d.cpu.others_busy >= 0.5 && d.cpu.machine_cores == d.cpu.cores
           ? "other processes take " + Fmt("%.1f", d.cpu.others_busy) + " cores; "
           : "") +
      (d.cpu.step_alone >= 0.5
           ? "the step's own threads use " + Fmt("%.1f", d.cpu.step_alone) +
                 " cores (torch: torch.set_num_threads(n) leaves cores to the loader); "
           : "") +
      "more loader threads will not help (now " + std::to_string(threads) + ")";
  if (!d.decided) {
    d.state = "undecided";
    std::string each;
    for (double w : d.round_waits) each += (each.empty() ? "" : ", ") + Pct(w);
    d.verdict = "undecided: the step's wait for data did not settle over " +
                std::to_string(rounds.size()) + " rounds (" + each + "); " +
                (d.cpu.contended ? contention + ", and the loader's speed moved with the load; "
                 : d.cpu.saturated ? "the CPU was saturated (" + d.cpu.summary +
                                         "), so the loader's speed moved with the load; "
                                   : "") +
                "run again on a quieter machine or with more batches";
    // Contention is a cause whether or not the rounds agreed: it is what
    // keeps them from agreeing.
    if (d.cpu.contended) d.causes.push_back("cpu-contention");
    return d;
  }
  const int cls = WaitClass(d.wait_fraction, options);
  if (cls == 0) {
    d.state = "fed";
    d.verdict = "not data-bound: " + waited + "; fewer threads would do (stoker tune finds how few)";
    if (d.cpu.contended) {
      d.causes.push_back("cpu-contention");
      d.verdict += "; but " + contention + "; with the pipeline running the step took " +
                   Fmt("%.2fx", d.step_slowdown) + " its time alone";
    }
    return d;
  }
  d.state = cls == 2 ? "data-bound" : "marginal";
  d.data_bound = cls == 2;
  if (d.cpu.contended) d.causes.push_back("cpu-contention");
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
  const std::string head = d.data_bound ? "data-bound" : "marginally data-bound";
  const std::string times = Fmt("%.2fx", f) + "; " + waited;
  std::string by;
  if (stage == "read") {
    d.bottleneck = "read";
    by = "by reading from storage (it cuts throughput " + times +
         "): use faster storage or keep the data in the page "
         "cache, pack small files into shards for sequential reads, or add threads to "
         "hide latency (now " + std::to_string(threads) + ")";
  } else if (stage == "decode-video") {
    d.bottleneck = "decode-video";
    by = "by decoding video (it cuts throughput " + times + "): " +
         VideoAdvice(full.video, threads, video->options().codec_threads, d.cpu);
  } else if (stage == "fields" || (stage == "decode+augment" && !batch->has_image())) {
    // A record without an image: the stage is the per-sample field work.
    d.bottleneck = "fields";
    by = "by the per-sample work on the record's fields (taking them from memory, checking "
         "and copying them into the batch cut throughput " + times + "): " +
         (d.cpu.contended ? std::string() : "add threads (now " + std::to_string(threads) + "), ") +
         "or store fewer, larger fields per sample";
  } else if (stage == "decode+augment") {
    const bool decode = cached_stats.total.decode_s >= cached_stats.total.augment_s;
    d.bottleneck = decode ? "decode" : "augment";
    // With the cores contended, more threads only queue for them.
    const std::string more = d.cpu.contended
                                 ? ""
                                 : "add threads (now " + std::to_string(threads) + "), ";
    by = decode
        ? "by decoding (decode + augment cut throughput " + times + "): " + more +
              "keep dct_scaling on, or store pre-resized images so less is decoded"
        : "by augmentation (decode + augment cut throughput " + times + "): " + more +
              "output uint8 and normalise on the GPU, or drop costly transforms";
  } else if (stage == "copy") {
    d.bottleneck = "copy";
    by = "by the batch copy (it cuts throughput " + times +
         "): ship uint8 and use device='cuda' (pinned memory, async copies)";
  } else {
    d.bottleneck = "collate";
    by = "by batch assembly (it cuts throughput " + times + ")";
  }
  d.causes.push_back(d.bottleneck);
  d.verdict = d.cpu.contended ? head + " by " + contention + "; and " + by : head + " " + by;
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
  std::string each;
  for (double w : d.round_waits) each += (each.empty() ? "" : ", ") + Pct(w);
  if (s.video.clips > 0) out += "decode-video stage: " + VideoStageLine(s.video) + "\n";
  out += "step's wait for data, per round of the full pipeline: " + each + " -> " + d.state +
         "; inside next() in all: " + Pct(d.next_fraction) + "\n";
  out += "cpu: " + d.cpu.summary + (d.cpu.contended ? " (contention)" : "") + "\n";
  out += "verdict: " + d.verdict + "\n";
  return out;
}

}  // namespace stoker
