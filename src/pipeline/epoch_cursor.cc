// Copyright 2026 The stoker Authors.
#include "pipeline/epoch_cursor.h"

#include <string>

namespace stoker {

EpochSpec SpecFor(const LoaderOptions& options, int64_t epoch, int64_t offset) {
  EpochSpec spec;
  spec.seed = options.seed;
  spec.epoch = epoch;
  spec.shuffle = options.shuffle;
  spec.rank = options.rank;
  spec.world_size = options.world_size;
  using RankTail = LoaderOptions::RankTail;
  spec.drop_last = options.rank_tail == RankTail::kDrop ||
                   (options.rank_tail == RankTail::kFromDropLast && options.drop_last);
  spec.uneven = options.rank_tail == RankTail::kUneven;
  spec.offset = offset;
  spec.sampler = &options.sampler;
  return spec;
}

Status EpochCursor::CheckResume(const LoaderState& st, bool random_access, int world_size) {
  if (st.consumed < 0) {
    return InvalidArgumentError("resume state: consumed must be >= 0, got " +
                                std::to_string(st.consumed));
  }
  if (st.epoch < 0) {
    return InvalidArgumentError("resume state: epoch must be >= 0, got " +
                                std::to_string(st.epoch));
  }
  if (st.world_size < 1) {
    return InvalidArgumentError("resume state: world_size must be >= 1, got " +
                                std::to_string(st.world_size));
  }
  if (!random_access && st.consumed > 0 && st.world_size != world_size) {
    return InvalidArgumentError(
        "a stream (Shards in stream mode) resumes mid-epoch only at the world size it was "
        "saved at (" + std::to_string(st.world_size) + " ranks, now " +
        std::to_string(world_size) + "); resume at an epoch boundary, or use "
        "mode=\"indexed\" (local .tar) for any world size");
  }
  return Status::OK();
}

Status EpochCursor::CheckOrigin(const LoaderState& saved, const LoaderState& mine) {
  if (saved.version < 1) {
    return InvalidArgumentError("resume state: version must be >= 1, got " +
                                std::to_string(saved.version));
  }
  if (saved.version > kLoaderStateVersion) {
    return InvalidArgumentError("the state has format version " + std::to_string(saved.version) +
                                ", newer than this stoker reads (" +
                                std::to_string(kLoaderStateVersion) +
                                "); upgrade stoker to load it");
  }
  if (saved.num_samples != mine.num_samples) {
    return InvalidArgumentError("the state is from a dataset of " +
                                std::to_string(saved.num_samples) + " samples; this loader's has " +
                                std::to_string(mine.num_samples));
  }
  if (saved.fingerprint != mine.fingerprint) {
    return InvalidArgumentError(
        "the state is from another dataset (its fingerprint of sample names differs from this "
        "loader's source)");
  }
  const auto differs = [](const std::string& key, const std::string& was, const std::string& is) {
    return InvalidArgumentError("the state was saved with " + key + "=" + was +
                                ", this loader has " + key + "=" + is +
                                ": the epoch's order would differ");
  };
  if (saved.seed != mine.seed) {
    return differs("seed", std::to_string(saved.seed), std::to_string(mine.seed));
  }
  if (saved.shuffle != mine.shuffle) {
    const auto name = [](bool b) { return std::string(b ? "True" : "False"); };
    return differs("shuffle", name(saved.shuffle), name(mine.shuffle));
  }
  if (mine.num_samples >= 0 && saved.consumed > mine.num_samples) {
    return InvalidArgumentError("resume state: consumed=" + std::to_string(saved.consumed) +
                                " is past the end of the epoch's " +
                                std::to_string(mine.num_samples) + " samples");
  }
  return Status::OK();
}

void EpochCursor::SetEpoch(int64_t epoch) {
  if (resume_pending_ && epoch != next_epoch_) resume_pending_ = false;
  next_epoch_ = epoch;
  set_ = true;
}

void EpochCursor::Resume(const LoaderState& st) {
  const int64_t n = epoch_samples_;
  const bool whole = n >= 0 && st.consumed >= n;  // the epoch was done: the next one
  next_epoch_ = whole ? st.epoch + 1 : st.epoch;
  resume_offset_ = whole ? 0 : st.consumed;
  resume_pending_ = resume_offset_ > 0;
  set_ = true;
}

void EpochCursor::Begin() {
  epoch_ = next_epoch_;
  next_epoch_ = epoch_ + 1;
  started_ = true;
  finished_ = false;
  set_ = false;
  offset_ = resume_pending_ ? resume_offset_ : 0;
  resume_pending_ = false;
}

LoaderState EpochCursor::State(int64_t local_positions) const {
  LoaderState st;
  st.world_size = world_size_;
  if (resume_pending_) {
    st.epoch = next_epoch_;
    st.consumed = resume_offset_;
    return st;
  }
  if (!started_ || finished_ || set_) {
    st.epoch = next_epoch_;
    return st;
  }
  // Positions delivered (or skipped) by this rank, times the ranks, after
  // the offset.
  st.epoch = epoch_;
  st.consumed = offset_ + local_positions * world_size_;
  const int64_t n = epoch_samples_;  // the sampler's draws per epoch
  if (n >= 0 && st.consumed >= n) {  // every sample handed out: the epoch is done
    st.epoch = next_epoch_;
    st.consumed = 0;
  }
  return st;
}

}  // namespace stoker
