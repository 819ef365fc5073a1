// Copyright 2026 The stoker Authors.
//
// The engine behind stoker::Loader. See include/stoker/loader.h for the
// contract and docs/architecture.md for the design.
//
// Synchronisation: one mutex `mu_` guards epoch set-up, batch installation,
// hand-off to the consumer and the worker lifecycle. The per-sample hot path
// takes no lock: a position is claimed with one atomic fetch_add, the batch
// buffer is found with one acquire load, and completion is one atomic
// decrement; only the last sample of a batch takes `mu_` to wake the
// consumer. The locking is annotated for clang's thread-safety analysis
// (stoker/mutex.h; `make check-thread-safety`): waits are explicit loops, not
// predicate lambdas, so the analysis sees the lock held where they read state.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "ops/convert.h"
#include "ops/geometry.h"
#include "base/process.h"
#include "pipeline/decoded_cache.h"
#include "pipeline/loader_options.h"
#include "pipeline/loader_stats.h"
#include "pipeline/sample_processor.h"
#include "pipeline/tuner.h"
#include "pipeline/tuning_window.h"
#include "stoker/loader.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {
namespace {

// Runs f() (a sample's read or decode), turning any exception into a Status:
// no exception may leave a worker thread (std::terminate would end the
// process). std::bad_alloc (an image too large for the memory left) is
// ResourceExhausted, so on_error="skip" counts it like any bad sample.
// `name()` names the sample in the message (called only on an exception).
template <typename F, typename N>
Status NoThrow(F&& f, N&& name) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(name() + ": out of memory (std::bad_alloc) while reading or "
                                  "decoding it");
  } catch (const std::exception& e) {
    return InternalError(name() + ": unexpected exception: " + e.what());
  } catch (...) {
    return InternalError(name() + ": unexpected exception");
  }
}

// MutexLock, except in a forked child (`forked`): no other thread exists there,
// and the mutex may have been inherited locked by a thread of the parent, so
// it is not taken; the caller has the members to itself all the same. The
// analysis cannot follow a lock taken on a condition, so this scope tells it
// the mutex is held either way (the constructor and destructor are not
// analysed), and the functions that use it stay checked.
class STOKER_SCOPED_CAPABILITY MutexLockUnlessForked {
 public:
  MutexLockUnlessForked(Mutex* mu, bool forked) STOKER_EXCLUSIVE_LOCK_FUNCTION(mu)
      STOKER_NO_THREAD_SAFETY_ANALYSIS : mu_(forked ? nullptr : mu) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~MutexLockUnlessForked() STOKER_UNLOCK_FUNCTION() STOKER_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  MutexLockUnlessForked(const MutexLockUnlessForked&) = delete;
  MutexLockUnlessForked& operator=(const MutexLockUnlessForked&) = delete;

 private:
  Mutex* const mu_;  // null: not taken (forked child)
};

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
                NormalizeOf(options.transforms).mean, NormalizeOf(options.transforms).std) {
    // Workers: `threads`, or up to the ceiling when tuned (the ones above
    // the active count sleep). The ring: `prefetch` slots, or the ceiling.
    cores_ = std::max(1, AvailableCores() / std::max(1, options_.local_world_size));
    const ThreadPlan plan = PlanThreads(options_, cores_);
    threads_ = plan.workers;
    const int active = plan.active;
    const int ring = options_.auto_prefetch ? std::max(options_.prefetch, options_.max_prefetch)
                                            : options_.prefetch;
    active_threads_.store(active, std::memory_order_relaxed);
    in_flight_ = std::min(options_.prefetch, ring);
    if (options_.auto_threads || options_.auto_prefetch) {
      TunerConfig tc;
      tc.tune_threads = options_.auto_threads;
      tc.tune_prefetch = options_.auto_prefetch;
      tc.max_threads = threads_;
      tc.max_prefetch = ring;
      tuner_ = std::make_unique<Tuner>(tc, TunerSettings{active, in_flight_});
      tuning_window_ = std::make_unique<TuningWindow>(options_.tune_window);
    }
    BatchShape shape;
    shape.batch_size = options_.batch_size;
    shape.height = height;
    shape.width = width;
    shape.dtype = options_.dtype;
    shape.layout = options_.layout;
    shape.variable = options_.collate == LoaderOptions::Collate::kList;
    if (options_.cache_bytes > 0) cache_ = std::make_unique<DecodedCache>(options_.cache_bytes);
    output_cache_ = cache_ != nullptr && options_.cache_kind == LoaderOptions::CacheKind::kOutput;
    // Kept idle: the ring's, the next epoch's prefetch (up to `ring` more at
    // an epoch's end) and two the consumer holds, so no boundary reallocates.
    pool_ = BatchPool::Create(shape, options_.allocator ? options_.allocator : HostAllocator(),
                              2 * ring + 2);
    processor_config_.transforms = options_.transforms;
    processor_config_.dct_scaling = options_.dct_scaling;
    processor_config_.decoder.max_pixels = options_.max_pixels;
    processor_config_.timing = options_.stage_timing;
    processor_config_.scratch_budget = options_.scratch_budget;
    ring_ = std::vector<RingSlot>(static_cast<size_t>(ring));
    staged_ = std::vector<StagedBatch>(static_cast<size_t>(ring));
    counters_ = std::vector<WorkerCounters>(static_cast<size_t>(threads_));
    pre_counters_ = std::vector<WorkerCounters>(static_cast<size_t>(threads_));
    scratch_bytes_ = std::vector<std::atomic<size_t>>(static_cast<size_t>(threads_));
  }

  ~LoaderImpl() override {
    if (ForkedChild()) {
      // The workers do not exist in this process, and the mutex and condition
      // variables may be frozen in the state a worker left them in at fork()
      // (locked, or counting waiters that will never wake: destroying such a
      // condition variable blocks in glibc). Leak the thread handles and give
      // the members fresh primitives to destroy.
      (void)new std::vector<std::thread>(std::move(workers_));
      workers_.clear();
      new (&mu_) Mutex();
      new (&work_cv_) CondVar();
      new (&ready_cv_) CondVar();
      new (&idle_cv_) CondVar();
      (void)reader_.release();  // may hold a lock taken by a worker of the parent
      return;
    }
    Stop();
    {
      MutexLock lock(&mu_);
      shutdown_ = true;
      cancelled_.store(true, std::memory_order_release);  // wakes parked workers
      pre_cancel_.store(true, std::memory_order_release);
    }
    work_cv_.SignalAll();
    for (std::thread& t : workers_) t.join();
    for (int i = 0; i < staged_count_; ++i) pool_->Release(staged_[i].buffer);
    if (pad_source_ != nullptr) pool_->Release(pad_source_);
  }

  int64_t num_samples() const override { return epoch_samples_total_; }
  int64_t num_batches() const override {
    const int64_t n = epoch_samples_total_;
    const int64_t b = options_.batch_size;
    if (n < 0) return -1;
    const int64_t share = RankShareOf(n, SpecFor(0, 0)).samples;
    return options_.drop_last ? share / b : (share + b - 1) / b;
  }
  int height() const override { return height_; }
  int width() const override { return width_; }
  const LoaderOptions& options() const override { return options_; }
  std::shared_ptr<Source> source() const override { return source_; }

  void SetEpoch(int64_t epoch) override {
    MutexLockUnlessForked lock(&mu_, ForkedChild());
    if (resume_pending_ && epoch != next_epoch_) resume_pending_ = false;
    next_epoch_ = epoch;
    epoch_set_ = true;
  }

  LoaderState state() const override {
    MutexLock lock(&mu_);
    LoaderState st;
    st.world_size = options_.world_size;
    if (resume_pending_) {
      st.epoch = next_epoch_;
      st.consumed = resume_offset_;
      return st;
    }
    if (!started_once_ || epoch_finished_ || epoch_set_) {
      st.epoch = next_epoch_;
      return st;
    }
    // Positions delivered (or skipped) by this rank, times the ranks, after
    // the offset. Under skip the samples carried into the next batch are not
    // delivered yet: a resume reads them again.
    int64_t local = delivered_positions_;
    const int64_t end = stream_end_.load(std::memory_order_acquire);
    local = std::min(local, std::min(epoch_samples_, end));
    st.epoch = epoch_;
    st.consumed = epoch_offset_ + local * options_.world_size;
    const int64_t n = epoch_samples_total_;  // the sampler's draws per epoch
    if (n >= 0 && st.consumed >= n) {  // every sample handed out: the epoch is done
      st.epoch = next_epoch_;
      st.consumed = 0;
    }
    return st;
  }

  Status Resume(const LoaderState& st) override {
    if (st.consumed < 0) {
      return InvalidArgumentError("resume state: consumed must be >= 0, got " +
                                  std::to_string(st.consumed));
    }
    const int64_t n = epoch_samples_total_;  // the sampler's draws per epoch
    if (!source_->random_access() && st.consumed > 0 && st.world_size != options_.world_size) {
      return InvalidArgumentError(
          "a stream (Shards in stream mode) resumes mid-epoch only at the world size it was "
          "saved at (" + std::to_string(st.world_size) + " ranks, now " +
          std::to_string(options_.world_size) + "); resume at an epoch boundary, or use "
          "mode=\"indexed\" (local .tar) for any world size");
    }
    Stop();
    MutexLock lock(&mu_);
    const bool whole = n >= 0 && st.consumed >= n;  // the epoch was done: the next one
    next_epoch_ = whole ? st.epoch + 1 : st.epoch;
    resume_offset_ = whole ? 0 : st.consumed;
    resume_pending_ = resume_offset_ > 0;
    epoch_set_ = true;
    return Status::OK();
  }
  int64_t epoch() const override {
    MutexLockUnlessForked lock(&mu_, ForkedChild());
    return active_ || started_once_ ? epoch_ : next_epoch_;
  }

  Status Start() override {
    STOKER_RETURN_IF_ERROR(CheckNotForked());
    Stop();
    EnsureThreads();
    MutexLock lock(&mu_);
    // Workers parked by the tuner may still sit in the finished epoch.
    cancelled_.store(true, std::memory_order_release);
    work_cv_.SignalAll();
    while (busy_workers_ != 0) idle_cv_.Wait(&mu_);
    // The next epoch's first batches, made while the last one ended: used when
    // this is the epoch they were made for, from its start; else discarded.
    const bool use_prefetch = prefetching_ && pre_epoch_ == next_epoch_ && !resume_pending_;
    pre_open_ = false;  // no worker joins it any more
    if (prefetching_) {
      // Its workers stop claiming positions and finish the sample in hand, so
      // Start() does not wait for the whole prefetch (nor, without a poll,
      // hold off Ctrl-C): a used prefetch's unclaimed positions are the epoch
      // workers' below.
      pre_cancel_.store(true, std::memory_order_release);
      if (!use_prefetch) reader_->Cancel();  // the prefetch's reads are not wanted
    }
    while (pre_busy_ != 0) idle_cv_.Wait(&mu_);
    pre_cancel_.store(false, std::memory_order_relaxed);
    if (prefetching_ && !use_prefetch) DiscardPrefetchLocked();
    if (!use_prefetch) FoldPrefetchCountersLocked();  // work done for nothing: the last epoch's
    epoch_ = next_epoch_;
    work_epoch_ = epoch_;
    next_epoch_ = epoch_ + 1;
    started_once_ = true;
    epoch_finished_ = false;
    epoch_set_ = false;
    epoch_offset_ = resume_pending_ ? resume_offset_ : 0;
    resume_pending_ = false;
    if (!use_prefetch) {  // else reader_ is the prefetch's, for this epoch
      const EpochSpec spec = SpecFor(epoch_, epoch_offset_);
      auto reader = source_->StartEpoch(spec);
      if (!reader.ok()) return reader.status();
      reader_ = std::move(reader).value();
    }
    const int64_t n = reader_->size();
    epoch_random_access_ = reader_->random_access();
    const int64_t b = options_.batch_size;
    if (n < 0) {  // a stream: the end is found by reading (stream_end_)
      epoch_batches_ = kUnbounded / b;
      epoch_samples_ = epoch_batches_ * b;
    } else {
      epoch_batches_ = options_.drop_last ? n / b : (n + b - 1) / b;
      epoch_samples_ = std::min(n, epoch_batches_ * b);
    }
    stream_end_.store(kUnbounded, std::memory_order_relaxed);
    next_position_.store(0, std::memory_order_relaxed);
    cancelled_.store(false, std::memory_order_relaxed);
    next_to_consume_ = 0;
    delivered_positions_ = 0;
    delivered_batches_ = 0;
    good_delivered_ = 0;
    if (pad_source_ != nullptr) pad_source_->size = 0;
    pad_left_ = 0;
    skip_padded_ = 0;
    {
      // The prefetch's skips belong to this epoch when its batches are used.
      MutexLock skip_lock(&skip_mu_);
      skip_epoch_ = use_prefetch ? std::move(skip_prefetch_) : SkipRecord();
      skip_prefetch_ = SkipRecord();
    }
    fatal_ = Status::OK();
    for (RingSlot& s : ring_) {
      s.batch.store(-1, std::memory_order_relaxed);
      s.buffer = nullptr;
    }
    if (use_prefetch) {
      // The prefetch's claimed positions are made (its workers are gone); the
      // rest, if it was cut short, are the epoch workers'. Batches with a
      // claimed position go into the ring (a partly made one completes there);
      // those with none go back to the pool.
      const int64_t bsz = options_.batch_size;
      const int64_t claimed = std::min({pre_next_.load(std::memory_order_acquire), pre_limit_,
                                        epoch_samples_});
      const int moved = static_cast<int>((claimed + bsz - 1) / bsz);
      for (int i = 0; i < staged_count_; ++i) {
        if (i < moved) {
          RingSlot& slot = ring_[static_cast<size_t>(i)];
          slot.buffer = staged_[i].buffer;
          slot.remaining.store(staged_[i].remaining.load(std::memory_order_acquire),
                               std::memory_order_relaxed);
          slot.batch.store(i, std::memory_order_relaxed);
        } else {
          pool_->Release(staged_[i].buffer);
        }
        staged_[i].buffer = nullptr;
      }
      next_position_.store(claimed, std::memory_order_relaxed);
      staged_count_ = 0;
      prefetching_ = false;
    }
    epoch_snapshot_ = SumLocked();
    if (use_prefetch) FoldPrefetchCountersLocked();  // this epoch's work
    epoch_start_ns_ = NowNs();
    epoch_done_ = false;
    epoch_restart_ = true;  // the wait for the new epoch's first batch is not tuned on
    active_ = true;
    ++generation_;
    lock.Unlock();
    work_cv_.SignalAll();
    return Status::OK();
  }

  Status Next(BatchPtr* out, bool* end) override { return Next(out, end, nullptr, 0); }

  Status Next(BatchPtr* out, bool* end, const std::function<Status()>& poll,
              int poll_ms) override {
    STOKER_RETURN_IF_ERROR(CheckNotForked());
    *end = false;
    // Batch assembly. Workers fill "position batches" (positions [b*B, b*B+B)
    // of this rank's order); the consumer removes the samples skipped under
    // on_error=skip (and a stream's slots past its end) and packs the rest,
    // in position order, into delivered batches of B. So the batches are a
    // function of (seed, epoch, which samples are bad) alone, every good
    // sample is delivered once, and only the epoch's last batch is short.
    // `carry` holds the samples taken but not yet delivered (fewer than B);
    // between calls it lives in carry_ (Stop() releases it).
    BatchBuffer* carry = nullptr;
    std::vector<int64_t> carry_pos;  // rank-local position of each carried sample
    bool padding = false;
    {
      MutexLock lock(&mu_);
      carry = carry_;
      carry_ = nullptr;
      carry_pos.swap(carry_pos_);
      padding = pad_left_ > 0;
    }
    if (padding) return DeliverPadded(carry, out);
    const int bsz = options_.batch_size;
    std::vector<int64_t> kept_pos;
    for (;;) {
      BatchBuffer* buf = nullptr;
      int64_t b = 0;
      Take took = Take::kStopped;
      Status st = TakeBatch(&buf, &b, &took, poll, poll_ms);
      if (!st.ok() || took == Take::kStopped) {
        if (carry != nullptr) {
          bool kept = false;
          {
            MutexLock lock(&mu_);
            kept = active_ && carry_ == nullptr;
            if (kept) {  // a poll's error: the epoch goes on
              carry_ = carry;
              carry_pos_.swap(carry_pos);
            }
          }
          if (!kept) pool_->Release(carry);
        }
        if (!st.ok()) return st;
        *end = true;
        return Status::OK();
      }
      if (took == Take::kEnd) return EndOfEpoch(carry, out, end);
      // Close the gaps of skipped samples (and cut a stream's last batch).
      const int kept = CompactBatch(b, buf, &kept_pos);
      BatchBuffer* ready = nullptr;
      if (carry == nullptr) {
        if (kept == bsz) {
          ready = buf;  // the common case: delivered as the workers wrote it
        } else if (kept == 0) {
          pool_->Release(buf);
        } else {
          carry = buf;
          carry_pos = kept_pos;
        }
      } else {
        const int take = std::min(bsz - carry->size, kept);
        for (int i = 0; i < take; ++i) MoveSample(buf, i, carry, carry->size + i);
        carry->size += take;
        carry_pos.insert(carry_pos.end(), kept_pos.begin(), kept_pos.begin() + take);
        if (carry->size == bsz) {
          ready = carry;
          carry = nullptr;
          carry_pos.clear();
          if (kept > take) {  // the rest of this batch starts the next one
            for (int i = take; i < kept; ++i) MoveSample(buf, i, buf, i - take);
            buf->size = kept - take;
            carry = buf;
            carry_pos.assign(kept_pos.begin() + take, kept_pos.end());
            buf = nullptr;
          }
        }
        if (buf != nullptr) pool_->Release(buf);
      }
      if (ready == nullptr) continue;
      KeepForPadding(ready);
      {
        MutexLock lock(&mu_);
        // Positions before the first one still carried are delivered or skipped.
        delivered_positions_ = carry != nullptr ? carry_pos.front() : (b + 1) * bsz;
        good_delivered_ += ready->size;
        ready->index = delivered_batches_++;
        ++batches_;
        carry_ = carry;
        carry_pos_.swap(carry_pos);
      }
      *out = std::make_shared<Batch>(pool_, ready);
      return Status::OK();
    }
  }

  void Stop() override {
    if (ForkedChild()) return;  // nothing of the epoch runs in this process
    MutexLock lock(&mu_);
    if (carry_ != nullptr) pool_->Release(carry_);  // a batch being assembled
    carry_ = nullptr;
    carry_pos_.clear();
    pad_left_ = 0;
    if (!active_) return;
    cancelled_.store(true, std::memory_order_release);
    active_ = false;
    // A stalled remote read returns soon. Not the next epoch's prefetch: the
    // reader is then its own, and the epoch stopped has no reads left.
    if (reader_ != nullptr && !prefetching_) reader_->Cancel();
    work_cv_.SignalAll();
    ready_cv_.SignalAll();
    while (busy_workers_ != 0) idle_cv_.Wait(&mu_);
    for (RingSlot& s : ring_) {
      if (s.buffer != nullptr) pool_->Release(s.buffer);
      s.buffer = nullptr;
      s.batch.store(-1, std::memory_order_relaxed);
    }
    FinishEpochLocked();
  }

  LoaderStats stats() const override {
    MutexLockUnlessForked lock(&mu_, ForkedChild());
    Totals now = SumLocked();
    if (active_ && !epoch_done_) now.wall_ns += NowNs() - epoch_start_ns_;
    LoaderStats s;
    s.total = now.ToStageStats();
    Totals e = now;
    e -= epoch_snapshot_;
    s.epoch = e.ToStageStats();
    s.current_epoch = epoch_;
    s.threads = active_threads_.load(std::memory_order_relaxed);
    s.prefetch = in_flight_;
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
    s.padded_samples =
        (prefetching_ ? epoch_padded_ : reader_ != nullptr ? reader_->padded() : 0) + skip_padded_;
    s.prefetch_discarded_batches = prefetch_discarded_batches_;
    s.truncated_shards = source_->truncated_shards();
    {
      MutexLock skip_lock(&skip_mu_);
      s.total.skipped_files = static_cast<int64_t>(skipped_files_total_.size());
      s.epoch.skipped_files = static_cast<int64_t>(skip_epoch_.files.size());
    }
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

 private:
  struct RingSlot {
    std::atomic<int64_t> batch{-1};    // batch index occupying the slot, -1 if free
    BatchBuffer* buffer = nullptr;     // written before `batch` is released
    std::atomic<int> remaining{0};     // samples of the batch not yet written
  };

  // Streams (reader size -1): the first position whose Read reports the end.
  static constexpr int64_t kUnbounded = int64_t{1} << 62;
  // ids()[s] of a stream sample dropped under on_error=skip (a stream cannot
  // read a replacement); its slot is removed before the batch is delivered.
  static constexpr int64_t kSkippedId = -2;

  EpochSpec SpecFor(int64_t epoch, int64_t offset) const {
    EpochSpec spec;
    spec.seed = options_.seed;
    spec.epoch = epoch;
    spec.shuffle = options_.shuffle;
    spec.rank = options_.rank;
    spec.world_size = options_.world_size;
    spec.drop_last = options_.drop_last;
    spec.offset = offset;
    spec.sampler = &options_.sampler;
    return spec;
  }

  // Whether batch b starts at or after the end of the stream.
  bool PastStreamEnd(int64_t b) const {
    return b * options_.batch_size >= stream_end_.load(std::memory_order_acquire);
  }

  void MarkStreamEnd(int64_t position) {
    int64_t cur = stream_end_.load(std::memory_order_relaxed);
    while (position < cur &&
           !stream_end_.compare_exchange_weak(cur, position, std::memory_order_acq_rel)) {
    }
    if (position < cur) {
      MutexLock lock(&mu_);
      work_cv_.SignalAll();
      ready_cv_.SignalAll();
    }
  }

  // Next() at the epoch's end: what is carried is its last batch. With ranks
  // under skip, the rank's missing samples are made up by repeating its
  // first ones (DeliverPadded), so every rank delivers the batches it would
  // without bad samples. An epoch in which nothing could be read is an error.
  Status EndOfEpoch(BatchBuffer* carry, BatchPtr* out, bool* end) {
    const int bsz = options_.batch_size;
    if (carry != nullptr) KeepForPadding(carry);
    Status all_bad;
    int64_t skipped_n = 0;
    int64_t epoch = 0;
    bool pad = false;
    {
      MutexLock lock(&mu_);
      epoch = epoch_;
      if (PadsRanks() && pad_source_ != nullptr && pad_source_->size > 0) {
        int64_t total = std::min(epoch_samples_, stream_end_.load(std::memory_order_acquire));
        if (options_.drop_last) total = total / bsz * bsz;
        const int64_t missing = total - good_delivered_ - (carry != nullptr ? carry->size : 0);
        if (missing > 0) {
          pad_left_ = missing;
          pad_next_ = 0;
          pad = true;
        }
      }
      if (!pad && carry == nullptr && good_delivered_ == 0 && epoch_offset_ == 0) {
        MutexLock skip_lock(&skip_mu_);
        all_bad = skip_epoch_.first;  // OK unless a sample was skipped
        skipped_n = SumLocked().skipped - epoch_snapshot_.skipped;
      }
    }
    if (pad) return DeliverPadded(carry, out);
    if (!all_bad.ok()) {
      return all_bad.WithContext("on_error=skip: no sample of epoch " + std::to_string(epoch) +
                                 " could be read (" + std::to_string(skipped_n) +
                                 " skipped); first failure");
    }
    if (carry == nullptr || (options_.drop_last && carry->size < bsz)) {
      if (carry != nullptr) pool_->Release(carry);
      *end = true;
      return Status::OK();
    }
    {
      MutexLock lock(&mu_);
      delivered_positions_ = kUnbounded;  // every position accounted (capped in state())
      good_delivered_ += carry->size;
      carry->index = delivered_batches_++;
      ++batches_;
    }
    *out = std::make_shared<Batch>(pool_, carry);
    return Status::OK();
  }

  // Ranks under skip: a batch of the samples still missing at the epoch's
  // end (pad_left_), after the carried ones, repeating the rank's first
  // delivered samples in order (counted in padded_samples).
  Status DeliverPadded(BatchBuffer* carry, BatchPtr* out) {
    BatchBuffer* batch = carry;
    if (batch == nullptr) {
      auto acquired = pool_->Acquire();
      if (!acquired.ok()) {
        MutexLock lock(&mu_);
        pad_left_ = 0;
        return acquired.status();
      }
      batch = acquired.value();
      batch->size = 0;
    }
    MutexLock lock(&mu_);
    batch->epoch = epoch_;
    good_delivered_ += batch->size;
    while (batch->size < options_.batch_size && pad_left_ > 0) {
      Status copied = CopySample(pad_source_, static_cast<int>(pad_next_ % pad_source_->size),
                                 batch, batch->size);
      if (!copied.ok()) {  // no memory for a variable-size sample
        pad_left_ = 0;
        pool_->Release(batch);
        return copied;
      }
      ++batch->size;
      ++pad_next_;
      --pad_left_;
      ++skip_padded_;
    }
    delivered_positions_ = kUnbounded;
    batch->index = delivered_batches_++;
    ++batches_;
    *out = std::make_shared<Batch>(pool_, batch);
    return Status::OK();
  }

  bool PadsRanks() const { return options_.world_size > 1 && options_.on_error == OnError::kSkip; }

  // Ranks under skip: keeps a copy of the epoch's first delivered samples
  // (up to one batch) for DeliverPadded.
  void KeepForPadding(BatchBuffer* buf) {
    if (!PadsRanks()) return;
    MutexLock lock(&mu_);
    if (pad_source_ != nullptr && pad_source_->size >= options_.batch_size) return;
    if (pad_source_ == nullptr) {
      auto acquired = pool_->Acquire();
      if (!acquired.ok()) return;  // no padding then: the rank's epoch is shorter
      pad_source_ = acquired.value();
      pad_source_->size = 0;
    }
    for (int i = 0; i < buf->size && pad_source_->size < options_.batch_size; ++i) {
      // Out of memory (variable size): no more kept; the rank's epoch is shorter.
      if (!CopySample(buf, i, pad_source_, pad_source_->size).ok()) return;
      ++pad_source_->size;
    }
  }

  enum class Take { kBatch, kEnd, kStopped };
  // Takes the next position batch once its samples are written (the
  // consumer's wait). kEnd: the epoch's positions are exhausted or the stream
  // ended; kStopped: Stop() ran (another thread, or the epoch was already
  // over). An error (a fatal one, a poll's, or under kRaise a bad sample's)
  // stops the epoch.
  Status TakeBatch(BatchBuffer** out, int64_t* index, Take* result,
                   const std::function<Status()>& poll, int poll_ms) {
    *out = nullptr;
    MutexLock lock(&mu_);
    if (!active_) {
      *result = Take::kStopped;
      return Status::OK();
    }
    if (next_to_consume_ >= epoch_batches_) {
      FinishEpochLocked();
      epoch_finished_ = true;
      *result = Take::kEnd;
      return Status::OK();
    }
    const int64_t b = next_to_consume_;
    RingSlot& slot = ring_[b % ring_.size()];
    int64_t waited_ns = 0;
    if (!BatchReadyLocked(b, slot)) {
      const int64_t t0 = NowNs();
      if (!poll) {
        while (!BatchReadyLocked(b, slot)) ready_cv_.Wait(&mu_);
      } else {
        while (!WaitReadyLocked(b, slot, std::chrono::milliseconds(poll_ms))) {
          lock.Unlock();
          Status polled = poll();
          lock.Lock();
          if (!polled.ok()) {
            consumer_wait_ns_ += NowNs() - t0;
            return polled;
          }
        }
      }
      waited_ns = NowNs() - t0;
      consumer_wait_ns_ += waited_ns;
    }
    if (!active_) {
      *result = Take::kStopped;
      return Status::OK();
    }
    if (!fatal_.ok()) {
      Status fatal = fatal_;
      lock.Unlock();
      Stop();
      return fatal;
    }
    if (PastStreamEnd(b)) {  // the stream ended at the previous batch's end
      epoch_finished_ = true;
      lock.Unlock();
      Stop();
      *result = Take::kEnd;
      return Status::OK();
    }
    BatchBuffer* buf = slot.buffer;
    slot.buffer = nullptr;
    slot.batch.store(-1, std::memory_order_release);
    ++next_to_consume_;
    if (tuner_ != nullptr) TuneLocked(buf->size, waited_ns);
    lock.Unlock();
    work_cv_.SignalAll();

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

  // Whether the consumer may go on with position batch b (in `slot`): it is
  // complete, or the epoch stopped (!active_: another thread stopped it while
  // this one waited), failed, or the stream ended before it.
  bool BatchReadyLocked(int64_t b, const RingSlot& slot) const
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !active_ || !fatal_.ok() || PastStreamEnd(b) ||
           (slot.batch.load(std::memory_order_acquire) == b &&
            slot.remaining.load(std::memory_order_acquire) == 0);
  }

  // ready_cv_.wait_for(lock, timeout, BatchReadyLocked) as a loop the analysis
  // follows: waits until batch b is ready or `timeout` from now has passed
  // (spurious wake-ups do not extend it); returns whether it is ready.
  bool WaitReadyLocked(int64_t b, const RingSlot& slot, std::chrono::milliseconds timeout)
      STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!BatchReadyLocked(b, slot)) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= left.zero() || !ready_cv_.WaitFor(&mu_, left)) {
        return BatchReadyLocked(b, slot);  // timed out
      }
    }
    return true;
  }

  // On the consumer's thread, once position batch b is complete: cuts a
  // stream's batch at the stream's end and closes the gaps of skipped samples
  // (in order). Returns the samples kept; `positions`: their rank-local
  // positions.
  int CompactBatch(int64_t b, BatchBuffer* buf, std::vector<int64_t>* positions) {
    const int64_t bsz = options_.batch_size;
    positions->clear();
    // Not reader_: once this epoch is made, a worker swaps in the next
    // epoch's reader (cross-epoch prefetch) while the consumer still runs.
    if (!epoch_random_access_) {
      const int64_t end = stream_end_.load(std::memory_order_acquire);
      if (end < (b + 1) * bsz) buf->size = static_cast<int>(end - b * bsz);
    }
    int kept = 0;
    for (int i = 0; i < buf->size; ++i) {
      if (buf->ids()[i] == kSkippedId) continue;
      if (kept != i) MoveSample(buf, i, buf, kept);
      positions->push_back(b * bsz + i);
      ++kept;
    }
    buf->size = kept;
    return kept;
  }

  // Copies sample `from` of `src` into slot `to` of `dst` (pixels, label, id).
  // Variable-size batches: the slot is reserved for the sample's size first
  // (ResourceExhausted when that fails).
  static Status CopySample(BatchBuffer* src, int from, BatchBuffer* dst, int to) {
    uint8_t* target = dst->slot(to);
    if (src->shape().variable) {
      STOKER_ASSIGN_OR_RETURN(
          target, dst->ReserveSlot(to, src->slot_height(from), src->slot_width(from)));
    }
    std::memcpy(target, src->slot(from), src->slot_bytes(from));
    dst->labels()[to] = src->labels()[from];
    dst->ids()[to] = src->ids()[from];
    dst->errors()[to] = Status::OK();
    return Status::OK();
  }

  // The same when `src`'s slot `from` is not read again (batch assembly):
  // variable-size samples move by swapping regions, without a copy.
  static void MoveSample(BatchBuffer* src, int from, BatchBuffer* dst, int to) {
    if (!src->shape().variable) {
      (void)CopySample(src, from, dst, to);  // fixed size: cannot fail
      return;
    }
    src->SwapSlots(from, dst, to);
    dst->labels()[to] = src->labels()[from];
    dst->ids()[to] = src->ids()[from];
    dst->errors()[to] = Status::OK();
  }

  // on_error=skip: counts the sample at `pos` as a skipped file (once per
  // file: by the source's key, or its name when it has none) and keeps the
  // epoch's first failure (the lowest position: the same for any thread
  // count) for the error of an epoch where nothing could be read. A sample of
  // the next epoch's prefetch goes to that epoch's record (Start() adopts it).
  void NoteSkipped(int64_t pos, const Status& st, bool prefetch) {
    const int64_t key = reader_->KeyAt(pos);
    std::string file = key >= 0 ? std::to_string(key) : "#" + reader_->Name(pos);
    MutexLock lock(&skip_mu_);
    skipped_files_total_.insert(file);
    SkipRecord& r = prefetch ? skip_prefetch_ : skip_epoch_;
    r.files.insert(std::move(file));
    if (r.first.ok() || pos < r.first_pos) {
      r.first = st;
      r.first_pos = pos;
    }
  }

  // Fork: the worker threads belong to the process that started them
  // (owner_pid_). A forked child inherits the Loader's memory but none of its
  // threads, so iterating there would wait forever; it gets an error instead.
  bool ForkedChild() const { return owner_pid_ != 0 && ::getpid() != owner_pid_; }

  Status CheckNotForked() const {
    if (!ForkedChild()) return Status::OK();
    return UnimplementedError(
        "this Loader's worker threads run in process " + std::to_string(owner_pid_) +
        ", and this is a forked child (pid " + std::to_string(::getpid()) +
        ") that cannot use them: create the Loader in the child (e.g. in the worker's "
        "initialiser or after the fork), or use the 'spawn' or 'forkserver' start method");
  }

  void EnsureThreads() {
    if (!workers_.empty()) return;
    owner_pid_ = ::getpid();
    workers_.reserve(threads_);
    for (int i = 0; i < threads_; ++i) workers_.emplace_back([this, i] { WorkerMain(i); });
  }

  void WorkerMain(int index) {
    SampleProcessor processor(processor_config_, &writer_);
    SampleScratch scratch;
    uint64_t seen = 0;
    uint64_t seen_prefetch = 0;
    for (;;) {
      bool epoch_work = false;
      {
        MutexLock lock(&mu_);
        while (!shutdown_ && !(active_ && generation_ != seen) &&
               !(pre_open_ && pre_generation_ != seen_prefetch)) {
          work_cv_.Wait(&mu_);
        }
        if (shutdown_) return;
        epoch_work = active_ && generation_ != seen;
        if (epoch_work) {
          seen = generation_;
          ++busy_workers_;
        } else {
          seen_prefetch = pre_generation_;
          ++pre_busy_;
        }
      }
      if (epoch_work) {
        RunEpoch(index, &processor, &scratch);
        MaybePrefetchNextEpoch(seen);  // leaves the epoch (busy_workers_)
      } else {
        RunPrefetch(index, &processor, &scratch);
        MutexLock lock(&mu_);
        --pre_busy_;
      }
      scratch_bytes_[index].store(processor.scratch_bytes() + scratch.bytes.capacity(),
                                  std::memory_order_relaxed);
      idle_cv_.SignalAll();
    }
  }

  // Whether the epoch's workers are done and the next epoch's first batches
  // may be made now: every position of this epoch is made (the last worker
  // leaves), nothing stopped it, and the source reads any position (streams
  // are not prefetched: see docs/architecture.md).
  bool PrefetchWantedLocked(uint64_t generation) const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return options_.prefetch_next_epoch && busy_workers_ == 1 && generation == generation_ && !shutdown_ && !prefetching_ &&
           !cancelled_.load(std::memory_order_acquire) && fatal_.ok() && !resume_pending_ &&
           reader_ != nullptr && reader_->random_access() && reader_->size() >= 0 &&
           next_position_.load(std::memory_order_acquire) >= epoch_samples_;
  }

  // Called by each worker leaving epoch `generation`. The last one, when the
  // epoch ended (not stopped), sets up the next epoch's prefetch: its reader
  // (made outside mu_; the worker stays busy meanwhile, so Start/Stop wait),
  // and up to in_flight_ batch buffers that the workers then fill.
  void MaybePrefetchNextEpoch(uint64_t generation) {
    MutexLock lock(&mu_);
    if (!PrefetchWantedLocked(generation)) {
      --busy_workers_;
      return;
    }
    const int64_t epoch = next_epoch_;
    const EpochSpec spec = SpecFor(epoch, 0);
    const int64_t want = std::min<int64_t>(in_flight_, static_cast<int64_t>(staged_.size()));
    lock.Unlock();
    // The reader and the buffers are made without mu_ (a permutation, a
    // pinned allocation): the consumer goes on meanwhile.
    auto made = source_->StartEpoch(spec);
    const int64_t bsz = options_.batch_size;
    int64_t samples = 0;
    std::vector<BatchBuffer*> bufs;
    if (made.ok() && made.value()->random_access() && made.value()->size() > 0) {
      const int64_t n = made.value()->size();
      const int64_t batches = options_.drop_last ? n / bsz : (n + bsz - 1) / bsz;
      samples = std::min(n, batches * bsz);
      for (int64_t i = 0; i < std::min(want, batches); ++i) {
        auto acquired = pool_->Acquire();
        if (!acquired.ok()) break;  // no memory for more: that many fewer prefetched
        bufs.push_back(acquired.value());
      }
    }
    std::unique_ptr<EpochReader> old;  // dies after the lock is let go
    lock.Lock();
    --busy_workers_;
    if (bufs.empty() || generation != generation_ || shutdown_ || prefetching_ ||
        cancelled_.load(std::memory_order_acquire) || resume_pending_ || epoch != next_epoch_) {
      // An error of StartEpoch shows when that epoch starts; or the plan changed.
      for (BatchBuffer* buf : bufs) pool_->Release(buf);
      return;
    }
    const int count = static_cast<int>(bufs.size());
    for (int i = 0; i < count; ++i) {
      BatchBuffer* buf = bufs[static_cast<size_t>(i)];
      buf->size = static_cast<int>(std::min<int64_t>(bsz, samples - i * bsz));
      buf->epoch = epoch;
      buf->index = i;
      staged_[static_cast<size_t>(i)].buffer = buf;
      staged_[static_cast<size_t>(i)].remaining.store(buf->size, std::memory_order_relaxed);
    }
    epoch_padded_ = reader_->padded();
    old = std::move(reader_);
    reader_ = std::move(made).value();
    prefetching_ = true;
    pre_open_ = true;
    staged_count_ = count;
    pre_epoch_ = epoch;
    work_epoch_ = epoch;
    pre_limit_ = std::min(samples, count * bsz);
    pre_next_.store(0, std::memory_order_relaxed);
    pre_cancel_.store(false, std::memory_order_relaxed);
    ++pre_generation_;
    lock.Unlock();
    work_cv_.SignalAll();
  }

  // Makes the prefetched positions of the next epoch (staged_), the same way
  // RunEpoch makes an epoch's; stops when they are all claimed or cancelled.
  void RunPrefetch(int index, SampleProcessor* processor, SampleScratch* scratch) {
    // Counted apart, and added to the totals when the prefetched epoch starts
    // (or the prefetch is dropped): stats() never depend on how far it got.
    WorkerCounters& c = pre_counters_[index];
    const int64_t bsz = options_.batch_size;
    while (!pre_cancel_.load(std::memory_order_acquire)) {
      // Parked by the tuner: leaves it to the active ones (worker 0 is always active).
      if (index >= active_threads_.load(std::memory_order_relaxed)) return;
      const int64_t p = pre_next_.fetch_add(1, std::memory_order_relaxed);
      if (p >= pre_limit_) return;
      StagedBatch& st = staged_[static_cast<size_t>(p / bsz)];
      ProduceSample(p, static_cast<int>(p % bsz), st.buffer, processor, scratch, &c,
                    /*prefetch=*/true);
      st.remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  // Adds the prefetch's counters to the workers' (no prefetch worker runs).
  void FoldPrefetchCountersLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (size_t i = 0; i < counters_.size(); ++i) {
      WorkerCounters& to = counters_[i];
      WorkerCounters& from = pre_counters_[i];
      for (auto field : {&WorkerCounters::read_ns, &WorkerCounters::decode_ns,
                         &WorkerCounters::augment_ns, &WorkerCounters::wait_ns,
                         &WorkerCounters::callback_ns, &WorkerCounters::images,
                         &WorkerCounters::skipped, &WorkerCounters::bytes}) {
        WorkerCounters::Add(to.*field, (from.*field).exchange(0, std::memory_order_relaxed));
      }
    }
  }

  // Drops the next epoch's prefetched batches (another epoch starts, or a
  // resume); counted in prefetch_discarded_batches. Prefetch workers are gone.
  void DiscardPrefetchLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (int i = 0; i < staged_count_; ++i) {
      pool_->Release(staged_[i].buffer);
      staged_[i].buffer = nullptr;
    }
    prefetch_discarded_batches_ += staged_count_;
    staged_count_ = 0;
    prefetching_ = false;
  }

  // Claims positions until the epoch is exhausted or cancelled.
  void RunEpoch(int index, SampleProcessor* processor, SampleScratch* scratch) {
    WorkerCounters& c = counters_[index];
    const int64_t bsz = options_.batch_size;
    const size_t k = ring_.size();
    while (!cancelled_.load(std::memory_order_acquire)) {
      if (index >= active_threads_.load(std::memory_order_relaxed)) {
        // Parked by the tuner: holds no position, so nothing waits on it.
        // Leaves when every position is claimed (the epoch's end may then
        // start the next epoch's prefetch, which waits for all workers).
        MutexLock lock(&mu_);
        while (!cancelled_.load(std::memory_order_relaxed) &&
               index >= active_threads_.load(std::memory_order_relaxed) &&
               next_position_.load(std::memory_order_relaxed) < epoch_samples_) {
          work_cv_.Wait(&mu_);
        }
        if (next_position_.load(std::memory_order_relaxed) >= epoch_samples_) return;
        continue;
      }
      const int64_t p = next_position_.fetch_add(1, std::memory_order_relaxed);
      if (p >= epoch_samples_) {
        if (p == epoch_samples_) {  // the first to find the end wakes parked workers
          { MutexLock lock(&mu_); }
          work_cv_.SignalAll();
        }
        return;
      }
      const int64_t b = p / bsz;
      const int s = static_cast<int>(p % bsz);
      if (PastStreamEnd(b)) return;
      RingSlot& slot = ring_[b % k];
      if (s == 0) {
        if (!InstallBatch(b, &c)) return;
      } else if (slot.batch.load(std::memory_order_acquire) != b) {
        const int64_t t0 = NowNs();
        MutexLock lock(&mu_);
        while (!cancelled_.load(std::memory_order_relaxed) && !PastStreamEnd(b) &&
               slot.batch.load(std::memory_order_acquire) != b) {
          work_cv_.Wait(&mu_);
        }
        c.Add(c.wait_ns, NowNs() - t0);
        if (cancelled_.load(std::memory_order_relaxed) ||
            slot.batch.load(std::memory_order_acquire) != b) {
          return;
        }
      }
      BatchBuffer* buf = slot.buffer;
      ProduceSample(p, s, buf, processor, scratch, &c, /*prefetch=*/false);
      if (slot.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        MutexLock lock(&mu_);
        ready_cv_.SignalAll();
      }
    }
  }

  // Waits until batch b may be in flight (b - prefetch has been taken by the
  // consumer), then gives it a buffer. False when cancelled.
  bool InstallBatch(int64_t b, WorkerCounters* c) {
    const int64_t k = static_cast<int64_t>(ring_.size());
    const int64_t t0 = NowNs();
    {
      MutexLock lock(&mu_);
      while (!cancelled_.load(std::memory_order_relaxed) && !PastStreamEnd(b) &&
             b >= next_to_consume_ + in_flight_) {
        work_cv_.Wait(&mu_);
      }
      if (cancelled_.load(std::memory_order_relaxed) || PastStreamEnd(b)) return false;
    }
    c->Add(c->wait_ns, NowNs() - t0);
    auto acquired = pool_->Acquire();
    MutexLock lock(&mu_);
    if (!acquired.ok()) {
      // Out of memory for batches: surface it through the consumer.
      fatal_ = acquired.status();
      cancelled_.store(true, std::memory_order_release);
      ready_cv_.SignalAll();
      work_cv_.SignalAll();
      return false;
    }
    BatchBuffer* buf = acquired.value();
    if (cancelled_.load(std::memory_order_relaxed)) {
      pool_->Release(buf);
      return false;
    }
    const int size = static_cast<int>(std::min<int64_t>(options_.batch_size,
                                                        epoch_samples_ - b * options_.batch_size));
    buf->size = size;
    buf->epoch = epoch_;
    buf->index = b;
    RingSlot& slot = ring_[b % k];
    slot.buffer = buf;
    slot.remaining.store(size, std::memory_order_relaxed);
    slot.batch.store(b, std::memory_order_release);
    lock.Unlock();
    work_cv_.SignalAll();
    return true;
  }

  // Read() through the decoded-sample cache: a hit fills `sample` with the
  // cached pixels (no read, no decode); a miss reads, decodes the whole image
  // and caches it (`*decode_ns`: the time that took).
  Status ReadThroughCache(int64_t pos, SampleScratch* scratch, SampleProcessor* processor,
                          SampleData* sample, bool* end,
                          std::shared_ptr<const CachedImage>* cached, int64_t* decode_ns) {
    const int64_t key = reader_->KeyAt(pos);
    int64_t bytes_read = 0;
    if (key >= 0) *cached = cache_->Lookup(key);
    if (*cached == nullptr) {
      STOKER_RETURN_IF_ERROR(reader_->Read(pos, scratch, sample, end));
      if (*end || key < 0 || sample->pixels != nullptr) return Status::OK();
      const int64_t t0 = NowNs();
      auto image = std::make_shared<CachedImage>();
      // A failed decode is left to Process(), which names the error as usual.
      if (!processor->DecodeWhole(*sample, image.get()).ok()) return Status::OK();
      image->id = sample->id;
      image->label = sample->label;
      (void)cache_->Insert(key, image);  // too large for the cache: used this once
      *cached = std::move(image);
      *decode_ns = NowNs() - t0;
      bytes_read = static_cast<int64_t>(sample->size);
    }
    *end = false;
    const CachedImage& img = **cached;
    *sample = SampleData();
    sample->size = static_cast<size_t>(bytes_read);  // counted as read (0 on a hit)
    sample->id = img.id;
    sample->label = img.label;
    sample->pixels = img.pixels.data();
    sample->pixel_width = img.width;
    sample->pixel_height = img.height;
    sample->pixel_stride = static_cast<ptrdiff_t>(img.width) * 3;
    return Status::OK();
  }

  // cache_kind kOutput: a hit copies the finished sample into slot `s`.
  bool ServeFromOutputCache(int64_t pos, int s, BatchBuffer* buf, WorkerCounters* c) {
    const int64_t key = reader_->KeyAt(pos);
    if (key < 0) return false;
    const std::shared_ptr<const CachedImage> hit = cache_->Lookup(key);
    if (hit == nullptr) return false;
    uint8_t* slot = buf->slot(s);
    if (buf->shape().variable) {  // the cached sample's own size
      auto reserved = buf->ReserveSlot(s, hit->height, hit->width);
      if (!reserved.ok()) return false;  // made again (and failing there, named)
      slot = reserved.value();
    }
    std::memcpy(slot, hit->pixels.data(), buf->slot_bytes(s));
    buf->labels()[s] = hit->label;
    buf->ids()[s] = hit->id;
    buf->errors()[s] = Status::OK();
    c->Add(c->images, 1);
    return true;
  }

  void StoreInOutputCache(int64_t pos, int s, BatchBuffer* buf) {
    const int64_t key = reader_->KeyAt(pos);
    if (key < 0) return;
    auto image = std::make_shared<CachedImage>();
    const size_t bytes = buf->slot_bytes(s);
    image->pixels.assign(buf->slot(s), buf->slot(s) + bytes);
    image->width = buf->slot_width(s);
    image->height = buf->slot_height(s);
    image->id = buf->ids()[s];
    image->label = buf->labels()[s];
    (void)cache_->Insert(key, std::move(image));
  }

  // Makes position p into slot s of buf. `prefetch`: p is a position of the
  // next epoch (RunPrefetch), counted in `c` = pre_counters_.
  void ProduceSample(int64_t p, int s, BatchBuffer* buf, SampleProcessor* processor,
                     SampleScratch* scratch, WorkerCounters* c, bool prefetch) {
    const int64_t n = reader_->size();
    const int64_t pos = p;
    if (output_cache_ && ServeFromOutputCache(pos, s, buf, c)) return;
    {
      constexpr int attempt = 0;  // the augmentation stream's last seed word (no retries)
      SampleData sample;
      bool end = false;
      const bool timing = options_.stage_timing;
      const int64_t t0 = timing ? NowNs() : 0;
      std::shared_ptr<const CachedImage> cached;  // holds the pixels `sample` points at
      int64_t cache_decode_ns = 0;
      Status st = NoThrow(
          [&] {
            return cache_ == nullptr || output_cache_
                       ? reader_->Read(pos, scratch, &sample, &end)
                       : ReadThroughCache(pos, scratch, processor, &sample, &end, &cached,
                                          &cache_decode_ns);
          },
          [&] { return reader_->Name(pos); });
      const int64_t t1 = timing ? NowNs() : 0;
      c->Add(c->read_ns, t1 - t0 - cache_decode_ns);
      c->Add(c->decode_ns, cache_decode_ns);
      if (st.ok() && end && n < 0) {  // past the end of a stream: an empty slot
        MarkStreamEnd(pos);
        buf->errors()[s] = Status::OK();
        buf->ids()[s] = -1;
        return;
      }
      if (st.ok() && end) st = DataLossError("source ended before position " + std::to_string(pos));
      if (st.ok()) {
        c->Add(c->bytes, static_cast<int64_t>(sample.size));
        Rng rng(HashSeed(options_.seed, static_cast<uint64_t>(work_epoch_),
                         static_cast<uint64_t>(sample.id), static_cast<uint64_t>(attempt)));
        StageTimes times;
        bool threw = true;
        st = NoThrow(
            [&] {
              SampleOutput out;
              if (buf->shape().variable) {
                out.buffer = buf;
                out.index = s;
              } else {
                out.slot = buf->slot(s);
              }
              Status r = processor->Process(sample, &rng, out, &times);
              threw = false;
              return r;
            },
            [&] { return reader_->Name(pos); });
        c->Add(c->decode_ns, times.decode_ns);
        c->Add(c->augment_ns, times.augment_ns);
        c->Add(c->callback_ns, times.callback_ns);
        if (!st.ok() && !threw) st = st.WithContext(reader_->Name(pos));
      }
      TrimReadScratch(processor, scratch);
      if (st.ok()) {
        buf->labels()[s] = sample.label;
        buf->ids()[s] = sample.id;
        buf->errors()[s] = Status::OK();
        c->Add(c->images, 1);
        if (output_cache_) StoreInOutputCache(pos, s, buf);
        return;
      }
      if (options_.on_error == OnError::kRaise) {
        buf->errors()[s] = st;
        buf->ids()[s] = -1;
        return;
      }
      // Skip: the slot is marked and removed when the consumer assembles the
      // batches (CompactInto), so every good sample is delivered once and
      // the bad one is counted once; no replacement is read.
      c->Add(c->skipped, 1);
      NoteSkipped(pos, st, prefetch);
      buf->errors()[s] = Status::OK();
      buf->ids()[s] = kSkippedId;
      return;
    }
  }

  // Frees the file read buffer when it (with the processor's scratch) is
  // above the budget; the processor trims its own scratch after each sample.
  void TrimReadScratch(SampleProcessor* processor, SampleScratch* scratch) {
    const size_t budget = options_.scratch_budget;
    if (budget == 0) return;
    const size_t held = processor->scratch_bytes() + scratch->bytes.capacity();
    if (held <= budget) return;
    bool released = processor->TrimScratch();
    if (processor->scratch_bytes() + scratch->bytes.capacity() > budget) {
      std::vector<uint8_t>().swap(scratch->bytes);
      released = true;
    }
    if (released) scratch_releases_.fetch_add(1, std::memory_order_relaxed);
  }

  // Feeds the batch just taken to the tuning window and applies the tuner's
  // settings when a window closes. `waited_ns`: how long the consumer waited.
  void TuneLocked(int images, int64_t waited_ns) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool restart = epoch_restart_;
    epoch_restart_ = false;
    const std::optional<TunerWindow> w =
        tuning_window_->OnBatch(NowNs(), images, waited_ns, consumer_wait_ns_, restart);
    if (!w) return;
    const TunerSettings next = tuner_->Observe(*w);
    active_threads_.store(next.threads, std::memory_order_relaxed);
    in_flight_ = next.prefetch;
    work_cv_.SignalAll();  // the caller notifies too; parked workers must see it
  }

  Totals SumLocked() const STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Totals t;
    for (const WorkerCounters& c : counters_) t.AddWorker(c);
    t.consumer_wait_ns = consumer_wait_ns_;
    t.batches = batches_;
    t.wall_ns = wall_ns_;
    return t;
  }

  void FinishEpochLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!epoch_done_) {
      wall_ns_ += NowNs() - epoch_start_ns_;
      epoch_done_ = true;
    }
    active_ = false;
  }

  const std::shared_ptr<Source> source_;
  const LoaderOptions options_;
  const int64_t epoch_samples_total_;  // samples per epoch (the sampler's draws); -1: a stream
  const int height_, width_;
  const PixelWriter writer_;
  ProcessorConfig processor_config_;
  int threads_ = 1;
  int cores_ = 1;                     // available cores / local_world_size
  std::shared_ptr<BatchPool> pool_;
  std::unique_ptr<DecodedCache> cache_;  // null without cache_bytes; thread-safe
  bool output_cache_ = false;            // cache_ holds finished samples (kOutput)

  mutable Mutex mu_;
  CondVar work_cv_;   // workers: new epoch, batch installed, room in flight
  CondVar ready_cv_;  // consumer: a batch completed
  CondVar idle_cv_;   // Stop/Start: a worker left the epoch
  bool shutdown_ STOKER_GUARDED_BY(mu_) = false;
  bool active_ STOKER_GUARDED_BY(mu_) = false;
  bool started_once_ STOKER_GUARDED_BY(mu_) = false;
  uint64_t generation_ STOKER_GUARDED_BY(mu_) = 0;
  int busy_workers_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t epoch_ STOKER_GUARDED_BY(mu_) = 0;  // read by workers of the epoch
  int64_t next_epoch_ STOKER_GUARDED_BY(mu_) = 0;
  bool epoch_finished_ STOKER_GUARDED_BY(mu_) = false;  // Next() reported the epoch's end
  bool epoch_set_ STOKER_GUARDED_BY(mu_) = false;  // SetEpoch/Resume since the last Start
  int64_t epoch_offset_ STOKER_GUARDED_BY(mu_) = 0;  // global positions skipped (resume)
  bool resume_pending_ STOKER_GUARDED_BY(mu_) = false;  // Resume() awaits the next Start
  int64_t resume_offset_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t prefetch_discarded_batches_ STOKER_GUARDED_BY(mu_) = 0;
  // The epoch the workers make (Rng seeds): epoch_, or the next one while its
  // first batches are prefetched. Set under mu_ before workers run.
  int64_t work_epoch_ = 0;
  int64_t next_to_consume_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t epoch_batches_ = 0;         // set by Start before workers run
  int64_t epoch_samples_ = 0;         // set by Start before workers run
  // The workers' reader: set by Start before workers run, and replaced (under
  // mu_) by the next epoch's when its first batches are prefetched, so code
  // outside the workers reads it under mu_ only.
  std::unique_ptr<EpochReader> reader_;
  bool epoch_random_access_ = true;   // the running epoch's reader's; set by Start
  std::vector<RingSlot> ring_;
  // Cross-epoch prefetch (random-access sources): once every position of the
  // epoch is made, the workers make the next epoch's first batches into
  // staged_ (up to in_flight_), with reader_ already the next epoch's. Start()
  // moves them into the ring when that epoch starts from its beginning.
  struct StagedBatch {
    BatchBuffer* buffer = nullptr;   // set under mu_ before the workers join
    std::atomic<int> remaining{0};   // samples not yet written
  };
  std::vector<StagedBatch> staged_;  // ring_.size() entries
  int staged_count_ STOKER_GUARDED_BY(mu_) = 0;  // buffers in staged_
  bool prefetching_ STOKER_GUARDED_BY(mu_) = false;  // staged_ holds the next epoch's start
  bool pre_open_ STOKER_GUARDED_BY(mu_) = false;  // workers may join the prefetch
  int pre_busy_ STOKER_GUARDED_BY(mu_) = 0;  // workers in RunPrefetch
  uint64_t pre_generation_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t pre_epoch_ STOKER_GUARDED_BY(mu_) = 0;  // the epoch prefetched
  int64_t pre_limit_ = 0;            // positions prefetched; set before workers join
  int64_t epoch_padded_ STOKER_GUARDED_BY(mu_) = 0;  // the running epoch's padded() then
  std::atomic<int64_t> pre_next_{0};
  std::atomic<bool> pre_cancel_{false};
  std::atomic<int64_t> next_position_{0};
  std::atomic<int64_t> stream_end_{kUnbounded};
  std::atomic<bool> cancelled_{false};
  Status fatal_ STOKER_GUARDED_BY(mu_);
  // Tuning: workers with index >= active_threads_ park; at most in_flight_
  // batches are in flight (<= ring_.size()).
  std::atomic<int> active_threads_{1};
  int in_flight_ STOKER_GUARDED_BY(mu_) = 1;
  std::unique_ptr<Tuner> tuner_ STOKER_GUARDED_BY(mu_);  // used under mu_ by the consumer
  std::unique_ptr<TuningWindow> tuning_window_ STOKER_GUARDED_BY(mu_);  // with tuner_
  bool epoch_restart_ STOKER_GUARDED_BY(mu_) = false;  // no batch taken since Start()

  // Counters.
  std::vector<WorkerCounters> counters_;
  std::vector<WorkerCounters> pre_counters_;  // the next epoch's prefetch (RunPrefetch)
  std::vector<std::atomic<size_t>> scratch_bytes_;
  std::atomic<int64_t> scratch_releases_{0};
  int64_t consumer_wait_ns_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t batches_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t wall_ns_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t epoch_start_ns_ STOKER_GUARDED_BY(mu_) = 0;
  bool epoch_done_ STOKER_GUARDED_BY(mu_) = true;
  Totals epoch_snapshot_ STOKER_GUARDED_BY(mu_);

  // Batch assembly (Next): samples taken but not yet delivered, between
  // calls, and what has been delivered this epoch.
  BatchBuffer* carry_ STOKER_GUARDED_BY(mu_) = nullptr;  // fewer than batch_size samples
  std::vector<int64_t> carry_pos_ STOKER_GUARDED_BY(mu_);  // their rank-local positions
  int64_t delivered_positions_ STOKER_GUARDED_BY(mu_) = 0;  // positions delivered or skipped
  int64_t delivered_batches_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t good_delivered_ STOKER_GUARDED_BY(mu_) = 0;  // samples delivered this epoch
  // Ranks under skip (PadsRanks): the epoch's first samples, and the
  // repeats still to deliver at its end.
  BatchBuffer* pad_source_ STOKER_GUARDED_BY(mu_) = nullptr;  // up to batch_size samples
  int64_t pad_left_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t pad_next_ STOKER_GUARDED_BY(mu_) = 0;
  int64_t skip_padded_ STOKER_GUARDED_BY(mu_) = 0;  // repeats delivered this epoch
  // on_error=skip: files found bad (by key or name), first failure of the epoch.
  mutable Mutex skip_mu_ STOKER_ACQUIRED_AFTER(mu_);  // taken after mu_ when both are held
  std::unordered_set<std::string> skipped_files_total_ STOKER_GUARDED_BY(skip_mu_);
  struct SkipRecord {
    std::unordered_set<std::string> files;
    Status first;                     // at the lowest position
    int64_t first_pos = 0;
  };
  SkipRecord skip_epoch_ STOKER_GUARDED_BY(skip_mu_);  // the running epoch's
  SkipRecord skip_prefetch_ STOKER_GUARDED_BY(skip_mu_);  // the next epoch's prefetch

  pid_t owner_pid_ = 0;               // the process that started workers_ (0: none yet)

  // Declared last: joined in the destructor before the members above die.
  std::vector<std::thread> workers_;
};

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
