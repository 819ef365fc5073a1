// Copyright 2026 The stoker Authors.
//
// How a transform is declared. Each family of transforms has one file of
// declarations (src/ops/geometry_transforms.cc, warp_, color_, policy_,
// output_transforms.cc), whose Declare*Transforms function the registry
// calls once, on first use. A declaration names the transform, its stage,
// its docstring, its torchvision mapping note, its parameters
// (ops/transform_params.h) and its op's functions (ops/transform_ops.h):
//
//   void DeclareColorTransforms(TransformFamily& f) {
//     f.Declare("RandomEqualize", TransformStage::kImage)
//         .Doc("With probability `p`, ImageOps.equalize (per-channel histogram "
//              "equalisation).")
//         .Torchvision(kPillowExact)
//         .Param(params::Probability("p", &Transform::p, 0.5))
//         .Image(&ApplyRandomEqualize);
//   }
//
// A torchvision transform stoker does not provide gets a note in the family
// it would belong to (f.NotProvided); declaring it later replaces the note
// (a name may not be both).
//
// Thread-safety: used only while the registry is built (once, under the
// function-local static's initialisation lock).
#ifndef STOKER_OPS_TRANSFORM_REGISTRY_H_
#define STOKER_OPS_TRANSFORM_REGISTRY_H_

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ops/transform_ops.h"
#include "ops/transform_params.h"
#include "stoker/transform_schema.h"

namespace stoker {

// The builder a declaration is written with; it fills a TransformSchema and
// its TransformOps in place.
class TransformDecl {
 public:
  TransformDecl(TransformSchema* schema, TransformOps* ops) : s_(schema), ops_(ops) {}

  TransformDecl& Doc(std::string doc);
  TransformDecl& Torchvision(std::string note);
  TransformDecl& Param(ParamSchema param);
  // A check between parameters, run after each parameter was accepted; its
  // errors use params::ParamError.
  TransformDecl& Check(std::function<Status(const TransformSchema&, const Transform&)> check);
  // The op's functions for the transform's stage.
  TransformDecl& Plan(Status (*plan)(const Transform&, Rng*, GeometryBuilder*),
                      void (*output_size)(const Transform&, OutputSize*));
  TransformDecl& Image(void (*image)(const Transform&, Rng*, RgbImage*, RgbImage*));
  TransformDecl& Tensor(void (*tensor)(const Transform&, Rng*, const OutputTensor&));
  // Flags (TransformSchema): random geometry, deterministic, needs the boxes,
  // not a Python class.
  TransformDecl& RandomGeometry();
  TransformDecl& Deterministic();
  TransformDecl& NeedsBoxes();
  TransformDecl& NotInPython();
  // Replaces the generic "Name(param=value, ...)" description.
  TransformDecl& Describe(std::function<std::string(const Transform&)> to_string);

 private:
  TransformSchema* s_;
  TransformOps* ops_;
};

class TransformRegistry;

// One family's declarations: they share a docs/api.md section.
class TransformFamily {
 public:
  TransformFamily(TransformRegistry* registry, std::string section)
      : registry_(registry), section_(std::move(section)) {}
  TransformDecl Declare(std::string name, TransformStage stage);
  void NotProvided(std::string torchvision_name, std::string instead);

 private:
  TransformRegistry* registry_;
  std::string section_;
};

// The declarations' store: stable addresses, in declaration order.
class TransformRegistry {
 public:
  // The one registry, built on first use from the Declare* functions below.
  static const TransformRegistry& Get();

  const std::vector<const TransformSchema*>& schemas() const { return list_; }
  const std::vector<TorchvisionNote>& notes() const { return notes_; }
  const std::vector<std::pair<std::string, std::string>>& sections() const { return sections_; }

 private:
  friend class TransformFamily;
  TransformRegistry();
  TransformFamily Family(std::string section, std::string intro);

  std::deque<TransformSchema> schemas_;
  std::deque<TransformOps> ops_;
  std::vector<const TransformSchema*> list_;
  std::vector<TorchvisionNote> notes_;
  std::vector<std::pair<std::string, std::string>> sections_;
};

// "Name(param=value, ...)" (Transform::ToString).
std::string DescribeTransform(const Transform& t);

// The families, in the order the registry calls them (one file each).
void DeclareGeometryTransforms(TransformFamily& f);
void DeclareWarpTransforms(TransformFamily& f);
void DeclareColorTransforms(TransformFamily& f);
void DeclarePolicyTransforms(TransformFamily& f);
void DeclareOutputTransforms(TransformFamily& f);

}  // namespace stoker

#endif  // STOKER_OPS_TRANSFORM_REGISTRY_H_
