// Copyright 2026 The stoker Authors.
#include "base/bytes_text.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(BytesTextTest, PicksTheLargestUnitBelowTheCount) {
  EXPECT_EQ(BytesText(0), "0 bytes");
  EXPECT_EQ(BytesText(512), "512 bytes");
  EXPECT_EQ(BytesText(1023), "1023 bytes");
  EXPECT_EQ(BytesText(40 * 1024), "40.0 KiB");
  EXPECT_EQ(BytesText(1.5 * (1 << 20)), "1.5 MiB");
  EXPECT_EQ(BytesText(2.0 * 12000 * 12000 * 4), "1.1 GiB");
  EXPECT_EQ(BytesText(343e9), "319.4 GiB");
  EXPECT_EQ(BytesText(1e30), "867361737988.4 EiB");  // no unit past EiB
}

}  // namespace
}  // namespace stoker
