// Copyright 2026 The stoker Authors.
//
// JsonQuote is public: include/stoker/json.h.
#ifndef STOKER_BASE_JSON_H_
#define STOKER_BASE_JSON_H_

#include "stoker/json.h"

#endif  // STOKER_BASE_JSON_H_
