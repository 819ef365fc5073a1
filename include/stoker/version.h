// Copyright 2026 The stoker Authors.
//
// stoker's version: the one place it is written. CMake reads these three numbers for
// project(stoker VERSION ...) (cmake/stoker_version.cmake), and from there come
// `stoker --version`, the Python package's stoker.__version__ (a generated _version.py)
// and the wheel's metadata (setup.py reads this file too). Header-only, no state.
#ifndef STOKER_VERSION_H_
#define STOKER_VERSION_H_

#define STOKER_VERSION_MAJOR 0
#define STOKER_VERSION_MINOR 1
#define STOKER_VERSION_PATCH 0

#define STOKER_VERSION_STR_(x) #x
#define STOKER_VERSION_XSTR_(x) STOKER_VERSION_STR_(x)
// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
#define STOKER_VERSION_STRING                                                        \
  STOKER_VERSION_XSTR_(STOKER_VERSION_MAJOR) "." STOKER_VERSION_XSTR_(STOKER_VERSION_MINOR) \
  "." STOKER_VERSION_XSTR_(STOKER_VERSION_PATCH)

#endif  // STOKER_VERSION_H_
