// Copyright 2026 The stoker Authors.
//
// `stoker diagnose DATA [--step-ms X] [--cache decoded|output --cache-mib N] [--json]
//                 [--trace FILE] [--report FILE.html [--tune | --tune-json FILE]]`:
// is the training step waiting for data, and which stage is to blame.
// `stoker diagnose --loader SPEC [--step SPEC]` and `stoker diagnose DATA
// --transforms TEXT` run the user's own pipeline: the verb hands over to
// Python (stoker._user_pipeline, ExecUserPipeline in cli_support.h), since
// the Loader is built by the user's Python code; so does --report (the HTML
// page is drawn by stoker._report), with the built-in pipeline spelled as
// stoker transforms.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
           "}, \"state\": " + JsonQuote(g.state) +
           ", \"decided\": " + (g.decided ? "true" : "false") +
           ", \"wait_fraction\": " + std::to_string(g.wait_fraction) +
           ", \"next_fraction\": " + std::to_string(g.next_fraction) +
           ", \"step_slowdown\": " + std::to_string(g.step_slowdown) +
           ", \"skipped\": " + std::to_string(s.skipped) +
           ", \"skipped_files\": " + std::to_string(s.skipped_files) + ", \"round_waits\": [";
    for (size_t i = 0; i < g.round_waits.size(); ++i) {
      out += std::string(i ? ", " : "") + std::to_string(g.round_waits[i]);
    }
    out += "], \"causes\": [";
    for (size_t i = 0; i < g.causes.size(); ++i) {
      out += std::string(i ? ", " : "") + JsonQuote(g.causes[i]);
    }
    const CpuUse& c = g.cpu;
    out += "], \"cpu\": {\"cores\": " + std::to_string(c.cores) +
           ", \"machine_cores\": " + std::to_string(c.machine_cores) +
           ", \"machine_busy\": " + std::to_string(c.machine_busy) +
           ", \"process_busy\": " + std::to_string(c.process_busy) +
           ", \"step_alone\": " + std::to_string(c.step_alone) +
           ", \"others_busy\": " + std::to_string(c.others_busy) +
           ", \"saturated\": " + (c.saturated ? "true" : "false") +
           ", \"contended\": " + (c.contended ? "true" : "false") +
           ", \"summary\": " + JsonQuote(c.summary) + "}" +
           ", \"data_bound\": " + (g.data_bound ? "true" : "false") +
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
  const StageStats& t = g.pipeline_stats.total;
  if (t.skipped > 0) {
    std::printf("skipped (--on-error skip): %lld unreadable samples, %lld distinct files\n",
                static_cast<long long>(t.skipped), static_cast<long long>(t.skipped_files));
  }
  return 0;
}

class DiagnoseCommand : public Command {
 public:
  explicit DiagnoseCommand(CLI::App* app)
      : Command(app->add_subcommand(
            "diagnose",
            "Is the training step waiting for data, and which stage is to blame? Times "
            "the step's wait for data under the full pipeline in rounds until they agree "
            "(or says undecided), checks CPU contention, and names the short stage by "
            "feeding the step from (1) one cached batch, (2) a copied batch, (3) one "
            "sample copied into every slot, (4) encoded bytes cached in memory, (5) the "
            "full pipeline. --loader/--step/--transforms: your own pipeline (in Python).")) {
    CLI::App* s = sub();
    s->add_option("DATA", data_, "ImageFolder root (not with --loader)")
        ->check(CLI::ExistingDirectory);
    s->add_option("--loader", loader_,
                  "diagnose your own Loader: a function returning a stoker.Loader, "
                  "'pkg.module:func' or 'file.py:func' (runs in Python)");
    s->add_option("--step", step_,
                  "your training step, step(images, labels): 'pkg.module:func' or "
                  "'file.py:func' (runs in Python; default: a sleep of --step-ms)");
    s->add_option("--transforms", transforms_,
                  "your transforms instead of --pipeline, as stoker Python expressions, e.g. "
                  "'RandomResizedCrop(64), Normalize()' (runs in Python)");
    AddLoaderFlags(s, &flags_, LoaderFlagSet{.sizes = true, .layout = false, .trace = true});
    s->add_option("--step-ms", step_ms_,
                  "simulated training step per batch, in ms (0: an infinitely fast step)")
        ->capture_default_str()->check(kNonNegativeNumber);
    s->add_option("--batches", batches_, "steps measured per mode")
        ->capture_default_str()->check(kPositive);
    s->add_flag("--json", json_, "print one JSON object");
    s->add_option("--report", report_,
                  "also write one self-contained HTML page: the verdict, stage times, a "
                  "timeline excerpt of the trace, the tuning curve (--tune, --tune-json) "
                  "(runs in Python)");
    s->add_flag("--tune", tune_, "with --report: run a short tune sweep first and draw its curve");
    s->add_option("--tune-json", tune_json_,
                  "with --report: draw the curve of this `stoker tune --json` output")
        ->check(CLI::ExistingFile);
    s->add_option("--cache", cache_,
                  "keep samples in memory across epochs: 'decoded' (whole decoded images) "
                  "or 'output' (finished samples; val pipeline only); needs --cache-mib")
        ->check(OneOf(kCacheChoices));
    s->add_option("--cache-mib", cache_mib_, "the cache's bound in MiB")
        ->check(CLI::PositiveNumber);
  }

  int Run() override {
    if ((tune_ || !tune_json_.empty()) && report_.empty()) {
      std::fprintf(stderr, "stoker diagnose: --tune and --tune-json go with --report\n");
      return 2;
    }
    if (!loader_.empty() || !step_.empty() || !transforms_.empty() || !report_.empty()) {
      return RunInPython();
    }
    if (data_.empty()) {
      std::fprintf(stderr, "stoker diagnose: give DATA (an image folder) or --loader SPEC\n");
      return 2;
    }
    LoaderOptions o = ToLoaderOptions(flags_);
    if (cache_.empty() != (cache_mib_ == 0)) {
      std::fprintf(stderr, "stoker diagnose: --cache and --cache-mib go together\n");
      return 2;
    }
    if (!cache_.empty()) {
      o.cache_bytes = static_cast<size_t>(cache_mib_) << 20;
      o.cache_kind = ParseChoice("--cache", cache_, kCacheChoices).value();
    }
    return FinishTrace(flags_, o, "diagnose",
                       CmdDiagnose(data_, flags_.pipeline, o, step_ms_, batches_, json_));
  }

 private:
  // The user's pipeline: the same flags, handed to stoker._user_pipeline.
  int RunInPython() {
    if (!cache_.empty() || !flags_.trace.empty()) {
      std::fprintf(stderr, "stoker diagnose: --cache and --trace are the built-in pipeline's; "
                           "with --loader set cache= in your Loader, or trace in Python "
                           "(loader.trace); --report holds a trace excerpt of its own\n");
      return 2;
    }
    std::string transforms = transforms_;
    if (transforms.empty() && loader_.empty()) transforms = PipelineText();
    std::vector<std::string> args = UserPipelineArgs("diagnose", data_, loader_, transforms);
    if (args.empty()) return 2;
    if (!step_.empty()) args.insert(args.end(), {"--step", step_});
    args.insert(args.end(), {"--batch-size", std::to_string(flags_.options.batch_size),
                             "--threads", std::to_string(flags_.options.threads),
                             "--prefetch", std::to_string(flags_.options.prefetch),
                             "--dtype", flags_.dtype, "--step-ms", std::to_string(step_ms_),
                             "--batches", std::to_string(batches_)});
    if (json_) args.push_back("--json");
    if (!report_.empty()) args.insert(args.end(), {"--report", report_});
    if (tune_) args.push_back("--tune");
    if (!tune_json_.empty()) args.insert(args.end(), {"--tune-json", tune_json_});
    return ExecUserPipeline(args);
  }

  // --pipeline as stoker transforms (loader_flags.cc's PipelineTransforms).
  std::string PipelineText() const {
    std::string t = flags_.pipeline == "train"
                        ? "RandomResizedCrop(224), RandomHorizontalFlip()"
                        : "Resize(256), CenterCrop(224)";
    if (flags_.dtype != "uint8") {
      t += ", Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])";
    }
    return t;
  }

  std::string data_, cache_, loader_, step_, transforms_, report_, tune_json_;
  LoaderFlags flags_;
  double step_ms_ = 0;
  int batches_ = 30;
  int64_t cache_mib_ = 0;
  bool json_ = false, tune_ = false;
};

}  // namespace

std::unique_ptr<Command> AddDiagnoseCommand(CLI::App* app) {
  return std::make_unique<DiagnoseCommand>(app);
}

}  // namespace stoker
