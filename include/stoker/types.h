// Copyright 2026 The stoker Authors.
//
// Element types and layouts of the batches stoker produces.
#ifndef STOKER_TYPES_H_
#define STOKER_TYPES_H_

#include <cstddef>
#include <string>

#include "stoker/status.h"

namespace stoker {

enum class DType { kUint8, kFloat32, kFloat16, kBFloat16 };
enum class Layout { kNCHW, kNHWC };

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);      // "uint8", "float32", "float16", "bfloat16"
const char* LayoutName(Layout layout);   // "NCHW", "NHWC"
StatusOr<DType> ParseDType(const std::string& name);
StatusOr<Layout> ParseLayout(const std::string& name);

}  // namespace stoker

#endif  // STOKER_TYPES_H_
