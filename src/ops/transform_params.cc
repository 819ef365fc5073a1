// Copyright 2026 The stoker Authors.
#include "ops/transform_params.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace stoker::params {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Status Wrong(std::string reason = "") { return WrongTypeError(std::move(reason)); }
Status Bad(std::string reason = "") { return InvalidArgumentError(std::move(reason)); }

// An int, or a float with an integral value (torchvision's int(x) of them).
std::optional<int64_t> IntOf(const ArgValue& v) {
  if (v.type() == ArgValue::Type::kInt) return v.as_int();
  if (v.type() == ArgValue::Type::kFloat && std::isfinite(v.as_double()) &&
      v.as_double() == std::trunc(v.as_double()) && std::fabs(v.as_double()) < 1e15) {
    return static_cast<int64_t>(v.as_double());
  }
  return std::nullopt;
}

// The numbers of a list (all of them numbers), or nothing.
std::optional<std::vector<double>> NumbersOf(const ArgValue& v) {
  if (v.type() != ArgValue::Type::kList) return std::nullopt;
  std::vector<double> out;
  for (const ArgValue& e : v.as_list()) {
    if (!e.is_number()) return std::nullopt;
    out.push_back(e.as_double());
  }
  return out;
}

std::optional<std::vector<int64_t>> IntsOf(const ArgValue& v) {
  if (v.type() != ArgValue::Type::kList) return std::nullopt;
  std::vector<int64_t> out;
  for (const ArgValue& e : v.as_list()) {
    const std::optional<int64_t> i = IntOf(e);
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

ArgValue List(std::initializer_list<double> v) {
  std::vector<ArgValue> out;
  for (double x : v) out.emplace_back(x);
  return ArgValue(std::move(out));
}

template <size_t N>
ArgValue IntList(const std::array<int, N>& v) {
  std::vector<ArgValue> out;
  for (int x : v) out.emplace_back(x);
  return ArgValue(std::move(out));
}

bool Finite(const std::vector<double>& v) {
  for (double x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// "a number in [lo, hi]", "a number >= lo", "a number".
std::string NumberText(const char* what, double lo, double hi) {
  std::string s = what;
  if (lo > -kInf && hi < kInf) {
    return s + " in [" + FormatNumber(lo) + ", " + FormatNumber(hi) + "]";
  }
  if (lo > -kInf) return s + " >= " + FormatNumber(lo);
  if (hi < kInf) return s + " <= " + FormatNumber(hi);
  return s;
}

ParamSchema Base(std::string name, std::string annotation, std::string accepts) {
  ParamSchema p;
  p.name = std::move(name);
  p.annotation = std::move(annotation);
  p.accepts = std::move(accepts);
  p.required = true;
  return p;
}

ParamSchema WithDefault(ParamSchema p, ArgValue default_value) {
  p.required = false;
  p.default_value = std::move(default_value);
  return p;
}

// Numbers compare by value (not bools: True is not 1 here), strings exactly.
bool SameValue(const ArgValue& a, const ArgValue& b) {
  if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case ArgValue::Type::kNone: return true;
    case ArgValue::Type::kBool: return a.as_bool() == b.as_bool();
    case ArgValue::Type::kString: return a.as_string() == b.as_string();
    default: return false;
  }
}

}  // namespace

std::string FormatNumber(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

Status ParamError(StatusCode code, const TransformSchema& schema, std::string_view param,
                  std::string_view accepts, const std::string& got, std::string_view reason) {
  std::string m = schema.name + ": " + std::string(param) + " must be " + std::string(accepts) +
                  ", got " + got;
  if (!reason.empty()) m += ": " + std::string(reason);
  return Status(code, std::move(m));
}

// ------------------------------------------------------------------ scalars --

ParamSchema Number(std::string name, double Transform::*field, double lo, double hi) {
  // Finite only: inf and nan are refused here, at
  // construction, whatever the bounds.
  ParamSchema p = Base(std::move(name), "float",
                       NumberText(lo > -kInf && hi < kInf ? "a number" : "a finite number", lo,
                                  hi));
  p.set = [field, lo, hi](const ArgValue& v, Transform* t) {
    if (!v.is_number()) return Wrong();
    const double x = v.as_double();
    if (!std::isfinite(x) || x < lo || x > hi) return Bad();
    t->*field = x;
    return Status::OK();
  };
  p.get = [field](const Transform& t) { return ArgValue(t.*field); };
  return p;
}

ParamSchema Number(std::string name, double Transform::*field, double lo, double hi,
                   double default_value) {
  return WithDefault(Number(std::move(name), field, lo, hi), default_value);
}

ParamSchema Probability(std::string name, double Transform::*field, double default_value) {
  return Number(std::move(name), field, 0.0, 1.0, default_value);
}

ParamSchema Int(std::string name, int Transform::*field, int lo, int hi) {
  ParamSchema p = Base(std::move(name), "int", NumberText("an int", lo, hi));
  p.set = [field, lo, hi](const ArgValue& v, Transform* t) {
    const std::optional<int64_t> i = IntOf(v);
    if (!i || v.type() == ArgValue::Type::kBool) return Wrong();
    if (*i < lo || *i > hi) return Bad();
    t->*field = static_cast<int>(*i);
    return Status::OK();
  };
  p.get = [field](const Transform& t) { return ArgValue(t.*field); };
  return p;
}

ParamSchema Int(std::string name, int Transform::*field, int lo, int hi, int default_value) {
  return WithDefault(Int(std::move(name), field, lo, hi), default_value);
}

ParamSchema Bool(std::string name, bool Transform::*field, bool default_value) {
  ParamSchema p = WithDefault(Base(std::move(name), "bool", "True or False"), default_value);
  p.set = [field](const ArgValue& v, Transform* t) {
    if (v.type() != ArgValue::Type::kBool) return Wrong();
    t->*field = v.as_bool();
    return Status::OK();
  };
  p.get = [field](const Transform& t) { return ArgValue(t.*field); };
  return p;
}

// -------------------------------------------------------------------- sizes --

namespace {

// An int or [s] -> (s, s) with `*single`; (h, w) -> (h, w). Errors as Status.
Status SizePair(const ArgValue& v, int64_t* h, int64_t* w, bool* single) {
  *single = false;
  if (const std::optional<int64_t> i = IntOf(v); i && v.type() != ArgValue::Type::kBool) {
    *h = *w = *i;
    *single = true;
  } else if (v.type() == ArgValue::Type::kList) {
    const std::optional<std::vector<int64_t>> l = IntsOf(v);
    if (!l) return Wrong();
    if (l->size() == 1) {
      *h = *w = (*l)[0];
      *single = true;
    } else if (l->size() == 2) {
      *h = (*l)[0];
      *w = (*l)[1];
    } else {
      return Bad();
    }
  } else {
    return Wrong();
  }
  if (*h <= 0 || *w <= 0 || *h > (1 << 30) || *w > (1 << 30)) return Bad();
  return Status::OK();
}

}  // namespace

ParamSchema Size(std::string name) {
  ParamSchema p = Base(std::move(name), "Size",
                       "an int or a (height, width) pair of ints, each > 0");
  p.set = [](const ArgValue& v, Transform* t) {
    int64_t h = 0, w = 0;
    bool single = false;
    STOKER_RETURN_IF_ERROR(SizePair(v, &h, &w, &single));
    t->height = static_cast<int>(h);
    t->width = static_cast<int>(w);
    return Status::OK();
  };
  p.get = [](const Transform& t) { return ArgValue({t.height, t.width}); };
  return p;
}

ParamSchema ResizeSize(std::string name) {
  ParamSchema p = Base(std::move(name), "Size",
                       "an int (the shorter side, aspect kept) or a (height, width) pair of "
                       "ints, each > 0");
  p.set = [](const ArgValue& v, Transform* t) {
    int64_t h = 0, w = 0;
    bool single = false;
    STOKER_RETURN_IF_ERROR(SizePair(v, &h, &w, &single));
    t->height = static_cast<int>(h);
    t->width = single ? 0 : static_cast<int>(w);
    return Status::OK();
  };
  p.get = [](const Transform& t) {
    return t.width == 0 ? ArgValue(t.height) : ArgValue({t.height, t.width});
  };
  return p;
}

ParamSchema MaxSize(std::string name) {
  ParamSchema p = WithDefault(Base(std::move(name), "Optional[int]", "None or an int > 0"),
                              ArgValue());
  p.set = [](const ArgValue& v, Transform* t) {
    if (v.is_none()) {
      t->max_size = 0;
      return Status::OK();
    }
    const std::optional<int64_t> i = IntOf(v);
    if (!i || v.type() == ArgValue::Type::kBool) return Wrong();
    if (*i <= 0 || *i > (1 << 30)) return Bad();
    t->max_size = static_cast<int>(*i);
    return Status::OK();
  };
  p.get = [](const Transform& t) { return t.max_size == 0 ? ArgValue() : ArgValue(t.max_size); };
  p.show = [](const Transform& t) {
    return t.max_size == 0 ? std::string() : std::to_string(t.max_size);
  };
  return p;
}

ParamSchema SizeList(std::string name) {
  ParamSchema p = Base(std::move(name), "Union[int, Sequence[int]]",
                       "an int or a non-empty sequence of ints, each in [1, 2^30]");
  p.set = [](const ArgValue& v, Transform* t) {
    std::vector<int64_t> l;
    if (const std::optional<int64_t> i = IntOf(v); i && v.type() != ArgValue::Type::kBool) {
      l = {*i};
    } else if (v.type() == ArgValue::Type::kList) {
      const std::optional<std::vector<int64_t>> ints = IntsOf(v);
      if (!ints) return Wrong();
      l = *ints;
    } else {
      return Wrong();
    }
    if (l.empty()) return Bad();
    t->sizes.clear();
    for (int64_t x : l) {
      if (x <= 0 || x > (1 << 30)) return Bad();
      t->sizes.push_back(static_cast<int>(x));
    }
    return Status::OK();
  };
  p.get = [](const Transform& t) {
    std::vector<ArgValue> out;
    for (int x : t.sizes) out.emplace_back(x);
    return ArgValue(std::move(out));
  };
  return p;
}

// ------------------------------------------------------------------- ranges --

namespace {

std::string RangeText(const RangeBounds& b) {
  std::string s = "a pair (min, max) of finite numbers with ";
  if (b.floor > -kInf) s += FormatNumber(b.floor) + (b.open ? " < " : " <= ");
  s += "min <= max";
  if (b.ceiling < kInf) s += " <= " + FormatNumber(b.ceiling);
  return s;
}

Status SetRange(const ArgValue& v, const RangeBounds& b, double* lo, double* hi) {
  const std::optional<std::vector<double>> l = NumbersOf(v);
  if (!l) return Wrong();
  if (l->size() != 2 || !Finite(*l)) return Bad();
  const double a = (*l)[0], z = (*l)[1];
  if ((b.open ? !(a > b.floor) : !(a >= b.floor)) || !(a <= z) || !(z <= b.ceiling)) {
    return Bad();
  }
  *lo = a;
  *hi = z;
  return Status::OK();
}

}  // namespace

ParamSchema Range(std::string name, double Transform::*lo, double Transform::*hi,
                  std::pair<double, double> default_value, RangeBounds bounds) {
  ParamSchema p = WithDefault(Base(std::move(name), "Tuple[float, float]", RangeText(bounds)),
                              List({default_value.first, default_value.second}));
  p.set = [lo, hi, bounds](const ArgValue& v, Transform* t) {
    return SetRange(v, bounds, &(t->*lo), &(t->*hi));
  };
  p.get = [lo, hi](const Transform& t) { return List({t.*lo, t.*hi}); };
  return p;
}

ParamSchema Range(std::string name, std::array<double, 2> Transform::*field,
                  std::pair<double, double> default_value, RangeBounds bounds) {
  ParamSchema p = WithDefault(Base(std::move(name), "Tuple[float, float]", RangeText(bounds)),
                              List({default_value.first, default_value.second}));
  p.set = [field, bounds](const ArgValue& v, Transform* t) {
    return SetRange(v, bounds, &(t->*field)[0], &(t->*field)[1]);
  };
  p.get = [field](const Transform& t) { return List({(t.*field)[0], (t.*field)[1]}); };
  return p;
}

ParamSchema Jitter(std::string name, std::array<double, 2> Transform::*field, double center,
                   double bound_lo, double bound_hi, bool clip) {
  std::string number = bound_hi < kInf ? "a number in [0, " + FormatNumber(bound_hi) + "]"
                                       : std::string("a number >= 0");
  std::string accepts = number + " or a pair (min, max) with " + FormatNumber(bound_lo) +
                        " <= min <= max" +
                        (bound_hi < kInf ? " <= " + FormatNumber(bound_hi) : std::string());
  ParamSchema p =
      WithDefault(Base(std::move(name), "Union[float, Tuple[float, float]]", accepts), 0);
  p.set = [=](const ArgValue& v, Transform* t) {
    double lo = 0, hi = 0;
    if (v.is_number()) {
      const double x = v.as_double();
      if (!(x >= 0) || !std::isfinite(x)) return Bad();
      lo = center - x;
      hi = center + x;
      if (clip) lo = std::max(lo, 0.0);
    } else {
      const std::optional<std::vector<double>> l = NumbersOf(v);
      if (!l) return Wrong();
      if (l->size() != 2 || !Finite(*l)) return Bad();
      lo = (*l)[0];
      hi = (*l)[1];
    }
    if (!(bound_lo <= lo && lo <= hi && hi <= bound_hi)) return Bad();
    t->*field = {lo, hi};
    return Status::OK();
  };
  p.get = [field](const Transform& t) { return List({(t.*field)[0], (t.*field)[1]}); };
  return p;
}

ParamSchema Degrees(std::string name, std::array<double, 2> Transform::*field) {
  ParamSchema p = Base(std::move(name), "Union[float, Tuple[float, float]]",
                       "a number d >= 0 (the range (-d, d)) or a pair (min, max) with min <= max");
  p.set = [field](const ArgValue& v, Transform* t) {
    if (v.is_number()) {
      const double d = v.as_double();
      if (!(d >= 0) || !std::isfinite(d)) return Bad();
      t->*field = {-d, d};
      return Status::OK();
    }
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->size() != 2 || !Finite(*l) || !((*l)[0] <= (*l)[1])) return Bad();
    t->*field = {(*l)[0], (*l)[1]};
    return Status::OK();
  };
  p.get = [field](const Transform& t) { return List({(t.*field)[0], (t.*field)[1]}); };
  return p;
}

ParamSchema Shear(std::string name) {
  ParamSchema p = WithDefault(
      Base(std::move(name), "Union[None, float, Sequence[float]]",
           "None, a number s >= 0 (x in (-s, s)), or 2 or 4 numbers (the x range, then the y "
           "range), each in (-90, 90) with min <= max"),
      ArgValue());
  p.set = [](const ArgValue& v, Transform* t) {
    std::array<double, 4> s{0, 0, 0, 0};
    if (v.is_number()) {
      const double x = v.as_double();
      if (!(x >= 0)) return Bad();
      s = {-x, x, 0, 0};
    } else if (!v.is_none()) {
      const std::optional<std::vector<double>> l = NumbersOf(v);
      if (!l) return Wrong();
      if (l->size() == 2) {
        s = {(*l)[0], (*l)[1], 0, 0};
      } else if (l->size() == 4) {
        s = {(*l)[0], (*l)[1], (*l)[2], (*l)[3]};
      } else {
        return Bad();
      }
    }
    for (double x : s) {
      if (!(std::fabs(x) < 90)) return Bad();
    }
    if (!(s[0] <= s[1] && s[2] <= s[3])) return Bad();
    t->shear = s;
    return Status::OK();
  };
  p.get = [](const Transform& t) {
    return List({t.shear[0], t.shear[1], t.shear[2], t.shear[3]});
  };
  return p;
}

ParamSchema Translate(std::string name) {
  ParamSchema p = WithDefault(Base(std::move(name), "Optional[Tuple[float, float]]",
                                   "None or a pair (x, y) of fractions in [0, 1]"),
                              ArgValue());
  p.set = [](const ArgValue& v, Transform* t) {
    if (v.is_none()) {
      t->translate = {0, 0};
      return Status::OK();
    }
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->size() != 2) return Bad();
    for (double x : *l) {
      if (!(x >= 0 && x <= 1)) return Bad();
    }
    t->translate = {(*l)[0], (*l)[1]};
    return Status::OK();
  };
  p.get = [](const Transform& t) { return List({t.translate[0], t.translate[1]}); };
  return p;
}

ParamSchema AffineScale(std::string name) {
  ParamSchema p = WithDefault(Base(std::move(name), "Optional[Tuple[float, float]]",
                                   "None or a pair (min, max) with 0 < min <= max"),
                              ArgValue());
  p.set = [](const ArgValue& v, Transform* t) {
    if (v.is_none()) {
      t->affine_scale = {1, 1};
      return Status::OK();
    }
    return SetRange(v, RangeBounds{0.0, true, kUnbounded}, &t->affine_scale[0],
                    &t->affine_scale[1]);
  };
  p.get = [](const Transform& t) { return List({t.affine_scale[0], t.affine_scale[1]}); };
  return p;
}

ParamSchema Center(std::string name) {
  ParamSchema p = WithDefault(
      Base(std::move(name), "Optional[Tuple[float, float]]", "None or a pair (x, y)"),
      ArgValue());
  p.set = [](const ArgValue& v, Transform* t) {
    if (v.is_none()) {
      t->has_center = false;
      t->center = {0, 0};
      return Status::OK();
    }
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->size() != 2 || !Finite(*l)) return Bad();
    t->has_center = true;
    t->center = {(*l)[0], (*l)[1]};
    return Status::OK();
  };
  p.get = [](const Transform& t) {
    return t.has_center ? List({t.center[0], t.center[1]}) : ArgValue();
  };
  p.show = [](const Transform& t) {
    return t.has_center ? List({t.center[0], t.center[1]}).Repr() : std::string();
  };
  return p;
}

// ------------------------------------------------------------- fill, pads --

ParamSchema Fill(std::string name, ArgValue default_value) {
  ParamSchema p = WithDefault(
      Base(std::move(name), "Union[None, float, Sequence[float]]",
           "None (0), a number, or 1 or 3 numbers, each in [0, 255]"),
      std::move(default_value));
  p.set = [](const ArgValue& v, Transform* t) {
    std::vector<double> f;
    if (v.is_none()) {
      f = {0, 0, 0};
    } else if (v.is_number()) {
      f = {v.as_double(), v.as_double(), v.as_double()};
    } else {
      const std::optional<std::vector<double>> l = NumbersOf(v);
      if (!l) return Wrong();
      if (l->size() == 1) {
        f = {(*l)[0], (*l)[0], (*l)[0]};
      } else if (l->size() == 3) {
        f = *l;
      } else {
        return Bad("the image has 3 channels");
      }
    }
    for (size_t c = 0; c < 3; ++c) {
      const double x = std::trunc(f[c]);  // torchvision's int(x)
      if (!(x >= 0 && x <= 255)) return Bad();
      t->fill[c] = static_cast<int>(x);
    }
    return Status::OK();
  };
  p.get = [](const Transform& t) { return IntList(t.fill); };
  return p;
}

ParamSchema Padding(std::string name, bool required) {
  const std::string accepts =
      std::string(required ? "" : "None, ") +
      "an int, or 1, 2 or 4 ints (all sides; left/right, top/bottom; left, top, right, bottom), "
      "each >= 0";
  ParamSchema p = Base(std::move(name), required ? "Union[int, Sequence[int]]"
                                                 : "Union[None, int, Sequence[int]]",
                       accepts);
  if (!required) p = WithDefault(std::move(p), ArgValue());
  p.set = [required](const ArgValue& v, Transform* t) {
    std::array<int64_t, 4> pad{0, 0, 0, 0};
    if (v.is_none()) {
      if (required) return Wrong();
    } else if (const std::optional<int64_t> i = IntOf(v);
               i && v.type() != ArgValue::Type::kBool) {
      pad = {*i, *i, *i, *i};
    } else {
      const std::optional<std::vector<int64_t>> l = IntsOf(v);
      if (!l) return Wrong();
      if (l->size() == 1) {
        pad = {(*l)[0], (*l)[0], (*l)[0], (*l)[0]};
      } else if (l->size() == 2) {
        pad = {(*l)[0], (*l)[1], (*l)[0], (*l)[1]};
      } else if (l->size() == 4) {
        pad = {(*l)[0], (*l)[1], (*l)[2], (*l)[3]};
      } else {
        return Bad();
      }
    }
    for (int64_t x : pad) {
      if (x < 0) return Bad("negative padding is not supported");
      if (x > (1 << 20)) return Bad();
    }
    for (int k = 0; k < 4; ++k) t->padding[k] = static_cast<int>(pad[k]);
    return Status::OK();
  };
  p.get = [](const Transform& t) { return IntList(t.padding); };
  return p;
}

// ------------------------------------------------------------------ choices --

ParamSchema Choice(std::string name, int Transform::*field, std::vector<Option> options,
                   ArgValue default_value, std::string accepts, std::string reason) {
  ParamSchema p = WithDefault(Base(std::move(name), "Any", std::move(accepts)),
                              std::move(default_value));
  p.set = [field, options, reason](const ArgValue& v, Transform* t) {
    for (const Option& o : options) {
      for (const ArgValue& a : o.values) {
        if (SameValue(a, v)) {
          t->*field = o.code;
          return Status::OK();
        }
      }
    }
    return Bad(reason);
  };
  p.get = [field, options](const Transform& t) {
    for (const Option& o : options) {
      if (o.code == t.*field) return o.values.front();
    }
    return ArgValue(t.*field);
  };
  p.show = [field, options](const Transform& t) {
    for (const Option& o : options) {
      if (o.code == t.*field) return o.display;
    }
    return std::to_string(t.*field);
  };
  return p;
}

ParamSchema PaddingMode(std::string name) {
  ParamSchema p = Choice(std::move(name), &Transform::padding_mode,
                         {{"constant", {"constant"}, 0},
                          {"edge", {"edge"}, 1},
                          {"reflect", {"reflect"}, 2},
                          {"symmetric", {"symmetric"}, 3}},
                         "constant", "one of 'constant', 'edge', 'reflect', 'symmetric'",
                         "np.pad's modes, as torchvision pads a PIL image");
  p.annotation = "str";
  return p;
}

ParamSchema WarpInterpolation(std::string name, int default_code) {
  std::vector<Option> options = {{"NEAREST", {"nearest", 0}, 0},
                                 {"BILINEAR", {"bilinear", 2}, 2},
                                 {"BICUBIC", {"bicubic", 3}, 3}};
  for (Option& o : options) {
    if (o.code == default_code) o.values.push_back(ArgValue());  // None: the default
  }
  return Choice(std::move(name), &Transform::interpolation, std::move(options), ArgValue(),
                "InterpolationMode.NEAREST, BILINEAR or BICUBIC (also 'nearest', 'bilinear', "
                "'bicubic' or the PIL.Image constants)",
                "stoker implements these three with Pillow's arithmetic; NEAREST_EXACT, BOX, "
                "HAMMING and LANCZOS are not implemented");
}

ParamSchema OnlyIf(std::string name, ArgValue default_value,
                   std::function<bool(const ArgValue&)> ok, std::string accepts,
                   std::string reason, std::string display) {
  ParamSchema p = WithDefault(Base(std::move(name), "Any", std::move(accepts)),
                              std::move(default_value));
  p.set = [ok = std::move(ok), reason = std::move(reason)](const ArgValue& v, Transform*) {
    return ok(v) ? Status::OK() : Bad(reason);
  };
  if (!display.empty()) p.show = [display](const Transform&) { return display; };
  return p;
}

ParamSchema Only(std::string name, ArgValue default_value, std::vector<ArgValue> accepted,
                 std::string accepts, std::string reason, std::string display) {
  // The annotation: bool or int when every accepted value (but None) is one.
  bool none = false, bools = true, ints = true;
  for (const ArgValue& a : accepted) {
    none = none || a.is_none();
    bools = bools && (a.is_none() || a.type() == ArgValue::Type::kBool);
    ints = ints && (a.is_none() || a.type() == ArgValue::Type::kInt);
  }
  const std::string type = bools ? "bool" : ints ? "int" : "";
  ParamSchema p = OnlyIf(
      std::move(name), std::move(default_value),
      [accepted = std::move(accepted)](const ArgValue& v) {
        for (const ArgValue& a : accepted) {
          if (SameValue(a, v)) return true;
        }
        return false;
      },
      std::move(accepts), std::move(reason), std::move(display));
  if (!type.empty()) p.annotation = none ? "Optional[" + type + "]" : type;
  return p;
}

ParamSchema BilinearOnly(std::string name) {
  return Only(std::move(name), ArgValue(), {ArgValue(), "bilinear", 2},
              "InterpolationMode.BILINEAR (also 'bilinear', PIL.Image.BILINEAR or None)",
              "stoker resamples with Pillow's antialiased bilinear filter only; NEAREST, "
              "BICUBIC, BOX, HAMMING and LANCZOS are not implemented");
}

ParamSchema AntialiasOnly(std::string name) {
  return Only(std::move(name), ArgValue(), {ArgValue(), true}, "True or None",
              "stoker always antialiases, as torchvision does on PIL images");
}

ParamSchema Ignored(std::string name, bool default_value, std::string why) {
  ParamSchema p = OnlyIf(
      std::move(name), default_value,
      [](const ArgValue& v) { return v.type() == ArgValue::Type::kBool; }, "True or False",
      std::move(why));
  p.annotation = "bool";
  return p;
}

// ------------------------------------------------------------------- others --

ParamSchema NumberList(std::string name, std::vector<double> Transform::*field, double lo,
                       double hi, std::vector<double> none_value) {
  ParamSchema p = WithDefault(
      Base(std::move(name), "Optional[List[float]]",
           "None or a non-empty list of " + NumberText("numbers", lo, hi)),
      ArgValue());
  p.set = [field, lo, hi, none_value](const ArgValue& v, Transform* t) {
    if (v.is_none()) {
      t->*field = none_value;
      return Status::OK();
    }
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->empty() || !Finite(*l)) return Bad();
    for (double x : *l) {
      if (x < lo || x > hi) return Bad();
    }
    t->*field = *l;
    return Status::OK();
  };
  p.get = [field](const Transform& t) {
    std::vector<ArgValue> out;
    for (double x : t.*field) out.emplace_back(x);
    return ArgValue(std::move(out));
  };
  return p;
}

ParamSchema Floats3(std::string name, std::array<float, 3> Transform::*field, bool nonzero) {
  ParamSchema p = Base(std::move(name), "Sequence[float]",
                       nonzero ? "3 non-zero numbers (R, G, B)" : "3 numbers (R, G, B)");
  p.set = [field, nonzero](const ArgValue& v, Transform* t) {
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->size() != 3 || !Finite(*l)) return Bad();
    for (int c = 0; c < 3; ++c) {
      const float x = static_cast<float>((*l)[c]);
      if (nonzero && !(x != 0.f)) return Bad();
      (t->*field)[c] = x;
    }
    return Status::OK();
  };
  p.get = [field](const Transform& t) {
    const std::array<float, 3>& f = t.*field;
    return List({f[0], f[1], f[2]});
  };
  return p;
}

ParamSchema KernelSize(std::string name) {
  ParamSchema p = Base(std::move(name), "Union[int, Tuple[int, int]]",
                       "an odd int in [1, 101], or (width, height) of them");
  p.set = [](const ArgValue& v, Transform* t) {
    int64_t w = 0, h = 0;
    bool single = false;
    const Status s = SizePair(v, &w, &h, &single);
    if (s.code() == StatusCode::kWrongType) return s;
    for (int64_t k : {w, h}) {
      if (!s.ok() || k % 2 == 0 || k > 101) return Bad();
    }
    t->kernel_size = {static_cast<int>(h), static_cast<int>(w)};  // (height, width)
    return Status::OK();
  };
  p.get = [](const Transform& t) { return ArgValue({t.kernel_size[1], t.kernel_size[0]}); };
  return p;
}

ParamSchema Sigma(std::string name, std::pair<double, double> default_value) {
  ParamSchema p = WithDefault(
      Base(std::move(name), "Union[float, Tuple[float, float]]",
           "a number > 0 or a pair (min, max) with 0 < min <= max"),
      List({default_value.first, default_value.second}));
  p.set = [](const ArgValue& v, Transform* t) {
    if (v.is_number()) {
      const double s = v.as_double();
      if (!(s > 0)) return Bad();  // inf, as in torchvision: the box blur
      t->sigma = {s, s};
      return Status::OK();
    }
    // A pair: torchvision checks only 0 < min <= max, so inf is allowed (the
    // box blur); NaN is not.
    const std::optional<std::vector<double>> l = NumbersOf(v);
    if (!l) return Wrong();
    if (l->size() != 2 || !((*l)[0] > 0) || !((*l)[0] <= (*l)[1])) return Bad();
    t->sigma = {(*l)[0], (*l)[1]};
    return Status::OK();
  };
  p.get = [](const Transform& t) { return List({t.sigma[0], t.sigma[1]}); };
  return p;
}

}  // namespace stoker::params
