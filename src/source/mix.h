// Copyright 2026 The stoker Authors.
//
// The draws behind MixSource (include/stoker/mix.h): the options checked
// against the sources' sizes, the schedule, and the epoch's sequence of
// (source, sample) choices as a pure function of (seed, epoch).
//
// Thread-safety: pure functions of their arguments.
// Errors: InvalidArgument naming the option at fault.
#ifndef STOKER_SOURCE_MIX_H_
#define STOKER_SOURCE_MIX_H_

#include <cstdint>
#include <vector>

#include "stoker/mix.h"
#include "stoker/status.h"

namespace stoker {

// Checks `options` for sources of `sizes` (each > 0). On success `*p` holds
// the normalised weights and `*epoch_size` the samples per epoch.
Status ValidateMix(const MixOptions& options, const std::vector<int64_t>& sizes,
                   std::vector<double>* p, int64_t* epoch_size);

// The schedule's first `n` choices (source per position, unshuffled):
// Tijdeman's sequence, in which after every step each source's count is
// within 1 - 1/(2m - 2) of its share (mix.cc). A source whose count reaches
// caps[i] leaves, and the schedule starts again over the others (caps empty:
// no caps); fewer than `n` choices come back when every source is capped.
std::vector<uint8_t> MixSchedule(const std::vector<double>& p, const std::vector<int64_t>& caps,
                                 int64_t n);

// kFirstExhausted's epoch: the longest prefix of the uncapped schedule in
// which no source's count exceeds its size.
int64_t FirstExhaustedLength(const std::vector<double>& p, const std::vector<int64_t>& sizes);

// Each source's count among `choices`.
std::vector<int64_t> CountChoices(const std::vector<uint8_t>& choices, size_t sources);

// One entry of an epoch's sequence: the source in the bits from
// MixSource::kSourceShift up, the sample's index in that source below.
inline uint64_t MixEntry(int source, int64_t index) {
  return (static_cast<uint64_t>(source) << MixSource::kSourceShift) | static_cast<uint64_t>(index);
}
inline int MixEntrySource(uint64_t e) { return static_cast<int>(e >> MixSource::kSourceShift); }
inline int64_t MixEntryIndex(uint64_t e) {
  return static_cast<int64_t>(e & ((uint64_t{1} << MixSource::kSourceShift) - 1));
}

// The epoch's sequence of `epoch_size` entries for `options.mode` (as
// ValidateMix gave `p` and `epoch_size`). `shuffle`: each source's samples in
// a permutation drawn per (seed, epoch, source, pass), and the sources
// interleaved at random; else the schedule's order, sources in index order.
std::vector<uint64_t> MixEpoch(const MixOptions& options, const std::vector<int64_t>& sizes,
                               const std::vector<double>& p, int64_t epoch_size, uint64_t seed,
                               int64_t epoch, bool shuffle);

}  // namespace stoker

#endif  // STOKER_SOURCE_MIX_H_
