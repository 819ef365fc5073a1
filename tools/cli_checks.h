// Copyright 2026 The stoker Authors.
//
// Validators for integer CLI options with short messages (CLI11's
// PositiveNumber prints the range up to DBL_MAX: 309 digits).
#ifndef STOKER_TOOLS_CLI_CHECKS_H_
#define STOKER_TOOLS_CLI_CHECKS_H_

#include <cmath>
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

// The same for real-valued options (seconds, milliseconds, thresholds):
// a finite number > 0 (`strict`) or >= 0.
inline CLI::Validator NumberAbove(bool strict) {
  return CLI::Validator(
      [strict](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = end != s.c_str() && *end == '\0' && std::isfinite(v) &&
                        (strict ? v > 0 : v >= 0);
        if (ok) return std::string();
        return std::string("must be a number ") + (strict ? "> 0" : ">= 0") + ", got '" + s +
               "'";
      },
      strict ? ">0" : ">=0");
}

inline const CLI::Validator kPositiveNumber = NumberAbove(true);
inline const CLI::Validator kNonNegativeNumber = NumberAbove(false);

}  // namespace stoker

#endif  // STOKER_TOOLS_CLI_CHECKS_H_
