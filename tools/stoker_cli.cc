// Copyright 2026 The stoker Authors.
//
// The `stoker` command: a thin front end over include/stoker.
//
//   stoker bench DATA [--pipeline train|val] [--batch-size N] [--threads N] [--prefetch N]
//                     [--epochs N] [--dtype D] [--layout L] [--json] [--compare torch]
//   stoker decode DATA [--threads N] [--epochs N] [--json]
//   stoker diagnose DATA [--step-ms X] [--json]
//   stoker tune DATA [--threads 1,2,4] [--prefetch 1,2,4,8] [--batch-size 64,...]
//                    [--step-ms X] [--plot tune.png] [--json]
//   stoker synth DIR  [--classes N] [--per-class N] [--width W] [--height H] [--seed S] [--json]
//   stoker convert SRC DEST [--shard-size 1GB] [--resize N] [--compress zstd] ... (convert_cmd.cc)
//   stoker stats DATA [--against OLD] [--resolution N] [--json] [--plot F.png] (stats_cmd.cc)
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <atomic>
#include <thread>

#include "cli_support.h"
#include "convert_cmd.h"
#include "stats_cmd.h"
#include "stoker/decode.h"
#include "stoker/diagnose.h"
#include "stoker/json.h"
#include "stoker/loader.h"
#include "stoker/process.h"
#include "stoker/sources.h"
#include "stoker/synth.h"
#include "stoker/version.h"

namespace stoker {
namespace {


double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
const std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};

std::vector<Transform> PipelineTransforms(const std::string& pipeline, DType dtype) {
  std::vector<Transform> t;
  if (pipeline == "train") {
    t = {Transform::RandomResizedCrop(224, 224), Transform::RandomHorizontalFlip()};
  } else {
    t = {Transform::Resize(256), Transform::CenterCrop(224, 224)};
  }
  if (dtype != DType::kUint8) t.push_back(Transform::Normalize(kMean, kStd));
  return t;
}

struct BenchResult {
  double images_per_sec = 0;
  double cpu_s_per_1000 = 0;
  double peak_rss_mib = 0;
  double engine_mib = 0;  // peak RSS growth beyond the batch buffers
  double first_batch_ms = 0;
  int64_t images_per_epoch = 0;
  std::vector<double> epoch_rates;
  LoaderStats stats;
};

std::string FormatJson(const std::string& data, const std::string& pipeline,
                       const LoaderOptions& o, const BenchResult& r) {
  std::ostringstream j;
  j.precision(6);
  const StageStats& s = r.stats.total;
  j << "{\"tool\": \"stoker\", \"data\": " << JsonQuote(data) << ", \"pipeline\": \"" << pipeline
    << "\", \"batch_size\": " << o.batch_size << ", \"threads\": " << r.stats.threads
    << ", \"prefetch\": " << o.prefetch << ", \"dtype\": \"" << DTypeName(o.dtype)
    << "\", \"layout\": \"" << LayoutName(o.layout) << "\", \"images\": " << r.images_per_epoch
    << ", \"images_per_sec\": " << r.images_per_sec
    << ", \"cpu_s_per_1000\": " << r.cpu_s_per_1000 << ", \"peak_rss_mib\": " << r.peak_rss_mib
    << ", \"engine_mib\": " << r.engine_mib << ", \"batch_buffer_mib\": "
    << r.stats.batch_buffer_bytes / 1048576.0 << ", \"first_batch_ms\": " << r.first_batch_ms
    << ", \"epoch_images_per_sec\": [";
  for (size_t i = 0; i < r.epoch_rates.size(); ++i) j << (i ? ", " : "") << r.epoch_rates[i];
  j << "], \"stages\": {\"read_s\": " << s.read_s << ", \"decode_s\": " << s.decode_s
    << ", \"augment_s\": " << s.augment_s << ", \"worker_wait_s\": " << s.worker_wait_s
    << ", \"consumer_wait_s\": " << s.consumer_wait_s << "}, \"skipped\": " << s.skipped
    << ", \"stage_timing\": " << (o.stage_timing ? "true" : "false")
    << ", \"clock_ns\": " << ClockReadCostNs() << "}";
  return j.str();
}

// Runs the loader for one warm-up epoch plus `epochs` timed epochs.
Status RunBench(const std::string& data, const LoaderOptions& options, int epochs,
                BenchResult* r) {
  const double rss_before = CurrentRssMiB();
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ImageFolder> folder, ImageFolder::Open(data));
  const double t_create = NowS();
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create(folder, options));
  double cpu0 = 0, t_epoch = 0;
  int64_t images = 0;
  for (int e = 0; e <= epochs; ++e) {
    if (e == 1) cpu0 = CpuSeconds();
    t_epoch = NowS();
    STOKER_RETURN_IF_ERROR(loader->Start());
    int64_t n = 0;
    for (;;) {
      BatchPtr b;
      bool end = false;
      STOKER_RETURN_IF_ERROR(loader->Next(&b, &end));
      if (end) break;
      if (e == 0 && n == 0) r->first_batch_ms = (NowS() - t_create) * 1e3;
      n += b->size();
    }
    const double dt = NowS() - t_epoch;
    if (e > 0) {
      r->epoch_rates.push_back(n / dt);
      images += n;
    }
    r->images_per_epoch = n;
  }
  const double cpu = CpuSeconds() - cpu0;
  std::vector<double> rates = r->epoch_rates;
  std::sort(rates.begin(), rates.end());
  r->images_per_sec = rates.empty() ? 0 : rates[rates.size() / 2];
  r->cpu_s_per_1000 = images > 0 ? cpu / images * 1000 : 0;
  r->stats = loader->stats();
  r->peak_rss_mib = PeakRssMiB();
  r->engine_mib = std::max(0.0, r->peak_rss_mib - rss_before -
                                    r->stats.batch_buffer_bytes / 1048576.0);
  return Status::OK();
}

// Extracts the number after "key": following `from` in a JSON text.
double JsonNumber(const std::string& text, const std::string& key, size_t from = 0) {
  const size_t k = text.find("\"" + key + "\"", from);
  if (k == std::string::npos) return -1;
  const size_t colon = text.find(':', k);
  return std::atof(text.c_str() + colon + 1);
}

int CmdBench(const std::string& data, const std::string& pipeline, LoaderOptions o, int epochs,
             bool json, const std::string& compare) {
  if (compare == "full") {
    // The whole side-by-side benchmark (bench/run_bench.py) replaces this process.
    const std::string script = DataFile("bench/run_bench.py");
    if (script.empty()) return 1;
    const std::string python = PythonInterpreter();
    const std::string epochs_s = std::to_string(epochs), batch_s = std::to_string(o.batch_size);
    const std::string self = "/proc/self/exe";
    char exe[4096];
    const ssize_t n = readlink(self.c_str(), exe, sizeof exe - 1);
    const std::string binary = n > 0 ? std::string(exe, n) : "build/stoker";
    execl(python.c_str(), "python3", script.c_str(), data.c_str(), "--epochs", epochs_s.c_str(),
          "--batch-size", batch_s.c_str(), "--stoker", binary.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "stoker bench: cannot run %s %s\n", python.c_str(), script.c_str());
    return 1;
  }
  o.transforms = PipelineTransforms(pipeline, o.dtype);
  BenchResult r;
  Status st = RunBench(data, o, epochs, &r);
  if (!st.ok()) {
    std::fprintf(stderr, "stoker bench: %s\n", st.ToString().c_str());
    return 1;
  }
  std::string peer_json;
  if (compare == "torch") {
    const std::string script = DataFile("bench/torch_baseline.py");
    if (script.empty()) return 1;
    const std::string cmd = "'" + PythonInterpreter() + "' '" + script + "' '" + data +
                            "' --pipeline " + pipeline +
                            " --batch-size " + std::to_string(o.batch_size) +
                            " --epochs " + std::to_string(epochs) + " --dtype " +
                            (o.dtype == DType::kUint8 ? "uint8" : "float32") +
                            " --json --quiet";
    if (!json) std::fprintf(stderr, "running the torch DataLoader baseline: %s\n", cmd.c_str());
    FILE* p = popen(cmd.c_str(), "r");
    if (p != nullptr) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) peer_json.append(buf, n);
      if (pclose(p) != 0) peer_json.clear();
    }
    if (peer_json.empty()) {
      std::fprintf(stderr, "stoker bench: the torch baseline failed (is torch installed for "
                           "%s?)\n", PythonInterpreter().c_str());
    }
  }
  const size_t best = peer_json.find("\"best\"");
  const double peer_rate = best == std::string::npos ? -1 : JsonNumber(peer_json, "images_per_sec", best);
  if (json) {
    std::string out = FormatJson(data, pipeline, o, r);
    if (!peer_json.empty()) {
      while (!peer_json.empty() && (peer_json.back() == '\n' || peer_json.back() == ' ')) peer_json.pop_back();
      out.pop_back();
      out += ", \"peer\": " + peer_json + ", \"ratio\": " + std::to_string(r.images_per_sec / peer_rate) + "}";
    }
    std::printf("%s\n", out.c_str());
    return 0;
  }
  const StageStats& s = r.stats.total;
  std::printf("stoker bench  %s  pipeline=%s batch=%d threads=%d prefetch=%d dtype=%s\n",
              data.c_str(), pipeline.c_str(), o.batch_size, r.stats.threads, o.prefetch,
              DTypeName(o.dtype));
  std::printf("  images/s (median of %d epochs)   %10.1f\n", epochs, r.images_per_sec);
  std::printf("  CPU-seconds per 1,000 images     %10.3f\n", r.cpu_s_per_1000);
  std::printf("  peak RSS                         %10.1f MiB (batch buffers %.1f MiB)\n",
              r.peak_rss_mib, r.stats.batch_buffer_bytes / 1048576.0);
  std::printf("  first batch                      %10.1f ms\n", r.first_batch_ms);
  std::printf("  busy seconds: read %.3f  decode %.3f  augment %.3f  (worker wait %.3f, "
              "consumer wait %.3f)\n", s.read_s, s.decode_s, s.augment_s, s.worker_wait_s,
              s.consumer_wait_s);
  if (peer_rate > 0) {
    const double peer_cpu = JsonNumber(peer_json, "cpu_s_per_1000", best);
    const double peer_pss = JsonNumber(peer_json, "pss_mib", best);
    std::printf("torch DataLoader (best of its configurations)\n");
    std::printf("  images/s                         %10.1f\n", peer_rate);
    std::printf("  CPU-seconds per 1,000 images     %10.3f\n", peer_cpu);
    std::printf("  PSS summed over processes        %10.1f MiB\n", peer_pss);
    std::printf("stoker / DataLoader: %.2fx images/s, %.2fx CPU per image\n",
                r.images_per_sec / peer_rate, r.cpu_s_per_1000 / peer_cpu);
  }
  return 0;
}

// The full-decode ceiling: every file read and fully decoded with
// libjpeg-turbo / libpng (no region decode, no scaling, no transforms),
// `threads` threads each taking the next file. Median of `epochs` passes
// after a warm-up pass.
int CmdDecode(const std::string& data, int threads, int epochs, bool json) {
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) {
    std::fprintf(stderr, "stoker decode: %s\n", folder.status().ToString().c_str());
    return 1;
  }
  const std::shared_ptr<ImageFolder> f = folder.value();
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<double> rates;
  std::atomic<int64_t> failures{0};
  const double cpu0 = CpuSeconds();
  for (int e = 0; e <= epochs; ++e) {
    std::atomic<int64_t> next{0};
    const double t0 = NowS();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        Decoder decoder;
        SampleScratch scratch;
        for (int64_t i; (i = next.fetch_add(1)) < f->size();) {
          SampleData s;
          DecodedImage image;
          if (!f->ReadIndex(i, &scratch, &s).ok() ||
              !decoder.Decode(s.bytes, s.size, &image).ok()) {
            failures.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : pool) t.join();
    if (e > 0) rates.push_back(f->size() / (NowS() - t0));
  }
  const double cpu = CpuSeconds() - cpu0;
  std::sort(rates.begin(), rates.end());
  const double rate = rates[rates.size() / 2];
  if (json) {
    std::printf("{\"tool\": \"decode\", \"threads\": %d, \"images\": %lld, \"images_per_sec\": %.2f, "
                "\"cpu_s_per_1000\": %.4f, \"failures\": %lld}\n",
                threads, static_cast<long long>(f->size()), rate,
                cpu / (f->size() * (epochs + 1)) * 1000, static_cast<long long>(failures.load()));
  } else {
    std::printf("full decode (libjpeg-turbo/libpng, no transforms), %d threads: %.1f images/s "
                "(median of %d passes), %lld failures\n",
                threads, rate, epochs, static_cast<long long>(failures.load()));
  }
  return 0;
}

// Diagnoses the pipeline on DATA with a simulated training step of
// `step_ms` (a sleep: a GPU step leaves the CPU free).
int CmdDiagnose(const std::string& data, const std::string& pipeline, LoaderOptions o,
                double step_ms, int batches, bool json) {
  o.transforms = PipelineTransforms(pipeline, o.dtype);
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) {
    std::fprintf(stderr, "stoker diagnose: %s\n", folder.status().ToString().c_str());
    return 1;
  }
  auto loader = Loader::Create(folder.value(), o);
  if (!loader.ok()) {
    std::fprintf(stderr, "stoker diagnose: %s\n", loader.status().ToString().c_str());
    return 1;
  }
  auto step = [step_ms](const BatchPtr&) {
    if (step_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
  };
  DiagnoseOptions d;
  d.batches = batches;
  auto r = Diagnose(loader.value().get(), step, d);
  if (!r.ok()) {
    std::fprintf(stderr, "stoker diagnose: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const Diagnosis& g = r.value();
  if (json) {
    std::string out = "{\"tool\": \"diagnose\", \"step_ms\": " + std::to_string(step_ms) +
                      ", \"modes\": [";
    for (size_t i = 0; i < g.modes.size(); ++i) {
      out += std::string(i ? ", " : "") + "{\"mode\": " + JsonQuote(g.modes[i].name) +
             ", \"images_per_sec\": " + std::to_string(g.modes[i].images_per_sec) +
             ", \"ratio_to_previous\": " + std::to_string(g.modes[i].ratio_to_previous) + "}";
    }
    const StageStats& s = g.pipeline_stats.total;
    out += "], \"stages\": {\"read_s\": " + std::to_string(s.read_s) +
           ", \"decode_s\": " + std::to_string(s.decode_s) +
           ", \"augment_s\": " + std::to_string(s.augment_s) +
           ", \"consumer_wait_s\": " + std::to_string(s.consumer_wait_s) +
           "}, \"data_bound\": " + (g.data_bound ? "true" : "false") +
           ", \"bottleneck\": \"" + g.bottleneck + "\", \"cost_factor\": " +
           std::to_string(g.cost_factor) + ", \"verdict\": " + JsonQuote(g.verdict);
    const LoaderStats& ps = g.pipeline_stats;
    if (ps.cache_capacity > 0) {
      out += ", \"cache\": {\"hits\": " + std::to_string(ps.cache_hits) +
             ", \"misses\": " + std::to_string(ps.cache_misses) +
             ", \"evicted\": " + std::to_string(ps.cache_evicted) +
             ", \"bytes\": " + std::to_string(ps.cache_bytes) +
             ", \"capacity\": " + std::to_string(ps.cache_capacity) +
             ", \"advice\": " + JsonQuote(ps.cache_advice) + "}";
    }
    out += "}";
    std::printf("%s\n", out.c_str());
    return 0;
  }
  std::printf("stoker diagnose  %s  pipeline=%s batch=%d threads=%d step=%.1f ms\n",
              data.c_str(), pipeline.c_str(), o.batch_size, g.pipeline_stats.threads, step_ms);
  std::printf("%s", FormatDiagnosis(g).c_str());
  return 0;
}

int CmdSynth(const std::string& dir, const SynthOptions& o, bool json) {
  const double t0 = NowS();
  auto n = WriteSyntheticImageFolder(dir, o);
  if (!n.ok()) {
    std::fprintf(stderr, "stoker synth: %s\n", n.status().ToString().c_str());
    return 1;
  }
  if (json) {
    std::printf("{\"tool\": \"synth\", \"dir\": %s, \"images\": %lld, \"classes\": %d, "
                "\"seconds\": %.3f}\n",
                JsonQuote(dir).c_str(), static_cast<long long>(n.value()), o.classes,
                NowS() - t0);
  } else {
    std::fprintf(stderr, "wrote %lld images in %d classes to %s in %.1f s\n",
                 static_cast<long long>(n.value()), o.classes, dir.c_str(), NowS() - t0);
  }
  return 0;
}

// Sweeps threads x prefetch x batch size on DATA and recommends the
// smallest configuration that does the job (see src/diagnose/tune.h).
int CmdTune(const std::string& data, const std::string& pipeline, LoaderOptions o,
            TuneOptions t, const std::string& plot, bool json) {
  o.transforms = PipelineTransforms(pipeline, o.dtype);
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) {
    std::fprintf(stderr, "stoker tune: %s\n", folder.status().ToString().c_str());
    return 1;
  }
  const bool tty = isatty(2);
  if (tty) {
    const double t0 = NowS();
    t.progress = [t0](int i, int total, const std::string& what) {
      std::fprintf(stderr, "\r\033[K[%d/%d] %s  (%.0f s)", i + 1, total, what.c_str(), NowS() - t0);
      std::fflush(stderr);
    };
  }
  auto results = Tune(folder.value(), o, t);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!results.ok()) {
    std::fprintf(stderr, "stoker tune: %s\n", results.status().ToString().c_str());
    return 1;
  }
  const TuneRecommendation rec = Recommend(results.value(), t.step_ms);
  const std::string j = TuneJson(results.value(), rec, t.step_ms);
  if (!plot.empty()) {
    // matplotlib draws it: tools/plot_tune.py reads the JSON from stdin.
    const std::string script = DataFile("tools/plot_tune.py");
    if (script.empty()) return 1;
    const std::string cmd = "'" + PythonInterpreter() + "' '" + script + "' '" + plot + "'";
    FILE* p = popen(cmd.c_str(), "w");
    if (p == nullptr || std::fwrite(j.data(), 1, j.size(), p) != j.size() || pclose(p) != 0) {
      std::fprintf(stderr, "stoker tune: --plot failed (it needs %s with "
                           "matplotlib: Debian package python3-matplotlib)\n",
                   PythonInterpreter().c_str());
      return 1;
    }
  }
  if (json) {
    std::printf("%s\n", j.c_str());
    return 0;
  }
  std::printf("stoker tune  %s  pipeline=%s dtype=%s step=%.1f ms, %.1f s per configuration\n",
              data.c_str(), pipeline.c_str(), DTypeName(o.dtype), t.step_ms, t.seconds);
  std::printf("%s", FormatTune(results.value(), rec).c_str());
  if (!plot.empty()) std::printf("plot: %s\n", plot.c_str());
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  using namespace stoker;
  CLI::App app{"stoker: keeps accelerators fed. Image folders to batched tensors on native "
               "threads, and the numbers that show where the time goes."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stoker " STOKER_VERSION_STRING);

  std::string data, pipeline = "train", dtype = "float32", layout = "NCHW", compare;
  LoaderOptions o;
  o.shuffle = true;
  int epochs = 3;
  bool json = false;
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure images/s, CPU-seconds per 1,000 images, peak RSS and time to first "
               "batch on an image folder (one warm-up epoch, then the median of timed epochs).");
  bench->add_option("DATA", data, "ImageFolder root (DATA/<class>/<image>.jpg)")
      ->required()->check(CLI::ExistingDirectory);
  bench->add_option("--pipeline", pipeline,
                    "train = RandomResizedCrop(224) + flip + normalise; "
                    "val = Resize(256) + CenterCrop(224) + normalise")
      ->check(CLI::IsMember({"train", "val"}))->capture_default_str();
  bench->add_option("--batch-size", o.batch_size, "samples per batch")->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_option("--threads", o.threads, "worker threads (0: one per core)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  bench->add_option("--prefetch", o.prefetch, "batches in flight")->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_option("--epochs", epochs, "timed epochs after the warm-up epoch")
      ->capture_default_str()->check(CLI::PositiveNumber);
  bench->add_option("--dtype", dtype, "uint8 (no normalise), float32, float16 or bfloat16")
      ->check(CLI::IsMember({"uint8", "float32", "float16", "bfloat16"}))->capture_default_str();
  bench->add_option("--layout", layout, "NCHW or NHWC")
      ->check(CLI::IsMember({"NCHW", "NHWC"}))->capture_default_str();
  bench->add_option("--compare", compare,
                    "torch: also run the same pipeline through torch.utils.data.DataLoader "
                    "(bench/torch_baseline.py, best of 0-4 workers) and print the ratio; "
                    "full: the whole side-by-side benchmark (bench/run_bench.py: DataLoader, "
                    "full-decode ceiling, stoker at 1 and 2 threads, train and val, every "
                    "dtype, Python memory and first batch, ratios against the targets)")
      ->check(CLI::IsMember({"torch", "full"}));
  bench->add_flag("--json", json, "print one JSON object instead of the table");
  bool no_stage_timing = false;
  bench->add_flag("--no-stage-timing", no_stage_timing,
                  "turn off the per-stage clock reads (only to measure what they cost)");

  std::string synth_dir;
  SynthOptions so;
  CLI::App* synth = app.add_subcommand(
      "synth", "Write a deterministic synthetic ImageFolder of photo-like JPEGs "
               "(for demos and benchmarks).");
  synth->add_option("DIR", synth_dir, "output directory")->required();
  synth->add_option("--classes", so.classes, "class directories")->capture_default_str();
  synth->add_option("--per-class", so.images_per_class, "images per class")->capture_default_str();
  synth->add_option("--width", so.width, "typical width")->capture_default_str();
  synth->add_option("--height", so.height, "typical height")->capture_default_str();
  synth->add_option("--quality", so.quality, "JPEG quality")->capture_default_str();
  synth->add_option("--seed", so.seed, "seed")->capture_default_str();

  std::string decode_data;
  int decode_threads = 0, decode_epochs = 3;
  bool decode_json = false;
  CLI::App* decode = app.add_subcommand(
      "decode", "Measure the full-decode ceiling: read and fully decode every image of a "
                "folder (no region decode, no transforms), one thread per core by default.");
  decode->add_option("DATA", decode_data, "ImageFolder root")->required()
      ->check(CLI::ExistingDirectory);
  decode->add_option("--threads", decode_threads, "decoding threads (0: one per core)")
      ->capture_default_str();
  decode->add_option("--epochs", decode_epochs, "timed passes after a warm-up pass")
      ->capture_default_str()->check(CLI::PositiveNumber);
  decode->add_flag("--json", decode_json, "print one JSON object");

  std::string diag_data, diag_pipeline = "train", diag_dtype = "float32";
  LoaderOptions diag;
  double step_ms = 0;
  int diag_batches = 30;
  bool diag_json = false;
  CLI::App* diagnose = app.add_subcommand(
      "diagnose", "Is the training step waiting for data, and which stage is to blame? Feeds "
                  "a simulated step from (1) one cached batch, (2) a copied batch, (3) one "
                  "sample copied into every slot, (4) encoded bytes cached in memory, (5) the "
                  "full pipeline, and names the stage that slows it down.");
  diagnose->add_option("DATA", diag_data, "ImageFolder root")->required()
      ->check(CLI::ExistingDirectory);
  diagnose->add_option("--pipeline", diag_pipeline, "train or val (as for bench)")
      ->check(CLI::IsMember({"train", "val"}))->capture_default_str();
  diagnose->add_option("--batch-size", diag.batch_size, "samples per batch")
      ->capture_default_str()->check(CLI::PositiveNumber);
  diagnose->add_option("--threads", diag.threads, "worker threads (0: one per core)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  diagnose->add_option("--prefetch", diag.prefetch, "batches in flight")
      ->capture_default_str()->check(CLI::PositiveNumber);
  diagnose->add_option("--dtype", diag_dtype, "uint8, float32, float16 or bfloat16")
      ->check(CLI::IsMember({"uint8", "float32", "float16", "bfloat16"}))->capture_default_str();
  diagnose->add_option("--step-ms", step_ms,
                       "simulated training step per batch, in ms (0: an infinitely fast step)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  diagnose->add_option("--batches", diag_batches, "steps measured per mode")
      ->capture_default_str()->check(CLI::PositiveNumber);
  diagnose->add_flag("--json", diag_json, "print one JSON object");
  std::string diag_cache;
  int64_t diag_cache_mib = 0;
  diagnose->add_option("--cache", diag_cache,
                       "keep samples in memory across epochs: 'decoded' (whole decoded images) "
                       "or 'output' (finished samples; val pipeline only); needs --cache-mib")
      ->check(CLI::IsMember({"decoded", "output"}));
  diagnose->add_option("--cache-mib", diag_cache_mib, "the cache's bound in MiB")
      ->check(CLI::PositiveNumber);

  std::string tune_data, tune_pipeline = "train", tune_dtype = "float32", tune_plot;
  TuneOptions tune_opts;
  tune_opts.threads.clear();
  for (int t = 1; t < static_cast<int>(std::thread::hardware_concurrency()); t *= 2) {
    tune_opts.threads.push_back(t);
  }
  tune_opts.threads.push_back(std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  bool tune_json = false, tune_no_auto = false;
  CLI::App* tune = app.add_subcommand(
      "tune", "Sweep threads x prefetch x batch size on an image folder; print images/s, "
              "CPU-seconds per 1,000 images, peak RSS and consumer wait for each, and "
              "recommend the smallest configuration (fewest threads, then least memory) "
              "within 5% of the best throughput -- or, with --step-ms, the smallest that "
              "keeps the step waiting less than 2% of the time. Also runs threads=\"auto\", "
              "prefetch=\"auto\" for comparison.");
  tune->add_option("DATA", tune_data, "ImageFolder root")->required()
      ->check(CLI::ExistingDirectory);
  tune->add_option("--pipeline", tune_pipeline, "train or val (as for bench)")
      ->check(CLI::IsMember({"train", "val"}))->capture_default_str();
  tune->add_option("--threads", tune_opts.threads, "thread counts to try (comma-separated)")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 1024));
  tune->add_option("--prefetch", tune_opts.prefetch, "prefetch depths to try")
      ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 1024));
  tune->add_option("--batch-size", tune_opts.batch_sizes, "batch sizes to try")
      ->delimiter(',')->capture_default_str()->check(CLI::PositiveNumber);
  tune->add_option("--dtype", tune_dtype, "uint8, float32, float16 or bfloat16")
      ->check(CLI::IsMember({"uint8", "float32", "float16", "bfloat16"}))->capture_default_str();
  tune->add_option("--step-ms", tune_opts.step_ms,
                   "simulated training step per batch, in ms (0: as fast as possible)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  tune->add_option("--seconds", tune_opts.seconds, "measured seconds per configuration")
      ->capture_default_str()->check(CLI::PositiveNumber);
  tune->add_option("--auto-batches", tune_opts.auto_batches,
                   "batches the auto-tuned run takes (measured over the last third)")
      ->capture_default_str()->check(CLI::Range(3, 1000000));
  tune->add_flag("--no-auto", tune_no_auto, "skip the threads=auto, prefetch=auto run");
  tune->add_option("--plot", tune_plot,
                   "write a PNG of images/s against threads, one line per prefetch "
                   "(needs matplotlib)");
  tune->add_flag("--json", tune_json, "print one JSON object instead of the table");

  bool synth_json = false;
  synth->add_flag("--json", synth_json, "print one JSON object (images, classes, seconds)");

  const std::shared_ptr<ConvertCommand> convert = AddConvertCommand(&app);
  const std::shared_ptr<StatsCommand> stats = AddStatsCommand(&app);

  CLI11_PARSE(app, argc, argv);
  if (ConvertCommandParsed(*convert)) return RunConvertCommand(*convert);
  if (StatsCommandParsed(*stats)) return RunStatsCommand(*stats);
  if (tune->parsed()) {
    LoaderOptions to;
    to.shuffle = true;
    to.dtype = ParseDType(tune_dtype).value();
    tune_opts.include_auto = !tune_no_auto;
    return CmdTune(tune_data, tune_pipeline, to, tune_opts, tune_plot, tune_json);
  }
  if (diagnose->parsed()) {
    diag.shuffle = true;
    diag.dtype = ParseDType(diag_dtype).value();
    if (diag_cache.empty() != (diag_cache_mib == 0)) {
      std::fprintf(stderr, "stoker diagnose: --cache and --cache-mib go together\n");
      return 2;
    }
    if (!diag_cache.empty()) {
      diag.cache_bytes = static_cast<size_t>(diag_cache_mib) << 20;
      diag.cache_kind = diag_cache == "output" ? LoaderOptions::CacheKind::kOutput
                                               : LoaderOptions::CacheKind::kDecoded;
      diag.dct_scaling = false;  // cached images are whole
    }
    return CmdDiagnose(diag_data, diag_pipeline, diag, step_ms, diag_batches, diag_json);
  }
  if (decode->parsed()) return CmdDecode(decode_data, decode_threads, decode_epochs, decode_json);
  if (bench->parsed()) {
    o.dtype = ParseDType(dtype).value();
    o.layout = ParseLayout(layout).value();
    o.stage_timing = !no_stage_timing;
    return CmdBench(data, pipeline, o, epochs, json, compare);
  }
  if (synth->parsed()) {
    so.progress = isatty(2) && !synth_json;
    return CmdSynth(synth_dir, so, synth_json);
  }
  return 0;
}
