// Copyright 2026 The stoker Authors.
//
// How batches and counters cross into Python, shared by the Loader's and
// the diagnosis' bindings: a batch as numpy arrays that share its memory
// (no copy), a stage's counters as a dict. Call with the GIL held.
#ifndef STOKER_PYTHON_BATCH_ARRAYS_H_
#define STOKER_PYTHON_BATCH_ARRAYS_H_

#include <pybind11/pybind11.h>

#include "stoker/batch.h"
#include "stoker/loader.h"

namespace stoker::python {

// (images, labels, ids) as numpy arrays whose base object is a capsule owning
// `batch`: the batch buffer returns to the pool when the last array (or
// tensor made from it) dies. A variable-size batch (collate="list") gives a
// list of per-sample arrays as images, each [3, H, W] or [H, W, 3], all
// sharing the one capsule. bfloat16 is uint16 (the caller views it).
pybind11::tuple BatchArrays(BatchPtr batch);

// A StageStats as the dict Loader.stats() shows.
pybind11::dict StageDict(const StageStats& s);

}  // namespace stoker::python

#endif  // STOKER_PYTHON_BATCH_ARRAYS_H_
