// Copyright 2026 The stoker Authors.
//
// Internal helpers of the diagnosis; the public API (Diagnose, Diagnosis,
// FormatDiagnosis) is in include/stoker/diagnose.h.
#ifndef STOKER_DIAGNOSE_DIAGNOSE_H_
#define STOKER_DIAGNOSE_DIAGNOSE_H_

#include "stoker/diagnose.h"
#include "stoker/loader.h"

namespace stoker {

// Takes the next batch of a started loader, starting the next epoch when
// one ends (measurements run for a number of batches, not epochs). An epoch
// that ends before its first batch is an error (DataLoss), not a spin.
Status NextBatchAcrossEpochs(Loader* loader, BatchPtr* batch);

}  // namespace stoker

#endif  // STOKER_DIAGNOSE_DIAGNOSE_H_
