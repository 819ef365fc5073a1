// Copyright 2026 The stoker Authors.
//
// The engine's side of a transform declaration (stoker/transform_schema.h):
// the functions its stage calls. A declaration (src/ops/*_transforms.cc)
// points at its op's functions; the engine finds them through
// Transform::schema->ops and never switches on which transform it holds.
//
//   kGeometry: plan + output_size (ops/geometry.h runs them in list order);
//   kImage, kWarp: image (the sample processor runs it on the output-size
//     image; Lambda has none: its callback is called instead);
//   kTensor: tensor (on the sample's slot after the conversion);
//   kConvert: none (Normalize's mean and std are read by the PixelWriter).
//
// Thread-safety: plain function pointers to pure functions; each call works
// on the caller's own image and random stream.
#ifndef STOKER_OPS_TRANSFORM_OPS_H_
#define STOKER_OPS_TRANSFORM_OPS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"
#include "codec/image.h"
#include "stoker/status.h"
#include "stoker/transform_schema.h"
#include "stoker/transforms.h"

namespace stoker {

// "RandomResizedCrop" for RandomResizedCrop(size=...): its declaration's name
// ("Transform" for one without a declaration). Span and stats names.
std::string TransformShortName(const Transform& t);

// Whether the list holds a Normalize, and that Normalize (identity: mean 0,
// std 1, when it holds none).
bool HasNormalize(const std::vector<Transform>& transforms);
Transform NormalizeOf(const std::vector<Transform>& transforms);
// Whether every transform gives the same output for a sample in every epoch
// (no random parameters): what cache_kind kOutput needs.
bool IsDeterministic(const std::vector<Transform>& transforms);

class GeometryBuilder;  // ops/geometry.h

// The size the geometric transforms so far give every sample, if they fix it.
struct OutputSize {
  int height = 0;
  int width = 0;
  bool fixed = false;
};

// A sample's slot after the conversion: height x width pixels of 3 values of
// `elem_size` bytes, planar (NCHW) or interleaved (NHWC).
struct OutputTensor {
  uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  size_t elem_size = 1;
  bool nchw = true;
};

struct TransformOps {
  // kGeometry: draws the transform's random parameters from `rng` and adds
  // it to the plan being built; errors: InvalidArgument (e.g. a crop larger
  // than the padded image).
  Status (*plan)(const Transform& t, Rng* rng, GeometryBuilder* b) = nullptr;
  // kGeometry: the output size after it, given the size before.
  void (*output_size)(const Transform& t, OutputSize* size) = nullptr;
  // kImage / kWarp: draws and applies it to `img` in place; `scratch` is a
  // second buffer of any size.
  void (*image)(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch) = nullptr;
  // kTensor: draws and applies it to the converted sample.
  void (*tensor)(const Transform& t, Rng* rng, const OutputTensor& out) = nullptr;
};

// The ops of `t`'s declaration (never null for a declared transform).
inline const TransformOps& OpsOf(const Transform& t) { return *t.schema->ops; }
inline TransformStage StageOf(const Transform& t) { return t.schema->stage; }

}  // namespace stoker

#endif  // STOKER_OPS_TRANSFORM_OPS_H_
