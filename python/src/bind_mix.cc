// Copyright 2026 The stoker Authors.
//
// Binding for stoker.Mix (stoker/mix.h): several random-access sources read
// as one, with weights. The keyword arguments (stop=, num_samples=,
// replacement=, labels=) map onto MixOptions here; every check of the
// weights and sizes is MixSource::Open's (ValueError with its message).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "errors.h"
#include "stoker/mix.h"

namespace py = pybind11;

namespace stoker::python {
namespace {

constexpr const char* kDoc = R"doc(
Several sources read as one, with weights: a Source, passed to Loader like any other.

    mix = stoker.Mix([stoker.ImageFolder("web"), stoker.ImageFolder("curated")],
                     weights=[0.7, 0.3], stop="first_exhausted")
    loader = stoker.Loader(mix, batch_size=256, shuffle=True, return_indices=True)
    for images, labels, ids in loader:
        source = stoker.Mix.source_of(ids)   # 0 (web) or 1 (curated), per sample

sources: a list of random-access sources (ImageFolder, Npy, HDF5, Shards over local
  uncompressed .tar), each with at least one sample, at most 127. A stream (compressed or
  remote Shards) is refused: the epoch's sequence is drawn before it starts, and a stream
  cannot be read at any position of it exactly (ranks, resume); convert such shards to
  local .tar (`stoker convert`) or read them with their own Loader. A Mix is not a source
  of a Mix: list all the sources in one.
weights: one number per source, finite and > 0 (not necessarily summing to 1); None: each
  source's size (every sample equally likely).
stop: how long an epoch is when neither num_samples nor replacement is given.
  "all_exhausted" (default): every sample of every source once; each draw picks among the
  sources with samples left at the weights' rates, so a source used up leaves the mix.
  "first_exhausted": the epoch ends where the first source, relative to its weight, runs
  out; no sample twice, and each source's share is exact (about L * weight, L the length).
num_samples: samples per epoch, each source its exact share of them (about num_samples *
  weight); a source whose share exceeds its size is read again, pass after pass (a new
  order each pass when shuffled): fixed proportions by up- or down-sampling.
replacement: True: independent draws (a source by weight, then one of its samples
  uniformly), num_samples of them (default: the sources' sizes summed); shares are random.
labels: "same" (default): every source reports the same classes (or none: one integer
  label space); "union": labels mapped by class name into the union of the class lists;
  "per_source": labels kept as each source gives them (tell them apart by source_of).

The epoch's sequence (which source, which of its samples) is a function of (seed, epoch)
and these arguments only: the same for any thread count, split exactly by ranks, resumed
exactly at any world size. Loader(shuffle=True) shuffles each source and interleaves the
sources at random; shuffle=False reads each source in order, interleaved evenly by weight.
A sample's id (return_indices=True) carries its source in its high bits: source_of(ids)
and id_in_source(ids) take it apart. Loader(sampler=) does not apply to a Mix.
See docs/mixing.md for the semantics next to tf.data and WebDataset.)doc";

MixOptions::Mode ModeOf(const std::optional<std::string>& stop, std::optional<int64_t> num_samples,
                        bool replacement) {
  if (num_samples.has_value() && *num_samples <= 0) {
    throw py::value_error("Mix: num_samples must be a positive number of samples, got " +
                          std::to_string(*num_samples));
  }
  if (replacement) {
    if (stop.has_value()) {
      throw py::value_error("Mix: stop= does not go with replacement=True (draws with "
                            "replacement never run out; num_samples= sets the epoch's length)");
    }
    return MixOptions::Mode::kReplacement;
  }
  if (num_samples.has_value()) {
    if (stop.has_value()) {
      throw py::value_error("Mix: num_samples= sets the epoch's length itself; leave stop= out");
    }
    return MixOptions::Mode::kNumSamples;
  }
  const std::string s = stop.value_or("all_exhausted");
  if (s == "all_exhausted") return MixOptions::Mode::kAllExhausted;
  if (s == "first_exhausted") return MixOptions::Mode::kFirstExhausted;
  throw py::value_error("Mix: stop must be \"all_exhausted\" or \"first_exhausted\", got \"" + s +
                        "\"");
}

MixOptions::Labels LabelsOf(const std::string& labels) {
  if (labels == "same") return MixOptions::Labels::kSame;
  if (labels == "union") return MixOptions::Labels::kUnion;
  if (labels == "per_source") return MixOptions::Labels::kPerSource;
  throw py::value_error("Mix: labels must be \"same\", \"union\" or \"per_source\", got \"" +
                        labels + "\"");
}

std::vector<std::shared_ptr<Source>> SourcesOf(const py::object& arg) {
  if (py::isinstance<Source>(arg) || !py::isinstance<py::sequence>(arg) ||
      py::isinstance<py::str>(arg)) {
    throw py::type_error("Mix: sources must be a list of stoker sources, got " +
                         std::string(py::str(arg.get_type().attr("__name__"))));
  }
  std::vector<std::shared_ptr<Source>> out;
  const py::sequence seq = arg.cast<py::sequence>();
  for (size_t i = 0; i < seq.size(); ++i) {
    const py::object item = seq[i];
    if (!py::isinstance<Source>(item)) {
      throw py::type_error("Mix: sources[" + std::to_string(i) + "] is a " +
                           std::string(py::str(item.get_type().attr("__name__"))) +
                           ", not a stoker source (ImageFolder, Npy, HDF5, Shards)");
    }
    out.push_back(item.cast<std::shared_ptr<Source>>());
  }
  return out;
}

const char* StopName(MixOptions::Mode mode) {
  switch (mode) {
    case MixOptions::Mode::kAllExhausted: return "all_exhausted";
    case MixOptions::Mode::kFirstExhausted: return "first_exhausted";
    case MixOptions::Mode::kNumSamples: return "num_samples";
    case MixOptions::Mode::kReplacement: return "replacement";
  }
  return "";
}

}  // namespace

void RegisterMix(py::module_& m) {
  py::class_<MixSource, Source, std::shared_ptr<MixSource>>(m, "Mix", kDoc)
      .def(py::init([](const py::object& sources, const std::optional<std::vector<double>>& weights,
                       const std::optional<std::string>& stop, std::optional<int64_t> num_samples,
                       bool replacement, const std::string& labels) {
             MixOptions o;
             o.weights = weights.value_or(std::vector<double>{});
             if (weights.has_value() && weights->empty()) {
               throw py::value_error("Mix: weights is empty; give one weight per source, or "
                                     "None (weights = the sources' sizes)");
             }
             o.mode = ModeOf(stop, num_samples, replacement);
             o.num_samples = num_samples.value_or(-1);
             o.labels = LabelsOf(labels);
             std::vector<std::shared_ptr<Source>> children = SourcesOf(sources);
             StatusOr<std::shared_ptr<MixSource>> mix = WithoutGil([&] {
               return MixSource::Open(std::move(children), o);
             });
             return Unwrap(std::move(mix));
           }),
           py::arg("sources"), py::arg("weights") = py::none(), py::kw_only(),
           py::arg("stop") = py::none(), py::arg("num_samples") = py::none(),
           py::arg("replacement") = false, py::arg("labels") = "same")
      .def_property_readonly(
          "sources",
          [](const MixSource& mix) {
            std::vector<std::shared_ptr<Source>> out;
            for (int i = 0; i < mix.num_sources(); ++i) out.push_back(mix.source(i));
            return out;
          },
          "The sources, in the order given (source_of's numbering).")
      .def_property_readonly("probabilities", &MixSource::probabilities,
                             "The weights normalised to sum to 1.")
      .def_property_readonly(
          "stop", [](const MixSource& mix) { return StopName(mix.options().mode); },
          "What ends an epoch: \"all_exhausted\", \"first_exhausted\", \"num_samples\" or "
          "\"replacement\".")
      .def_property_readonly("samples_per_source", &MixSource::SamplesPerSource,
                             "Samples each source gives per epoch (replacement=True: the "
                             "expected counts, rounded down).")
      .def_static(
          "source_of",
          [](const py::object& ids) { return ids.attr("__rshift__")(MixSource::kSourceShift); },
          py::arg("ids"),
          "The source index (into `sources`) of each sample id: an int, or a numpy array or "
          "torch tensor of int64 ids (a batch's ids, Loader(return_indices=True)), as the same "
          "type.")
      .def_static(
          "id_in_source",
          [](const py::object& ids) {
            return ids.attr("__and__")((int64_t{1} << MixSource::kSourceShift) - 1);
          },
          py::arg("ids"), "Each sample id's id within its own source (as source_of).");
}

}  // namespace stoker::python
