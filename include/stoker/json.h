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

// Splits `s` into runs of valid UTF-8, passed to `run(data, size)`, and the
// bytes that are not part of any, passed to `bad(byte)`, in order.
template <typename Run, typename Bad>
inline void SplitUtf8(const std::string& s, Run run, Bad bad) {
  size_t start = 0, i = 0;
  while (i < s.size()) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n > 0) {
      i += n;
      continue;
    }
    if (i > start) run(s.data() + start, i - start);
    bad(static_cast<unsigned char>(s[i]));
    start = ++i;
  }
  if (i > start) run(s.data() + start, i - start);
}

// `s` with each byte that is not part of valid UTF-8 written as the four
// characters \xNN ("caf\xe9" for Latin-1 "cafe" with e-acute): valid
// UTF-8, readable, and unchanged when applied twice.
inline std::string EscapeNonUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  SplitUtf8(
      s, [&](const char* p, size_t n) { out.append(p, n); },
      [&](unsigned char c) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      });
  return out;
}

// A JSON string literal of `s` whose bytes that are not UTF-8 are written
// as `bad_prefix` (JSON text) followed by the byte in two hex digits.
inline std::string JsonQuoteWith(const std::string& s, const char* bad_prefix) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  auto escape = [&](const char* p, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      const unsigned char c = static_cast<unsigned char>(p[k]);
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
            out += static_cast<char>(c);
          }
      }
    }
  };
  SplitUtf8(s, escape, [&](unsigned char c) {
    static const char kHex[] = "0123456789abcdef";
    out += bad_prefix;
    out += kHex[c >> 4];
    out += kHex[c & 15];
  });
  out += '"';
  return out;
}

// The string the JSON reader gets holds \xNN for each byte that is not UTF-8.
inline std::string JsonQuote(const std::string& s) { return JsonQuoteWith(s, "\\\\x"); }

}  // namespace stoker

#endif  // STOKER_JSON_H_
