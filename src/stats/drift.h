// Copyright 2026 The stoker Authors.
//
// Public: include/stoker/drift.h.
#ifndef STOKER_STATS_DRIFT_H_
#define STOKER_STATS_DRIFT_H_

#include "stoker/drift.h"

#endif  // STOKER_STATS_DRIFT_H_
