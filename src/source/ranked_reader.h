// Copyright 2026 The stoker Authors.
//
// RankedReader: the part every random-access EpochReader shares. An epoch is
// a sequence of `n` global positions drawn before it starts (a permutation,
// a sampler's draws, a Mix's choices); this rank reads its share of them
// (RankShareOf, GlobalPosition in stoker/source.h, resume offset included).
// A subclass says what a global position reads.
//
// Thread-safety: as EpochReader (Read may run on many threads at once); the
// subclass's *Global methods must be thread-safe.
#ifndef STOKER_SOURCE_RANKED_READER_H_
#define STOKER_SOURCE_RANKED_READER_H_

#include <cstdint>
#include <string>

#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

// InvalidArgument unless 0 <= spec.rank < spec.world_size.
inline Status CheckRank(const EpochSpec& spec) {
  if (spec.world_size < 1 || spec.rank < 0 || spec.rank >= spec.world_size) {
    return InvalidArgumentError("rank " + std::to_string(spec.rank) + " is not in [0, world_size " +
                                std::to_string(spec.world_size) + ")");
  }
  return Status::OK();
}

class RankedReader : public EpochReader {
 public:
  RankedReader(int64_t n, const EpochSpec& spec)
      : n_(n), spec_(spec), identity_(spec.world_size <= 1 && spec.offset <= 0) {
    const RankShare share = RankShareOf(n, spec);
    size_ = share.samples;
    padded_ = share.rank_padded;
  }

  int64_t size() const final { return size_; }
  bool random_access() const final { return true; }
  int64_t padded() const final { return padded_; }

  Status Read(int64_t position, SampleScratch* scratch, SampleData* out, bool* end) final {
    if (position < 0 || position >= size_) {
      *end = true;
      return Status::OK();
    }
    *end = false;
    return ReadGlobal(Global(position), scratch, out);
  }

  int64_t KeyAt(int64_t position) const final {
    return position < 0 || position >= size_ ? -1 : KeyOfGlobal(Global(position));
  }

  std::string Name(int64_t position) const final {
    if (position < 0 || position >= size_) return "<position " + std::to_string(position) + ">";
    return NameOfGlobal(Global(position));
  }

 protected:
  // Global position g (in [0, n)) of the epoch: read it, its cache key (the
  // same in every epoch), its name.
  virtual Status ReadGlobal(int64_t g, SampleScratch* scratch, SampleData* out) const = 0;
  virtual int64_t KeyOfGlobal(int64_t g) const = 0;
  virtual std::string NameOfGlobal(int64_t g) const = 0;

 private:
  int64_t Global(int64_t position) const {
    return identity_ ? position : GlobalPosition(n_, spec_, position);
  }

  const int64_t n_;       // positions in the whole epoch (all ranks)
  const EpochSpec spec_;
  const bool identity_;   // one rank, no offset: position == global position
  int64_t size_ = 0;      // this rank's positions
  int64_t padded_ = 0;    // this rank's repeats: its last positions
};

}  // namespace stoker

#endif  // STOKER_SOURCE_RANKED_READER_H_
