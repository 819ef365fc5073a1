// Copyright 2026 The stoker Authors.
//
// LoaderImpl's life cycle: Create, the constructor and destructor, Start,
// Stop, the checkpoint (state, Resume) and stats(). See loader_impl.h.
#include "pipeline/loader_impl.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "base/bytes_text.h"
#include "base/clock.h"
#include "base/process.h"

namespace stoker {

LoaderImpl::LoaderImpl(std::shared_ptr<Source> source, const LoaderOptions& options,
                       int height, int width, int64_t epoch_samples,
                       std::shared_ptr<const RecordPlan> plan)
    : source_(std::move(source)),
      options_(options),
      epoch_samples_total_(epoch_samples),
      height_(height),
      width_(width),
      record_plan_(std::move(plan)),
      writer_(options.dtype, options.layout, height, width, HasNormalize(options.transforms),
              NormalizeOf(options.transforms).mean, NormalizeOf(options.transforms).std),
      processor_config_(MakeProcessorConfig(options, record_plan_.get())),
      // Workers: `threads`, or up to the ceiling when tuned (the ones
      // above the active count park).
      cores_(DefaultRankCores(options.local_world_size)),
      plan_(PlanThreads(options, cores_)),
      claim_run_(ClaimRun(options, *record_plan_, plan_.workers)),
      pool_(MakeBatchPool(options, height, width, *record_plan_)),
      cache_(options.cache_bytes > 0 ? std::make_unique<DecodedCache>(options.cache_bytes)
                                     : nullptr),
      counters_(static_cast<size_t>(plan_.workers)),
      scratch_bytes_(static_cast<size_t>(plan_.workers)),
      tracer_(options.tracer != nullptr ? options.tracer : std::make_shared<Tracer>()),
      trace_names_(MakeTraceNames(tracer_.get(), options)),
      size_tallies_(options.tally_sizes ? std::make_unique<SizeTally[]>(
                                              static_cast<size_t>(plan_.workers))
                                        : nullptr),
      active_threads_(plan_.active),
      cursor_(options.world_size, epoch_samples),
      assembler_(pool_.get(), options.batch_size, options.drop_last,
                 options.world_size > 1 && options.on_error == OnError::kSkip &&
                     options.rank_tail != LoaderOptions::RankTail::kUneven),
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
  if (cache_ != nullptr && options_.cache_validate) {
    producer_.stamps = dynamic_cast<const RandomAccessSource*>(source_.get());
  }
  producer_.skips = &skips_;
  producer_.scratch_releases = &scratch_releases_;
  producer_.record = record_plan_.get();
  producer_.tracer = tracer_.get();
  producer_.trace_names = &trace_names_;
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

LoaderImpl::~LoaderImpl() {
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


LoaderState LoaderImpl::state() const {
  MutexLock lock(mu());
  // Under skip the samples carried into the next batch are not delivered
  // yet: a resume reads them again.
  const int64_t local = std::min(assembler_.delivered_positions(),
                                 std::min(ring_.epoch_samples(), ring_.stream_end()));
  LoaderState st = cursor_.State(local);
  st.seed = options_.seed;
  st.shuffle = options_.shuffle;
  st.num_samples = epoch_samples_total_;
  st.fingerprint = static_cast<int64_t>(source_->Fingerprint() >> 1);
  return st;
}

int64_t LoaderImpl::num_batches_left() const {
  MutexLockUnlessForked lock(mu(), workers_.ForkedChild());
  // The epoch in progress: open, or its last batch delivered and its end
  // not yet reported (nor another epoch or position set since).
  const bool in_progress =
      workers_.EpochOpenLocked(mu()) ||
      (cursor_.finished() && !consumer_left_ && !cursor_.resume_pending() &&
       cursor_.next_epoch() == cursor_.running_epoch() + 1);
  if (!in_progress) {  // the next Start()'s epoch, from its offset
    return BatchesOf(SharedFrom(cursor_.next_epoch(), cursor_.next_offset()));
  }
  const int64_t share = SharedFrom(cursor_.running_epoch(), cursor_.offset());
  if (share < 0) return -1;
  const int64_t delivered = std::min(assembler_.delivered_positions(), share);
  return BatchesOf(share - delivered);
}


Status LoaderImpl::Resume(const LoaderState& st) {
  STOKER_RETURN_IF_ERROR(
      EpochCursor::CheckResume(st, source_->random_access(), options_.world_size));
  STOKER_RETURN_IF_ERROR(EpochCursor::CheckOrigin(st, state()));
  Stop();
  MutexLock lock(mu());
  cursor_.Resume(st);
  return Status::OK();
}


Status LoaderImpl::Start() {
  STOKER_RETURN_IF_ERROR(workers_.CheckNotForked());
  Stop();
  workers_.Start([this](int index) { WorkerMain(index); });
  MutexLock lock(mu());
  // Workers parked by the tuner may still sit in the finished epoch.
  ring_.CancelLocked(mu());
  workers_.AwaitEpochLeftLocked(mu());
  padded_before_ += EpochPaddedLocked();  // the last epoch's, before its reader goes
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
  epoch_rank_padded_ = epoch_random_access_ ? reader_->padded() : 0;
  epoch_repeats_from_ = epoch_random_access_ ? reader_->size() - epoch_rank_padded_ : -1;
  if (epoch_random_access_ && options_.drop_last) {
    // Repeats in the short last batch that drop_last leaves out are not delivered.
    const int64_t kept = reader_->size() / options_.batch_size * options_.batch_size;
    epoch_rank_padded_ = std::clamp<int64_t>(kept - epoch_repeats_from_, 0, epoch_rank_padded_);
  }
  ring_.BeginLocked(mu(), cursor_.running_epoch(), reader_->size(), options_.drop_last,
                    epoch_random_access_ ? claim_run_ : 1);
  assembler_.BeginEpoch();
  skips_.BeginEpoch(/*adopt_prefetch=*/use_prefetch);  // its skips belong to this epoch
  if (use_prefetch) {
    ring_.SkipPositionsLocked(mu(), prefetch_.AdoptLocked(mu(), &ring_, ring_.epoch_samples()));
  }
  stats_.BeginEpoch(counters_);
  if (use_prefetch) prefetch_.FoldCountersLocked(mu(), &counters_);  // this epoch's work
  epoch_restart_ = true;  // the wait for the new epoch's first batch is not tuned on
  consumer_left_ = false;
  workers_.OpenEpochLocked(mu());
  lock.Unlock();
  lock_.work.SignalAll();
  return Status::OK();
}

void LoaderImpl::Stop() {
  if (workers_.ForkedChild()) return;  // nothing of the epoch runs in this process
  MutexLock lock(mu());
  consumer_left_ = true;
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

void LoaderImpl::Cancel() {
  if (workers_.ForkedChild()) return;
  MutexLock lock(mu());
  if (!workers_.EpochOpenLocked(mu())) return;
  if (reader_ != nullptr && !prefetch_.ArmedLocked(mu())) reader_->Cancel();
  ring_.CancelLocked(mu());  // no claims; wakes the consumer, which sees kStopped
}

bool LoaderImpl::AwaitWorkersLeft(int timeout_ms) {
  if (workers_.ForkedChild()) return true;
  MutexLock lock(mu());
  return workers_.AwaitEpochLeftForLocked(mu(), std::chrono::milliseconds(std::max(0, timeout_ms)));
}

void LoaderImpl::FinishEpochLocked() {
  stats_.EndEpoch();
  workers_.CloseEpochLocked(mu());
}

namespace {

// stats()'s shard cache figures (see LoaderStats).
void FillShardCacheStats(const Source::ShardCacheUse& u, const LoaderOptions& o,
                         LoaderStats* s) {
  if (!u.enabled) return;
  s->shard_cache = true;
  s->shard_cache_downloads = u.downloads;
  s->shard_cache_hits = u.hits;
  s->shard_cache_unvalidated = u.unvalidated;
  s->shard_cache_unvalidated_objects = u.unvalidated_objects;
  s->shard_cache_capacity = u.capacity;
  // Per rank: the shards being read and as many opening ahead (StreamReader).
  const int64_t per_rank = o.shuffle ? 2 * int64_t{u.concurrent_shards} : 2;
  const int64_t ranks = std::max(1, o.local_world_size);
  s->shard_cache_floor = u.largest_bytes * per_rank * ranks;
  s->shard_cache_too_small = u.capacity > 0 && u.capacity < s->shard_cache_floor;
  if (s->shard_cache_too_small) {
    s->shard_cache_advice =
        "cache_bytes=" + std::to_string(u.capacity) + " is below what this node's " +
        std::to_string(ranks) + " local rank(s) hold in the shard cache at once (" +
        std::to_string(per_rank) + " shards each, the largest " +
        BytesText(static_cast<double>(u.largest_bytes)) + ": " +
        BytesText(static_cast<double>(s->shard_cache_floor)) +
        "): shards are evicted while still wanted and downloaded again, so the cache saves "
        "little or nothing (" +
        std::to_string(u.downloads) + " downloads, " + std::to_string(u.hits) +
        " hits so far). Set cache_bytes to at least " + std::to_string(s->shard_cache_floor) +
        " plus the epoch's shards to reuse them, or 0 (unbounded)";
  }
}

}  // namespace

int64_t LoaderImpl::EpochPaddedLocked() const {
  int64_t repeats = 0;
  if (epoch_repeats_from_ >= 0) {
    // Random access: the rank's last positions, counted as they are
    // delivered (or skipped).
    repeats = std::clamp<int64_t>(assembler_.delivered_positions() - epoch_repeats_from_, 0,
                                  epoch_rank_padded_);
  } else if (prefetch_.ArmedLocked(mu())) {
    repeats = prefetch_.RunningPaddedLocked(mu());  // the next epoch's reader replaced it
  } else if (reader_ != nullptr) {
    repeats = reader_->padded();  // a stream's re-reads so far
  }
  // Under on_error="skip" with ranks: repeats standing in for skipped samples.
  return repeats + assembler_.padded_samples();
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
  s.epoch.padded_samples = EpochPaddedLocked();
  s.total.padded_samples = padded_before_ + s.epoch.padded_samples;
  s.prefetch_discarded_batches = prefetch_.discarded_batches(mu());
  s.truncated_shards = source_->truncated_shards();
  FillShardCacheStats(source_->shard_cache(), options_, &s);
  ring_.DepthLocked(mu(), &s.batches_in_flight, &s.ready_batches);
  if (size_tallies_ != nullptr) {
    for (int i = 0; i < plan_.workers; ++i) size_tallies_[static_cast<size_t>(i)].AddTo(&s.source_sizes);
  }
  s.total.skipped_files = skips_.files_total();
  s.epoch.skipped_files = skips_.files_epoch();
  if (cache_ != nullptr) {
    const DecodedCacheStats cs = cache_->stats();
    s.cache_hits = cs.hits;
    s.cache_misses = cs.misses;
    s.cache_evicted = cs.evicted;
    s.cache_entries = cs.entries;
    s.cache_stale = cs.stale;
    s.cache_bytes = cs.bytes;
    s.cache_capacity = cs.capacity;
    s.cache_advice = cache_->Advice(num_samples());
  }
  return s;
}

StatusOr<std::unique_ptr<Loader>> Loader::Create(std::shared_ptr<Source> source,
                                                 const LoaderOptions& given) {
  if (source == nullptr) return InvalidArgumentError("source is null");
  STOKER_ASSIGN_OR_RETURN(const LoaderOptions options, ResolveLoaderOptions(given));
  int height = 0, width = 0;
  int in_height = 0, in_width = 0;
  if (!source->FixedImageSize(&in_height, &in_width)) in_height = in_width = 0;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const RecordPlan> plan,
                          MakeRecordPlan(source->schema(), options, in_height, in_width));
  STOKER_RETURN_IF_ERROR(ValidateLoaderOptions(*source, options, *plan, &height, &width));
  STOKER_ASSIGN_OR_RETURN(const int64_t epoch_samples, EpochSamples(*source, options));
  return std::unique_ptr<Loader>(new LoaderImpl(std::move(source), options, height, width,
                                                epoch_samples, std::move(plan)));
}

bool SetTuningClockForTesting(Loader* loader, TuningClock clock) {
  auto* impl = dynamic_cast<LoaderImpl*>(loader);
  if (impl == nullptr) return false;
  impl->SetTuningClock(std::move(clock));
  return true;
}

}  // namespace stoker
