// Copyright 2026 The stoker Authors.
//
// Transform specifications, with torchvision's names, arguments and meaning.
// A transform list is plain data: the engine compiles it, per sample, into
// one region decode plus one fused resample/flip/normalise/convert pass.
//
// Resampling reproduces Pillow's antialiased bilinear filter (the one
// torchvision applies to PIL images), including its fixed-point rounding, so
// Resize(256) + CenterCrop(224) gives the same pixels as torchvision on
// PIL-decoded images (see src/ops/README.md for the exceptions: JPEG
// DCT-domain scaling, which the loader may use when a crop is downscaled by
// 2x or more, and chains with more than one resize, whose later crops and
// flips are composed into one pass). Photometric transforms (ColorJitter,
// RandomGrayscale, ...) run on the output-size image, whatever their place in
// the list: after the crop, as in the usual recipes. A Callback (Python's
// stoker.Lambda) runs there too, in list order with them.
#ifndef STOKER_TRANSFORMS_H_
#define STOKER_TRANSFORMS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/status.h"

namespace stoker {

// A host callback step (Transform::Callback; Python's stoker.Lambda). It is
// called once per sample with the sample's uint8 RGB image of the output
// size (`height` rows of `width * 3` bytes, no padding), which it modifies
// in place, and `seed`: a value drawn from the sample's random stream, a
// function of (loader seed, epoch, sample id, place in the list), for a
// callback that wants randomness independent of the thread count. A non-OK
// Status fails the sample (its message gets the sample's name prepended;
// on_error decides what happens next, except for Cancelled: an interrupt,
// never skipped, it stops the epoch under either policy).
//
// Thread-safety: called from the loader's worker threads, concurrently for
// different samples unless the callback serialises itself (the Python
// binding's does: it holds the GIL). It must not call back into the loader
// that runs it. The loader copies the Transform (sharing the function) and
// keeps it until the loader is destroyed.
using SampleCallback =
    std::function<Status(uint8_t* rgb, int width, int height, uint64_t seed)>;

struct TransformSchema;  // stoker/transform_schema.h

// One transform: which one (its declaration) and its parameters, as plain
// data. Make one with MakeTransform (stoker/transform_schema.h), which takes
// torchvision's arguments by name and checks them, or, for the common ones,
// with the factories below (which do not check: the Loader checks every
// transform it is given with CheckTransform).
struct Transform {
  // The declaration (name, parameters, stage); null only for a
  // default-constructed Transform, which no Loader accepts.
  const TransformSchema* schema = nullptr;
  // Output size for RandomResizedCrop, CenterCrop and Resize((h, w)). For
  // Resize(size) (shorter side) `height` holds size and `width` is 0.
  int height = 0;
  int width = 0;
  // RandomResizedCrop.
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  // Resize(size) and RandomShortestSize: torchvision's max_size (0: none).
  int max_size = 0;
  // RandomShortestSize: the shorter sides to draw from.
  std::vector<int> sizes;
  // The Random* transforms: the probability of applying.
  double p = 0.5;
  // ColorJitter: factor ranges [lo, hi], drawn uniformly; a range equal to
  // the identity ({1, 1}, hue {0, 0}) is off, as torchvision's None.
  std::array<double, 2> brightness{1.0, 1.0};
  std::array<double, 2> contrast{1.0, 1.0};
  std::array<double, 2> saturation{1.0, 1.0};
  std::array<double, 2> hue{0.0, 0.0};
  // RandomPosterize: bits kept (0..8).
  int bits = 8;
  // RandomSolarize: pixels >= threshold are inverted.
  double threshold = 128.0;
  // RandomAdjustSharpness: the sharpness factor (0 blurs, 1 is the identity).
  double sharpness_factor = 1.0;
  // Padding (left, top, right, bottom) of the transforms that pad
  // (RandomCrop), its mode (0 constant with `fill`, 1 edge, 2 reflect,
  // 3 symmetric), and RandomCrop's pad_if_needed.
  std::array<int, 4> padding{0, 0, 0, 0};
  bool pad_if_needed = false;
  int padding_mode = 0;
  // GaussianBlur: kernel (height, width), odd; sigma range.
  std::array<int, 2> kernel_size{3, 3};
  std::array<double, 2> sigma{0.1, 2.0};
  // TrivialAugmentWide / RandAugment: magnitude bins, and RandAugment's
  // number of ops and magnitude (a bin index).
  int num_magnitude_bins = 31;
  int num_ops = 2;
  int magnitude = 9;
  // The colour of pixels from outside the image (pads, warps, policies),
  // 0..255 per channel.
  std::array<int, 3> fill{0, 0, 0};
  // RandomRotation / RandomAffine: angle range in degrees; translate as
  // fractions of (width, height) ({0, 0}: None); scale range ({1, 1}: None);
  // shear ranges (x_min, x_max, y_min, y_max) in degrees; the centre (x, y)
  // in pixels when has_center (else the image centre).
  std::array<double, 2> degrees{0.0, 0.0};
  std::array<double, 2> translate{0.0, 0.0};
  std::array<double, 2> affine_scale{1.0, 1.0};
  std::array<double, 4> shear{0.0, 0.0, 0.0, 0.0};
  bool has_center = false;
  std::array<double, 2> center{0.0, 0.0};
  // Warps: Pillow's resampling code (0 NEAREST, 2 BILINEAR, 3 BICUBIC).
  int interpolation = 0;
  // RandomPerspective.
  double distortion_scale = 0.5;
  // RandomIoUCrop (its min/max_scale are scale_min/max, its min/max
  // aspect ratio ratio_min/max): the minimum IoUs drawn from (an option
  // >= 1 leaves the sample uncropped) and the crops tried per option.
  std::vector<double> sampler_options{0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0};
  int trials = 40;
  // RandomZoomOut: the canvas side, as a multiple of the image's, drawn in
  // [side_range[0], side_range[1]].
  std::array<double, 2> side_range{1.0, 4.0};
  // Normalize, per RGB channel, applied to pixels scaled to [0, 1].
  std::array<float, 3> mean{0.f, 0.f, 0.f};
  std::array<float, 3> std{1.f, 1.f, 1.f};
  // Callback (Lambda): the function (shared by copies of the Transform) and
  // a name for messages and ToString ("Lambda(name)").
  std::shared_ptr<const SampleCallback> callback;
  std::string callback_name;
  // The image fields of a record it applies to (the `fields` argument every
  // kGeometry, kImage and kWarp declaration has; empty: the primary image
  // only, as before records). A geometric transform applies its one draw to
  // each; a photometric one runs on the named fields only. The Loader checks
  // the names against the source's schema (pipeline/record_plan.h).
  std::vector<std::string> fields;

  // Factories for the common transforms, in torchvision's argument order;
  // their defaults are the declared ones (a test checks). Every transform,
  // these included, can also be made by name with MakeTransform.
  static Transform RandomResizedCrop(int height, int width, double scale_min = 0.08,
                                     double scale_max = 1.0, double ratio_min = 3.0 / 4.0,
                                     double ratio_max = 4.0 / 3.0);
  // Shorter side to `size`, keeping the aspect ratio (torchvision's rule);
  // set `max_size` to cap the longer side (torchvision's rule).
  static Transform Resize(int size);
  static Transform Resize(int height, int width);
  static Transform CenterCrop(int height, int width);
  static Transform RandomHorizontalFlip(double p = 0.5);
  static Transform Normalize(std::array<float, 3> mean, std::array<float, 3> std);
  static Transform RandomVerticalFlip(double p = 0.5);
  static Transform ColorJitter(std::array<double, 2> brightness, std::array<double, 2> contrast,
                               std::array<double, 2> saturation, std::array<double, 2> hue);
  static Transform RandomGrayscale(double p = 0.1);
  static Transform RandomAutocontrast(double p = 0.5);
  static Transform RandomEqualize(double p = 0.5);
  static Transform RandomPosterize(int bits, double p = 0.5);
  static Transform RandomSolarize(double threshold, double p = 0.5);
  static Transform RandomAdjustSharpness(double sharpness_factor, double p = 0.5);
  static Transform TrivialAugmentWide(int num_magnitude_bins = 31,
                                      std::array<int, 3> fill = {0, 0, 0});
  static Transform RandomErasing(double p = 0.5, double scale_min = 0.02,
                                 double scale_max = 0.33, double ratio_min = 0.3,
                                 double ratio_max = 3.3);
  // padding_mode: 0 constant (with `fill`), 1 edge, 2 reflect, 3 symmetric.
  static Transform RandomCrop(int height, int width, std::array<int, 4> padding,
                              bool pad_if_needed, int padding_mode = 0,
                              std::array<int, 3> fill = {0, 0, 0});
  static Transform GaussianBlur(std::array<int, 2> kernel_size, std::array<double, 2> sigma);
  static Transform AutoAugment(std::array<int, 3> fill = {0, 0, 0});
  static Transform RandAugment(int num_ops = 2, int magnitude = 9, int num_magnitude_bins = 31,
                               std::array<int, 3> fill = {0, 0, 0});

  static Transform RandomRotation(std::array<double, 2> degrees, int interpolation = 0,
                                  bool has_center = false, std::array<double, 2> center = {0, 0},
                                  std::array<int, 3> fill = {0, 0, 0});
  static Transform RandomAffine(std::array<double, 2> degrees, std::array<double, 2> translate,
                                std::array<double, 2> scale, std::array<double, 4> shear,
                                int interpolation = 0, bool has_center = false,
                                std::array<double, 2> center = {0, 0},
                                std::array<int, 3> fill = {0, 0, 0});
  static Transform RandomPerspective(double distortion_scale = 0.5, double p = 0.5,
                                     int interpolation = 2, std::array<int, 3> fill = {0, 0, 0});

  // Wraps `fn` (see SampleCallback); `name` appears in ToString and errors.
  static Transform Callback(SampleCallback fn, std::string name = "callback");

  // The declared name ("RandomResizedCrop"); "" without a declaration.
  std::string_view name() const;
  // True for the transforms applied to the output-size image (stages kImage
  // and kWarp: ColorJitter ..., the policies, Lambda, the warps).
  bool photometric() const;
  // True for transforms whose geometry is random (RandomResizedCrop); flips
  // are not counted: they move pixels without resampling them.
  bool random_geometry() const;

  // "Name(param=value, ...)" from the declared parameters, e.g.
  // "RandomResizedCrop(size=(224, 224), scale=(0.08, 1), ratio=(0.75, 1.33333), ...)".
  std::string ToString() const;
};

// The crop RandomResizedCrop `t` draws for a `width` x `height` image from
// the random stream Rng(HashSeed(seed, stream)), exactly as torchvision's
// RandomResizedCrop.get_params does (for distribution tests). Pure.
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};
CropBox SampleRandomResizedCropBox(int width, int height, const Transform& t, uint64_t seed,
                                   uint64_t stream);

}  // namespace stoker

#endif  // STOKER_TRANSFORMS_H_
