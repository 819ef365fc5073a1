// Copyright 2026 The stoker Authors.
//
// Public: include/stoker/stats.h.
#ifndef STOKER_STATS_STATS_H_
#define STOKER_STATS_STATS_H_

#include "stoker/stats.h"

#endif  // STOKER_STATS_STATS_H_
