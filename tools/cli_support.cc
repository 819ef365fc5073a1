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

int ExecUserPipeline(const std::vector<std::string>& args) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, n);
    dir = dir.substr(0, dir.rfind('/')) + "/share/stoker/python";
    if (access((dir + "/stoker/_user_pipeline.py").c_str(), R_OK) == 0) {
      const char* old = std::getenv("PYTHONPATH");
      const std::string path = old != nullptr && *old != '\0' ? dir + ":" + old : dir;
      setenv("PYTHONPATH", path.c_str(), 1);
    }
  }
  const std::string python = PythonInterpreter();
  std::vector<std::string> all = {python, "-m", "stoker._user_pipeline"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(python.c_str(), argv.data());
  std::fprintf(stderr,
               "stoker: cannot run %s for the user's pipeline (--loader, --step, --transforms): "
               "set STOKER_PYTHON to the interpreter stoker is installed for, or run "
               "`python -m stoker._user_pipeline %s ...`\n",
               python.c_str(), args.empty() ? "diagnose" : args[0].c_str());
  return 127;
}

std::vector<std::string> UserPipelineArgs(const std::string& verb, const std::string& data,
                                          const std::string& loader,
                                          const std::string& transforms) {
  if (!loader.empty() && !transforms.empty()) {
    std::fprintf(stderr, "stoker %s: --loader builds the whole Loader; --transforms goes with "
                         "DATA instead\n", verb.c_str());
    return {};
  }
  std::vector<std::string> args = {verb};
  if (!data.empty()) args.push_back(data);
  if (!loader.empty()) args.insert(args.end(), {"--loader", loader});
  if (!transforms.empty()) args.insert(args.end(), {"--transforms", transforms});
  return args;
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
