// Copyright 2026 The stoker Authors.
//
// Tune, Recommend, FormatTune and TuneJson are declared in
// include/stoker/diagnose.h; tune.cc implements them.
#ifndef STOKER_DIAGNOSE_TUNE_H_
#define STOKER_DIAGNOSE_TUNE_H_

#include "stoker/diagnose.h"

#endif  // STOKER_DIAGNOSE_TUNE_H_
