// Copyright 2026 The stoker Authors.
//
// The engine behind stoker::Loader: LoaderImpl runs the epoch's life cycle
// (Start, Next, Stop, state, stats) over single-owner units, each in its own
// file (docs/architecture.md, "The engine's units"):
//   EpochCursor        which epoch, where in it, resume and state() arithmetic
//   BatchRing          the workers' hand-off to the consumer: slots, positions
//   SampleProducer     one per worker: read, decode, transform into a slot
//   BatchAssembler     the consumer's packing under skip, rank padding
//   NextEpochPrefetch  the next epoch's first batches, made at an epoch's end
//   SkipLedger         the files skipped, per epoch and prefetch
//   WorkerPool         the threads, their jobs, fork safety
//
// Synchronisation: one mutex, lock_.mu (pipeline/loader_lock.h), guards epoch
// set-up, batch installation, hand-off to the consumer and the worker
// lifecycle; the units share it. The per-sample hot path takes no lock (a
// fetch_add, an acquire load, a fetch_sub: BatchRing); only the last sample
// of a batch takes it to wake the consumer. The locking is annotated for
// clang's thread-safety analysis (`make check-thread-safety`).
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/process.h"
#include "pipeline/batch_assembler.h"
#include "pipeline/batch_ring.h"
#include "pipeline/decoded_cache.h"
#include "pipeline/epoch_cursor.h"
#include "pipeline/loader_lock.h"
#include "pipeline/loader_options.h"
#include "pipeline/loader_stats.h"
#include "pipeline/next_epoch_prefetch.h"
#include "pipeline/sample_processor.h"
#include "pipeline/sample_producer.h"
#include "pipeline/skip_ledger.h"
#include "pipeline/tuner.h"
#include "pipeline/tuning_window.h"
#include "pipeline/worker_pool.h"
#include "stoker/loader.h"

namespace stoker {
namespace {

class LoaderImpl : public Loader {
 public:
  LoaderImpl(std::shared_ptr<Source> source, const LoaderOptions& options, int height, int width,
             int64_t epoch_samples)
      : source_(std::move(source)),
        options_(options),
        epoch_samples_total_(epoch_samples),
        height_(height),
        width_(width),
        writer_(options.dtype, options.layout, height, width, HasNormalize(options.transforms),
                NormalizeOf(options.transforms).mean, NormalizeOf(options.transforms).std),
        processor_config_(MakeProcessorConfig(options)),
        // Workers: `threads`, or up to the ceiling when tuned (the ones
        // above the active count park).
        cores_(std::max(1, AvailableCores() / std::max(1, options.local_world_size))),
        plan_(PlanThreads(options, cores_)),
        pool_(MakeBatchPool(options, height, width)),
        cache_(options.cache_bytes > 0 ? std::make_unique<DecodedCache>(options.cache_bytes)
                                       : nullptr),
        counters_(static_cast<size_t>(plan_.workers)),
        scratch_bytes_(static_cast<size_t>(plan_.workers)),
        active_threads_(plan_.active),
        cursor_(options.world_size, epoch_samples),
        assembler_(pool_.get(), options.batch_size, options.drop_last,
                   options.world_size > 1 && options.on_error == OnError::kSkip),
        ring_(&lock_, RingSlots(options), std::min(options.prefetch, RingSlots(options)),
              pool_.get(), options.batch_size),
        prefetch_(&lock_, RingSlots(options), plan_.workers, pool_.get(), options.batch_size),
        workers_(&lock_, plan_.workers) {
    producer_.options = &options_;
    producer_.processor = &processor_config_;
    producer_.writer = &writer_;
    producer_.cache = cache_.get();
    producer_.output_cache =
        cache_ != nullptr && options_.cache_kind == LoaderOptions::CacheKind::kOutput;
    producer_.skips = &skips_;
    producer_.scratch_releases = &scratch_releases_;
    if (options_.auto_threads || options_.auto_prefetch) {
      TunerConfig tc;
      tc.tune_threads = options_.auto_threads;
      tc.tune_prefetch = options_.auto_prefetch;
      tc.max_threads = plan_.workers;
      tc.max_prefetch = ring_.slots();
      MutexLock lock(mu());
      tuner_ = std::make_unique<Tuner>(tc, TunerSettings{plan_.active, ring_.in_flight(mu())});
      tuning_window_ = std::make_unique<TuningWindow>(options_.tune_window);
    }
  }

  ~LoaderImpl() override {
    if (workers_.ForkedChild()) {
      // The workers do not exist in this process, and the lock may be frozen
      // in the state a worker left it in at fork().
      workers_.AbandonInForkedChild();
      (void)reader_.release();  // may hold a lock taken by a worker of the parent
      return;
    }
    Stop();
    {
      MutexLock lock(mu());
      ring_.CancelLocked(mu());  // wakes parked workers
      prefetch_.Cancel();
    }
    workers_.Join();
    MutexLock lock(mu());
    prefetch_.ReleaseLocked(mu());
    assembler_.Release();
  }

  int64_t num_samples() const override { return epoch_samples_total_; }
  int64_t num_batches() const override {
    const int64_t n = epoch_samples_total_;
    const int64_t b = options_.batch_size;
    if (n < 0) return -1;
    const int64_t share = RankShareOf(n, SpecFor(options_, 0, 0)).samples;
    return options_.drop_last ? share / b : (share + b - 1) / b;
  }
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

  LoaderState state() const override {
    MutexLock lock(mu());
    // Under skip the samples carried into the next batch are not delivered
    // yet: a resume reads them again.
    const int64_t local = std::min(assembler_.delivered_positions(),
                                   std::min(ring_.epoch_samples(), ring_.stream_end()));
    return cursor_.State(local);
  }

  Status Resume(const LoaderState& st) override {
    STOKER_RETURN_IF_ERROR(
        EpochCursor::CheckResume(st, source_->random_access(), options_.world_size));
    Stop();
    MutexLock lock(mu());
    cursor_.Resume(st);
    return Status::OK();
  }

  Status Start() override;
  Status Next(BatchPtr* out, bool* end) override { return Next(out, end, nullptr, 0); }
  Status Next(BatchPtr* out, bool* end, const std::function<Status()>& poll,
              int poll_ms) override;
  void Stop() override;
  LoaderStats stats() const override;

 private:
  // The loader lock's mutex, named so for the analysis.
  Mutex* mu() const STOKER_LOCK_RETURNED(lock_.mu) { return &lock_.mu; }

  enum class Take { kBatch, kEnd, kStopped };
  Status TakeBatch(BatchBuffer** out, int64_t* index, Take* result,
                   const std::function<Status()>& poll, int poll_ms);
  Status EndOfEpoch(BatchAssembler::Carry* carry, BatchPtr* out, bool* end);
  Status DeliverPadded(BatchAssembler::Carry* carry, BatchPtr* out);
  void WorkerMain(int index);
  void RunEpoch(int index, SampleProducer* producer);
  bool PrefetchWantedLocked(uint64_t generation) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);
  void MaybePrefetchNextEpoch(uint64_t generation);
  void TuneLocked(int images, int64_t waited_ns) STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);
  void FinishEpochLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(lock_.mu);

  const std::shared_ptr<Source> source_;
  const LoaderOptions options_;
  const int64_t epoch_samples_total_;  // samples per epoch (the sampler's draws); -1: a stream
  const int height_, width_;
  const PixelWriter writer_;
  const ProcessorConfig processor_config_;
  const int cores_;  // available cores / local_world_size
  const ThreadPlan plan_;
  const std::shared_ptr<BatchPool> pool_;
  const std::unique_ptr<DecodedCache> cache_;  // null without cache_bytes; thread-safe
  ProducerContext producer_;                   // set in the constructor
  SkipLedger skips_;                           // thread-safe
  std::vector<WorkerCounters> counters_;       // one per worker
  std::vector<std::atomic<size_t>> scratch_bytes_;
  std::atomic<int64_t> scratch_releases_{0};
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
  std::unique_ptr<Tuner> tuner_ STOKER_GUARDED_BY(lock_.mu);  // used by the consumer
  std::unique_ptr<TuningWindow> tuning_window_ STOKER_GUARDED_BY(lock_.mu);
  bool epoch_restart_ STOKER_GUARDED_BY(lock_.mu) = false;  // no batch taken since Start()
  LoaderCounters stats_ STOKER_GUARDED_BY(lock_.mu);

  // Declared last: joined in the destructor before the members above die.
  WorkerPool workers_;
};

Status LoaderImpl::Start() {
  STOKER_RETURN_IF_ERROR(workers_.CheckNotForked());
  Stop();
  workers_.Start([this](int index) { WorkerMain(index); });
  MutexLock lock(mu());
  // Workers parked by the tuner may still sit in the finished epoch.
  ring_.CancelLocked(mu());
  workers_.AwaitEpochLeftLocked(mu());
  // The next epoch's first batches, made while the last one ended: used when
  // this is the epoch they were made for, from its start; else discarded.
  const bool armed = prefetch_.ArmedLocked(mu());
  const bool use_prefetch = armed && cursor_.StartsFromTheBeginning(prefetch_.EpochLocked(mu()));
  workers_.ClosePrefetchLocked(mu());  // no worker joins it any more
  if (armed) {
    // Its workers stop claiming positions and finish the sample in hand, so
    // Start() does not wait for the whole prefetch (nor, without a poll,
    // hold off Ctrl-C): a used prefetch's unclaimed positions are the epoch
    // workers' below.
    prefetch_.Cancel();
    if (!use_prefetch) reader_->Cancel();  // the prefetch's reads are not wanted
  }
  workers_.AwaitPrefetchLeftLocked(mu());
  prefetch_.Reopen();
  if (armed && !use_prefetch) prefetch_.DiscardLocked(mu());
  // Work done for nothing counts in the last epoch's figures.
  if (!use_prefetch) prefetch_.FoldCountersLocked(mu(), &counters_);
  cursor_.Begin();
  work_epoch_ = cursor_.running_epoch();
  if (!use_prefetch) {  // else reader_ is the prefetch's, for this epoch
    auto reader = source_->StartEpoch(SpecFor(options_, cursor_.running_epoch(), cursor_.offset()));
    if (!reader.ok()) return reader.status();
    reader_ = std::move(reader).value();
  }
  epoch_random_access_ = reader_->random_access();
  ring_.BeginLocked(mu(), cursor_.running_epoch(), reader_->size(), options_.drop_last);
  assembler_.BeginEpoch();
  skips_.BeginEpoch(/*adopt_prefetch=*/use_prefetch);  // its skips belong to this epoch
  if (use_prefetch) {
    ring_.SkipPositionsLocked(mu(), prefetch_.AdoptLocked(mu(), &ring_, ring_.epoch_samples()));
  }
  stats_.BeginEpoch(counters_);
  if (use_prefetch) prefetch_.FoldCountersLocked(mu(), &counters_);  // this epoch's work
  epoch_restart_ = true;  // the wait for the new epoch's first batch is not tuned on
  workers_.OpenEpochLocked(mu());
  lock.Unlock();
  lock_.work.SignalAll();
  return Status::OK();
}

// See BatchAssembler for how position batches become delivered ones.
Status LoaderImpl::Next(BatchPtr* out, bool* end, const std::function<Status()>& poll,
                        int poll_ms) {
  STOKER_RETURN_IF_ERROR(workers_.CheckNotForked());
  *end = false;
  BatchAssembler::Carry carry;  // between calls it lives in assembler_
  bool padding = false;
  {
    MutexLock lock(mu());
    carry = assembler_.TakeCarry();
    padding = assembler_.padding();
  }
  if (padding) return DeliverPadded(&carry, out);
  for (;;) {
    BatchBuffer* buf = nullptr;
    int64_t b = 0;
    Take took = Take::kStopped;
    Status st = TakeBatch(&buf, &b, &took, poll, poll_ms);
    if (!st.ok() || took == Take::kStopped) {
      if (carry.buffer != nullptr) {
        bool kept = false;
        {
          MutexLock lock(mu());  // a poll's error: the epoch goes on
          kept = workers_.EpochOpenLocked(mu()) && assembler_.PutBack(&carry);
        }
        if (!kept) pool_->Release(carry.buffer);
      }
      if (!st.ok()) return st;
      *end = true;
      return Status::OK();
    }
    if (took == Take::kEnd) return EndOfEpoch(&carry, out, end);
    // Not reader_: once this epoch is made, a worker swaps in the next
    // epoch's reader (cross-epoch prefetch) while the consumer still runs.
    const int64_t valid_end = epoch_random_access_ ? BatchRing::kUnbounded : ring_.stream_end();
    BatchBuffer* ready = BatchAssembler::Assemble(b, options_.batch_size, valid_end, buf, &carry,
                                                  pool_.get());
    if (ready == nullptr) continue;
    {
      MutexLock lock(mu());
      assembler_.KeepForPadding(ready);
      assembler_.Delivered(ready, &carry, b, /*end_of_epoch=*/false);
      stats_.AddBatch();
    }
    *out = std::make_shared<Batch>(pool_, ready);
    return Status::OK();
  }
}

// Next() at the epoch's end: what is carried is its last batch. With ranks
// under skip, the rank's missing samples are made up by repeating its first
// ones (DeliverPadded), so every rank delivers the batches it would without
// bad samples. An epoch in which nothing could be read is an error.
Status LoaderImpl::EndOfEpoch(BatchAssembler::Carry* carry, BatchPtr* out, bool* end) {
  Status all_bad;
  int64_t skipped_n = 0;
  int64_t epoch = 0;
  bool pad = false;
  {
    MutexLock lock(mu());
    if (carry->buffer != nullptr) assembler_.KeepForPadding(carry->buffer);
    epoch = cursor_.running_epoch();
    pad = assembler_.StartPadding(std::min(ring_.epoch_samples(), ring_.stream_end()),
                                  carry->buffer != nullptr ? carry->buffer->size : 0);
    if (!pad && carry->buffer == nullptr && assembler_.delivered_samples() == 0 &&
        cursor_.offset() == 0) {
      all_bad = skips_.FirstFailure();  // OK unless a sample was skipped
      skipped_n = stats_.EpochSkipped(counters_);
    }
  }
  if (pad) return DeliverPadded(carry, out);
  if (!all_bad.ok()) {
    return all_bad.WithContext("on_error=skip: no sample of epoch " + std::to_string(epoch) +
                               " could be read (" + std::to_string(skipped_n) +
                               " skipped); first failure");
  }
  BatchBuffer* last = carry->buffer;
  *carry = BatchAssembler::Carry();
  if (last == nullptr || (options_.drop_last && last->size < options_.batch_size)) {
    if (last != nullptr) pool_->Release(last);
    *end = true;
    return Status::OK();
  }
  {
    MutexLock lock(mu());
    assembler_.Delivered(last, carry, 0, /*end_of_epoch=*/true);
    stats_.AddBatch();
  }
  *out = std::make_shared<Batch>(pool_, last);
  return Status::OK();
}

// Ranks under skip: a batch of the samples still owed at the epoch's end,
// after the carried ones (counted in padded_samples).
Status LoaderImpl::DeliverPadded(BatchAssembler::Carry* carry, BatchPtr* out) {
  BatchBuffer* batch = carry->buffer;
  *carry = BatchAssembler::Carry();
  if (batch == nullptr) {
    auto acquired = pool_->Acquire();
    if (!acquired.ok()) {
      MutexLock lock(mu());
      assembler_.StopPadding();
      return acquired.status();
    }
    batch = acquired.value();
    batch->size = 0;
  }
  MutexLock lock(mu());
  batch->epoch = cursor_.running_epoch();
  Status filled = assembler_.FillPadded(batch);
  if (!filled.ok()) {
    pool_->Release(batch);
    return filled;
  }
  stats_.AddBatch();
  *out = std::make_shared<Batch>(pool_, batch);
  return Status::OK();
}

// Takes the next position batch once its samples are written (the consumer's
// wait). kEnd: the epoch's positions are exhausted or the stream ended;
// kStopped: Stop() ran (another thread, or the epoch was already over). An
// error (a fatal one, a poll's, or under kRaise a bad sample's) stops the
// epoch.
Status LoaderImpl::TakeBatch(BatchBuffer** out, int64_t* index, Take* result,
                             const std::function<Status()>& poll, int poll_ms) {
  *out = nullptr;
  *result = Take::kStopped;
  MutexLock lock(mu());
  if (!workers_.EpochOpenLocked(mu())) return Status::OK();
  if (ring_.AllTakenLocked(mu())) {
    FinishEpochLocked();
    cursor_.Finish();
    *result = Take::kEnd;
    return Status::OK();
  }
  int64_t waited_ns = 0;
  Status polled = ring_.WaitNextLocked(mu(), poll, poll_ms, &waited_ns);
  stats_.AddConsumerWait(waited_ns);
  if (!polled.ok()) return polled;
  if (!workers_.EpochOpenLocked(mu())) return Status::OK();
  Status failure = ring_.FailureLocked(mu());
  if (!failure.ok()) {
    lock.Unlock();
    Stop();
    return failure;
  }
  if (ring_.NextPastStreamEndLocked(mu())) {  // the stream ended at the previous batch's end
    cursor_.Finish();
    lock.Unlock();
    Stop();
    *result = Take::kEnd;
    return Status::OK();
  }
  int64_t b = 0;
  BatchBuffer* buf = ring_.TakeLocked(mu(), &b);
  if (tuner_ != nullptr) TuneLocked(buf->size, waited_ns);
  lock.Unlock();
  lock_.work.SignalAll();
  // Under kRaise a bad sample stops the epoch (skipped ones carry no error).
  for (int i = 0; i < buf->size; ++i) {
    if (!buf->errors()[i].ok()) {
      Status err = buf->errors()[i];
      pool_->Release(buf);
      Stop();
      return err;
    }
  }
  *out = buf;
  *index = b;
  *result = Take::kBatch;
  return Status::OK();
}

void LoaderImpl::Stop() {
  if (workers_.ForkedChild()) return;  // nothing of the epoch runs in this process
  MutexLock lock(mu());
  assembler_.DropCarry();
  if (!workers_.EpochOpenLocked(mu())) return;
  workers_.CloseEpochLocked(mu());
  // A stalled remote read returns soon. Not the next epoch's prefetch: the
  // reader is then its own, and the epoch stopped has no reads left.
  if (reader_ != nullptr && !prefetch_.ArmedLocked(mu())) reader_->Cancel();
  ring_.CancelLocked(mu());
  workers_.AwaitEpochLeftLocked(mu());
  ring_.ClearLocked(mu());
  FinishEpochLocked();
}

void LoaderImpl::WorkerMain(int index) {
  SampleProducer producer(producer_);
  WorkerPool::Jobs jobs;
  jobs.epoch = [&](uint64_t generation) {
    RunEpoch(index, &producer);
    MaybePrefetchNextEpoch(generation);  // leaves the epoch
  };
  jobs.prefetch = [&] {
    prefetch_.Run(index, active_threads_,
                  [&](int64_t p, int s, BatchBuffer* buf, WorkerCounters* c) {
                    producer.Produce(reader_.get(), work_epoch_, p, s, buf, c, /*prefetch=*/true);
                  });
  };
  jobs.after = [&] {
    scratch_bytes_[static_cast<size_t>(index)].store(producer.scratch_bytes(),
                                                     std::memory_order_relaxed);
  };
  workers_.Serve(jobs);
}

// Claims positions until the epoch is exhausted or cancelled.
void LoaderImpl::RunEpoch(int index, SampleProducer* producer) {
  WorkerCounters* c = &counters_[static_cast<size_t>(index)];
  BatchRing::Claimed claimed;
  while (ring_.Claim(index, active_threads_, c, &claimed)) {
    if (!producer->Produce(reader_.get(), work_epoch_, claimed.position, claimed.slot,
                           claimed.buffer, c, /*prefetch=*/false)) {
      ring_.MarkStreamEnd(claimed.position);
    }
    ring_.Complete(claimed);
  }
}

// Whether the epoch's workers are done and the next epoch's first batches
// may be made now: every position of this epoch is made (the last worker
// leaves), nothing stopped it, and the source reads any position (streams
// are not prefetched: see docs/architecture.md).
bool LoaderImpl::PrefetchWantedLocked(uint64_t generation) const {
  return options_.prefetch_next_epoch && workers_.LastToLeaveLocked(mu(), generation) &&
         !prefetch_.ArmedLocked(mu()) && !ring_.cancelled() && ring_.FailureLocked(mu()).ok() &&
         !cursor_.resume_pending() && reader_ != nullptr && reader_->random_access() &&
         reader_->size() >= 0 && ring_.exhausted();
}

// Called by each worker leaving epoch `generation`. The last one, when the
// epoch ended (not stopped), arms the next epoch's prefetch: its reader (made
// outside the lock; the worker stays busy meanwhile, so Start/Stop wait), and
// up to the in-flight depth of batch buffers that the workers then fill.
void LoaderImpl::MaybePrefetchNextEpoch(uint64_t generation) {
  MutexLock lock(mu());
  if (!PrefetchWantedLocked(generation)) {
    workers_.LeaveEpochLocked(mu());
    return;
  }
  const int64_t epoch = cursor_.next_epoch();
  const int64_t want = std::min(ring_.in_flight(mu()), prefetch_.capacity());
  lock.Unlock();
  NextEpochPrefetch::Made made =
      prefetch_.Make(source_.get(), SpecFor(options_, epoch, 0), want, options_.drop_last);
  std::unique_ptr<EpochReader> old;  // dies after the lock is let go
  lock.Lock();
  workers_.LeaveEpochLocked(mu());
  if (made.buffers.empty() || !workers_.CurrentLocked(mu(), generation) ||
      prefetch_.ArmedLocked(mu()) || ring_.cancelled() || cursor_.resume_pending() ||
      epoch != cursor_.next_epoch()) {
    prefetch_.Drop(&made);  // an error of StartEpoch shows when that epoch starts
    return;
  }
  old = std::exchange(reader_, prefetch_.ArmLocked(mu(), epoch, &made, reader_->padded()));
  work_epoch_ = epoch;
  workers_.OpenPrefetchLocked(mu());
  lock.Unlock();
  lock_.work.SignalAll();
}

// Feeds the batch just taken to the tuning window and applies the tuner's
// settings when a window closes. `waited_ns`: how long the consumer waited.
void LoaderImpl::TuneLocked(int images, int64_t waited_ns) {
  const bool restart = epoch_restart_;
  epoch_restart_ = false;
  const std::optional<TunerWindow> w =
      tuning_window_->OnBatch(NowNs(), images, waited_ns, stats_.consumer_wait_ns(), restart);
  if (!w) return;
  const TunerSettings next = tuner_->Observe(*w);
  active_threads_.store(next.threads, std::memory_order_relaxed);
  ring_.SetInFlightLocked(mu(), next.prefetch);
  lock_.work.SignalAll();  // the caller notifies too; parked workers must see it
}

void LoaderImpl::FinishEpochLocked() {
  stats_.EndEpoch();
  workers_.CloseEpochLocked(mu());
}

LoaderStats LoaderImpl::stats() const {
  MutexLockUnlessForked lock(mu(), workers_.ForkedChild());
  LoaderStats s;
  stats_.Fill(counters_, workers_.EpochOpenLocked(mu()), &s);
  s.current_epoch = cursor_.running_epoch();
  s.threads = active_threads_.load(std::memory_order_relaxed);
  s.prefetch = ring_.in_flight(mu());
  if (tuner_ != nullptr) {
    s.tuning = tuner_->reason();
    s.tuning_changes = tuner_->changes();
  }
  s.batch_buffers = pool_->allocated();
  s.batch_buffer_bytes = pool_->allocated_bytes();
  s.batch_region_allocations = pool_->total_region_allocations();
  for (const auto& b : scratch_bytes_) s.scratch_bytes += b.load(std::memory_order_relaxed);
  s.scratch_budget = options_.scratch_budget;
  s.scratch_releases = scratch_releases_.load(std::memory_order_relaxed);
  s.rank = options_.rank;
  s.world_size = options_.world_size;
  s.local_world_size = options_.local_world_size;
  s.cores = cores_;
  const int64_t reader_padded = prefetch_.ArmedLocked(mu()) ? prefetch_.RunningPaddedLocked(mu())
                                : reader_ != nullptr        ? reader_->padded()
                                                            : 0;
  s.padded_samples = reader_padded + assembler_.padded_samples();
  s.prefetch_discarded_batches = prefetch_.discarded_batches(mu());
  s.total.skipped_files = skips_.files_total();
  s.epoch.skipped_files = skips_.files_epoch();
  if (cache_ != nullptr) {
    const DecodedCacheStats cs = cache_->stats();
    s.cache_hits = cs.hits;
    s.cache_misses = cs.misses;
    s.cache_evicted = cs.evicted;
    s.cache_entries = cs.entries;
    s.cache_bytes = cs.bytes;
    s.cache_capacity = cs.capacity;
    s.cache_advice = cache_->Advice(num_samples());
  }
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::shared_ptr<Source> source,
                                                 const LoaderOptions& options) {
  if (source == nullptr) return InvalidArgumentError("source is null");
  int height = 0, width = 0;
  STOKER_RETURN_IF_ERROR(ValidateLoaderOptions(*source, options, &height, &width));
  STOKER_ASSIGN_OR_RETURN(const int64_t epoch_samples, EpochSamples(*source, options));
  return std::unique_ptr<Loader>(
      new LoaderImpl(std::move(source), options, height, width, epoch_samples));
}

}  // namespace stoker
