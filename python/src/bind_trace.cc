// Copyright 2026 The stoker Authors.
//
// Bindings for the span recorder (stoker/trace.h): Loader.tracer() and the
// Tracer's session, readers and writers. stoker.Loader.trace() and
// stoker.profiler (python/stoker/_trace.py) are built on these.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "errors.h"
#include "stoker/loader.h"
#include "stoker/trace.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterTrace(py::module_& m) {
  py::class_<Tracer, std::shared_ptr<Tracer>>(
      m, "Tracer",
      "A loader's span recorder (stoker/trace.h): off until start(); per recording thread a "
      "ring of spans_per_thread spans (48 bytes each) keeps the newest.")
      .def(
          "start",
          [](Tracer& t, size_t spans_per_thread) {
            TraceOptions o;
            o.spans_per_thread = spans_per_thread;
            Status s = t.Start(o);
            if (!s.ok()) Throw(s);
          },
          py::arg("spans_per_thread") = TraceOptions().spans_per_thread)
      .def("stop", &Tracer::Stop)
      .def_property_readonly("on", &Tracer::on)
      .def_property_readonly("session_start_ns", &Tracer::session_start_ns)
      .def(
          "events_json",
          [](const Tracer& t, std::optional<int64_t> origin_ns, const std::string& pid_json,
             bool thread_names) {
            ChromeEventOptions o;
            if (origin_ns) o.origin_ns = *origin_ns;
            o.pid_json = pid_json;
            o.thread_names = thread_names;
            py::gil_scoped_release release;
            return t.ChromeEventsJson(o);
          },
          py::arg("origin_ns") = py::none(), py::arg("pid_json") = "", py::arg("thread_names") = true,
          "The spans as a JSON array of Chrome trace events, ts in microseconds from "
          "origin_ns (the engine clock; None: the session's start).")
      .def("chrome_json", &Tracer::ChromeTraceJson, py::call_guard<py::gil_scoped_release>())
      .def(
          "write",
          [](const Tracer& t, const std::string& path) {
            Status s = WithoutGil([&] { return t.WriteChromeTrace(path); });
            if (!s.ok()) Throw(s);
          },
          py::arg("path"))
      .def("dropped",
           [](const Tracer& t) {
             uint64_t dropped = 0;
             (void)t.Collect(&dropped);
             return dropped;
           })
      .def("lanes", [](const Tracer& t) {
        py::list out;
        for (const LaneInfo& l : t.Lanes()) out.append(py::make_tuple(l.name, l.os_tid));
        return out;
      });
  m.def("trace_clock_ns", &TraceClockNs, "The engine's clock (steady_clock, ns): spans' clock.");
}

}  // namespace stoker::python
