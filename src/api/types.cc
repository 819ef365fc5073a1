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

StatusOr<DType> ParseDType(const std::string& name) {
  if (name == "uint8") return DType::kUint8;
  if (name == "float32" || name == "float") return DType::kFloat32;
  if (name == "float16" || name == "half") return DType::kFloat16;
  if (name == "bfloat16") return DType::kBFloat16;
  return InvalidArgumentError("unknown dtype '" + name +
                              "' (expected uint8, float32, float16 or bfloat16)");
}

StatusOr<Layout> ParseLayout(const std::string& name) {
  if (name == "NCHW" || name == "nchw") return Layout::kNCHW;
  if (name == "NHWC" || name == "nhwc") return Layout::kNHWC;
  return InvalidArgumentError("unknown layout '" + name + "' (expected NCHW or NHWC)");
}

}  // namespace stoker
