// Copyright 2026 The stoker Authors.
//
// SampleProducer: what one worker does with one position. It reads the
// sample from the epoch's reader (through the decoded-sample cache when
// there is one, or serves a finished sample from the output cache), runs the
// SampleProcessor into the sample's slot of its batch buffer with the
// sample's own Rng (seeded by seed, epoch and sample id), and marks the slot:
// a good sample; under on_error=raise its error; under on_error=skip a
// skipped slot (BatchAssembler::kSkippedId) counted in the SkipLedger; past a
// stream's end an empty slot. No exception leaves it (a bad_alloc is a
// ResourceExhausted sample error). After each sample it trims the worker's
// scratch to the budget. Records (pipeline/record_plan.h): after the primary
// image, a RecordProcessor writes the sample's other fields into their slots;
// an error in any field fails the whole sample. Both caches keep every field.
// scratch to the budget. While the loader's tracer is on it records the
// read and cache spans and hands a SampleTrace to the processor for the rest
// (stoker/trace.h); with a SizeTally it counts the image's size.
//
// Thread-safety: one per worker, used by that worker only. What it shares
// (the cache, the ledger, the reader, the release counter) is thread-safe.
#ifndef STOKER_PIPELINE_SAMPLE_PRODUCER_H_
#define STOKER_PIPELINE_SAMPLE_PRODUCER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "pipeline/decoded_cache.h"
#include "pipeline/loader_stats.h"
#include "pipeline/record_plan.h"
#include "pipeline/record_processor.h"
#include "program/sample_processor.h"
#include "pipeline/size_tally.h"
#include "pipeline/skip_ledger.h"
#include "stoker/batch.h"
#include "stoker/loader.h"
#include "stoker/source.h"

namespace stoker {

// What every worker's producer shares; outlives the producers.
struct ProducerContext {
  const LoaderOptions* options = nullptr;
  const ProcessorConfig* processor = nullptr;
  const PixelWriter* writer = nullptr;
  DecodedCache* cache = nullptr;  // null without cache_bytes
  bool output_cache = false;      // `cache` holds finished samples (kOutput)
  // cache_validate: stamps samples' files (null: entries are not checked).
  const RandomAccessSource* stamps = nullptr;
  SkipLedger* skips = nullptr;
  std::atomic<int64_t>* scratch_releases = nullptr;  // times scratch was trimmed
  const RecordPlan* record = nullptr;  // the source's fields
  Tracer* tracer = nullptr;                // never null in a Loader
  const TraceNames* trace_names = nullptr;
};

class SampleProducer {
 public:
  explicit SampleProducer(const ProducerContext& context);

  // The worker's trace lane (its spans) and size tally (null: none).
  void AttachWorker(TraceLane* lane, SizeTally* tally) {
    lane_ = lane;
    tally_ = tally;
  }

  // Makes position p of `reader` (epoch `epoch`) into slot s of `buf`,
  // counting its work in `c`. `prefetch`: p is a position of the next
  // epoch's prefetch (its skips go to that epoch's record). Returns false
  // when p is past the end of a stream (the slot is left empty, id -1): the
  // caller marks the stream's end.
  bool Produce(EpochReader* reader, int64_t epoch, int64_t p, int s, BatchBuffer* buf,
               WorkerCounters* c, bool prefetch);

  TraceLane* lane() const { return lane_; }

  // A run of cheap samples (LoaderImpl::RunEpoch, BatchRing::Claim): until
  // EndRun, Produce trims the scratch once at the run's end instead of after
  // each sample, and with `timed` (the worker times the run as a whole) reads
  // no clock per sample: two clock reads per sample were ~5 % of a
  // memory-mapped row's cost. Tracing times every sample regardless.
  void BeginRun(bool timed) {
    in_run_ = true;
    sample_timing_ = !timed;
  }
  void EndRun() {
    in_run_ = false;
    sample_timing_ = true;
    TrimScratch();
  }

  // Scratch held between samples (processor's and the read buffer).
  size_t scratch_bytes() const;

 private:
  Status ReadThroughCache(EpochReader* reader, int64_t pos, SampleData* sample, bool* end,
                          std::shared_ptr<const CachedImage>* cached, int64_t* decode_ns);
  bool ServeFromOutputCache(EpochReader* reader, int64_t pos, int s, BatchBuffer* buf,
                            WorkerCounters* c, const SampleTrace* trace);
  void StoreInOutputCache(EpochReader* reader, int64_t pos, int s, BatchBuffer* buf);
  // cache_validate: the sample's stamp (0 without), and the lookup that
  // checks it.
  uint64_t StampOf(int64_t key) const;
  std::shared_ptr<const CachedImage> LookupCached(int64_t key, uint64_t stamp);
  void TrimScratch();

  const ProducerContext ctx_;
  SampleProcessor processor_;
  std::unique_ptr<RecordProcessor> record_;  // records only
  std::vector<double> plan_boxes_;  // the sample's boxes for RandomIoUCrop's draw (reused)
  SampleScratch scratch_;
  TraceLane* lane_ = nullptr;
  SizeTally* tally_ = nullptr;
  uint64_t slot_stamp_ = 0;
  bool sample_timing_ = true;
  bool in_run_ = false;  // the output-cache sample's stamp, taken before its read
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_SAMPLE_PRODUCER_H_
