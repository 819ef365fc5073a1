// Copyright 2026 The stoker Authors.
//
// What the CLI's verbs share: where the Python scripts the CLI runs are
// found (`tune --plot`, `stats --plot`, `bench --compare`) and which
// interpreter runs them (no path into the checkout is compiled in), and how
// an error is reported (with --json, as one JSON object on stdout too).
// Thread-safety: every function is safe to call from any thread.
#ifndef STOKER_TOOLS_CLI_SUPPORT_H_
#define STOKER_TOOLS_CLI_SUPPORT_H_

#include <string>
#include <vector>

#include "stoker/status.h"

namespace stoker {

// The interpreter for the Python scripts the CLI runs: $STOKER_PYTHON (the
// `stoker` console entry point of the Python package sets it to its own
// interpreter) or /usr/bin/python3.
std::string PythonInterpreter();

// A script the CLI runs (`rel`, e.g. "bench/run_bench.py"), found relative to
// this binary: $STOKER_DATA_DIR, then <binary's dir>/share/stoker (the build
// tree), then <binary's dir>/../share/stoker (an install prefix, and
// stoker/bin/stoker in the Python package). Returns the path, or "" after
// printing to stderr where it looked.
std::string DataFile(const std::string& rel);

// Runs the user's own pipeline in Python in place of this process:
// `<PythonInterpreter()> -m stoker._user_pipeline <args...>`, with the build
// tree's python/ (<binary's dir>/share/stoker/python) put first on
// PYTHONPATH when it exists (the installed package's interpreter imports
// stoker by itself). Returns only when the interpreter cannot be started:
// then, after saying so on stderr, 127.
int ExecUserPipeline(const std::vector<std::string>& args);

// The start of that hand-over's arguments: {verb, [DATA], [--loader L],
// [--transforms T]}. --loader builds the whole Loader, so with --transforms
// too it says so on stderr and returns an empty vector.
std::vector<std::string> UserPipelineArgs(const std::string& verb, const std::string& data,
                                          const std::string& loader,
                                          const std::string& transforms);

// A verb's error: "stoker <tool>: <status>" on stderr and, when `json`, the
// JSON object {"tool": ..., "error": <message>, "code": <status code name>}
// on stdout, so that a script reading --json output always gets one object.
// Returns the exit status, 1.
int ReportError(const char* tool, const Status& status, bool json);

}  // namespace stoker

#endif  // STOKER_TOOLS_CLI_SUPPORT_H_
