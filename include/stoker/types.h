// Copyright 2026 The stoker Authors.
//
// Element types and layouts of the batches stoker produces.
#ifndef STOKER_TYPES_H_
#define STOKER_TYPES_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "stoker/choice.h"
#include "stoker/status.h"

namespace stoker {

enum class DType { kUint8, kFloat32, kFloat16, kBFloat16 };
enum class Layout { kNCHW, kNHWC };

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);      // "uint8", "float32", "float16", "bfloat16"
const char* LayoutName(Layout layout);   // "NCHW", "NHWC"

// The names dtype= and layout= take (stoker/choice.h); "float", "half",
// "nchw" and "nhwc" are accepted aliases.
inline constexpr std::array<Choice<DType>, 6> kDTypeChoices = {{
    {"uint8", DType::kUint8},
    {"float32", DType::kFloat32},
    {"float16", DType::kFloat16},
    {"bfloat16", DType::kBFloat16},
    {"float", DType::kFloat32, true},
    {"half", DType::kFloat16, true},
}};
inline constexpr std::array<Choice<Layout>, 4> kLayoutChoices = {{
    {"NCHW", Layout::kNCHW},
    {"NHWC", Layout::kNHWC},
    {"nchw", Layout::kNCHW, true},
    {"nhwc", Layout::kNHWC, true},
}};
// InvalidArgument "dtype must be one of 'uint8', ..., got 'x'" for another name.
StatusOr<DType> ParseDType(std::string_view name);
StatusOr<Layout> ParseLayout(std::string_view name);

}  // namespace stoker

#endif  // STOKER_TYPES_H_
