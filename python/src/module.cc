// Copyright 2026 The stoker Authors.
//
// The stoker._C extension module: one Register*() per bound C++ module, in
// dependency order (errors first: the others raise stoker.StokerError).
#include <pybind11/pybind11.h>

namespace stoker::python {
void RegisterErrors(pybind11::module_& m);      // errors.cc
void RegisterSources(pybind11::module_& m);     // bind_sources.cc
void RegisterTransforms(pybind11::module_& m);  // bind_transforms.cc
void RegisterOpsTesting(pybind11::module_& m);  // bind_ops_testing.cc
void RegisterLoaderOptions(pybind11::module_& m);  // bind_loader_options.cc
void RegisterLoader(pybind11::module_& m);      // bind_loader.cc
void RegisterDiagnose(pybind11::module_& m);    // bind_diagnose.cc
void RegisterDevice(pybind11::module_& m);      // bind_cuda.cc
void RegisterArrays(pybind11::module_& m);      // bind_arrays.cc
void RegisterShards(pybind11::module_& m);      // bind_shards.cc
void RegisterMix(pybind11::module_& m);         // bind_mix.cc
void RegisterTrace(pybind11::module_& m);       // bind_trace.cc
void RegisterFieldSteps(pybind11::module_& m);  // bind_field_steps.cc
void RegisterStats(pybind11::module_& m);       // bind_stats.cc
void RegisterVideo(pybind11::module_& m);       // bind_video.cc
}  // namespace stoker::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "stoker's C++ engine (use the `stoker` package, not this module)";
  // The pybind11 this module was compiled with: one older than 2.12 lays out numpy's
  // array descriptors as numpy 1 did, so stoker/_abi.py refuses it beside numpy 2.
  m.attr("_pybind11_version") = pybind11::make_tuple(PYBIND11_VERSION_MAJOR, PYBIND11_VERSION_MINOR,
                                               PYBIND11_VERSION_PATCH);
  stoker::python::RegisterErrors(m);
  stoker::python::RegisterSources(m);
  stoker::python::RegisterTransforms(m);
  stoker::python::RegisterOpsTesting(m);
  stoker::python::RegisterTrace(m);
  stoker::python::RegisterFieldSteps(m);
  stoker::python::RegisterLoaderOptions(m);
  stoker::python::RegisterLoader(m);
  stoker::python::RegisterDiagnose(m);
  stoker::python::RegisterDevice(m);
  stoker::python::RegisterArrays(m);
  stoker::python::RegisterShards(m);
  stoker::python::RegisterMix(m);
  stoker::python::RegisterStats(m);
  stoker::python::RegisterVideo(m);
}
