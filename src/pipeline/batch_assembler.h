// Copyright 2026 The stoker Authors.
//
// BatchAssembler: the consumer's side of batch assembly. Workers fill
// "position batches" (positions [b*B, b*B+B) of this rank's order); under
// on_error=skip some of their slots hold no sample (kSkippedId), and a
// stream's last one may run past the stream's end. The assembler closes
// those gaps and packs the samples left, in position order, into delivered
// batches of B: the batches are then a function of (seed, epoch, which
// samples are bad) alone, every good sample is delivered once, and only the
// epoch's last batch is short. It also counts what the epoch delivered (for
// state()) and, for ranks under skip, keeps the epoch's first samples to
// pad a rank whose bad samples left it short (every rank then delivers the
// batches it would without bad samples).
//
// Samples taken from position batches but not delivered yet (fewer than B)
// are the Carry: a value the consumer takes out of the assembler while it
// waits for the next position batch (TakeCarry), merges into without the
// loader's lock (Assemble, a static function), and puts back (Delivered or
// PutBack).
//
// Thread-safety: not thread-safe. The Loader holds the assembler under its
// mutex; the static functions touch only their arguments (consumer only).
// Memory: buffers come from and go back to the pool given at construction,
// which outlives the assembler. Release() gives back the ones it holds; the
// destructor does not (in a forked child the pool may not be touched).
#ifndef STOKER_PIPELINE_BATCH_ASSEMBLER_H_
#define STOKER_PIPELINE_BATCH_ASSEMBLER_H_

#include <cstdint>
#include <vector>

#include "stoker/batch.h"
#include "stoker/status.h"

namespace stoker {

class BatchAssembler {
 public:
  // ids()[s] of a slot whose sample was dropped under on_error=skip (or past a
  // stream's end: no replacement is read); the slot is removed on assembly.
  static constexpr int64_t kSkippedId = -2;
  // delivered_positions() once the epoch's last batch is delivered (every
  // position accounted; the caller caps it at the epoch's length).
  static constexpr int64_t kAllPositions = int64_t{1} << 62;

  // Samples taken but not yet delivered, and their rank-local positions.
  struct Carry {
    BatchBuffer* buffer = nullptr;  // fewer than batch_size samples; null: none
    std::vector<int64_t> positions;
  };

  // `pads_ranks`: world_size > 1 under on_error=skip.
  BatchAssembler(BatchPool* pool, int batch_size, bool drop_last, bool pads_ranks)
      : pool_(pool), batch_size_(batch_size), drop_last_(drop_last), pads_ranks_(pads_ranks) {}

  // --- Consumer only, without the loader's lock: pure functions. ---

  // Cuts position batch b at `valid_end` (the stream's end; pass a value
  // >= (b+1)*B for random-access sources) and closes the gaps of skipped
  // samples, in order. Returns the samples kept; `positions`: theirs.
  static int Compact(int64_t b, int batch_size, int64_t valid_end, BatchBuffer* buf,
                     std::vector<int64_t>* positions);
  // Adds position batch b (in `buf`, compacted here) to `carry`. Returns a
  // full batch to deliver, or null when more samples are needed; buffers
  // left empty go back to `pool`.
  static BatchBuffer* Assemble(int64_t b, int batch_size, int64_t valid_end, BatchBuffer* buf,
                               Carry* carry, BatchPool* pool);
  // Copies sample `from` of `src` into slot `to` of `dst`: pixels, every
  // record field, label, id (BatchBuffer::CopySample). Variable-size parts
  // reserve the slot first (ResourceExhausted when that fails).
  static Status CopySample(BatchBuffer* src, int from, BatchBuffer* dst, int to);
  // The same when `src`'s slot is not read again: variable-size parts move
  // by swapping regions, without a copy (BatchBuffer::MoveSample).
  static void MoveSample(BatchBuffer* src, int from, BatchBuffer* dst, int to);

  // --- The assembler's state (the caller holds the loader's lock). ---

  // A new epoch: nothing delivered, no padding (the kept samples are
  // dropped; their buffer is reused).
  void BeginEpoch();
  // Stop(): the carried samples go back to the pool; no more padding.
  void DropCarry();
  // Gives back every buffer held (the Loader's destructor).
  void Release();

  // Moves the carried samples out (Next() works on them unlocked).
  Carry TakeCarry();
  // Puts carried samples back (a wait was interrupted); false, and nothing
  // done, when the assembler already holds some (the caller releases them).
  bool PutBack(Carry* carry);
  // `ready` (a full batch, or the epoch's last) is delivered: numbers it,
  // counts it, and keeps `carry` (what is left) for the next call.
  // `end_of_epoch`: every position of the epoch is accounted.
  void Delivered(BatchBuffer* ready, Carry* carry, int64_t b, bool end_of_epoch);

  // Ranks under skip: keeps a copy of the epoch's first delivered samples (up
  // to one batch), for padding. Out of memory: keeps fewer (the rank's epoch
  // is then shorter).
  void KeepForPadding(BatchBuffer* buf);
  // At the epoch's end, ranks under skip: the samples this rank still owes
  // (`total`: its positions, less a drop_last tail; minus those delivered and
  // `carried`) become padding. Returns whether there is any.
  bool StartPadding(int64_t total, int carried);
  bool padding() const { return pad_left_ > 0; }
  void StopPadding() { pad_left_ = 0; }
  // Fills `batch` (holding the carried samples, or empty) up to batch_size
  // with repeats of the kept samples, in order, numbers it and counts it.
  // Errors: ResourceExhausted (a variable-size sample found no memory):
  // padding stops, and `batch` is the caller's to release.
  Status FillPadded(BatchBuffer* batch);

  // Rank-local positions delivered or skipped this epoch (those still
  // carried excluded): a resume reads the carried ones again.
  int64_t delivered_positions() const { return delivered_positions_; }
  int64_t delivered_samples() const { return good_delivered_; }
  // Repeats delivered this epoch (stats: padded_samples).
  int64_t padded_samples() const { return padded_; }

 private:
  BatchPool* const pool_;
  const int batch_size_;
  const bool drop_last_;
  const bool pads_ranks_;
  Carry carry_;                         // between Next() calls
  int64_t delivered_positions_ = 0;     // positions delivered or skipped
  int64_t delivered_batches_ = 0;
  int64_t good_delivered_ = 0;          // samples delivered this epoch
  BatchBuffer* pad_source_ = nullptr;   // the epoch's first samples (ranks under skip)
  int64_t pad_left_ = 0;                // repeats still to deliver
  int64_t pad_next_ = 0;
  int64_t padded_ = 0;                  // repeats delivered this epoch
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_BATCH_ASSEMBLER_H_
