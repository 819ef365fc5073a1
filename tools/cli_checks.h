// Copyright 2026 The stoker Authors.
//
// Validators for CLI options: integers and numbers with short messages (CLI11's
// PositiveNumber prints the range up to DBL_MAX: 309 digits), and the names of
// an option's choice table.
#ifndef STOKER_TOOLS_CLI_CHECKS_H_
#define STOKER_TOOLS_CLI_CHECKS_H_

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "stoker/choice.h"

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

// One of a choice table's listed names (stoker/choice.h), e.g.
// ->check(OneOf(kDTypeChoices)): the CLI accepts what the Python API does.
template <class E, size_t N>
CLI::Validator OneOf(const std::array<Choice<E>, N>& table) {
  std::vector<std::string> names;
  for (const Choice<E>& c : table) {
    if (!c.alias) names.emplace_back(c.name);
  }
  return CLI::IsMember(names);
}

inline const CLI::Validator kPositiveNumber = NumberAbove(true);
inline const CLI::Validator kNonNegativeNumber = NumberAbove(false);

}  // namespace stoker

#endif  // STOKER_TOOLS_CLI_CHECKS_H_
