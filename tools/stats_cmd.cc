// Copyright 2026 The stoker Authors.
//
// `stoker stats DATA [--against OLD]`: what is in a dataset, and whether a
// new drop drifted from an old one (src/stats/). Exit status: 0, 1 on errors,
// 3 when --against finds drift.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_checks.h"
#include "cli_support.h"
#include "command.h"
#include "source_path.h"
#include "stoker/drift.h"
#include "stoker/json.h"
#include "stoker/stats.h"

namespace stoker {

// Exit code when --against finds drift (errors are 1).
constexpr int kDriftExitCode = 3;

namespace {

struct StatsCommand : Command {
  using Command::Command;
  int Run() override;
  std::string data, against, plot, labels, layout, images = "images";
  int resolution = 64, threads = 0;
  bool json = false, progress = true, duplicates = false;
  DriftOptions drift;
};

}  // namespace

std::unique_ptr<Command> AddStatsCommand(CLI::App* app) {
  auto c = std::make_unique<StatsCommand>(app->add_subcommand(
      "stats",
      "Describe a dataset: class counts and imbalance, image size and aspect histograms, file "
      "formats and colour modes, the exact per-channel mean and std (for Normalize), "
      "unreadable files, each named, and with --duplicates identical images. With --against "
      "OLD, compare with an older dataset or its saved --json report: one verdict per item "
      "(class balance by chi-square; width, height and aspect by Kolmogorov-Smirnov; colour "
      "mean and std; format mix) and exit status 3 when any item shifted beyond its "
      "threshold."));
  CLI::App* s = c->sub();
  s->add_option("DATA", c->data, kSourcePathHelp)->required();
  s->add_option("--against", c->against,
                "OLD: a dataset (any DATA kind, read with the same options) or a report saved "
                "with --json (a file ending in .json)");
  s->add_option("--resolution", c->resolution,
                "mean/std over images brought to this shorter side (JPEG DCT scaling, then "
                "torchvision's Resize(N) filter; smaller images as they are). 0 = full size")
      ->check(kNonNegative)->capture_default_str();
  s->add_option("--threads", c->threads, "reading/decoding threads (0: one per core)")
      ->check(kNonNegative)->capture_default_str();
  s->add_flag("--duplicates", c->duplicates,
              "also find duplicate images: identical bytes (XXH3 128-bit hash of each file; "
              "raw-pixel samples hash their pixels), listed in groups");
  s->add_flag("--json", c->json,
              "print the complete report as one JSON object (what --against reads back); "
              "with --against it also holds the verdicts (\"drift\", \"shifted\")");
  s->add_option("--plot", c->plot,
                "write a PNG of the histograms (sizes, aspect, classes, colour modes; OLD "
                "overlaid with --against). Needs matplotlib");
  s->add_option("--class-alpha", c->drift.class_alpha,
                "class balance shifted when the chi-square p-value is below this")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  s->add_option("--ks-alpha", c->drift.ks_alpha,
                "significance level of the KS tests on width, height and aspect (threshold "
                "sqrt(-ln(alpha/2)/2) * sqrt((n+m)/(n*m)))")
      ->check(CLI::Range(1e-12, 1.0))->capture_default_str();
  s->add_option("--class-min-shift", c->drift.class_min_shift,
                "... and only when the class proportions' total variation distance exceeds "
                "this (keeps tiny but significant shifts of huge datasets from failing)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  s->add_option("--ks-min-d", c->drift.ks_min_d,
                "... and only when the KS statistic D exceeds this (effect-size floor)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  s->add_option("--colour-threshold", c->drift.colour_threshold,
                "colour mean/std shifted when a channel moves more than this (pixels in [0, 1])")
      ->check(kNonNegativeNumber)->capture_default_str();
  s->add_option("--format-threshold", c->drift.format_threshold,
                "format mix shifted when the total variation distance of the colour-mode "
                "proportions exceeds this")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  s->add_option("--labels", c->labels,
                ".npy: a 1-D labels .npy; HDF5: the labels dataset (default \"labels\")");
  s->add_option("--images", c->images, "HDF5: the images dataset")->capture_default_str();
  s->add_option("--layout", c->layout, ".npy: NHWC or NCHW (default: from the shape)")
      ->check(OneOf(kLayoutChoices));
  s->add_flag("!--no-progress", c->progress, "no progress bar (it is shown only on a terminal)");
  return c;
}

namespace {

bool EndsWith(const std::string& s, const std::string& sfx) {
  return s.size() >= sfx.size() && s.compare(s.size() - sfx.size(), sfx.size(), sfx) == 0;
}

StatusOr<DatasetStats> StatsOf(const StatsCommand& c, const std::string& path) {
  SourcePathOptions so;
  so.labels = c.labels;
  so.labels_given = c.sub()->count("--labels") > 0;
  so.images = c.images;
  so.layout = c.layout;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<Source> source, OpenSourceFromPath(path, so));
  StatsOptions o;
  o.resolution = c.resolution;
  o.threads = c.threads;
  o.duplicates = c.duplicates;
  const bool bar = c.progress && ::isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  if (bar) {
    o.progress = [t0](int64_t done, int64_t total) {
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = t > 0 ? done / t : 0;
      const int width = 30;
      if (total >= 0) {
        const int fill = total > 0 ? static_cast<int>(width * done / total) : width;
        std::string b(static_cast<size_t>(fill), '#');
        b.resize(width, '.');
        std::fprintf(stderr, "\r[%s] %lld/%lld  %3d%%  %.0f images/s  ETA %.0f s   ", b.c_str(),
                     static_cast<long long>(done), static_cast<long long>(total),
                     total > 0 ? static_cast<int>(100 * done / total) : 100, rate,
                     rate > 0 ? (total - done) / rate : 0.0);
      } else {
        std::fprintf(stderr, "\r%lld images  %.0f images/s   ", static_cast<long long>(done),
                     rate);
      }
      std::fflush(stderr);
    };
  }
  auto r = ComputeStats(source.get(), o);
  if (bar) std::fprintf(stderr, "\n");
  return r;
}

StatusOr<DatasetStats> ReadReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = StatsFromJson(ss.str());
  if (!r.ok()) return Status(r.status().code(), path + ": " + r.status().message());
  return r;
}

// The report with extra members before its closing brace.
std::string WithMembers(std::string json, const std::string& members) {
  json.pop_back();  // '}'
  return json + ", " + members + "}";
}

bool Plot(const std::string& report_json, const std::string& old_json, const std::string& png) {
  const std::string input =
      old_json.empty() ? report_json : "{\"new\": " + report_json + ", \"old\": " + old_json + "}";
  const std::string script = DataFile("tools/plot_stats.py");
  if (script.empty()) return false;
  const std::string cmd = "'" + PythonInterpreter() + "' '" + script + "' '" + png + "'";
  FILE* p = popen(cmd.c_str(), "w");
  if (p == nullptr) return false;
  const bool wrote = std::fwrite(input.data(), 1, input.size(), p) == input.size();
  return pclose(p) == 0 && wrote;
}

}  // namespace

int StatsCommand::Run() {
  const StatsCommand& c = *this;
  auto fail = [&c](const Status& s) { return ReportError("stats", s, c.json); };
  if (!c.plot.empty() && c.plot.find('\'') != std::string::npos) {
    return fail(InvalidArgumentError("--plot: the file name must not contain a quote"));
  }
  auto now = StatsOf(c, c.data);
  if (!now.ok()) return fail(now.status());
  const std::string report = StatsToJson(now.value());
  if (c.against.empty()) {
    if (!c.plot.empty() && !Plot(report, "", c.plot)) {
      return fail(InternalError("--plot failed (it needs " + PythonInterpreter() +
                                " with matplotlib: Debian package python3-matplotlib)"));
    }
    std::printf("%s\n", c.json ? report.c_str() : FormatStats(now.value()).c_str());
    if (!c.plot.empty() && !c.json) std::printf("plot: %s\n", c.plot.c_str());
    return 0;
  }
  auto old = EndsWith(c.against, ".json") ? ReadReport(c.against) : StatsOf(c, c.against);
  if (!old.ok()) return fail(old.status());
  const std::vector<DriftVerdict> verdicts = CompareStats(now.value(), old.value(), c.drift);
  const bool shifted = AnyShifted(verdicts);
  if (!c.plot.empty() && !Plot(report, StatsToJson(old.value()), c.plot)) {
    return fail(InternalError("--plot failed (it needs " + PythonInterpreter() +
                              " with matplotlib: Debian package python3-matplotlib)"));
  }
  if (c.json) {
    std::printf("%s\n", WithMembers(report, "\"against\": " + JsonQuote(c.against) +
                                                ", \"drift\": " + VerdictsToJson(verdicts) +
                                                ", \"shifted\": " + (shifted ? "true" : "false"))
                            .c_str());
  } else {
    std::printf("%s\nagainst %s\n%s", FormatStats(now.value()).c_str(), old.value().source.c_str(),
                FormatVerdicts(verdicts).c_str());
    if (!c.plot.empty()) std::printf("plot: %s\n", c.plot.c_str());
  }
  return shifted ? kDriftExitCode : 0;
}

}  // namespace stoker
