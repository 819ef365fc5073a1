// Copyright 2026 The stoker Authors.
//
// LoaderImpl: the engine behind stoker::Loader (include/stoker/loader.h). It
// coordinates single-owner units, each in its own file (README.md here,
// "The engine's units"), and owns little state itself (the reader, the
// tuner):
//   EpochCursor        which epoch, where in it, resume and state() arithmetic
//   BatchRing          the workers' hand-off to the consumer: slots, positions
//   SampleProducer     one per worker: read, decode, transform into a slot
//   BatchAssembler     the consumer's packing under skip, rank padding
//   NextEpochPrefetch  the next epoch's first batches, made at an epoch's end
//   SkipLedger         the files skipped, per epoch and prefetch
//   WorkerPool         the threads, their jobs, fork safety
//   LoaderCounters     the consumer's and the epochs' counters
// Its code is in three files, one per role: loader.cc (the life cycle:
// create, start, stop, checkpoint, stats), loader_next.cc (the consumer's
// Next) and loader_workers.cc (a worker's loop and the prefetch it arms).
//
// Synchronisation: one mutex, lock_.mu (pipeline/loader_lock.h), guards epoch
// set-up, batch installation, hand-off to the consumer and the worker
// lifecycle; the units share it. The per-sample hot path takes no lock (a
// fetch_add, an acquire load, a fetch_sub: BatchRing); only the last sample
// of a batch takes it to wake the consumer. The locking is annotated for
// clang's thread-safety analysis (`make check-thread-safety`).
//
// Thread-safety: as the Loader's contract says (one consumer thread at a
// time; stats() and state() from any thread).
#ifndef STOKER_PIPELINE_LOADER_IMPL_H_
#define STOKER_PIPELINE_LOADER_IMPL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "pipeline/batch_assembler.h"
#include "pipeline/batch_ring.h"
#include "pipeline/decoded_cache.h"
#include "pipeline/epoch_cursor.h"
#include "pipeline/loader_lock.h"
#include "pipeline/loader_options.h"
#include "pipeline/loader_stats.h"
#include "pipeline/next_epoch_prefetch.h"
#include "pipeline/record_plan.h"
#include "program/sample_processor.h"
#include "pipeline/sample_producer.h"
#include "pipeline/size_tally.h"
#include "pipeline/skip_ledger.h"
#include "pipeline/trace_names.h"
#include "pipeline/tuner.h"
#include "pipeline/tuning_clock.h"
#include "pipeline/tuning_window.h"
#include "pipeline/worker_pool.h"
#include "stoker/loader.h"

namespace stoker {

class LoaderImpl : public Loader {
 public:
  LoaderImpl(std::shared_ptr<Source> source, const LoaderOptions& options, int height, int width,
             int64_t epoch_samples, std::shared_ptr<const RecordPlan> plan);
  ~LoaderImpl() override;

  int64_t num_samples() const override { return epoch_samples_total_; }
  int64_t num_batches() const override { return BatchesOf(SharedFrom(0, 0)); }
  int64_t num_batches_left() const override;
  int height() const override { return height_; }
  int width() const override { return width_; }
  const LoaderOptions& options() const override { return options_; }
  std::shared_ptr<Source> source() const override { return source_; }

  void SetEpoch(int64_t epoch) override {
    MutexLockUnlessForked lock(mu(), workers_.ForkedChild());
    cursor_.SetEpoch(epoch);
  }
  int64_t epoch() const override {
    MutexLockUnlessForked lock(mu(), workers_.ForkedChild());
    return cursor_.epoch();
  }

  LoaderState state() const override;

  Status Resume(const LoaderState& st) override;

  Status Start() override;
  uint64_t run() const override {
    MutexLockUnlessForked lock(mu(), workers_.ForkedChild());
    return workers_.GenerationLocked(mu());
  }
  Status Next(BatchPtr* out, bool* end) override { return Next(out, end, nullptr, 0); }
  Status Next(BatchPtr* out, bool* end, const std::function<Status()>& poll,
              int poll_ms) override {
    return Next(out, end, poll, poll_ms, kCurrentRun);
  }
  Status Next(BatchPtr* out, bool* end, const std::function<Status()>& poll, int poll_ms,
              uint64_t run) override;
  void Stop() override;
  void Cancel() override;
  bool AwaitWorkersLeft(int timeout_ms) override;
  LoaderStats stats() const override;
  std::shared_ptr<Tracer> tracer() const override { return tracer_; }

  // The test seam of pipeline/tuning_clock.h (SetTuningClockForTesting).
  void SetTuningClock(TuningClock clock) {
    MutexLock lock(mu());
    tuning_clock_ = std::move(clock);
  }

 private:
  // The loader lock's mutex, named so for the analysis.
  Mutex* mu() const STOKER_LOCK_RETURNED(lock_.mu) { return &lock_.mu; }

  // This rank's samples of `epoch` from global position `offset` on (-1 for
  // a stream), and the batches they make.
  int64_t SharedFrom(int64_t epoch, int64_t offset) const {
    const int64_t n = epoch_samples_total_;
    return n < 0 ? -1 : RankShareOf(n, SpecFor(options_, epoch, offset)).samples;
  }
  int64_t BatchesOf(int64_t samples) const {
    const int64_t b = options_.batch_size;
    if (samples < 0) return -1;
    return options_.drop_last ? samples / b : (samples + b - 1) / b;
  }

  // Samples this rank delivered in the running (or last) epoch that repeat
  // a sample so that every rank yields the same count (stats'
  // padded_samples, see LoaderStats).
  int64_t EpochPaddedLocked() const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu());

  enum class Take { kBatch, kEnd, kStopped };
  // `lane`: the consumer's trace lane while tracing (null: not tracing).
  // `generation`: the epoch's (WorkerPool) when Next() began: a batch of a
  // later epoch, started meanwhile from another thread, is not taken.
  Status TakeBatch(BatchBuffer** out, int64_t* index, Take* result,
                   const std::function<Status()>& poll, int poll_ms, TraceLane* lane,
                   uint64_t generation);
  // The stage with the most worker busy time since the previous call (what
  // the consumer waited for); for the wait's span.
  Stage ShortStageLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);
  // Next() of the run `generation` (current when it began), the consumer's
  // leaving aside.
  Status NextOfRun(BatchPtr* out, bool* end, const std::function<Status()>& poll, int poll_ms,
                   uint64_t generation);
  Status EndOfEpoch(BatchAssembler::Carry* carry, BatchPtr* out, bool* end);
  Status DeliverPadded(BatchAssembler::Carry* carry, BatchPtr* out);
  Status Deliver(BatchBuffer* buffer, BatchPtr* out);
  void WorkerMain(int index);
  void RunEpoch(int index, SampleProducer* producer);
  bool PrefetchWantedLocked(uint64_t generation) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);
  void MaybePrefetchNextEpoch(uint64_t generation);
  void TuneLocked(int images, int64_t measured_wait_ns) STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);
  void FinishEpochLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);

  const std::shared_ptr<Source> source_;
  const LoaderOptions options_;
  const int64_t epoch_samples_total_;  // samples per epoch (the sampler's draws); -1: a stream
  const int height_, width_;
  const std::shared_ptr<const RecordPlan> record_plan_;  // the source's fields
  const PixelWriter writer_;
  const ProcessorConfig processor_config_;
  const int cores_;  // available cores / local_world_size
  const ThreadPlan plan_;
  const int claim_run_;  // positions per claim in a random-access epoch (ClaimRun)
  const std::shared_ptr<BatchPool> pool_;
  const std::unique_ptr<DecodedCache> cache_;  // null without cache_bytes; thread-safe
  ProducerContext producer_;                   // set in the constructor
  SkipLedger skips_;                           // thread-safe
  std::vector<WorkerCounters> counters_;       // one per worker
  std::vector<std::atomic<size_t>> scratch_bytes_;
  std::atomic<int64_t> scratch_releases_{0};
  // Spans (stoker/trace.h): the tracer, the names of this loader's steps, and
  // the workers' size tallies (LoaderOptions::tally_sizes; else empty).
  const std::shared_ptr<Tracer> tracer_;
  const TraceNames trace_names_;
  std::unique_ptr<SizeTally[]> size_tallies_;
  // Tuning: workers with index >= active_threads_ park (BatchRing::Claim).
  std::atomic<int> active_threads_;

  mutable LoaderLock lock_;
  EpochCursor cursor_ STOKER_GUARDED_BY(lock_.mu);
  BatchAssembler assembler_ STOKER_GUARDED_BY(lock_.mu);
  BatchRing ring_;
  NextEpochPrefetch prefetch_;
  // The workers' reader: set by Start before workers run, and replaced (under
  // the lock) by the next epoch's when its first batches are prefetched, so
  // code outside the workers reads it under the lock only.
  std::unique_ptr<EpochReader> reader_;
  // The epoch the workers make (Rng seeds): the running one, or the next one
  // while its first batches are prefetched. Set under the lock before
  // workers run.
  int64_t work_epoch_ = 0;
  bool epoch_random_access_ = true;  // the running epoch's reader's; set by Start
  // stats' padded_samples. Random access: the running epoch's repeats are
  // this rank's last `epoch_rank_padded_` positions, from
  // `epoch_repeats_from_` on (-1: a stream, which counts its own). Set by Start.
  int64_t epoch_repeats_from_ STOKER_GUARDED_BY(lock_.mu) = -1;
  int64_t epoch_rank_padded_ STOKER_GUARDED_BY(lock_.mu) = 0;
  // The repeats delivered in the epochs before the running one.
  int64_t padded_before_ STOKER_GUARDED_BY(lock_.mu) = 0;
  std::unique_ptr<Tuner> tuner_ STOKER_GUARDED_BY(lock_.mu);  // used by the consumer
  std::unique_ptr<TuningWindow> tuning_window_ STOKER_GUARDED_BY(lock_.mu);
  // What the tuning reads the time and the consumer's waits from (NowNs() and
  // the measured waits unless a test installed its own), and the sum of the
  // waits it saw: the waits for the batches taken, which leaves out a wait
  // that ended in a stop, a failure or the stream's end.
  TuningClock tuning_clock_ STOKER_GUARDED_BY(lock_.mu);
  int64_t tuning_wait_ns_ STOKER_GUARDED_BY(lock_.mu) = 0;
  bool epoch_restart_ STOKER_GUARDED_BY(lock_.mu) = false;  // no batch taken since Start()
  // The consumer left the epoch: Next() reported its end, or Stop() ran.
  // Until then an epoch whose last batch is delivered is still the one in
  // progress (num_batches_left() is 0, not the next epoch's).
  bool consumer_left_ STOKER_GUARDED_BY(lock_.mu) = true;
  LoaderCounters stats_ STOKER_GUARDED_BY(lock_.mu);
  Totals busy_at_last_batch_ STOKER_GUARDED_BY(lock_.mu);  // ShortStageLocked's mark

  // Declared last: joined in the destructor before the members above die.
  WorkerPool workers_;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_LOADER_IMPL_H_
