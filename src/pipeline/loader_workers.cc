// Copyright 2026 The stoker Authors.
//
// LoaderImpl's worker side: what each worker thread runs (WorkerPool::Serve
// with the epoch's and the prefetch's jobs) and, for the last to leave an
// epoch that ended, arming the next epoch's prefetch. See loader_impl.h.
#include "pipeline/loader_impl.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "io/mapped_file.h"

namespace stoker {

void LoaderImpl::WorkerMain(int index) {
  SampleProducer producer(producer_);
  producer.AttachWorker(tracer_->RegisterLane("stoker worker " + std::to_string(index)),
                        size_tallies_ != nullptr ? &size_tallies_[static_cast<size_t>(index)]
                                                 : nullptr);
  WorkerPool::Jobs jobs;
  auto publish_scratch = [&] {
    scratch_bytes_[static_cast<size_t>(index)].store(producer.scratch_bytes(),
                                                     std::memory_order_relaxed);
  };
  jobs.epoch = [&](uint64_t generation) {
    RunEpoch(index, &producer);
    // Before leaving the epoch: whoever waits for the workers to leave it
    // (Start, Stop) then sees this worker's scratch in stats().
    publish_scratch();
    MaybePrefetchNextEpoch(generation);  // leaves the epoch
  };
  jobs.prefetch = [&] {
    MappedFile::NewReadBurst();
    prefetch_.Run(index, active_threads_,
                  [&](int64_t p, int s, BatchBuffer* buf, WorkerCounters* c) {
                    producer.Produce(reader_.get(), work_epoch_, p, s, buf, c, /*prefetch=*/true);
                  });
  };
  jobs.after = publish_scratch;
  workers_.Serve(jobs);
}

// Claims positions until the epoch is exhausted or cancelled. A wait for a
// free batch slot (the prefetch bound) is a span of its own while tracing.
void LoaderImpl::RunEpoch(int index, SampleProducer* producer) {
  WorkerCounters* c = &counters_[static_cast<size_t>(index)];
  MappedFile::NewReadBurst();
  BatchRing::Claimed claimed;
  for (;;) {
    const int64_t waited_before = c->wait_ns.load(std::memory_order_relaxed);
    if (!ring_.Claim(index, active_threads_, c, &claimed)) break;
    const int64_t waited = c->wait_ns.load(std::memory_order_relaxed) - waited_before;
    // After a wait anything may have changed: mapped files are re-stat'ed.
    if (waited > 0) MappedFile::NewReadBurst();
    if (waited > 0 && tracer_->on()) {
      const int64_t now = NowNs();
      SampleTrace{tracer_.get(), producer->lane(), &trace_names_, -1, claimed.batch, work_epoch_}
          .Add(SpanKind::kWorkerWait, now - waited, now);
    }
    // A run (BatchRing::Claim): its samples one after the other, as other
    // workers would have made them (past a stream's end: empty slots); a
    // cancel stops it (its batch is not delivered). A run of several cheap
    // samples is timed as a whole, as read time (the copy out of the source
    // is the read), unless tracing times each sample.
    const bool in_run = claimed.count > 1;
    const bool run_timing = in_run && options_.stage_timing && !tracer_->on();
    if (in_run) producer->BeginRun(run_timing);
    const int64_t run_t0 = run_timing ? NowNs() : 0;
    for (int k = 0; k < claimed.count; ++k) {
      if (k > 0 && ring_.cancelled()) break;
      if (!producer->Produce(reader_.get(), work_epoch_, claimed.position + k, claimed.slot + k,
                             claimed.buffer, c, /*prefetch=*/false)) {
        ring_.MarkStreamEnd(claimed.position + k);
      }
    }
    if (run_timing) c->Add(c->read_ns, NowNs() - run_t0);
    if (in_run) producer->EndRun();  // trims the scratch; the prefetch times each sample
    ring_.Complete(claimed);
  }
}

// Whether the epoch's workers are done and the next epoch's first batches
// may be made now: every position of this epoch is made (the last worker
// leaves), nothing stopped it, and the source reads any position (streams
// are not prefetched: see README.md here, "No stall at epoch boundaries").
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

}  // namespace stoker
