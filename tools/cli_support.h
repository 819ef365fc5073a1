// Copyright 2026 The stoker Authors.
//
// What the CLI's verbs share: where the Python scripts the CLI runs are
// found (`tune --plot`, `stats --plot`, `bench --compare`) and which
// interpreter runs them. No path into the checkout is compiled in.
// Thread-safety: both functions are safe to call from any thread.
#ifndef STOKER_TOOLS_CLI_SUPPORT_H_
#define STOKER_TOOLS_CLI_SUPPORT_H_

#include <string>

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

}  // namespace stoker

#endif  // STOKER_TOOLS_CLI_SUPPORT_H_
