// Copyright 2026 The stoker Authors.
#include "cli_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stoker/json.h"

namespace stoker {

std::string PythonInterpreter() {
  const char* env = std::getenv("STOKER_PYTHON");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/python3";
}

std::string DataFile(const std::string& rel) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("STOKER_DATA_DIR"); env != nullptr && *env != '\0') {
    dirs.push_back(env);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string bin(exe, n);
    bin = bin.substr(0, bin.rfind('/'));
    dirs.push_back(bin + "/share/stoker");
    dirs.push_back(bin + "/../share/stoker");
  }
  std::string looked;
  for (const std::string& d : dirs) {
    const std::string path = d + "/" + rel;
    if (access(path.c_str(), R_OK) == 0) return path;
    looked += " " + path;
  }
  std::fprintf(stderr, "stoker: cannot find %s (looked in:%s; set STOKER_DATA_DIR)\n",
               rel.c_str(), looked.c_str());
  return "";
}

int ReportError(const char* tool, const Status& status, bool json) {
  if (json) {
    std::printf("{\"tool\": %s, \"error\": %s, \"code\": %s}\n", JsonQuote(tool).c_str(),
                JsonQuote(status.message()).c_str(),
                JsonQuote(StatusCodeName(status.code())).c_str());
    std::fflush(stdout);
  }
  std::fprintf(stderr, "stoker %s: %s\n", tool, status.ToString().c_str());
  return 1;
}

}  // namespace stoker
