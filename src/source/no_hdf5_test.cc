// Copyright 2026 The stoker Authors.
//
// A build without HDF5 (STOKER_WITH_HDF5=OFF; hdf5_source_test.cc needs libhdf5 to
// write its files and is not built): opening an HDF5 file says why it cannot.
#include <gtest/gtest.h>

#include "stoker/sources.h"

namespace stoker {
namespace {

TEST(NoHdf5Test, OpenNamesTheFileAndTheReason) {
  EXPECT_FALSE(BuiltWithHdf5());
  auto s = Hdf5Source::Open("/nonexistent/data.h5");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented) << s.status().ToString();
  EXPECT_NE(s.status().message().find("/nonexistent/data.h5"), std::string::npos);
  EXPECT_NE(s.status().message().find("built without HDF5"), std::string::npos)
      << s.status().ToString();
}

}  // namespace
}  // namespace stoker
