// Copyright 2026 The stoker Authors.
//
// `stoker synth DIR [--classes N] [--per-class N] [--width W] [--height H] [--seed S]
// [--json]`: a deterministic synthetic image folder.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli_support.h"
#include "command.h"
#include "loader_flags.h"
#include "stoker/json.h"
#include "stoker/synth.h"

namespace stoker {
namespace {

int CmdSynth(const std::string& dir, const SynthOptions& o, bool json) {
  const double t0 = NowSeconds();
  auto n = WriteSyntheticImageFolder(dir, o);
  if (!n.ok()) return ReportError("synth", n.status(), json);
  if (json) {
    std::printf("{\"tool\": \"synth\", \"dir\": %s, \"images\": %lld, \"classes\": %d, "
                "\"seconds\": %.3f}\n",
                JsonQuote(dir).c_str(), static_cast<long long>(n.value()), o.classes,
                NowSeconds() - t0);
  } else {
    std::fprintf(stderr, "wrote %lld images in %d classes to %s in %.1f s\n",
                 static_cast<long long>(n.value()), o.classes, dir.c_str(), NowSeconds() - t0);
  }
  return 0;
}

class SynthCommand : public Command {
 public:
  explicit SynthCommand(CLI::App* app)
      : Command(app->add_subcommand("synth",
                                    "Write a deterministic synthetic ImageFolder of photo-like "
                                    "JPEGs (for demos and benchmarks).")) {
    CLI::App* s = sub();
    s->add_option("DIR", dir_, "output directory")->required();
    s->add_option("--classes", o_.classes, "class directories")->capture_default_str();
    s->add_option("--per-class", o_.images_per_class, "images per class")->capture_default_str();
    s->add_option("--width", o_.width, "typical width")->capture_default_str();
    s->add_option("--height", o_.height, "typical height")->capture_default_str();
    s->add_option("--quality", o_.quality, "JPEG quality")->capture_default_str();
    s->add_option("--seed", o_.seed, "seed")->capture_default_str();
    s->add_flag("--json", json_, "print one JSON object (images, classes, seconds)");
  }

  int Run() override {
    o_.progress = isatty(2) && !json_;
    return CmdSynth(dir_, o_, json_);
  }

 private:
  std::string dir_;
  SynthOptions o_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> AddSynthCommand(CLI::App* app) {
  return std::make_unique<SynthCommand>(app);
}

}  // namespace stoker
