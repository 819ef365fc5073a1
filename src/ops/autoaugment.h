// Copyright 2026 The stoker Authors.
//
// torchvision's automatic augmentation policies (TrivialAugmentWide,
// RandAugment) and the ops they apply (torchvision.transforms.autoaugment.
// _apply_op), on an 8-bit RGB image of the output size, in place, with the
// arithmetic torchvision uses on a PIL image:
//   - ShearX/ShearY/TranslateX/TranslateY: F.affine -> the inverse matrix of
//     _get_inverse_affine_matrix (same double expressions) -> Pillow's
//     nearest-neighbour affine transform (its ScaleAffine, 16.16 fixed-point
//     and float paths, chosen as Pillow chooses them);
//   - Rotate: PIL's Image.rotate (its 0/90/180/270 transpose shortcuts, its
//     matrix rounded to 15 decimals, then the affine transform);
//   - the photometric ops: src/ops/color.h.
// Pixels outside the source get `fill` (torchvision's fill=None is black).
// Magnitude tables are torch.linspace in float32, as torchvision builds them.
// Exactness is checked op by op against _apply_op on PIL images by
// python/tests/test_autoaugment.py (tolerance 0).
//
// Thread-safety: pure functions of their arguments. No errors: parameters are
// checked when the loader is created.
#ifndef STOKER_OPS_AUTOAUGMENT_H_
#define STOKER_OPS_AUTOAUGMENT_H_

#include <array>
#include <cstdint>

#include "base/rng.h"
#include "codec/image.h"
#include "stoker/transforms.h"

namespace stoker {

// In torchvision's _augmentation_space order (TrivialAugmentWide and RandAugment
// share it).
enum class AugOp {
  kIdentity, kShearX, kShearY, kTranslateX, kTranslateY, kRotate, kBrightness, kColor,
  kContrast, kSharpness, kPosterize, kSolarize, kAutoContrast, kEqualize,
  kInvert,  // AutoAugment only
};
constexpr int kNumAugOps = 14;  // TrivialAugmentWide's and RandAugment's ops
constexpr int kNumAugOpsAll = 15;
const char* AugOpName(AugOp op);

// torchvision's magnitude for `op` at `bin` of `num_bins` (unsigned), for the
// TrivialAugmentWide (wide = true) or RandAugment table, on a width x height
// image. `*has_magnitude` is false for the ops without one (Identity,
// AutoContrast, Equalize; magnitude 0). `*is_signed`: whether torchvision
// flips its sign with probability 1/2.
double AugMagnitude(AugOp op, int bin, int num_bins, bool wide, int width, int height,
                    bool* has_magnitude, bool* is_signed);

// _apply_op(img, op, magnitude, NEAREST, fill). `scratch` holds a copy for
// the geometric ops.
void ApplyAugOp(AugOp op, double magnitude, const std::array<uint8_t, 3>& fill, RgbImage* img,
                RgbImage* scratch);

// PIL's Image.rotate(angle) (counter-clockwise degrees, centre, no expand)
// with NEAREST.
void RotateNearest(double angle, const std::array<uint8_t, 3>& fill, RgbImage* img,
                   RgbImage* scratch);

enum class AugPolicy { kTrivialAugmentWide, kRandAugment, kAutoAugment };
// The policy of TrivialAugmentWide / RandAugment / AutoAugment `t`.
AugPolicy AugPolicyOf(const Transform& t);

// One draw of the policy `t` (kTrivialAugmentWide: one op; kRandAugment:
// t.num_ops ops), as torchvision draws them: op uniform over the 14, then
// (TrivialAugmentWide) the bin uniform over num_bins, then the sign.
// kAutoAugment (ImageNet policy): one of the 25 sub-policies uniformly, two
// uniform draws in [0, 1) and two signs; each of its two ops applies when its
// draw <= its probability, at its magnitude bin of 10 (RandAugment's table),
// negated when its sign draw is 0; ops that do not apply are left out.
struct AugDraw {
  AugOp op = AugOp::kIdentity;
  double magnitude = 0.0;
};
int DrawAugPolicy(AugPolicy policy, const Transform& t, int width, int height, Rng* rng,
                  AugDraw* out, int max_out);

// Draw and apply the policies to `img` (their declarations:
// ops/policy_transforms.cc).
void ApplyTrivialAugmentWide(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyRandAugment(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);
void ApplyAutoAugment(const Transform& t, Rng* rng, RgbImage* img, RgbImage* scratch);

}  // namespace stoker

#endif  // STOKER_OPS_AUTOAUGMENT_H_
