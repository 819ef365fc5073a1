// Copyright 2026 The stoker Authors.
//
// libFuzzer target: the .npy header parser and the labels conversion, which
// read untrusted files. The input is a whole .npy file. Checks that a header
// accepted by the parser describes data inside the input, and that labels
// conversion of an accepted 1-D array yields one value per element.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "source/npy.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  NpyHeader h;
  if (ParseNpyHeader(data, size, &h).ok()) {
    Check(h.data_offset <= size);
    Check(h.data_bytes <= size - h.data_offset);
    uint64_t elements = 1;
    for (int64_t d : h.shape) {
      Check(d >= 0);
      elements *= static_cast<uint64_t>(d);
    }
    Check(elements * static_cast<uint64_t>(h.item_size) == h.data_bytes);
  }
  std::vector<int64_t> labels;
  if (ParseNpyLabels(data, size, &labels).ok()) {
    Check(h.shape.size() == 1 && labels.size() == static_cast<size_t>(h.shape[0]));
  }
  return 0;
}
