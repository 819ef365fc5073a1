// Copyright 2026 The stoker Authors.
//
// JsonQuote: a string as a JSON string literal (quotes, backslashes and
// control characters escaped; other bytes, UTF-8 included, passed through).
// For the CLI's --json output. Thread-safe (pure).
#ifndef STOKER_JSON_H_
#define STOKER_JSON_H_

#include <cstdio>
#include <string>

namespace stoker {

inline std::string JsonQuote(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace stoker

#endif  // STOKER_JSON_H_
