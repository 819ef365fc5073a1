// Copyright 2026 The stoker Authors.
//
// The binding of LoaderOptions (stoker/loader.h): Python's Loader() arguments,
// each checked here by name (args.h; the choices by the engine's tables,
// stoker/choice.h), so the Python layer passes them through. The engine then
// checks their combinations (Loader::Create).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "errors.h"
#include "target_args.h"
#include "stoker/choice.h"
#include "stoker/loader.h"
#include "stoker/types.h"

namespace py = pybind11;

namespace stoker::python {

namespace {

// Loader(targets=...): {field: role or dict} (target_args.h).
std::vector<TargetDecl> ParseTargets(const py::object& targets) {
  std::vector<TargetDecl> out;
  if (targets.is_none()) return out;
  if (!py::isinstance<py::dict>(targets)) {
    throw py::type_error("targets: expected a dict field name -> role or dict, got " +
                         py::repr(targets).cast<std::string>());
  }
  for (const auto& [k, v] : targets.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("targets: field names are str, got " +
                           py::repr(k).cast<std::string>());
    }
    const std::string field = k.cast<std::string>();
    TargetDecl d = ParseTargetDecl("targets['" + field + "']", v, /*box_rules=*/true);
    d.field = field;
    out.push_back(std::move(d));
  }
  return out;
}

// Loader(collate={field: mode}): the per-field overrides.
std::vector<std::pair<std::string, LoaderOptions::Collate>> FieldCollate(const py::object& d) {
  std::vector<std::pair<std::string, LoaderOptions::Collate>> out;
  if (d.is_none()) return out;
  if (!py::isinstance<py::dict>(d)) {
    throw py::type_error("collate: expected 'batch', 'list', 'pad' or a dict field name -> one "
                         "of them, got " + TypeAndRepr(d));
  }
  for (const auto& [k, v] : d.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("collate: keys are field names, got " +
                           py::repr(k).cast<std::string>());
    }
    const std::string name = k.cast<std::string>();
    out.emplace_back(name, ChoiceArg("collate['" + name + "']", v, kCollateChoices));
  }
  return out;
}

// dct_scaling=True, False or "auto" (LoaderOptions::DctScaling).
LoaderOptions::DctScaling DctScalingArg(const py::handle& v) {
  using Dct = LoaderOptions::DctScaling;
  if (IsBool(v)) return PyObject_IsTrue(v.ptr()) == 1 ? Dct::kOn : Dct::kOff;
  if (py::isinstance<py::str>(v)) {
    if (v.cast<std::string>() == "auto") return Dct::kAuto;
    throw py::value_error("dct_scaling must be True, False or 'auto', got " +
                          py::repr(v).cast<std::string>());
  }
  throw py::type_error("dct_scaling must be True, False or 'auto', got " + TypeAndRepr(v));
}

}  // namespace

void RegisterLoaderOptions(py::module_& m) {
  const LoaderOptions defaults;
  py::class_<LoaderOptions>(
      m, "LoaderOptions",
      "A Loader's options (stoker/loader.h), by keyword only, each defaulting to the C++\n"
      "default, for Loader(source, options) and DeviceLoader(source, options, ...). The\n"
      "C++ Loader checks them (ValueError naming the option).")
      .def(py::init([](const py::object& batch_size, const py::object& shuffle,
                       const py::object& seed, const py::object& drop_last,
                       std::vector<Transform> transforms, const py::object& threads,
                       const py::object& prefetch, const py::object& dtype,
                       const py::object& layout, const py::object& on_error,
                       const py::object& dct_scaling, const py::object& max_pixels,
                       const py::object& max_threads, const py::object& max_prefetch,
                       std::shared_ptr<BatchAllocator> allocator, const SamplerSpec& sampler,
                       const py::object& cache, const py::object& cache_bytes, int rank,
                       int world_size, int local_world_size, const py::object& collate,
                       const py::object& field_collate, const py::object& rank_tail,
                       const py::object& cache_validate, const py::object& pad_value,
                       std::vector<FieldStep> field_steps, const py::object& targets,
                       const py::object& max_padded_bytes) {
             constexpr int64_t kIntMax = INT32_MAX;
             LoaderOptions o;
             o.batch_size = static_cast<int>(IntArg("batch_size", batch_size, 1, kIntMax));
             o.shuffle = BoolArg("shuffle", shuffle);
             o.seed = Uint64Arg("seed", seed);
             o.drop_last = BoolArg("drop_last", drop_last);
             o.transforms = std::move(transforms);
             o.field_steps = std::move(field_steps);
             // threads: None (one per core), "auto" (tuned) or a count; prefetch: "auto"
             // (tuned, from 2) or a count.
             o.auto_threads =
                 py::isinstance<py::str>(threads) && threads.cast<std::string>() == "auto";
             if (!threads.is_none() && !o.auto_threads) {
               if (IsBool(threads) || !py::isinstance<py::int_>(threads) ||
                   threads.cast<py::int_>() < py::int_(0)) {
                 throw py::value_error("threads must be a non-negative int, None or 'auto', got " +
                                       py::repr(threads).cast<std::string>());
               }
               o.threads = static_cast<int>(IntArg("threads", threads, 0, kIntMax));
             }
             o.auto_prefetch =
                 py::isinstance<py::str>(prefetch) && prefetch.cast<std::string>() == "auto";
             if (!o.auto_prefetch) {
               if (IsBool(prefetch) || !py::isinstance<py::int_>(prefetch) ||
                   prefetch.cast<py::int_>() < py::int_(1)) {
                 throw py::value_error("prefetch must be a positive int or 'auto', got " +
                                       py::repr(prefetch).cast<std::string>());
               }
               o.prefetch = static_cast<int>(IntArg("prefetch", prefetch, 1, kIntMax));
             }
             o.max_threads = max_threads.is_none()
                                 ? 0
                                 : static_cast<int>(IntArg("max_threads", max_threads, 0, kIntMax));
             o.max_prefetch = static_cast<int>(IntArg("max_prefetch", max_prefetch, 1, kIntMax));
             o.dtype = ChoiceArg("dtype", dtype, kDTypeChoices);
             o.layout = ChoiceArg("layout", layout, kLayoutChoices);
             o.on_error = ChoiceArg("on_error", on_error, kOnErrorChoices);
             o.dct_scaling = DctScalingArg(dct_scaling);
             o.max_pixels = IntArg("max_pixels", max_pixels, 0, INT64_MAX);
             o.collate = ChoiceArg("collate", collate, kCollateChoices);
             o.field_collate = FieldCollate(field_collate);
             o.pad_value = FiniteArg("pad_value", pad_value);
             o.max_padded_bytes = IntArg("max_padded_bytes", max_padded_bytes, 1, INT64_MAX);
             o.targets = ParseTargets(targets);
             o.sampler = sampler;
             o.cache_validate = BoolArg("cache_validate", cache_validate);
             // Python's cache= and cache_bytes= are one C++ option: cache_bytes > 0.
             if (!cache.is_none()) {
               o.cache_kind = ChoiceArg("cache", cache, kCacheChoices);
               if (IsBool(cache_bytes) || !py::isinstance<py::int_>(cache_bytes) ||
                   cache_bytes.cast<py::int_>() < py::int_(1)) {
                 throw py::value_error(
                     "cache='" + std::string(ChoiceName(o.cache_kind, kCacheChoices)) +
                     "' needs cache_bytes, a positive number of bytes (e.g. 8 << 30), got " +
                     py::repr(cache_bytes).cast<std::string>());
               }
               o.cache_bytes = cache_bytes.cast<size_t>();
             } else if (!cache_bytes.is_none()) {
               throw py::value_error("cache_bytes given without cache='decoded' or cache='output'");
             } else if (o.cache_validate) {
               throw py::value_error("cache_validate=True given without cache='decoded' or "
                                     "cache='output'");
             }
             o.rank_tail = rank_tail.is_none()
                               ? LoaderOptions::RankTail::kFromDropLast
                               : ChoiceArg("rank_tail", rank_tail, kRankTailChoices);
             o.allocator = std::move(allocator);  // null: host memory
             o.rank = rank;
             o.world_size = world_size;
             o.local_world_size = local_world_size;
             return o;
           }),
           py::kw_only(), py::arg("batch_size") = defaults.batch_size,
           py::arg("shuffle") = defaults.shuffle, py::arg("seed") = defaults.seed,
           py::arg("drop_last") = defaults.drop_last,
           py::arg("transforms") = std::vector<Transform>(), py::arg("threads") = py::none(),
           py::arg("prefetch") = defaults.prefetch, py::arg("dtype") = DTypeName(defaults.dtype),
           py::arg("layout") = LayoutName(defaults.layout), py::arg("on_error") = "raise",
           py::arg("dct_scaling") = "auto", py::arg("max_pixels") = defaults.max_pixels,
           py::arg("max_threads") = py::none(), py::arg("max_prefetch") = defaults.max_prefetch,
           py::arg("allocator") = nullptr, py::arg("sampler") = SamplerSpec(),
           py::arg("cache") = py::none(), py::arg("cache_bytes") = py::none(),
           py::arg("rank") = defaults.rank, py::arg("world_size") = defaults.world_size,
           py::arg("local_world_size") = defaults.local_world_size,
           py::arg("collate") = "batch", py::arg("field_collate") = py::none(),
           py::arg("rank_tail") = py::none(), py::arg("cache_validate") = defaults.cache_validate,
           py::arg("pad_value") = defaults.pad_value,
           py::arg("field_steps") = std::vector<FieldStep>(), py::arg("targets") = py::none(),
           py::arg("max_padded_bytes") = defaults.max_padded_bytes);
}

}  // namespace stoker::python
