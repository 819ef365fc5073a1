// Copyright 2026 The stoker Authors.
//
// `stoker convert`: a source (image folder, .npy) into tar shards. Kept in
// its own file; stoker_cli.cc adds the verb and runs it.
#ifndef STOKER_TOOLS_CONVERT_CMD_H_
#define STOKER_TOOLS_CONVERT_CMD_H_

#include <memory>

#include <CLI/CLI.hpp>

namespace stoker {

struct ConvertCommand;

// Adds the `convert` subcommand to `app`; the returned object holds its
// parsed arguments.
std::shared_ptr<ConvertCommand> AddConvertCommand(CLI::App* app);
// True when the user chose `convert`.
bool ConvertCommandParsed(const ConvertCommand& c);
// Runs it; returns the process exit code.
int RunConvertCommand(const ConvertCommand& c);

}  // namespace stoker

#endif  // STOKER_TOOLS_CONVERT_CMD_H_
