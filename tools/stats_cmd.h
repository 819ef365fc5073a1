// Copyright 2026 The stoker Authors.
//
// `stoker stats DATA [--against OLD]`: what is in a dataset, and whether a
// new drop drifted from an old one (src/stats/). Kept in its own file;
// stoker_cli.cc adds the verb and runs it.
#ifndef STOKER_TOOLS_STATS_CMD_H_
#define STOKER_TOOLS_STATS_CMD_H_

#include <memory>

#include <CLI/CLI.hpp>

namespace stoker {

struct StatsCommand;

// Adds the `stats` subcommand to `app`; the returned object holds its
// parsed arguments.
std::shared_ptr<StatsCommand> AddStatsCommand(CLI::App* app);
// True when the user chose `stats`.
bool StatsCommandParsed(const StatsCommand& c);
// Runs it; returns the process exit code: 0, 1 on errors, 3 when --against
// finds drift.
int RunStatsCommand(const StatsCommand& c);

}  // namespace stoker

#endif  // STOKER_TOOLS_STATS_CMD_H_
