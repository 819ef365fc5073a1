// Copyright 2026 The stoker Authors.
//
// Testing hooks (names starting with "_"): the ops, the decoder and the
// random draws on their own (stoker/augment.h, stoker/decode.h), for the
// pixel and distribution checks against torchvision in python/tests.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "errors.h"
#include "stoker/augment.h"
#include "stoker/decode.h"
#include "stoker/transforms.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterOpsTesting(py::module_& m) {
  // Testing hooks for the photometric and policy ops (include/stoker/augment.h).
  auto rgb_copy = [](py::array_t<uint8_t, py::array::c_style> image) {
    if (image.ndim() != 3 || image.shape(2) != 3) throw py::value_error("need [H, W, 3]");
    py::array_t<uint8_t> out({image.shape(0), image.shape(1), py::ssize_t{3}});
    std::memcpy(out.mutable_data(), image.data(), static_cast<size_t>(image.size()));
    return out;
  };
  m.def("_color_op",
        [rgb_copy](const std::string& op, py::array_t<uint8_t, py::array::c_style> image,
                   double arg) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyColorOp(op, arg, static_cast<int>(out.shape(1)),
                                        static_cast<int>(out.shape(0)), out.mutable_data());
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("arg") = 0.0,
        "Applies one photometric op with a fixed parameter to an RGB [H, W, 3] uint8 array.");
  m.def("_aug_op",
        [rgb_copy](const std::string& name, py::array_t<uint8_t, py::array::c_style> image,
                   double magnitude, std::array<int, 3> fill, int interpolation) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyPolicyOp(
              name, magnitude,
              {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
               static_cast<uint8_t>(fill[2])},
              static_cast<int>(out.shape(1)), static_cast<int>(out.shape(0)), out.mutable_data(),
              interpolation);
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("magnitude"),
        py::arg("fill") = std::array<int, 3>{0, 0, 0}, py::arg("interpolation") = 0,
        "torchvision's _apply_op(img, op, magnitude, interpolation, fill) on an RGB uint8\n"
        "array (interpolation: PIL's code, 0 NEAREST, 2 BILINEAR, 3 BICUBIC).");
  m.def("_aug_magnitudes",
        [](int num_bins, bool wide, int width, int height) {
          // [ops, num_bins]: the magnitude table (NaN for ops without one).
          const std::vector<double> v = PolicyMagnitudes(num_bins, wide, width, height);
          py::array_t<double> out({PolicyOpCount(), num_bins});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("num_bins"), py::arg("wide"), py::arg("width"), py::arg("height"));
  m.def("_sample_aug_policy",
        [](const Transform& t, int width, int height, uint64_t seed, int n) {
          // Per draw and op: (op index, signed magnitude); rows of num_ops (1 for TA).
          const int k = t.name() == "TrivialAugmentWide" ? 1
                        : t.name() == "AutoAugment"        ? 2
                                                           : t.num_ops;
          const std::vector<double> v = SamplePolicy(t, width, height, seed, n, k);
          py::array_t<double> out({n, k, 2});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("width"), py::arg("height"), py::arg("seed"),
        py::arg("n"));
  m.def("_warp_op",
        [rgb_copy](const std::string& op, py::array_t<uint8_t, py::array::c_style> image,
                   std::vector<double> params, int interpolation, std::array<int, 3> fill) {
          py::array_t<uint8_t> out = rgb_copy(image);
          const Status s = ApplyWarpOp(
              op, params, interpolation,
              {static_cast<uint8_t>(fill[0]), static_cast<uint8_t>(fill[1]),
               static_cast<uint8_t>(fill[2])},
              static_cast<int>(out.shape(1)), static_cast<int>(out.shape(0)), out.mutable_data());
          if (!s.ok()) throw py::value_error(s.message());
          return out;
        },
        py::arg("op"), py::arg("image"), py::arg("params"), py::arg("interpolation") = 0,
        py::arg("fill") = std::array<int, 3>{0, 0, 0},
        "F.rotate / F.affine / F.perspective with fixed parameters on an RGB uint8 array.");
  m.def("_sample_warp",
        [](const Transform& t, int width, int height, uint64_t seed, int n) {
          int k = 0;
          const std::vector<double> v = SampleWarp(t, width, height, seed, n, &k);
          py::array_t<double> out({n, k});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("width"), py::arg("height"), py::arg("seed"),
        py::arg("n"));
  m.def("_follow_targets",
        [](const std::vector<Transform>& ts, int width, int height, uint64_t seed,
           py::object mask, int64_t ignore_index,
           py::array_t<double, py::array::c_style | py::array::forcecast> boxes,
           const std::string& box_format, double min_size, double min_area_fraction,
           py::array_t<double, py::array::c_style | py::array::forcecast> keypoints,
           py::object instances) -> py::tuple {
          // The targets' geometry drawn from Rng(seed) (FollowTargetsForTesting).
          TargetsForTesting r;
          py::array m;
          int bpp = 0;
          if (!mask.is_none()) {
            m = py::array::ensure(mask, py::array::c_style);
            bpp = static_cast<int>(m.itemsize());
            if (m.ndim() != 2 || m.shape(0) != height || m.shape(1) != width) {
              throw py::value_error("mask: need [height, width]");
            }
          }
          const int n = boxes.ndim() == 2 ? static_cast<int>(boxes.shape(0)) : 0;
          const int k = keypoints.ndim() == 2 ? static_cast<int>(keypoints.shape(0)) : 0;
          const int kcols = keypoints.ndim() == 2 ? static_cast<int>(keypoints.shape(1)) : 2;
          py::array_t<uint8_t, py::array::c_style | py::array::forcecast> planes;
          if (!instances.is_none()) {
            planes = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(
                instances);
            if (!planes || planes.ndim() != 3 || planes.shape(0) != n ||
                planes.shape(1) != height || planes.shape(2) != width) {
              throw py::value_error("instances: need uint8 [boxes, height, width]");
            }
          }
          const Status s = FollowTargetsForTesting(
              ts, width, height, seed,
              bpp > 0 ? static_cast<const uint8_t*>(m.data()) : nullptr, bpp, ignore_index,
              boxes.data(), n, box_format, min_size, min_area_fraction, keypoints.data(), k,
              kcols, &r, instances.is_none() ? nullptr : planes.data());
          if (!s.ok()) throw py::value_error(s.message());
          py::array_t<double> steps({static_cast<py::ssize_t>(r.steps.size() / 24),
                                     py::ssize_t{24}});
          std::memcpy(steps.mutable_data(), r.steps.data(), r.steps.size() * sizeof(double));
          py::object mask_out = py::none();
          if (bpp > 0) {
            py::array out(m.dtype(), {r.mask_height, r.mask_width});
            std::memcpy(out.mutable_data(), r.mask.data(), r.mask.size());
            mask_out = out;
          }
          py::array_t<float> b({static_cast<py::ssize_t>(r.boxes.size() / 4), py::ssize_t{4}});
          std::memcpy(b.mutable_data(), r.boxes.data(), r.boxes.size() * sizeof(float));
          py::array_t<uint8_t> keep(static_cast<py::ssize_t>(r.keep.size()));
          std::memcpy(keep.mutable_data(), r.keep.data(), r.keep.size());
          py::array_t<float> kp({static_cast<py::ssize_t>(k), py::ssize_t{3}});
          std::memcpy(kp.mutable_data(), r.keypoints.data(), r.keypoints.size() * sizeof(float));
          if (!instances.is_none()) {
            // The output's size: the last step's out_w, out_h (numbers 3 and 4).
            const size_t last = r.steps.size() - 24;
            const py::ssize_t oh = r.steps.empty() ? height : py::ssize_t(r.steps[last + 4]);
            const py::ssize_t ow = r.steps.empty() ? width : py::ssize_t(r.steps[last + 3]);
            const py::ssize_t kept = oh * ow == 0 ? 0 : py::ssize_t(r.instances.size()) / (oh * ow);
            py::array_t<uint8_t> ins({kept, oh, ow});
            std::memcpy(ins.mutable_data(), r.instances.data(), r.instances.size());
            return py::make_tuple(steps, mask_out, b, keep, kp, ins);
          }
          return py::make_tuple(steps, mask_out, b, keep, kp);
        },
        py::arg("transforms"), py::arg("width"), py::arg("height"), py::arg("seed"),
        py::arg("mask") = py::none(), py::arg("ignore_index") = 255,
        py::arg("boxes") = py::array_t<double>(std::vector<py::ssize_t>{0, 4}),
        py::arg("box_format") = "xyxy", py::arg("min_size") = 1.0,
        py::arg("min_area_fraction") = 0.0,
        py::arg("keypoints") = py::array_t<double>(std::vector<py::ssize_t>{0, 2}),
        py::arg("instances") = py::none(),
        "The targets' geometry of `transforms` for a width x height image drawn from\n"
        "Rng(seed), replayed on a mask, boxes and keypoints: (steps [S, 24], mask, boxes\n"
        "[N', 4] xyxy, keep [N], keypoints [K, 3]), then with `instances` (uint8 [N, H, W],\n"
        "a plane per box) the kept planes moved as instance masks [N', H', W'].");
  m.def("_sample_color_jitter",
        [](const Transform& t, uint64_t seed, int n) {
          // Per draw: the permutation (4 values) then the four factors (NaN when off).
          const std::vector<double> v = SampleColorJitter(t, seed, n);
          py::array_t<double> out({n, 8});
          std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
          return out;
        },
        py::arg("transform"), py::arg("seed"), py::arg("n"));

  // Testing hooks: the decoder and the RandomResizedCrop sampler on their own.
  m.def("_decode",
        [](py::bytes data, int64_t max_pixels) {
          std::string bytes = data;
          Decoder decoder(max_pixels);
          DecodedImage r;
          Status s = decoder.Decode(reinterpret_cast<const uint8_t*>(bytes.data()),
                                    bytes.size(), &r);
          if (!s.ok()) Throw(s);
          py::array_t<uint8_t> out({r.height, r.width, 3});
          for (int y = 0; y < r.height; ++y) {
            std::memcpy(out.mutable_data(y, 0, 0), r.pixels + y * r.stride,
                        static_cast<size_t>(r.width) * 3);
          }
          return out;
        },
        py::arg("data"), py::arg("max_pixels") = int64_t{1} << 28,
        "Decodes JPEG, PNG, WebP, TIFF, BMP or PNM bytes to an RGB [H, W, 3] uint8 array (for tests).");
  m.def("_sample_random_resized_crop",
        [](int width, int height, const Transform& t, uint64_t seed, int n) {
          py::array_t<int32_t> out({n, 4});
          for (int i = 0; i < n; ++i) {
            const CropBox r =
                SampleRandomResizedCropBox(width, height, t, seed, static_cast<uint64_t>(i));
            int32_t* o = out.mutable_data(i, 0);
            o[0] = r.top; o[1] = r.left; o[2] = r.height; o[3] = r.width;
          }
          return out;
        },
        py::arg("width"), py::arg("height"), py::arg("transform"), py::arg("seed"), py::arg("n"),
        "n crops (top, left, height, width) as torchvision's get_params returns them (for tests).");
}

}  // namespace stoker::python
