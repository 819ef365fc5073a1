// Copyright 2026 The stoker Authors.
//
// Binding for the stage-caching diagnosis (stoker/diagnose.h): stoker.diagnose.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "batch_arrays.h"
#include "errors.h"
#include "stoker/diagnose.h"
#include "stoker/loader.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterDiagnose(py::module_& m) {
  m.def("diagnose",
        [](Loader& loader, py::object step, int batches) {
          // The step runs with the GIL; the first Python error stops calling
          // it and is raised when the diagnosis returns.
          std::unique_ptr<py::error_already_set> error;
          auto call = [&](const BatchPtr& batch) {
            py::gil_scoped_acquire acquire;
            if (error || step.is_none()) return;
            try {
              step(BatchArrays(batch));
            } catch (py::error_already_set& e) {
              error = std::make_unique<py::error_already_set>(std::move(e));
            }
          };
          DiagnoseOptions options;
          options.batches = batches;
          StatusOr<Diagnosis> result = [&] {
            py::gil_scoped_release release;
            return Diagnose(&loader, call, options);
          }();
          if (error) throw std::move(*error);
          if (!result.ok()) ThrowIterationStatus(result.status());
          const Diagnosis& d = result.value();
          py::list modes;
          for (const ModeResult& mr : d.modes) {
            py::dict row;
            row["mode"] = mr.name;
            row["stage"] = mr.stage;
            row["images_per_sec"] = mr.images_per_sec;
            row["ratio_to_previous"] = mr.ratio_to_previous;
            modes.append(row);
          }
          py::dict out;
          out["modes"] = modes;
          out["stages"] = StageDict(d.pipeline_stats.total);
          out["data_bound"] = d.data_bound;
          out["bottleneck"] = d.bottleneck;
          out["cost_factor"] = d.cost_factor;
          out["verdict"] = d.verdict;
          out["table"] = FormatDiagnosis(d);
          return out;
        },
        py::arg("loader"), py::arg("step"), py::arg("batches"));
}

}  // namespace stoker::python
