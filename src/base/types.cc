// Copyright 2026 The stoker Authors.
//
// The public element types (stoker/types.h): sizes, names and parsing.
#include <string>

#include "stoker/types.h"

namespace stoker {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUint8: return 1;
    case DType::kFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUint8: return "uint8";
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "?";
}

const char* LayoutName(Layout layout) { return layout == Layout::kNCHW ? "NCHW" : "NHWC"; }

StatusOr<DType> ParseDType(std::string_view name) {
  return ParseChoice("dtype", name, kDTypeChoices);
}

StatusOr<Layout> ParseLayout(std::string_view name) {
  return ParseChoice("layout", name, kLayoutChoices);
}

}  // namespace stoker
