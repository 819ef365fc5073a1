// Copyright 2026 The stoker Authors.
//
// Binding for the stage-caching diagnosis (stoker/diagnose.h): stoker.diagnose.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <utility>
#include <vector>

#include "batch_arrays.h"
#include "errors.h"
#include "stoker/diagnose.h"
#include "stoker/loader.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterDiagnose(py::module_& m) {
  m.def("diagnose",
        [](Loader& loader, py::object step, int batches, int agree, int max_rounds) {
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
          options.agree = agree;
          options.max_rounds = max_rounds;
          StatusOr<Diagnosis> result = WithoutGil([&] {
            return Diagnose(&loader, call, options);
          });
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
          out["state"] = d.state;
          out["decided"] = d.decided;
          out["data_bound"] = d.data_bound;
          out["wait_fraction"] = d.wait_fraction;
          out["round_waits"] = d.round_waits;
          out["next_fraction"] = d.next_fraction;
          out["step_slowdown"] = d.step_slowdown;
          out["causes"] = d.causes;
          py::dict cpu;
          cpu["cores"] = d.cpu.cores;
          cpu["machine_cores"] = d.cpu.machine_cores;
          cpu["machine_busy"] = d.cpu.machine_busy;
          cpu["process_busy"] = d.cpu.process_busy;
          cpu["step_alone"] = d.cpu.step_alone;
          cpu["others_busy"] = d.cpu.others_busy;
          cpu["saturated"] = d.cpu.saturated;
          cpu["contended"] = d.cpu.contended;
          cpu["summary"] = d.cpu.summary;
          out["cpu"] = cpu;
          out["bottleneck"] = d.bottleneck;
          out["cost_factor"] = d.cost_factor;
          out["verdict"] = d.verdict;
          out["table"] = FormatDiagnosis(d);
          return out;
        },
        py::arg("loader"), py::arg("step"), py::arg("batches"), py::arg("agree"),
        py::arg("max_rounds"));
  // `stoker tune --loader`: the sweep over a user's Loader (its source and
  // options, batch size included unless batch_sizes is given). Returns the
  // table with the recommendation, and the JSON `stoker tune --json` prints.
  m.def("tune",
        [](Loader& loader, std::vector<int> threads, std::vector<int> prefetch,
           std::vector<int> batch_sizes, double seconds, double step_ms, bool include_auto,
           std::vector<int> codec_threads) {
          TuneOptions t;
          t.threads = std::move(threads);
          t.prefetch = std::move(prefetch);
          t.batch_sizes = batch_sizes.empty() ? std::vector<int>{loader.options().batch_size}
                                              : std::move(batch_sizes);
          t.seconds = seconds;
          t.step_ms = step_ms;
          t.include_auto = include_auto;
          t.codec_threads = std::move(codec_threads);
          StatusOr<std::vector<TuneResult>> results = WithoutGil([&] {
            return Tune(loader.source(), loader.options(), t);
          });
          if (!results.ok()) ThrowIterationStatus(results.status());
          const TuneRecommendation rec = Recommend(results.value(), step_ms);
          py::dict out;
          out["table"] = FormatTune(results.value(), rec);
          out["json"] = TuneJson(results.value(), rec, step_ms);
          return out;
        },
        py::arg("loader"), py::arg("threads"), py::arg("prefetch"), py::arg("batch_sizes"),
        py::arg("seconds"), py::arg("step_ms"), py::arg("include_auto"),
        py::arg("codec_threads") = std::vector<int>{});
}

}  // namespace stoker::python
