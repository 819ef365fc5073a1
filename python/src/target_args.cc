// Copyright 2026 The stoker Authors.
#include "target_args.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "stoker/record.h"

namespace py = pybind11;

namespace stoker::python {

TargetDecl ParseTargetDecl(const std::string& what, const py::handle& v, bool box_rules) {
  TargetDecl d;
  py::dict opts;
  if (py::isinstance<py::str>(v)) {
    opts["target"] = v;
  } else if (py::isinstance<py::dict>(v)) {
    opts = v.cast<py::dict>();
  } else {
    throw py::type_error(what + ": expected a role (\"mask\", \"boxes\", \"keypoints\", "
                         "\"per_box\") or a dict with \"target\", got " +
                         py::repr(v).cast<std::string>());
  }
  static const char* kKeys[] = {"target", "format", "ignore_index", "follows", "min_size",
                                "min_area_fraction"};
  const auto keys_end = std::begin(kKeys) + (box_rules ? 6 : 4);
  for (const auto& [ok, ov] : opts) {
    const std::string key = py::str(ok).cast<std::string>();
    if (std::find(std::begin(kKeys), keys_end, key) == keys_end) {
      throw py::value_error(what + ": unknown key '" + key + "' (keys: target, format, "
                            "ignore_index, follows" +
                            (box_rules ? ", min_size, min_area_fraction)" : ")"));
    }
  }
  if (!opts.contains("target")) throw py::value_error(what + ": no \"target\" role");
  auto text = [&](const char* key) {
    py::object o = opts[key];
    if (!py::isinstance<py::str>(o)) {
      throw py::type_error(what + "[\"" + key + "\"]: expected a str, got " +
                           py::repr(o).cast<std::string>());
    }
    return o.cast<std::string>();
  };
  auto number = [&](const char* key) {
    py::object o = opts[key];
    if (py::isinstance<py::bool_>(o) || !(py::isinstance<py::int_>(o) ||
                                          py::isinstance<py::float_>(o))) {
      throw py::type_error(what + "[\"" + key + "\"]: expected a number, got " +
                           py::repr(o).cast<std::string>());
    }
    return o.cast<double>();
  };
  StatusOr<TargetRole> role = ParseTargetRole(text("target"));
  if (!role.ok() || *role == TargetRole::kNone) {
    throw py::value_error(what + "[\"target\"] must be \"mask\", \"boxes\", \"keypoints\" "
                          "or \"per_box\", got '" + text("target") + "'");
  }
  d.role = *role;
  auto only_for = [&](const char* key, TargetRole r) {
    if (opts.contains(key) && d.role != r) {
      throw py::value_error(what + ": \"" + key + "\" is for " + TargetRoleName(r) +
                            " targets, this one is " + TargetRoleName(d.role));
    }
    return opts.contains(key);
  };
  if (only_for("format", TargetRole::kBoxes)) {
    StatusOr<BoxFormat> f = ParseBoxFormat(text("format"));
    if (!f.ok()) {
      throw py::value_error(what + "[\"format\"] must be \"xyxy\", \"xywh\" or "
                            "\"cxcywh\", got '" + text("format") + "'");
    }
    d.box_format = *f;
  }
  if (only_for("ignore_index", TargetRole::kMask)) {
    py::object o = opts["ignore_index"];
    if (py::isinstance<py::bool_>(o) || !py::isinstance<py::int_>(o) ||
        o.cast<int64_t>() < 0 || o.cast<int64_t>() > 65535) {
      throw py::value_error(what + "[\"ignore_index\"] must be an int in [0, 65535], got " +
                            py::repr(o).cast<std::string>());
    }
    d.ignore_index = o.cast<int64_t>();
  }
  if (only_for("follows", TargetRole::kPerBox)) {
    d.follows = text("follows");
    if (d.follows.empty()) throw py::value_error(what + "[\"follows\"]: an empty field name");
  }
  if (only_for("min_size", TargetRole::kBoxes)) d.min_size = number("min_size");
  if (only_for("min_area_fraction", TargetRole::kBoxes)) {
    d.min_area_fraction = number("min_area_fraction");
  }
  if (!(d.min_size >= 0) || !std::isfinite(d.min_size)) {
    throw py::value_error(what + "[\"min_size\"] must be a finite number >= 0, got " +
                          std::to_string(d.min_size));
  }
  if (!(d.min_area_fraction >= 0 && d.min_area_fraction <= 1)) {
    throw py::value_error(what + "[\"min_area_fraction\"] must be in [0, 1], got " +
                          std::to_string(d.min_area_fraction));
  }
  return d;
}

}  // namespace stoker::python
