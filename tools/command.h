// Copyright 2026 The stoker Authors.
//
// The verbs of the `stoker` command, one file each (bench_cmd.cc, ...). An
// Add...Command function registers its subcommand and options on the app and
// returns the Command that holds them; after parsing, main() runs the one the
// user chose. Thread-safety: for main()'s thread only.
#ifndef STOKER_TOOLS_COMMAND_H_
#define STOKER_TOOLS_COMMAND_H_

#include <memory>

#include <CLI/CLI.hpp>

namespace stoker {

class Command {
 public:
  explicit Command(CLI::App* sub) : sub_(sub) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // The subcommand; parsed() once the user chose it.
  CLI::App* sub() const { return sub_; }
  bool parsed() const { return sub_->parsed(); }
  // Runs the verb; returns the process exit code.
  virtual int Run() = 0;

 private:
  CLI::App* const sub_;
};

std::unique_ptr<Command> AddBenchCommand(CLI::App* app);     // bench_cmd.cc
std::unique_ptr<Command> AddSynthCommand(CLI::App* app);     // synth_cmd.cc
std::unique_ptr<Command> AddDecodeCommand(CLI::App* app);    // decode_cmd.cc
std::unique_ptr<Command> AddDiagnoseCommand(CLI::App* app);  // diagnose_cmd.cc
std::unique_ptr<Command> AddTuneCommand(CLI::App* app);      // tune_cmd.cc
std::unique_ptr<Command> AddConvertCommand(CLI::App* app);   // convert_cmd.cc
std::unique_ptr<Command> AddStatsCommand(CLI::App* app);     // stats_cmd.cc

}  // namespace stoker

#endif  // STOKER_TOOLS_COMMAND_H_
