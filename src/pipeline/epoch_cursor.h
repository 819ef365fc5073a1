// Copyright 2026 The stoker Authors.
//
// EpochCursor: which epoch the Loader runs and where in it, as a pure value.
// It holds the running epoch and the next one (SetEpoch), a resume that waits
// for the next Start (Resume), the global offset the running epoch began at,
// and turns the positions delivered so far into a LoaderState (state()).
// The Loader's arithmetic of epochs, resume offsets and checkpoints lives
// here and nowhere else; it reads no clock and starts no thread.
//
// Thread-safety: not thread-safe. The Loader holds it under its mutex.
#ifndef STOKER_PIPELINE_EPOCH_CURSOR_H_
#define STOKER_PIPELINE_EPOCH_CURSOR_H_

#include <cstdint>

#include "stoker/loader.h"
#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

// The EpochSpec of `epoch` under `options` (seed, shuffle, ranks, sampler),
// starting `offset` global positions in. Borrows options.sampler.
EpochSpec SpecFor(const LoaderOptions& options, int64_t epoch, int64_t offset);

class EpochCursor {
 public:
  // `world_size`: the Loader's; `epoch_samples`: the sampler's draws per
  // epoch over all ranks (-1: a stream, whose length is unknown).
  EpochCursor(int world_size, int64_t epoch_samples)
      : world_size_(world_size), epoch_samples_(epoch_samples) {}

  // Whether `st` can be resumed from: InvalidArgument for a negative
  // position, or a stream (not `random_access`) saved mid-epoch at another
  // world size than `world_size`.
  static Status CheckResume(const LoaderState& st, bool random_access, int world_size);
  // Whether `saved` is a state of the run whose own state is `mine`:
  // InvalidArgument, naming the field, for a format version outside
  // 1..kLoaderStateVersion, another sample count or fingerprint (another
  // dataset), another seed or shuffle (another order), or `consumed` past
  // the epoch's samples (a known count only).
  static Status CheckOrigin(const LoaderState& saved, const LoaderState& mine);

  // The epoch the next Start() runs. A pending resume of another epoch is
  // dropped.
  void SetEpoch(int64_t epoch);
  // The next Start() continues `st.epoch` after `st.consumed` global
  // positions (or starts the next epoch when the state was taken at the
  // end). `st` is checked by the caller.
  void Resume(const LoaderState& st);

  // Start(): the next epoch becomes the running one, at the resume offset
  // if a resume is pending (else from its beginning); the one after it is
  // next.
  void Begin();
  // Next() reported the running epoch's end.
  void Finish() { finished_ = true; }
  bool finished() const { return finished_; }

  // The running epoch once one started, else the next one.
  int64_t epoch() const { return started_ ? epoch_ : next_epoch_; }
  int64_t running_epoch() const { return epoch_; }
  int64_t next_epoch() const { return next_epoch_; }
  // Global positions of the running epoch skipped by a resume.
  int64_t offset() const { return offset_; }
  // The global offset the next Start() begins at (a pending resume's).
  int64_t next_offset() const { return resume_pending_ ? resume_offset_ : 0; }
  bool resume_pending() const { return resume_pending_; }
  // Whether the next Start() runs `epoch` from its beginning: the epoch a
  // cross-epoch prefetch made the start of can be used.
  bool StartsFromTheBeginning(int64_t epoch) const {
    return next_epoch_ == epoch && !resume_pending_;
  }

  // The checkpoint: `local_positions` are the rank-local positions of the
  // running epoch delivered (or skipped) so far, capped at the epoch's end.
  LoaderState State(int64_t local_positions) const;

 private:
  const int world_size_;
  const int64_t epoch_samples_;
  int64_t epoch_ = 0;
  int64_t next_epoch_ = 0;
  bool started_ = false;         // a Start() ran
  bool finished_ = false;        // Next() reported the running epoch's end
  bool set_ = false;             // SetEpoch/Resume since the last Start
  int64_t offset_ = 0;           // global positions skipped (resume)
  bool resume_pending_ = false;  // Resume() awaits the next Start
  int64_t resume_offset_ = 0;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_EPOCH_CURSOR_H_
