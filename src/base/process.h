// Copyright 2026 The stoker Authors.
//
// The CPU and memory readers are public: include/stoker/process.h.
#ifndef STOKER_BASE_PROCESS_H_
#define STOKER_BASE_PROCESS_H_

#include "stoker/process.h"

#endif  // STOKER_BASE_PROCESS_H_
