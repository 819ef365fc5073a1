// Copyright 2026 The stoker Authors.
//
// AtomicWriteFile: writes a whole file so that a reader sees the old one or
// the new one, never a part: the bytes go to a temporary file of its own
// beside `path` (created exclusively: a name no other writer, thread or
// process, uses), which is then renamed over `path`. A symlink at `path` is
// replaced, not followed (its target is left alone); an existing file is
// replaced. On any failure (a full disk, a missing directory) the temporary
// file is removed and `path` is left as it was.
//
// Thread-safety: a function of its arguments; several writers of one path
// race only for the last rename (each writes its own temporary file).
// Errors: IoError naming the path and the system's reason.
#ifndef STOKER_BASE_ATOMIC_FILE_H_
#define STOKER_BASE_ATOMIC_FILE_H_

#include <string>
#include <string_view>

#include "stoker/status.h"

namespace stoker {

// `sync`: fsync the file before the rename (its contents survive a crash).
Status AtomicWriteFile(const std::string& path, std::string_view bytes, bool sync = false);

}  // namespace stoker

#endif  // STOKER_BASE_ATOMIC_FILE_H_
