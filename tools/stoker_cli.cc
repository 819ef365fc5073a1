// Copyright 2026 The stoker Authors.
//
// The `stoker` command: a thin front end over include/stoker. Each verb is in
// its own file (command.h); the loader options bench, diagnose and tune share
// are registered by loader_flags.h.
//
//   stoker bench DATA [--pipeline train|val] [--batch-size N] [--threads N] [--prefetch N]
//                     [--epochs N] [--dtype D] [--layout L] [--json] [--compare torch]
//                                                                          (bench_cmd.cc)
//   stoker decode DATA [--threads N] [--epochs N] [--json]                 (decode_cmd.cc)
//   stoker diagnose DATA [--step-ms X] [--json]                            (diagnose_cmd.cc)
//   stoker tune DATA [--threads 1,2,4] [--prefetch 1,2,4,8] [--batch-size 64,...]
//                    [--step-ms X] [--plot tune.png] [--json]              (tune_cmd.cc)
//   stoker synth DIR  [--classes N] [--per-class N] [--width W] [--height H] [--seed S] [--json]
//                                                                          (synth_cmd.cc)
//   stoker convert SRC DEST [--shard-size 1GB] [--resize N] [--compress zstd] ... (convert_cmd.cc)
//   stoker stats DATA [--against OLD] [--resolution N] [--json] [--plot F.png] (stats_cmd.cc)
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_support.h"
#include "command.h"
#include "stoker/version.h"

namespace {

// Whether the command line asks for --json (before any "--"), and the verb
// it names ("stoker" when none): a parse error is then reported as JSON too.
bool WantsJson(int argc, char** argv, const std::vector<std::string>& verbs, std::string* tool) {
  *tool = "stoker";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--json") == 0) json = true;
    if (*tool == "stoker") {
      for (const std::string& v : verbs) {
        if (v == argv[i]) *tool = v;
      }
    }
  }
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stoker;
  CLI::App app{"stoker: keeps accelerators fed. Image folders to batched tensors on native "
               "threads, and the numbers that show where the time goes."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stoker " STOKER_VERSION_STRING);
  std::vector<std::unique_ptr<Command>> commands;
  for (auto add : {AddBenchCommand, AddSynthCommand, AddDecodeCommand, AddDiagnoseCommand,
                   AddTuneCommand, AddConvertCommand, AddStatsCommand}) {
    commands.push_back(add(&app));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own errors (a missing DATA directory, a bad value, an unknown
    // option) are JSON objects under --json like every other error; --help
    // and --version (exit status 0) are not errors.
    std::vector<std::string> verbs;
    for (const auto& c : commands) verbs.push_back(c->sub()->get_name());
    std::string tool;
    if (e.get_exit_code() != 0 && WantsJson(argc, argv, verbs, &tool)) {
      ReportError(tool.c_str(), InvalidArgumentError(e.what()), /*json=*/true);
      return e.get_exit_code();
    }
    return app.exit(e);
  }
  for (const auto& c : commands) {
    if (c->parsed()) return c->Run();
  }
  return 0;
}
