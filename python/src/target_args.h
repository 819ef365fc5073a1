// Copyright 2026 The stoker Authors.
//
// A target declaration from Python, the one parser of both Loader(targets=
// {field: ...}) and Shards(fields={field: {..., "target": ...}}): a role
// ("mask", "boxes", "keypoints", "per_box") or a dict {"target": role,
// "format": "xyxy"|"xywh"|"cxcywh" (boxes; case-insensitive, as
// ParseBoxFormat), "ignore_index": int in [0, 65535] (mask), "follows":
// field name (per_box)}, plus with `box_rules` "min_size" (finite, >= 0) and
// "min_area_fraction" (in [0, 1]) for boxes. Raises TypeError / ValueError
// whose message begins with `what` (e.g. "targets['mask']"). Call with the
// GIL held. TargetDecl::field is left empty.
#ifndef STOKER_PYTHON_TARGET_ARGS_H_
#define STOKER_PYTHON_TARGET_ARGS_H_

#include <pybind11/pybind11.h>

#include <string>

#include "stoker/loader.h"

namespace stoker::python {

TargetDecl ParseTargetDecl(const std::string& what, const pybind11::handle& v, bool box_rules);

}  // namespace stoker::python

#endif  // STOKER_PYTHON_TARGET_ARGS_H_
