// Copyright 2026 The stoker Authors.
//
// Options that take one of a few names ("raise" or "skip", "NCHW" or "NHWC"):
// one table per option, read by the C++ API, the Python binding and the CLI,
// so each spells the names, parses them and words the error the same way.
//
//   StatusOr<OnError> e = ParseChoice("on_error", "skip", kOnErrorChoices);
//   // "on_error must be one of 'raise', 'skip', got 'ignore'" for a bad name
//
// Header-only; the tables are constexpr, so reading them is thread-safe.
#ifndef STOKER_CHOICE_H_
#define STOKER_CHOICE_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "stoker/status.h"

namespace stoker {

// One accepted name and its value. An alias is accepted but not listed in
// ChoiceNames (e.g. "float" for float32).
template <class E>
struct Choice {
  std::string_view name;
  E value;
  bool alias = false;
};

// "'a', 'b', 'c'": the names a table lists, as error messages and --help show
// them.
template <class E, size_t N>
std::string ChoiceNames(const std::array<Choice<E>, N>& table) {
  std::string out;
  for (const Choice<E>& c : table) {
    if (c.alias) continue;
    if (!out.empty()) out += ", ";
    out += "'";
    out += c.name;
    out += "'";
  }
  return out;
}

// The value named `name`, or InvalidArgument "<option> must be one of
// <ChoiceNames>, got '<name>'".
template <class E, size_t N>
StatusOr<E> ParseChoice(std::string_view option, std::string_view name,
                        const std::array<Choice<E>, N>& table) {
  for (const Choice<E>& c : table) {
    if (c.name == name) return c.value;
  }
  return InvalidArgumentError(std::string(option) + " must be one of " + ChoiceNames(table) +
                              ", got '" + std::string(name) + "'");
}

// The listed name of `value` ("" for a value the table lacks).
template <class E, size_t N>
std::string_view ChoiceName(E value, const std::array<Choice<E>, N>& table) {
  for (const Choice<E>& c : table) {
    if (!c.alias && c.value == value) return c.name;
  }
  return {};
}

}  // namespace stoker

#endif  // STOKER_CHOICE_H_
