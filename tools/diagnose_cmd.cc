// Copyright 2026 The stoker Authors.
//
// `stoker diagnose DATA [--step-ms X] [--cache decoded|output --cache-mib N] [--json]
//                 [--trace FILE]`:
// is the training step waiting for data, and which stage is to blame.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli_checks.h"
#include "cli_support.h"
#include "command.h"
#include "loader_flags.h"
#include "stoker/diagnose.h"
#include "stoker/json.h"
#include "stoker/loader.h"
#include "stoker/sources.h"

namespace stoker {
namespace {

// Diagnoses the pipeline on DATA with a simulated training step of
// `step_ms` (a sleep: a GPU step leaves the CPU free).
int CmdDiagnose(const std::string& data, const std::string& pipeline, LoaderOptions o,
                double step_ms, int batches, bool json) {
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) return ReportError("diagnose", folder.status(), json);
  auto loader = Loader::Create(folder.value(), o);
  if (!loader.ok()) return ReportError("diagnose", loader.status(), json);
  auto step = [step_ms](const BatchPtr&) {
    if (step_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
    }
  };
  DiagnoseOptions d;
  d.batches = batches;
  auto r = Diagnose(loader.value().get(), step, d);
  if (!r.ok()) return ReportError("diagnose", r.status(), json);
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

class DiagnoseCommand : public Command {
 public:
  explicit DiagnoseCommand(CLI::App* app)
      : Command(app->add_subcommand(
            "diagnose",
            "Is the training step waiting for data, and which stage is to blame? Feeds "
            "a simulated step from (1) one cached batch, (2) a copied batch, (3) one "
            "sample copied into every slot, (4) encoded bytes cached in memory, (5) the "
            "full pipeline, and names the stage that slows it down.")) {
    CLI::App* s = sub();
    s->add_option("DATA", data_, "ImageFolder root")->required()->check(CLI::ExistingDirectory);
    AddLoaderFlags(s, &flags_, LoaderFlagSet{.sizes = true, .layout = false, .trace = true});
    s->add_option("--step-ms", step_ms_,
                  "simulated training step per batch, in ms (0: an infinitely fast step)")
        ->capture_default_str()->check(kNonNegativeNumber);
    s->add_option("--batches", batches_, "steps measured per mode")
        ->capture_default_str()->check(kPositive);
    s->add_flag("--json", json_, "print one JSON object");
    s->add_option("--cache", cache_,
                  "keep samples in memory across epochs: 'decoded' (whole decoded images) "
                  "or 'output' (finished samples; val pipeline only); needs --cache-mib")
        ->check(CLI::IsMember({"decoded", "output"}));
    s->add_option("--cache-mib", cache_mib_, "the cache's bound in MiB")
        ->check(CLI::PositiveNumber);
  }

  int Run() override {
    LoaderOptions o = ToLoaderOptions(flags_);
    if (cache_.empty() != (cache_mib_ == 0)) {
      std::fprintf(stderr, "stoker diagnose: --cache and --cache-mib go together\n");
      return 2;
    }
    if (!cache_.empty()) {
      o.cache_bytes = static_cast<size_t>(cache_mib_) << 20;
      o.cache_kind = cache_ == "output" ? LoaderOptions::CacheKind::kOutput
                                        : LoaderOptions::CacheKind::kDecoded;
      o.dct_scaling = false;  // cached images are whole
    }
    return FinishTrace(flags_, o, "diagnose",
                       CmdDiagnose(data_, flags_.pipeline, o, step_ms_, batches_, json_));
  }

 private:
  std::string data_, cache_;
  LoaderFlags flags_;
  double step_ms_ = 0;
  int batches_ = 30;
  int64_t cache_mib_ = 0;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> AddDiagnoseCommand(CLI::App* app) {
  return std::make_unique<DiagnoseCommand>(app);
}

}  // namespace stoker
