// Copyright 2026 The stoker Authors.
//
// A byte count for messages: "512 bytes", "40.0 KiB", "1.5 MiB", "1.1 GiB", up
// to EiB (binary units, one decimal). Thread-safe: a function of its argument.
#ifndef STOKER_BASE_BYTES_TEXT_H_
#define STOKER_BASE_BYTES_TEXT_H_

#include <cstdio>
#include <string>

namespace stoker {

inline std::string BytesText(double bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char text[48];
  std::snprintf(text, sizeof(text), u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return text;
}

}  // namespace stoker

#endif  // STOKER_BASE_BYTES_TEXT_H_
