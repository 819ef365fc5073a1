// Copyright 2026 The stoker Authors.
//
// Test-data makers for array files: .npy bytes. Header only.
// Thread-safety: pure functions.
#ifndef STOKER_TESTING_TEST_ARRAYS_H_
#define STOKER_TESTING_TEST_ARRAYS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::testing {

// A .npy file: the header for (descr, shape, fortran_order) in format
// `version` (1: 2-byte header length, else 4), padded to 64 bytes, then
// `data` as it is.
inline std::vector<uint8_t> NpyBytes(const std::string& descr, const std::vector<int64_t>& shape,
                                     const std::vector<uint8_t>& data, bool fortran = false,
                                     int version = 1) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " +
                     (fortran ? "True" : "False") + ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  }
  dict += "), }";
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
  const size_t len = dict.size();
  out.push_back(len & 0xFF);
  out.push_back((len >> 8) & 0xFF);
  if (version != 1) {
    out.push_back((len >> 16) & 0xFF);
    out.push_back((len >> 24) & 0xFF);
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace stoker::testing

#endif  // STOKER_TESTING_TEST_ARRAYS_H_
