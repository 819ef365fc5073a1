// Copyright 2026 The stoker Authors.
//
// JsonQuote is public: include/stoker/json.h. ParseJsonStringArray: the
// inverse for a JSON array of strings (the classes.json beside converted
// shards). Names that are not UTF-8 (file and folder names are bytes):
// JsonQuoteBytes writes them as Python does (surrogate escapes) and
// ParseJsonStringArray reads those back as the bytes (JsonQuote and
// EscapeNonUtf8, public, write them as readable \xNN text instead).
// Thread-safe (pure).
#ifndef STOKER_BASE_JSON_H_
#define STOKER_BASE_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/json.h"

namespace stoker {

// A JSON string literal of the bytes `s`: JsonQuote for valid UTF-8, and
// each byte that is not as the escape \udcNN (the surrogate escape of PEP
// 383: json.loads gives the str os.fsdecode gives for the same bytes).
inline std::string JsonQuoteBytes(const std::string& s) {
  return JsonQuoteWith(s, "\\udc");
}

// Parses `text` holding one JSON array of strings (whitespace around the
// tokens allowed; \uXXXX escapes written as UTF-8, surrogate pairs joined,
// a lone \udc80..\udcff as the byte 0x80..0xff it escapes: JsonQuoteBytes).
// Returns false, leaving `out` unspecified, on anything else.
inline bool ParseJsonStringArray(const std::string& text, std::vector<std::string>* out) {
  out->clear();
  size_t i = 0;
  const size_t n = text.size();
  auto skip = [&] {
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  };
  auto hex4 = [&](uint32_t* v) {
    if (i + 4 > n) return false;
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i++];
      *v <<= 4;
      if (c >= '0' && c <= '9') *v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') *v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') *v |= static_cast<uint32_t>(c - 'A' + 10);
      else return false;
    }
    return true;
  };
  auto utf8 = [](uint32_t cp, std::string* s) {
    if (cp < 0x80) {
      *s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *s += static_cast<char>(0xC0 | (cp >> 6));
      *s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *s += static_cast<char>(0xE0 | (cp >> 12));
      *s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *s += static_cast<char>(0xF0 | (cp >> 18));
      *s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  };
  skip();
  if (i >= n || text[i++] != '[') return false;
  skip();
  if (i < n && text[i] == ']') {
    ++i;
  } else {
    for (;;) {
      skip();
      if (i >= n || text[i++] != '"') return false;
      std::string s;
      for (;;) {
        if (i >= n) return false;
        const char c = text[i++];
        if (c == '"') break;
        if (static_cast<unsigned char>(c) < 0x20) return false;
        if (c != '\\') {
          s += c;
          continue;
        }
        if (i >= n) return false;
        const char e = text[i++];
        switch (e) {
          case '"': s += '"'; break;
          case '\\': s += '\\'; break;
          case '/': s += '/'; break;
          case 'b': s += '\b'; break;
          case 'f': s += '\f'; break;
          case 'n': s += '\n'; break;
          case 'r': s += '\r'; break;
          case 't': s += '\t'; break;
          case 'u': {
            uint32_t cp = 0;
            if (!hex4(&cp)) return false;
            if (cp >= 0xD800 && cp < 0xDC00) {
              uint32_t lo = 0;
              if (i + 2 > n || text[i] != '\\' || text[i + 1] != 'u') return false;
              i += 2;
              if (!hex4(&lo) || lo < 0xDC00 || lo >= 0xE000) return false;
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC80 && cp < 0xDD00) {  // a byte that was not UTF-8
              s += static_cast<char>(cp - 0xDC00);
              break;
            } else if (cp >= 0xDC00 && cp < 0xE000) {
              return false;
            }
            utf8(cp, &s);
            break;
          }
          default: return false;
        }
      }
      out->push_back(std::move(s));
      skip();
      if (i >= n) return false;
      const char c = text[i++];
      if (c == ']') break;
      if (c != ',') return false;
    }
  }
  skip();
  return i == n;
}

}  // namespace stoker

#endif  // STOKER_BASE_JSON_H_
