// Copyright 2026 The stoker Authors.
//
// Transform specifications, with torchvision's names, arguments and meaning.
// A transform list is plain data: the engine compiles it, per sample, into
// one region decode plus one fused resample/flip/normalise/convert pass.
//
// Resampling reproduces Pillow's antialiased bilinear filter (the one
// torchvision applies to PIL images), including its fixed-point rounding, so
// Resize(256) + CenterCrop(224) gives the same pixels as torchvision on
// PIL-decoded images (see docs/architecture.md for the exceptions: JPEG
// DCT-domain scaling, which the loader may use when a crop is downscaled by
// 2x or more, and chains with more than one resize, whose later crops and
// flips are composed into one pass). Photometric transforms (ColorJitter,
// RandomGrayscale, ...) run on the output-size image, whatever their place in
// the list: after the crop, as in the usual recipes.
#ifndef STOKER_TRANSFORMS_H_
#define STOKER_TRANSFORMS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

struct Transform {
  enum class Kind {
    kRandomResizedCrop,
    kResize,
    kCenterCrop,
    kRandomHorizontalFlip,
    kNormalize,
    kRandomVerticalFlip,
    // Photometric: applied, in list order, to the uint8 image of the output
    // size (after all crops and resizes), with Pillow's arithmetic.
    kColorJitter,
    kRandomGrayscale,  // Grayscale() is RandomGrayscale(p=1)
    kRandomAutocontrast,
    kRandomEqualize,
    kRandomPosterize,
    kRandomSolarize,
    kRandomAdjustSharpness,
    // Policies (torchvision.transforms.autoaugment), on the output-size image
    // like the photometric ops; NEAREST interpolation (torchvision's default).
    kTrivialAugmentWide,
    kRandAugment,
    kAutoAugment,  // AutoAugmentPolicy.IMAGENET
    // On the output tensor (after Normalize/convert), wherever it sits in the
    // list: a rectangle set to 0 (value=0, torchvision's default). Uses p,
    // scale_min/max and ratio_min/max.
    kRandomErasing,
    // Photometric too: sigma uniform in `sigma`, kernel (height, width).
    kGaussianBlur,
    // Geometry: zero padding `padding` (left, top, right, bottom), then
    // pad_if_needed (torchvision pads both sides by the shortfall), then a
    // uniform crop of (height, width).
    kRandomCrop,
  };
  Kind kind = Kind::kNormalize;
  // Output size for RandomResizedCrop, CenterCrop and Resize((h, w)). For
  // Resize(size) (shorter side) `height` holds size and `width` is 0.
  int height = 0;
  int width = 0;
  // RandomResizedCrop.
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  // Resize(size) only: torchvision's max_size (0: none).
  int max_size = 0;
  // Random flips and the Random* photometric ops: probability of applying.
  double p = 0.5;
  // ColorJitter: factor ranges [lo, hi], drawn uniformly; a range equal to
  // the identity ({1, 1}, hue {0, 0}) is off, as torchvision's None.
  std::array<double, 2> brightness{1.0, 1.0};
  std::array<double, 2> contrast{1.0, 1.0};
  std::array<double, 2> saturation{1.0, 1.0};
  std::array<double, 2> hue{0.0, 0.0};
  // RandomPosterize: bits kept (1..8).
  int bits = 8;
  // RandomSolarize: pixels >= threshold are inverted.
  double threshold = 128.0;
  // RandomAdjustSharpness: the sharpness factor (0 blurs, 1 is the identity).
  double sharpness_factor = 1.0;
  // TrivialAugmentWide / RandAugment: magnitude bins, and RandAugment's
  // number of ops and magnitude (a bin index); fill for pixels outside the
  // warped image (0..255 per channel).
  // RandomCrop.
  std::array<int, 4> padding{0, 0, 0, 0};
  bool pad_if_needed = false;
  // GaussianBlur: kernel (height, width), odd; sigma range.
  std::array<int, 2> kernel_size{3, 3};
  std::array<double, 2> sigma{0.1, 2.0};
  int num_magnitude_bins = 31;
  int num_ops = 2;
  int magnitude = 9;
  std::array<int, 3> fill{0, 0, 0};
  // Normalize, per RGB channel, applied to pixels scaled to [0, 1].
  std::array<float, 3> mean{0.f, 0.f, 0.f};
  std::array<float, 3> std{1.f, 1.f, 1.f};

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
  static Transform RandomCrop(int height, int width, std::array<int, 4> padding,
                              bool pad_if_needed);
  static Transform GaussianBlur(std::array<int, 2> kernel_size, std::array<double, 2> sigma);
  static Transform AutoAugment(std::array<int, 3> fill = {0, 0, 0});
  static Transform RandAugment(int num_ops = 2, int magnitude = 9, int num_magnitude_bins = 31,
                               std::array<int, 3> fill = {0, 0, 0});

  // True for the kinds applied to the output-size image (ColorJitter ...,
  // TrivialAugmentWide, RandAugment).
  bool photometric() const;
  // True for transforms whose geometry is random (RandomResizedCrop); flips
  // are not counted: they move pixels without resampling them.
  bool random_geometry() const;

  // "RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.33))".
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
