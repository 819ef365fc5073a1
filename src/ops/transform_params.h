// Copyright 2026 The stoker Authors.
//
// The parameter types transform declarations are made of: each returns a
// ParamSchema (stoker/transform_schema.h) that converts a caller's value
// into Transform fields, checks it, says what it accepts (for messages and
// docs) and reads it back (for ToString and CheckTransform). They follow
// torchvision's argument conventions: a size is an int or (height, width), a
// fill a number or 1 or 3 numbers, an angle d the range (-d, d), and so on.
//
// `accepts` texts complete "<name> must be ...". Values of the wrong type
// are kWrongType, values out of range kInvalidArgument.
//
// Thread-safety: the returned schemas are immutable values.
#ifndef STOKER_OPS_TRANSFORM_PARAMS_H_
#define STOKER_OPS_TRANSFORM_PARAMS_H_

#include <array>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "stoker/transform_schema.h"
#include "stoker/transforms.h"

namespace stoker::params {

// No bound.
inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// A float in [lo, hi] (either bound may be +-infinity).
ParamSchema Number(std::string name, double Transform::*field, double lo, double hi);
ParamSchema Number(std::string name, double Transform::*field, double lo, double hi,
                   double default_value);
// A float in [0, 1]: the probability of applying.
ParamSchema Probability(std::string name, double Transform::*field, double default_value);
// An int in [lo, hi].
ParamSchema Int(std::string name, int Transform::*field, int lo, int hi);
ParamSchema Int(std::string name, int Transform::*field, int lo, int hi, int default_value);
// True or False.
ParamSchema Bool(std::string name, bool Transform::*field, bool default_value);

// An output size: an int s (s x s), or (height, width) (or [s]); positive.
// Sets height and width.
ParamSchema Size(std::string name);
// Resize's size: an int or [int] (the shorter side: height = size, width = 0)
// or (height, width).
ParamSchema ResizeSize(std::string name);
// Resize's max_size: None (0) or an int.
ParamSchema MaxSize(std::string name);
// RandomShortestSize's min_size: an int or a non-empty sequence of ints, each
// > 0, into `sizes`.
ParamSchema SizeList(std::string name);

// A pair (min, max) of finite floats into `lo` and `hi`, with min >= floor
// (min > floor when `open`), max <= ceiling and min <= max.
struct RangeBounds {
  double floor = 0.0;
  bool open = true;
  double ceiling = kUnbounded;
};
ParamSchema Range(std::string name, double Transform::*lo, double Transform::*hi,
                  std::pair<double, double> default_value, RangeBounds bounds);
// The same into a std::array<double, 2>.
ParamSchema Range(std::string name, std::array<double, 2> Transform::*field,
                  std::pair<double, double> default_value, RangeBounds bounds);

// ColorJitter's argument (torchvision's _check_input): a number v >= 0 gives
// (center - v, center + v), clipped at 0 when `clip`; or a pair (min, max)
// with bound_lo <= min <= max <= bound_hi.
ParamSchema Jitter(std::string name, std::array<double, 2> Transform::*field, double center,
                   double bound_lo, double bound_hi, bool clip);

// An angle range in degrees: a number d >= 0 gives (-d, d); or (min, max).
ParamSchema Degrees(std::string name, std::array<double, 2> Transform::*field);
// RandomAffine's shear: None, a number s >= 0 ((-s, s) on x), 2 values (x
// range) or 4 (x and y ranges), each in (-90, 90), min <= max.
ParamSchema Shear(std::string name);
// RandomAffine's translate (None: (0, 0); a pair of fractions in [0, 1]) and
// scale (None: (1, 1); a pair 0 < min <= max).
ParamSchema Translate(std::string name);
ParamSchema AffineScale(std::string name);
// None (the image centre) or (x, y).
ParamSchema Center(std::string name);

// The colour of pixels from outside: None (0), a number, or 1 or 3 numbers,
// each truncated to an int in [0, 255] (torchvision's _parse_fill).
ParamSchema Fill(std::string name, ArgValue default_value);
// Padding: an int (every side), (left/right, top/bottom) or (left, top,
// right, bottom), each >= 0; None (no padding) unless `required`.
ParamSchema Padding(std::string name, bool required);

// One of a few named values: each option is a name shown by ToString and the
// values that select it (strings, ints, the value of a Python enum); the
// int field gets the option's code.
struct Option {
  std::string display;
  std::vector<ArgValue> values;
  int code = 0;
};
ParamSchema Choice(std::string name, int Transform::*field, std::vector<Option> options,
                   ArgValue default_value, std::string accepts, std::string reason);
// torchvision's padding_mode: 'constant', 'edge', 'reflect', 'symmetric'.
ParamSchema PaddingMode(std::string name);
// The warps' interpolation: NEAREST, BILINEAR or BICUBIC as InterpolationMode,
// string or PIL code; None is `default_code`.
ParamSchema WarpInterpolation(std::string name, int default_code);

// An argument torchvision has that stoker accepts only at the values that
// name what it does: `accepted` (compared as ArgValues: None, True, 'nearest',
// 0, ...); any other value is refused with `reason`. Sets no field. ToString
// shows `display` when not empty.
ParamSchema Only(std::string name, ArgValue default_value, std::vector<ArgValue> accepted,
                 std::string accepts, std::string reason, std::string display = "");
// The same with a predicate for the accepted values.
ParamSchema OnlyIf(std::string name, ArgValue default_value,
                   std::function<bool(const ArgValue&)> ok, std::string accepts,
                   std::string reason, std::string display = "");
// interpolation= of the resampling transforms: BILINEAR only.
ParamSchema BilinearOnly(std::string name);
// antialias= of the resampling transforms: True or None (stoker always antialiases).
ParamSchema AntialiasOnly(std::string name);
// An argument stoker accepts with any bool and ignores (inplace=).
ParamSchema Ignored(std::string name, bool default_value, std::string why);

// None (`none_value`) or a non-empty list of finite numbers, each in
// [lo, hi] (RandomIoUCrop's sampler_options).
ParamSchema NumberList(std::string name, std::vector<double> Transform::*field, double lo,
                       double hi, std::vector<double> none_value);

// Three floats (RGB), finite, and non-zero when `nonzero`.
ParamSchema Floats3(std::string name, std::array<float, 3> Transform::*field, bool nonzero);

// GaussianBlur's kernel_size: an int k or (width, height) (torchvision's
// order), odd, in [1, 101]; stored as (height, width).
ParamSchema KernelSize(std::string name);
// GaussianBlur's sigma: a number s > 0 ((s, s)) or (min, max), 0 < min <= max.
ParamSchema Sigma(std::string name, std::pair<double, double> default_value);

// An error in the one form every declaration uses, for checks between
// parameters: "<transform>: <param> must be <accepts>, got <got>[: reason]".
Status ParamError(StatusCode code, const TransformSchema& schema, std::string_view param,
                  std::string_view accepts, const std::string& got, std::string_view reason = {});

// "%g" of a double: the form ToString and messages show numbers in.
std::string FormatNumber(double v);

}  // namespace stoker::params

#endif  // STOKER_OPS_TRANSFORM_PARAMS_H_
