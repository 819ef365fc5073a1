// Copyright 2026 The stoker Authors.
//
// `stoker tune DATA [--threads 1,2,4] [--prefetch 1,2,4,8] [--batch-size 64,...]
// [--step-ms X] [--plot tune.png] [--json]`: sweeps threads x prefetch x batch size
// and recommends the smallest configuration that does the job.
#include <unistd.h>

#include <algorithm>
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
#include "stoker/loader.h"
#include "stoker/sources.h"

namespace stoker {
namespace {

// Sweeps threads x prefetch x batch size on DATA and recommends the
// smallest configuration that does the job (see src/diagnose/tune.h).
int CmdTune(const std::string& data, const std::string& pipeline, LoaderOptions o,
            TuneOptions t, const std::string& plot, bool json) {
  auto folder = ImageFolder::Open(data);
  if (!folder.ok()) return ReportError("tune", folder.status(), json);
  const bool tty = isatty(2);
  if (tty) {
    const double t0 = NowSeconds();
    t.progress = [t0](int i, int total, const std::string& what) {
      std::fprintf(stderr, "\r\033[K[%d/%d] %s  (%.0f s)", i + 1, total, what.c_str(),
                   NowSeconds() - t0);
      std::fflush(stderr);
    };
  }
  auto results = Tune(folder.value(), o, t);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!results.ok()) return ReportError("tune", results.status(), json);
  const TuneRecommendation rec = Recommend(results.value(), t.step_ms);
  const std::string j = TuneJson(results.value(), rec, t.step_ms);
  if (!plot.empty()) {
    // matplotlib draws it: tools/plot_tune.py reads the JSON from stdin.
    const std::string script = DataFile("tools/plot_tune.py");
    if (script.empty()) {
      return ReportError("tune", NotFoundError("--plot: tools/plot_tune.py not found"), json);
    }
    const std::string cmd = "'" + PythonInterpreter() + "' '" + script + "' '" + plot + "'";
    FILE* p = popen(cmd.c_str(), "w");
    if (p == nullptr || std::fwrite(j.data(), 1, j.size(), p) != j.size() || pclose(p) != 0) {
      return ReportError("tune",
                         InternalError("--plot failed (it needs " + PythonInterpreter() +
                                       " with matplotlib: Debian package python3-matplotlib)"),
                         json);
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

class TuneCommand : public Command {
 public:
  explicit TuneCommand(CLI::App* app)
      : Command(app->add_subcommand(
            "tune",
            "Sweep threads x prefetch x batch size on an image folder; print images/s, "
            "CPU-seconds per 1,000 images, peak RSS and consumer wait for each, and "
            "recommend the smallest configuration (fewest threads, then least memory) "
            "within 5% of the best throughput -- or, with --step-ms, the smallest that "
            "keeps the step waiting less than 2% of the time. Also runs threads=\"auto\", "
            "prefetch=\"auto\" for comparison.")) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    t_.threads.clear();
    for (int t = 1; t < cores; t *= 2) t_.threads.push_back(t);
    t_.threads.push_back(std::max(1, cores));
    CLI::App* s = sub();
    s->add_option("DATA", data_, "ImageFolder root (not with --loader)")
        ->check(CLI::ExistingDirectory);
    s->add_option("--loader", loader_,
                  "tune your own Loader's source and transforms: a function returning a "
                  "stoker.Loader, 'pkg.module:func' or 'file.py:func' (runs in Python)");
    s->add_option("--transforms", transforms_,
                  "your transforms instead of --pipeline, as stoker Python expressions, e.g. "
                  "'RandomResizedCrop(64), Normalize()' (runs in Python)");
    AddLoaderFlags(s, &flags_, LoaderFlagSet{.sizes = false, .layout = false});
    s->add_option("--threads", t_.threads, "thread counts to try (comma-separated)")
        ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 1024));
    s->add_option("--prefetch", t_.prefetch, "prefetch depths to try")
        ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 1024));
    s->add_option("--batch-size", t_.batch_sizes, "batch sizes to try")
        ->delimiter(',')->capture_default_str()->check(kPositive);
    s->add_option("--step-ms", t_.step_ms,
                  "simulated training step per batch, in ms (0: as fast as possible)")
        ->capture_default_str()->check(kNonNegativeNumber);
    s->add_option("--seconds", t_.seconds, "measured seconds per configuration")
        ->capture_default_str()->check(kPositiveNumber);
    s->add_option("--auto-batches", t_.auto_batches,
                  "batches the auto-tuned run takes (measured over the last third)")
        ->capture_default_str()->check(CLI::Range(3, 1000000));
    s->add_flag("--no-auto", no_auto_, "skip the threads=auto, prefetch=auto run");
    s->add_option("--plot", plot_,
                  "write a PNG of images/s against threads, one line per prefetch "
                  "(needs matplotlib)");
    s->add_flag("--json", json_, "print one JSON object instead of the table");
  }

  int Run() override {
    if (!loader_.empty() || !transforms_.empty()) return RunInPython();
    if (data_.empty()) {
      std::fprintf(stderr, "stoker tune: give DATA (an image folder) or --loader SPEC\n");
      return 2;
    }
    TuneOptions t = t_;
    t.include_auto = !no_auto_;
    return CmdTune(data_, flags_.pipeline, ToLoaderOptions(flags_), t, plot_, json_);
  }

 private:
  // The user's pipeline: the same flags, handed to stoker._user_pipeline.
  int RunInPython() {
    if (!plot_.empty()) {
      std::fprintf(stderr, "stoker tune: --plot is for the built-in pipelines; with --loader "
                           "use --json and tools/plot_tune.py\n");
      return 2;
    }
    auto join = [](const std::vector<int>& v) {
      std::string out;
      for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
      return out;
    };
    std::vector<std::string> args = UserPipelineArgs("tune", data_, loader_, transforms_);
    if (args.empty()) return 2;
    args.insert(args.end(), {"--threads", join(t_.threads), "--prefetch", join(t_.prefetch),
                             "--dtype", flags_.dtype, "--step-ms", std::to_string(t_.step_ms),
                             "--seconds", std::to_string(t_.seconds)});
    // The loader's own batch size unless --batch-size was given.
    if (sub()->count("--batch-size") > 0) {
      args.insert(args.end(), {"--batch-size", join(t_.batch_sizes)});
    }
    if (no_auto_) args.push_back("--no-auto");
    if (json_) args.push_back("--json");
    return ExecUserPipeline(args);
  }

  std::string data_, plot_, loader_, transforms_;
  LoaderFlags flags_;
  TuneOptions t_;
  bool json_ = false, no_auto_ = false;
};

}  // namespace

std::unique_ptr<Command> AddTuneCommand(CLI::App* app) {
  return std::make_unique<TuneCommand>(app);
}

}  // namespace stoker
