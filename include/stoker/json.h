// Copyright 2026 The stoker Authors.
//
// JsonQuote: a string as a JSON string literal (quotes, backslashes and
// control characters escaped; valid UTF-8 passed through; each byte that is
// not part of valid UTF-8, as in a Latin-1 file name, written as the text
// \xNN, so the output is always valid UTF-8 JSON). For the CLI's --json
// output. EscapeNonUtf8: that last rule alone. Thread-safe (pure).
#ifndef STOKER_JSON_H_
#define STOKER_JSON_H_

#include <cstddef>
#include <cstdio>
#include <string>

namespace stoker {

// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 when the
// byte there does not start one (overlong forms, surrogates and code points
// past U+10FFFF are invalid, as for Python's decoder).
inline size_t Utf8SequenceLength(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// `s` with each byte that is not part of valid UTF-8 written as the four
// characters \xNN ("caf\xe9" for Latin-1 "cafe" with e-acute): valid
// UTF-8, readable, and unchanged when applied twice.
inline std::string EscapeNonUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
    out += buf;
    ++i;
  }
  return out;
}

inline std::string JsonQuote(const std::string& in) {
  const std::string s = EscapeNonUtf8(in);
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
