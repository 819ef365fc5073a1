// Copyright 2026 The stoker Authors.
//
// Validators for integer CLI options with short messages (CLI11's
// PositiveNumber prints the range up to DBL_MAX: 309 digits).
#ifndef STOKER_TOOLS_CLI_CHECKS_H_
#define STOKER_TOOLS_CLI_CHECKS_H_

#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

namespace stoker {

inline CLI::Validator AtLeast(long long lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (end != s.c_str() && *end == '\0' && v >= lo) return std::string();
        return "must be an integer >= " + std::to_string(lo) + ", got '" + s + "'";
      },
      ">=" + std::to_string(lo));
}

inline const CLI::Validator kPositive = AtLeast(1);
inline const CLI::Validator kNonNegative = AtLeast(0);

}  // namespace stoker

#endif  // STOKER_TOOLS_CLI_CHECKS_H_
