// Copyright 2026 The stoker Authors.
//
// Whole-file reads into a reusable buffer: open, fstat, read, close. The
// buffer only grows, so a steady state allocates nothing.
//
// Thread-safety: thread-safe (no shared state). Errors: NotFound when the
// file does not exist, IoError (with strerror) for any other failure, DataLoss
// when the file shrinks while being read.
#ifndef STOKER_IO_FILE_H_
#define STOKER_IO_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/status.h"

namespace stoker {

// Opens `path` read-only for a regular file. The open itself uses O_NONBLOCK
// and the type is checked with fstat before anything is read, so a FIFO,
// socket or device named like a data file is refused at once instead of
// blocking in open(2); O_NONBLOCK is then cleared. On
// success `*fd` is owned by the caller and `*size` (if not null) holds the
// file size. Errors: NotFound (ENOENT), `not_regular` ("<path>: not a regular
// file"), IoError otherwise.
Status OpenRegularFile(const std::string& path, int* fd, size_t* size = nullptr,
                       StatusCode not_regular = StatusCode::kIoError);

// Reads the file at `path` into `buffer` (resized to at least the file size)
// and sets `*size` to the number of bytes read.
Status ReadFileInto(const std::string& path, std::vector<uint8_t>* buffer, size_t* size);

}  // namespace stoker

#endif  // STOKER_IO_FILE_H_
