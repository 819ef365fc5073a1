// Copyright 2026 The stoker Authors.
//
// `stoker bench DATA [--pipeline train|val] [--batch-size N] [--threads N] [--prefetch N]
//                   [--epochs N] [--dtype D] [--layout L] [--json] [--compare torch|full]
//                   [--device cpu|cuda|cuda:N|host] [--trace FILE]`:
// images/s, CPU-seconds per 1,000 images, peak RSS and time to first batch on an
// image folder, optionally side by side with torch's DataLoader. With --device, the
// batches go through a DeviceLoader (stoker/device_loader.h) to that GPU (or its host
// fallback), each epoch timed until its last batch is on the device.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "cli_support.h"
#include "command.h"
#include "loader_flags.h"
#include "stoker/device.h"
#include "stoker/device_loader.h"
#include "stoker/json.h"
#include "stoker/loader.h"
#include "stoker/process.h"
#include "stoker/sources.h"

namespace stoker {
namespace {

// --device: the plain Loader, a CUDA device index, or the host fallback.
constexpr int kCpuLoader = -2;

StatusOr<int> ParseBenchDevice(const std::string& device) {
  if (device == "cpu") return kCpuLoader;
  if (device == "host") return kHostDevice;
  if (StatusOr<int> cuda = ParseDevice(device); cuda.ok() && cuda.value() >= 0) return cuda;
  return InvalidArgumentError("--device must be cpu, cuda, cuda:N or host, got '" + device + "'");
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
                       const std::string& device, const LoaderOptions& o,
                       const BenchResult& r) {
  std::ostringstream j;
  j.precision(6);
  const StageStats& s = r.stats.total;
  j << "{\"tool\": \"stoker\", \"data\": " << JsonQuote(data) << ", \"pipeline\": \"" << pipeline
    << "\", \"device\": " << JsonQuote(device) << ", \"batch_size\": " << o.batch_size << ", \"threads\": " << r.stats.threads
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

// Runs the loader for one warm-up epoch plus `epochs` timed epochs: a Loader, or
// with a device (kHostDevice or a CUDA index) a DeviceLoader whose batches are
// handed to the legacy default stream; its epoch ends when the copy stream is idle.
Status RunBench(const std::string& data, const LoaderOptions& options, int device, int epochs,
                BenchResult* r) {
  const double rss_before = CurrentRssMiB();
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ImageFolder> folder, ImageFolder::Open(data));
  const double t_create = NowSeconds();
  std::unique_ptr<Loader> loader;
  std::unique_ptr<DeviceLoader> feeder;
  if (device == kCpuLoader) {
    STOKER_ASSIGN_OR_RETURN(loader, Loader::Create(folder, options));
  } else {
    DeviceLoaderOptions d;
    d.device = device;
    STOKER_ASSIGN_OR_RETURN(feeder, DeviceLoader::Create(folder, options, d));
  }
  // One batch: its size, or *end.
  auto next = [&](int* size, bool* end) -> Status {
    if (feeder != nullptr) {
      DeviceBatch b;
      STOKER_RETURN_IF_ERROR(feeder->Next(&b, end, 0));
      *size = b.size;
      return Status::OK();
    }
    BatchPtr b;
    STOKER_RETURN_IF_ERROR(loader->Next(&b, end));
    *size = *end ? 0 : b->size();
    return Status::OK();
  };
  double cpu0 = 0, t_epoch = 0;
  int64_t images = 0;
  for (int e = 0; e <= epochs; ++e) {
    if (e == 1) cpu0 = CpuSeconds();
    t_epoch = NowSeconds();
    STOKER_RETURN_IF_ERROR(feeder != nullptr ? feeder->Start() : loader->Start());
    int64_t n = 0;
    for (;;) {
      int size = 0;
      bool end = false;
      STOKER_RETURN_IF_ERROR(next(&size, &end));
      if (end) break;
      if (e == 0 && n == 0) r->first_batch_ms = (NowSeconds() - t_create) * 1e3;
      n += size;
    }
    if (feeder != nullptr) STOKER_RETURN_IF_ERROR(feeder->stage().Synchronize());
    const double dt = NowSeconds() - t_epoch;
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
  r->stats = feeder != nullptr ? feeder->stats() : loader->stats();
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
             bool json, const std::string& compare, const std::string& device_name) {
  if (compare == "full" && device_name == "cpu") {
    // The whole side-by-side benchmark (bench/run_bench.py) replaces this process.
    const std::string script = DataFile("bench/run_bench.py");
    if (script.empty()) {
      return ReportError("bench", NotFoundError("bench/run_bench.py not found"), json);
    }
    const std::string python = PythonInterpreter();
    const std::string epochs_s = std::to_string(epochs), batch_s = std::to_string(o.batch_size);
    const std::string self = "/proc/self/exe";
    char exe[4096];
    const ssize_t n = readlink(self.c_str(), exe, sizeof exe - 1);
    const std::string binary = n > 0 ? std::string(exe, n) : "build/stoker";
    execl(python.c_str(), "python3", script.c_str(), data.c_str(), "--epochs", epochs_s.c_str(),
          "--batch-size", batch_s.c_str(), "--stoker", binary.c_str(), static_cast<char*>(nullptr));
    return ReportError("bench", InternalError("cannot run " + python + " " + script), json);
  }
  BenchResult r;
  StatusOr<int> device = ParseBenchDevice(device_name);
  Status st = device.status();
  if (st.ok() && device.value() != kCpuLoader && !compare.empty()) {
    st = InvalidArgumentError("--compare runs on the CPU path only (leave out --device)");
  }
  if (st.ok()) st = RunBench(data, o, device.value(), epochs, &r);
  if (!st.ok()) {
    return ReportError("bench", st, json);  // still one JSON object on stdout
  }
  std::string peer_json;
  if (compare == "torch") {
    const std::string script = DataFile("bench/torch_baseline.py");
    if (script.empty()) {
      return ReportError("bench", NotFoundError("bench/torch_baseline.py not found"), json);
    }
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
  const double peer_rate =
      best == std::string::npos ? -1 : JsonNumber(peer_json, "images_per_sec", best);
  if (json) {
    std::string out = FormatJson(data, pipeline, device_name, o, r);
    if (!peer_json.empty()) {
      while (!peer_json.empty() && (peer_json.back() == '\n' || peer_json.back() == ' ')) {
        peer_json.pop_back();
      }
      out.pop_back();
      out += ", \"peer\": " + peer_json +
             ", \"ratio\": " + std::to_string(r.images_per_sec / peer_rate) + "}";
    }
    std::printf("%s\n", out.c_str());
    return 0;
  }
  const StageStats& s = r.stats.total;
  std::printf("stoker bench  %s  pipeline=%s batch=%d threads=%d prefetch=%d dtype=%s%s%s\n",
              data.c_str(), pipeline.c_str(), o.batch_size, r.stats.threads, o.prefetch,
              DTypeName(o.dtype), device_name == "cpu" ? "" : " device=",
              device_name == "cpu" ? "" : device_name.c_str());
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

class BenchCommand : public Command {
 public:
  explicit BenchCommand(CLI::App* app)
      : Command(app->add_subcommand(
            "bench", "Measure images/s, CPU-seconds per 1,000 images, peak RSS and time to first "
                     "batch on an image folder (one warm-up epoch, then the median of timed "
                     "epochs).")) {
    CLI::App* s = sub();
    s->add_option("DATA", data_, "ImageFolder root (DATA/<class>/<image>.jpg)")
        ->required()->check(CLI::ExistingDirectory);
    AddLoaderFlags(s, &flags_, LoaderFlagSet{.sizes = true, .layout = true, .trace = true});
    s->add_option("--epochs", epochs_, "timed epochs after the warm-up epoch")
        ->capture_default_str()->check(kPositive);
    s->add_option("--compare", compare_,
                  "torch: also run the same pipeline through torch.utils.data.DataLoader "
                  "(bench/torch_baseline.py, best of 0-4 workers) and print the ratio; "
                  "full: the whole side-by-side benchmark (bench/run_bench.py: DataLoader, "
                  "full-decode ceiling, stoker at 1 and 2 threads, train and val, every "
                  "dtype, Python memory and first batch, ratios against the targets)")
        ->check(CLI::IsMember({"torch", "full"}));
    s->add_flag("--json", json_, "print one JSON object instead of the table (an error too)");
    s->add_option("--device", device_,
                  "cpu: the host Loader; cuda or cuda:N: batches fed to that GPU by a "
                  "DeviceLoader (uint8 over the bus, Normalize and the dtype on the device; "
                  "an error naming the reason where CUDA cannot be used); host: the "
                  "DeviceLoader's host fallback (the device stage's work on a host thread)")
        ->capture_default_str();
    s->add_flag("--no-stage-timing", no_stage_timing_,
                "turn off the per-stage clock reads (only to measure what they cost)");
  }

  int Run() override {
    LoaderOptions o = ToLoaderOptions(flags_);
    o.stage_timing = !no_stage_timing_;
    return FinishTrace(flags_, o, "bench",
                       CmdBench(data_, flags_.pipeline, o, epochs_, json_, compare_, device_));
  }

 private:
  std::string data_, compare_, device_ = "cpu";
  LoaderFlags flags_;
  int epochs_ = 3;
  bool json_ = false, no_stage_timing_ = false;
};

}  // namespace

std::unique_ptr<Command> AddBenchCommand(CLI::App* app) {
  return std::make_unique<BenchCommand>(app);
}

}  // namespace stoker
