// Copyright 2026 The stoker Authors.
//
// Binding for the drift check of `stoker stats --against` (stoker/drift.h,
// stoker/stats.h), used by stoker.Monitor: the same report reader and the
// same tests, not a Python copy of them.
#include <pybind11/pybind11.h>

#include <string>

#include "errors.h"
#include "stoker/drift.h"
#include "stoker/stats.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterStats(py::module_& m) {
  const DriftOptions defaults;
  m.def("compare_stats",
        [](const std::string& now, const std::string& reference, double class_alpha,
           double class_min_shift, double ks_alpha, double ks_min_d, double colour_threshold,
           double format_threshold) {
          StatusOr<DatasetStats> a = StatsFromJson(now);
          if (!a.ok()) throw py::value_error("now: " + a.status().message());
          StatusOr<DatasetStats> b = StatsFromJson(reference);
          if (!b.ok()) throw py::value_error("reference: " + b.status().message());
          DriftOptions o;
          o.class_alpha = class_alpha;
          o.class_min_shift = class_min_shift;
          o.ks_alpha = ks_alpha;
          o.ks_min_d = ks_min_d;
          o.colour_threshold = colour_threshold;
          o.format_threshold = format_threshold;
          return VerdictsToJson(CompareStats(a.value(), b.value(), o));
        },
        py::arg("now"), py::arg("reference"), py::arg("class_alpha") = defaults.class_alpha,
        py::arg("class_min_shift") = defaults.class_min_shift,
        py::arg("ks_alpha") = defaults.ks_alpha, py::arg("ks_min_d") = defaults.ks_min_d,
        py::arg("colour_threshold") = defaults.colour_threshold,
        py::arg("format_threshold") = defaults.format_threshold,
        "`stoker stats NOW --against REFERENCE` on two stats reports (JSON text, as "
        "`stoker stats --json` writes them): the verdicts as the JSON array "
        "VerdictsToJson writes ({item, verdict, statistic, threshold, detail}). "
        "ValueError naming the side for text that is not such a report.");
}

}  // namespace stoker::python
