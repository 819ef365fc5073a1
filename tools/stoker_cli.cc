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
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "command.h"
#include "stoker/version.h"

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
  CLI11_PARSE(app, argc, argv);
  for (const auto& c : commands) {
    if (c->parsed()) return c->Run();
  }
  return 0;
}
