// Copyright 2026 The stoker Authors.
//
// torchvision's RandomErasing (value 0) on a sample after the conversion to
// the output dtype and layout (stage kTensor; its declaration is in
// ops/output_transforms.cc).
//
// Thread-safety: a pure function of its arguments.
#ifndef STOKER_OPS_ERASING_H_
#define STOKER_OPS_ERASING_H_

#include "base/rng.h"
#include "ops/transform_ops.h"
#include "stoker/transforms.h"

namespace stoker {

// With probability t.p, a rectangle of area fraction in [scale_min,
// scale_max] and aspect in [ratio_min, ratio_max] (log-uniform), drawn as
// RandomErasing.get_params draws it (10 attempts, else nothing), set to 0.
void ApplyRandomErasing(const Transform& t, Rng* rng, const OutputTensor& out);

}  // namespace stoker

#endif  // STOKER_OPS_ERASING_H_
