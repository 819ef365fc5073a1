// Copyright 2026 The stoker Authors.
//
// SkipLedger: the loader's record of the samples left out under
// on_error=skip. It keeps the files found bad (by the source's key, or by
// name when the source has none) over the Loader's life and per epoch, and
// each epoch's first failure: the one at the lowest position, so the same for
// any thread count. Samples of the next epoch's cross-epoch prefetch go to a
// second record, which the next Start() adopts when it uses the prefetch and
// drops otherwise.
//
// Thread-safety: thread-safe. Workers call Note() concurrently; Start(),
// stats() and the consumer read it. It has its own mutex, always taken last:
// callers may hold the loader mutex, and the ledger calls nothing while it
// holds its own.
#ifndef STOKER_PIPELINE_SKIP_LEDGER_H_
#define STOKER_PIPELINE_SKIP_LEDGER_H_

#include <cstdint>
#include <string>
#include <unordered_set>

#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker {

class SkipLedger {
 public:
  // The file name under which a bad sample is counted: its key (a source's
  // file index), or "#" + its name when the source has no keys.
  static std::string FileOf(int64_t key, const std::string& name);

  // Records the sample at `position` (of the running epoch, or of the next
  // epoch's prefetch when `prefetch`) as skipped for `error`, in `file`.
  void Note(std::string file, int64_t position, const Status& error, bool prefetch);

  // A new epoch starts: its record is the prefetch's when the prefetch is
  // used (`adopt_prefetch`), else empty; the prefetch's record is emptied.
  void BeginEpoch(bool adopt_prefetch);

  // The running epoch's first failure (OK when none), for the error of an
  // epoch in which nothing could be read.
  Status FirstFailure() const;
  // Distinct bad files over the Loader's life, and in the running epoch.
  int64_t files_total() const;
  int64_t files_epoch() const;

 private:
  struct Record {
    std::unordered_set<std::string> files;
    Status first;  // at the lowest position
    int64_t first_position = 0;
  };

  mutable Mutex mu_;
  std::unordered_set<std::string> files_total_ STOKER_GUARDED_BY(mu_);
  Record epoch_ STOKER_GUARDED_BY(mu_);     // the running epoch's
  Record prefetch_ STOKER_GUARDED_BY(mu_);  // the next epoch's prefetch
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_SKIP_LEDGER_H_
