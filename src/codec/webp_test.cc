// Copyright 2026 The stoker Authors.
#include <gtest/gtest.h>
