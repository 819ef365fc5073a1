// Copyright 2026 The stoker Authors.
//
// The HDF5 source in a build without libhdf5 (CMake STOKER_WITH_HDF5=OFF):
// Hdf5Source::Open and OpenFields fail with Unimplemented naming the file and the reason.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/sources.h"

namespace stoker {

bool BuiltWithHdf5() { return false; }

StatusOr<std::shared_ptr<Hdf5Source>> Hdf5Source::Open(const std::string& path,
                                                       const std::string&, const std::string&) {
  return UnimplementedError(path + ": stoker was built without HDF5 (STOKER_WITH_HDF5=OFF), "
                            "so it cannot read .h5/.hdf5 files; rebuild with libhdf5");
}

StatusOr<std::shared_ptr<Hdf5Source>> Hdf5Source::OpenFields(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>&,
    const std::vector<std::string>&, int64_t) {
  return Open(path, "", "");
}

}  // namespace stoker
