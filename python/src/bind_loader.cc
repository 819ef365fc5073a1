// Copyright 2026 The stoker Authors.
//
// Bindings for the Loader and its LoaderState (stoker/loader.h; LoaderOptions:
// bind_loader_options.cc). Every call
// that can block releases the GIL. Batches cross into Python without a copy
// (batch_arrays.h).
#include <pybind11/numpy.h>
#include <algorithm>
#include <cmath>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "errors.h"
#include "batch_arrays.h"
#include "gil_release_delete.h"
#include "stoker/loader.h"
#include "stoker/types.h"

namespace py = pybind11;

namespace stoker::python {

namespace {

// Loader's holder: joins the worker threads with the GIL released, so a
// worker waiting for the GIL in a Lambda can finish its sample.
using LoaderHolder = std::unique_ptr<Loader, GilReleaseDelete<Loader>>;

// Before start() and stop(): cancels the epoch in progress and waits for its
// workers in slices, checking for signals between them, so that Ctrl-C (on
// the main thread) interrupts a wait for a worker blocked in a Python
// callable instead of hanging with it; Start() or Stop() then waits for no
// worker. Raises KeyboardInterrupt (the epoch stays cancelled).
void CancelAndAwaitWorkers(Loader& l) {
  SignalPoll poll;
  WithoutGil([&] {
    l.Cancel();
    while (!l.AwaitWorkersLeft(SignalPoll::kMs)) {
      if (!poll.fn()().ok()) return;
    }
  });
  poll.RaiseIfSignalled();
}

}  // namespace

void RegisterLoader(py::module_& m) {
  py::class_<LoaderState>(m, "LoaderState",
                          "A checkpoint (stoker/loader.h LoaderState): Loader.state() fills "
                          "it; Loader.resume() checks it against the loader.")
      .def(py::init<>())
      .def_readwrite("version", &LoaderState::version)
      .def_readwrite("epoch", &LoaderState::epoch)
      .def_readwrite("consumed", &LoaderState::consumed)
      .def_readwrite("world_size", &LoaderState::world_size)
      .def_readwrite("seed", &LoaderState::seed)
      .def_readwrite("shuffle", &LoaderState::shuffle)
      .def_readwrite("num_samples", &LoaderState::num_samples)
      .def_readwrite("fingerprint", &LoaderState::fingerprint);

  py::class_<Loader, LoaderHolder>(m, "Loader")
      .def(py::init([](std::shared_ptr<Source> source, const LoaderOptions& options) {
             return LoaderHolder(Unwrap(Loader::Create(std::move(source), options)).release());
           }),
           py::arg("source"), py::arg("options"))
      .def("__len__", &Loader::num_batches)
      .def_property_readonly("num_samples", &Loader::num_samples)
      .def_property_readonly(
          "dct_scaling",
          [](const Loader& l) {
            return l.options().dct_scaling == LoaderOptions::DctScaling::kOn;
          },
          "Whether JPEG DCT-domain downscaling is on (LoaderOptions::DctScaling resolved).")
      .def_property_readonly("height", &Loader::height)
      .def_property_readonly("width", &Loader::width)
      .def_property_readonly("epoch", &Loader::epoch)
      .def("set_epoch",
           [](Loader& l, int64_t epoch) {
             RefuseInWorkerThread("Loader.set_epoch()");
             l.SetEpoch(epoch);
           },
           py::arg("epoch"))
      .def("start",
           [](Loader& l) {
             RefuseInWorkerThread("Loader.start()");
             CancelAndAwaitWorkers(l);
             // WithoutGil, as next(): a daemon thread may be starting an epoch when the
             // interpreter shuts down (gil_scoped_release's destructor would abort then).
             Status s = WithoutGil([&] { return l.Start(); });
             if (!s.ok()) Throw(s);
           })
      .def_property_readonly("run", &Loader::run,
                             "The run the last start() began (see next()).")
      .def("next",
           [](Loader& l, uint64_t run) -> py::object {
             RefuseInWorkerThread("next()");
             BatchPtr batch;
             bool end = false;
             SignalPoll poll;
             // Not gil_scoped_release: a daemon thread may still be in here
             // when the interpreter shuts down (WithoutGil parks it then).
             Status s = WithoutGil(
                 [&] { return l.Next(&batch, &end, poll.fn(), SignalPoll::kMs, run); });
             poll.RaiseIfSignalled();
             if (!s.ok()) ThrowIterationStatus(s);
             if (end) return py::none();
             return BatchArrays(std::move(batch));
           },
           py::arg("run") = Loader::kCurrentRun,
           "The next batch of `run` (the `run` read after its start(); 0: the current one) as "
           "(images, labels, ids) numpy arrays, or None at the end (or once another start() "
           "began a newer run); with collate='list', images is a list of per-sample arrays.")
      .def("stop",
           [](Loader& l) {
             RefuseInWorkerThread("Loader.stop()");
             CancelAndAwaitWorkers(l);
             // WithoutGil: at exit a helper thread may still wait in here.
             WithoutGil([&] { l.Stop(); });
           })
      .def("cancel", [](Loader& l) { WithoutGil([&] { l.Cancel(); }); },
           "Cancels the epoch without waiting for the samples in hand (Ctrl-C: a Python "
           "callable may block); the next start(), stop() or the destructor waits for them.")
      .def("abandon",
           [](py::object self) {
             // At interpreter exit: a worker may be blocked in a Python
             // callable for good, so the loader is cancelled and never
             // destroyed (its destructor would wait for that worker); the
             // process exit ends its threads.
             Loader& l = self.cast<Loader&>();
             WithoutGil([&] { l.Cancel(); });
             self.inc_ref();
           },
           "Cancels the epoch and leaks the loader (interpreter exit only).")
      .def("state", &Loader::state)
      .def("resume",
           [](Loader& l, const LoaderState& st) {
             RefuseInWorkerThread("Loader.load_state_dict()");
             Status s = WithoutGil([&] { return l.Resume(st); });
             if (!s.ok()) Throw(s);
           },
           py::arg("state"))
      .def("batches_left", &Loader::num_batches_left)
      .def_property_readonly("tracer", &Loader::tracer)
      .def_property_readonly("random_access",
                             [](const Loader& l) { return l.source()->random_access(); })
      .def("stats", [](const Loader& l) {
        const LoaderStats s = l.stats();
        py::dict d = StageDict(s.total);
        d["epoch"] = StageDict(s.epoch);
        d["current_epoch"] = s.current_epoch;
        d["threads"] = s.threads;
        d["prefetch"] = s.prefetch;
        d["tuning"] = s.tuning;
        d["tuning_changes"] = s.tuning_changes;
        d["batch_buffers"] = s.batch_buffers;
        d["batch_buffer_bytes"] = s.batch_buffer_bytes;
        d["batch_region_allocations"] = s.batch_region_allocations;
        d["scratch_bytes"] = s.scratch_bytes;
        d["scratch_budget"] = s.scratch_budget;
        d["scratch_releases"] = s.scratch_releases;
        d["rank"] = s.rank;
        d["world_size"] = s.world_size;
        d["local_world_size"] = s.local_world_size;
        d["cores"] = s.cores;
        d["prefetch_discarded_batches"] = s.prefetch_discarded_batches;
        d["truncated_shards"] = s.truncated_shards;
        if (s.shard_cache) {
          py::dict c;
          c["downloads"] = s.shard_cache_downloads;
          c["hits"] = s.shard_cache_hits;
          c["capacity"] = s.shard_cache_capacity;
          c["floor"] = s.shard_cache_floor;
          c["too_small"] = s.shard_cache_too_small;
          c["advice"] = s.shard_cache_advice;
          c["unvalidated"] = s.shard_cache_unvalidated;
          c["unvalidated_objects"] = s.shard_cache_unvalidated_objects;
          d["shard_cache"] = c;
        }
        d["batches_in_flight"] = s.batches_in_flight;
        d["ready_batches"] = s.ready_batches;
        if (l.options().cache_bytes > 0) {
          py::dict c;
          c["kind"] = l.options().cache_kind == LoaderOptions::CacheKind::kOutput ? "output"
                                                                                 : "decoded";
          c["hits"] = s.cache_hits;
          c["misses"] = s.cache_misses;
          const int64_t lookups = s.cache_hits + s.cache_misses;
          c["hit_rate"] = lookups > 0 ? static_cast<double>(s.cache_hits) / lookups : 0.0;
          c["evicted"] = s.cache_evicted;
          c["entries"] = s.cache_entries;
          c["stale"] = s.cache_stale;
          c["bytes"] = s.cache_bytes;
          c["capacity"] = s.cache_capacity;
          c["advice"] = s.cache_advice;
          d["cache"] = c;
        }
        return d;
      });
}

}  // namespace stoker::python
