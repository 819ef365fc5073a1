// Copyright 2026 The stoker Authors.
//
// Loader: the engine. Reads samples from a Source on `threads` native
// threads, decodes and transforms each one straight into its slot of a
// pooled batch buffer, and hands complete batches to one consumer in order.
//
//   auto folder = ImageFolder::Open("data/train").value();   // stoker/sources.h
//   LoaderOptions o;
//   o.batch_size = 256; o.shuffle = true;
//   o.transforms = {Transform::RandomResizedCrop(224, 224),
//                   Transform::RandomHorizontalFlip(), Transform::Normalize(m, s)};
//   auto loader = Loader::Create(folder, o).value();
//   for (int64_t epoch = 0; epoch < 90; ++epoch) {
//     loader->SetEpoch(epoch);
//     STOKER_RETURN_IF_ERROR(loader->Start());
//     for (;;) {
//       BatchPtr batch; bool end;
//       STOKER_RETURN_IF_ERROR(loader->Next(&batch, &end));
//       if (end) break;
//       Train(batch->images(), batch->labels());
//     }
//   }
//
// Determinism: the order of samples comes from (seed, epoch); each sample's
// random parameters from (seed, epoch, sample id). Output is bit-identical
// whatever the number of threads.
//
// Threading: worker threads are started on the first Start() and live until
// the Loader is destroyed; between epochs they sleep. Workers claim
// positions in batch order, so the oldest batch completes first; at most
// `prefetch` batches are in flight (being filled or complete but not yet
// taken). Start(), Next(), Stop(), SetEpoch() must be called from one
// consumer thread at a time; stats() may be called from any thread.
//
// Errors: a bad sample's error travels with its batch. With
// OnError::kRaise, Next() returns it (its message names the file) and the
// epoch stops. With OnError::kSkip the sample is counted and left out: the
// good samples are packed in epoch order into full batches (only the epoch's
// last batch is short), each delivered once; the batches depend on (seed,
// epoch, which samples are bad) alone, not on threads or timing. An epoch in
// which no sample can be read is an error. A sample that fails with
// Cancelled (an interrupt in a callback) is never skipped: it stops the
// epoch as under kRaise. See docs/reliability.md.
// Stop() or destroying the Loader cancels work promptly: each worker
// finishes at most the sample in hand. Cancel() does the same without
// waiting for that sample (a callback that blocks).
#ifndef STOKER_LOADER_H_
#define STOKER_LOADER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoker/batch.h"
#include "stoker/choice.h"
#include "stoker/sampler.h"
#include "stoker/source.h"
#include "stoker/status.h"
#include "stoker/trace.h"
#include "stoker/transforms.h"
#include "stoker/types.h"

namespace stoker {

enum class OnError { kRaise, kSkip };

// A host callback on some fields of a record (FieldStep; Python's
// stoker.Lambda(fn, fields=[...])). Called once per sample, after the source
// read it and before its fields are checked and written into the batch, with
// `n` values: one per FieldStep::fields name, then one per FieldStep::adds
// entry (empty: data null, size 0), and their specs (the schema's, and the
// added ones'). It may replace any of them: new bytes go into `storage[k]`
// (the worker's, reused from sample to sample) with values[k] pointing there;
// an added field must be given a value. The engine then checks every field
// against its spec as it checks the source's (dtype, shape, UTF-8, JSON): a
// value of another kind or a fixed field of another shape is an error of the
// sample naming the field. A non-OK Status fails the sample (on_error
// applies; Cancelled is an interrupt, never skipped).
//
// `seed`: the step's own seed for this sample, a function of (LoaderOptions::
// seed, epoch, sample id, the step's place in the list) only, so the same for
// any thread count (FieldStep::rng says whether the callback wants it; it is
// given either way).
//
// Thread-safety: called from the worker threads, concurrently for different
// samples unless it serialises itself (the Python binding's holds the GIL).
using FieldCallback = std::function<Status(const FieldSpec* specs, FieldValue* values,
                                           std::vector<uint8_t>* storage, int n,
                                           uint64_t seed)>;

struct FieldStep {
  // The fields it is given and may rewrite: the source's (or an earlier
  // step's additions), never the primary image or label.
  std::vector<std::string> fields;
  // Fields it adds to the record, after the source's (new names).
  std::vector<FieldSpec> adds;
  std::shared_ptr<const FieldCallback> callback;
  std::string name;  // for messages
  bool rng = false;  // it draws from its `seed` (Python: Lambda(..., rng=True))
};

// Declares a field of the source's record a target that follows the primary
// image (stoker/record.h, TargetRole) with the image's random draw, and how
// boxes are sanitised. A source that knows its targets (FieldSpec::target
// set) needs none; a declaration for such a field replaces the source's.
//   role kMask: a kArray uint8/uint16 [H, W] field (or [H, W, 1]), or a
//     kImage field in native mode decoding to one channel; the image's size.
//     Delivered [H, W] of the output (stacked when the output size is fixed).
//   role kBoxes: a kArray [N, 4] field of any float or int dtype in
//     `box_format`; delivered float32 [N', 4], xyxy in output pixels, N' <= N
//     (a list per batch, or padded under collate="pad").
//   role kKeypoints: a kArray [K, 2] or [K, 3] (x, y, visibility) field;
//     delivered float32 [K, 3].
//   role kPerBox: a kArray [N, ...] field whose rows follow the kBoxes field
//     `follows` (empty: the only kBoxes field): a removed box takes its row.
struct TargetDecl {
  std::string field;
  TargetRole role = TargetRole::kNone;
  BoxFormat box_format = BoxFormat::kXYXY;
  int64_t ignore_index = 255;  // kMask: the fill of padding and warps
  std::string follows;         // kPerBox
  // kBoxes: a box whose clamped width or height is below min_size, or whose
  // clamped area is below min_area_fraction of its area without clamping,
  // is removed (torchvision v2's SanitizeBoundingBoxes, Albumentations'
  // min_visibility); LoaderStats counts the removals (boxes_removed), and
  // those of a RandomIoUCrop (a box whose centre it left outside its crop).
  double min_size = 1.0;
  double min_area_fraction = 0.0;
};

struct LoaderOptions {
  int batch_size = 64;
  bool shuffle = false;
  uint64_t seed = 0;
  // Drop the last batch when it would be short (DataLoader's drop_last).
  // Unless `rank_tail` says otherwise, it also drops the tail of an epoch
  // that does not split evenly over the ranks (DistributedSampler's).
  bool drop_last = false;
  std::vector<Transform> transforms;
  // Records: host steps on fields besides the primary image, in order, after
  // the source's read (see FieldStep). Added fields are batch fields like the
  // source's (stacked when fixed, lists or padded when not).
  std::vector<FieldStep> field_steps;
  // Records: fields that follow the primary image through the geometric
  // transforms (masks, boxes, keypoints; TargetDecl).
  std::vector<TargetDecl> targets;
  // Worker threads; 0 means one per available core.
  int threads = 0;
  // Batches in flight (being filled, or ready and not yet taken). More hides
  // jitter; each costs one batch buffer of memory.
  int prefetch = 2;
  // While the consumer takes an epoch's last batches, make the next epoch's
  // first ones (up to the in-flight depth), used when that epoch starts from
  // its beginning and discarded otherwise (prefetch_discarded_batches).
  // Random-access sources only: a stream starts its next epoch when asked.
  bool prefetch_next_epoch = true;
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  // kBatch: every sample has the size the transforms end in, and a batch is
  // one [B, 3, H, W] block (the transforms must end in a fixed size).
  // kList: each sample keeps the size its own geometry gives (e.g. Resize(256)
  // keeps the aspect ratio, or no resize at all): a batch is B separately
  // sized samples (Batch::variable(), Batch::sample(i), sample_dims(i)), each
  // in its own pooled region, reused from batch to batch (stoker/batch.h).
  // kPad: records (stoker/record.h): as kBatch for the image (which must end
  // in a fixed size), and every array field whose shape varies is delivered
  // padded to the batch's largest sample along each dimension, one block
  // [size, max dims...] (Batch::padded_field), with `pad_value` (converted to
  // the field's dtype) where a sample is shorter, and each sample's shape.
  // The samples of one batch must agree on the field's dtype and number of
  // dimensions (a field whose dtype the source declares is checked per sample
  // in the worker, so on_error="skip" skips a wrong one; an undeclared
  // one is checked when the batch is delivered: InvalidArgument naming the
  // field and the sample ids, never skipped). Text, bytes and json stay
  // per-sample values.
  enum class Collate { kBatch, kList, kPad };
  Collate collate = Collate::kBatch;
  // Records: per-field overrides of `collate` for batch fields (not the
  // primary image or label, whose collate is `collate`), each with the rules
  // above for that field alone: kPad pads it when its shape varies, kBatch and
  // kList deliver it stacked when its shape is fixed, per-sample values
  // otherwise (the Python layer turns a kList field's stacked block into a
  // list). A name that is not a batch field, or named twice: InvalidArgument.
  std::vector<std::pair<std::string, Collate>> field_collate;
  double pad_value = 0;
  // The most bytes a batch's padded blocks (every kPad field's [size, max
  // dims...] together) may take: samples of (1, 12000) and (12000, 1) pad to
  // [B, 12000, 12000], so a few kilobytes of data can ask for gigabytes.
  // Checked from the samples' shapes when the batch is delivered, before any
  // block is reserved: ResourceExhausted naming the field, its block and the
  // sample that sets each dimension, never skipped. >= 1 (1 GiB by default).
  int64_t max_padded_bytes = int64_t{1} << 30;
  OnError on_error = OnError::kRaise;
  // Let JPEG decode at 1/2, 1/4 or 1/8 scale in the DCT domain when a crop
  // is downscaled by 2x or more anyway: much faster on large images, pixels
  // then differ slightly from a full-resolution resize. kAuto: on when a
  // transform draws its geometry at random (RandomResizedCrop, ...), where no
  // fixed reference exists, off otherwise, so Resize + CenterCrop pipelines
  // are bit-identical to torchvision on PIL; off under the decoded cache
  // (kOn there is InvalidArgument). Loader::dct_scaling() tells the result.
  enum class DctScaling { kAuto, kOn, kOff };
  DctScaling dct_scaling = DctScaling::kAuto;
  // Images with more pixels are refused before decoding (0: no limit).
  int64_t max_pixels = int64_t{1} << 28;
  // Per-worker scratch kept between samples (decoded pixels, resampler rows,
  // the file read buffer): after a sample that needed more, the worker frees
  // it, so an oversized image does not stay resident (0: keep it). JPEG
  // regions and non-interlaced PNGs under one crop + resize are decoded row
  // by row into the resampler, so they need a few MB whatever their size;
  // the other cases hold the decoded image (docs/reliability.md).
  size_t scratch_budget = size_t{64} << 20;
  // Batch memory; null means HostAllocator().
  std::shared_ptr<BatchAllocator> allocator;
  // Tune the worker threads and/or the prefetch depth online while batches
  // are taken (threads="auto", prefetch="auto" in Python): more threads
  // while they raise throughput and the consumer waits, fewer when the
  // consumer never waits. `threads` / `prefetch` are then the starting
  // points (threads 0: half the ceiling), `max_threads` / `max_prefetch` the
  // ceilings. See src/pipeline/tuner.h for the policy.
  bool auto_threads = false;
  bool auto_prefetch = false;
  int max_threads = 0;   // 0: one per available core
  int max_prefetch = 8;
  // Batches per tuning window (at least; a window also lasts >= 0.1 s).
  int tune_window = 8;
  // Keep decoded images in memory so later epochs skip reading and decoding
  // (random-access sources; encoded images only -- arrays are in memory
  // already). A cached image is decoded whole at full resolution (no DCT
  // scaling), so its pixels equal an uncached run with dct_scaling = false.
  // 0: no cache. Least recently used images are evicted past the bound.
  size_t cache_bytes = 0;
  // What the decoded-sample cache keeps (with cache_bytes > 0): kDecoded,
  // the whole decoded image (random transforms run on it every epoch); or
  // kOutput, the finished sample (only for pipelines without random
  // transforms, e.g. validation: a hit is a copy).
  enum class CacheKind { kDecoded, kOutput };
  CacheKind cache_kind = CacheKind::kDecoded;
  // With a cache: before serving an entry, compare its sample's file stamp
  // (RandomAccessSource::SampleStamp: size, mtime, inode; one stat() per
  // hit) with the one taken when it was cached; a changed or deleted file is
  // read again (a miss, counted in cache_stale). Off by default: like
  // tf.data's cache, a cache serves what it first read, even when the file
  // changed since. Sources that cannot tell (arrays) are not checked.
  bool cache_validate = false;
  // Which samples each epoch visits (random-access sources): every sample
  // once by default; weighted or class-balanced draws, or a subset
  // (stoker/sampler.h). Draws depend on (seed, epoch) only.
  SamplerSpec sampler;
  // The per-stage clock reads behind read_s/decode_s/augment_s. Always on
  // in normal use (they cost about 0.01%); off only to measure that cost.
  // Records without images, claimed in runs (src/pipeline/README.md), are timed
  // a run at a time, the run's time counted as read time.
  bool stage_timing = true;
  // Data-parallel training: this process reads rank `rank`'s share of every
  // epoch (EpochSpec: DistributedSampler's rule, the tail padded or, under
  // drop_last, dropped), so every rank gets the same number of batches.
  int rank = 0;
  int world_size = 1;
  // The rule for the samples of an epoch that do not split evenly over the
  // ranks: kFromDropLast (kDrop under drop_last, else kPad); kPad: repeat the
  // start of the epoch's order (DistributedSampler(drop_last=False)); kDrop:
  // leave them out (DistributedSampler(drop_last=True)); kUneven: neither,
  // every sample exactly once, the first ranks reading one sample more (so
  // ranks may differ by one batch): distributed evaluation.
  enum class RankTail { kFromDropLast, kPad, kDrop, kUneven };
  RankTail rank_tail = RankTail::kFromDropLast;
  // Ranks on this machine: the default thread count (threads = 0) is the
  // available cores divided by it (at least 1), or all of them when the
  // launcher already narrowed this process's affinity mask below its parent's
  // (each rank pinned to its own cores; stoker/process.h RankShareOfCores).
  int local_world_size = 1;
  // Where the loader records spans (stoker/trace.h; off until Start()). Null:
  // a Tracer of its own. Loaders that share one appear in one timeline.
  std::shared_ptr<Tracer> tracer;
  // Count the size of every image before any transform (its header), as the
  // samples are made, into stats().source_sizes (the data monitor's size mix).
  // A map update per sample under the worker's own lock; off by default.
  bool tally_sizes = false;
};

// The names of LoaderOptions' choices (stoker/choice.h), as Python's Loader()
// and the CLI spell them; ParseChoice("on_error", name, kOnErrorChoices)
// parses one with the shared message.
inline constexpr std::array<Choice<OnError>, 2> kOnErrorChoices = {{
    {"raise", OnError::kRaise}, {"skip", OnError::kSkip}}};
inline constexpr std::array<Choice<LoaderOptions::Collate>, 3> kCollateChoices = {{
    {"batch", LoaderOptions::Collate::kBatch},
    {"list", LoaderOptions::Collate::kList},
    {"pad", LoaderOptions::Collate::kPad}}};
inline constexpr std::array<Choice<LoaderOptions::CacheKind>, 2> kCacheChoices = {{
    {"decoded", LoaderOptions::CacheKind::kDecoded},
    {"output", LoaderOptions::CacheKind::kOutput}}};
inline constexpr std::array<Choice<LoaderOptions::RankTail>, 3> kRankTailChoices = {{
    {"pad", LoaderOptions::RankTail::kPad},
    {"drop", LoaderOptions::RankTail::kDrop},
    {"uneven", LoaderOptions::RankTail::kUneven}}};
inline constexpr std::array<Choice<LoaderOptions::DctScaling>, 3> kDctScalingChoices = {{
    {"auto", LoaderOptions::DctScaling::kAuto},
    {"on", LoaderOptions::DctScaling::kOn},
    {"off", LoaderOptions::DctScaling::kOff}}};

// Where an epoch stands, for checkpoints: `consumed` global positions of
// `epoch` (over all ranks) have been handed out. Plain values, < 64 bytes.
// A checkpoint: where an epoch stands and what it is an epoch of.
// Loader::state() fills every field; Loader::Resume() refuses a state of a
// newer format, of another dataset (sample count, fingerprint) or of another
// order (seed, shuffle), and a position past the epoch's end. Change a
// state only by its position (epoch, consumed) and take the rest from
// state(): a state built field by field is of no dataset.
inline constexpr int64_t kLoaderStateVersion = 1;
struct LoaderState {
  int64_t version = kLoaderStateVersion;  // the format; 1..kLoaderStateVersion
  int64_t epoch = 0;
  int64_t consumed = 0;  // global epoch positions consumed, over all ranks
  int world_size = 1;    // the world size it was taken at
  uint64_t seed = 0;     // LoaderOptions::seed
  bool shuffle = false;  // LoaderOptions::shuffle
  int64_t num_samples = -1;  // Loader::num_samples() (-1: a stream of unknown length)
  // The source's Fingerprint() >> 1: 63 bits, a plain non-negative integer
  // in any checkpoint format.
  int64_t fingerprint = 0;
};

// Counters. Busy times are summed over threads.
// The decode-video stage (VideoClips sources; all zero for others): the
// per-clip work of stoker/source.h's VideoWork, summed. Relations that hold:
// frames_decoded >= frames_converted, frames_delivered >= frames_converted,
// frames_delivered = clips x clip_len, gops_decoded >= clips (each clip's
// decoding starts at a keyframe), seeks <= 2 x clips.
struct VideoStageStats {
  int64_t clips = 0;
  int64_t frames_decoded = 0;
  int64_t frames_converted = 0;
  int64_t frames_delivered = 0;
  int64_t gops_decoded = 0;
  int64_t seeks = 0;
  int64_t indexes_built = 0;
  double demux_s = 0;      // in read_s
  double seek_s = 0;       // in decode_s
  double decode_s = 0;     // in decode_s
  double convert_s = 0;    // in decode_s
  double transform_s = 0;  // in augment_s
};

struct StageStats {
  int64_t images = 0;
  int64_t batches = 0;
  // on_error="skip": samples skipped (a file drawn twice by a sampler counts
  // twice) and distinct files among them (by the source's index or name).
  int64_t skipped = 0;
  int64_t skipped_files = 0;
  double seconds = 0;           // wall time of iteration (first Start to last Next)
  double read_s = 0;            // reading bytes from the source
  double decode_s = 0;          // header parse + (region) decode
  double augment_s = 0;         // fused crop/resize/flip/normalise/convert into the slot
  double callback_s = 0;        // in Callback transforms (stoker.Lambda), GIL wait included;
                                // part of augment_s
  double worker_wait_s = 0;     // workers blocked because `prefetch` batches were in flight
  double consumer_wait_s = 0;   // consumer blocked in Next() waiting for a batch
  int64_t bytes_read = 0;
  // Samples this rank delivered that repeat a sample so that every rank
  // yields the same count: with several ranks, the tail of its share that
  // wraps to the epoch's start (DistributedSampler's padding, random access;
  // counted as the positions are delivered), the re-reads of its shards when
  // they run short (streams with a declared length; counted as they are
  // read, so exact at the epoch's end), and, under on_error="skip", the
  // repeats standing in for its skipped samples. Never the samples of
  // another rank: summed over the ranks, it is the epoch's repeats.
  int64_t padded_samples = 0;
  // Boxes (TargetRole::kBoxes fields) removed after the transforms: smaller
  // than TargetDecl::min_size, or less of their area than
  // min_area_fraction left inside the output.
  int64_t boxes_removed = 0;
  VideoStageStats video;
  double images_per_sec() const { return seconds > 0 ? images / seconds : 0; }
};

// Image sizes before any transform, as value -> count (LoaderOptions::tally_sizes);
// aspect ratios in thousandths (llround(1000 w / h)), as `stoker stats` keeps them.
struct ImageSizes {
  std::map<int64_t, int64_t> widths, heights, aspects_milli;
  int64_t images = 0;
};

struct LoaderStats {
  StageStats total;
  StageStats epoch;  // the epoch in progress, or the last one
  int64_t current_epoch = 0;
  int threads = 0;              // active worker threads (tuned when auto)
  int prefetch = 0;             // batches allowed in flight (tuned when auto)
  std::string tuning;           // the tuner's last decision ("" unless auto)
  int64_t tuning_changes = 0;   // settings changes made by the tuner
  int batch_buffers = 0;        // allocated batch buffers
  size_t batch_buffer_bytes = 0;
  // Collate::kList: per-sample regions allocated or grown (stoker/batch.h),
  // ever; flat in steady state.
  int64_t batch_region_allocations = 0;
  size_t scratch_bytes = 0;     // per-thread decode/resample scratch, summed
  size_t scratch_budget = 0;    // options().scratch_budget (per thread)
  int64_t scratch_releases = 0;  // times a worker freed scratch above the budget
  int rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int cores = 0;                // the default threads: RankShareOfCores (stoker/process.h)
  int64_t prefetch_discarded_batches = 0;  // next-epoch batches made, then not wanted
  // Source::truncated_shards(): stream-read tar shards that ended without
  // their end-of-archive blocks, over the source's life (a warning: without
  // a declared length such a shard is read as complete).
  int64_t truncated_shards = 0;
  // The node-wide shard cache (Source::shard_cache(); all zero without one).
  // `shard_cache_floor`: the bytes the node's ranks hold in it at once, the
  // largest shard seen x the shards a rank holds open or opening (2 x
  // concurrent_shards when shuffled, else 2) x local_world_size. A
  // cache_bytes below it evicts shards while they are still wanted, so
  // shards read again are downloaded again (as many downloads as without a
  // cache, or more): `shard_cache_too_small`, and `shard_cache_advice` says
  // what to set.
  bool shard_cache = false;
  int64_t shard_cache_downloads = 0;
  int64_t shard_cache_hits = 0;
  int64_t shard_cache_capacity = 0;
  int64_t shard_cache_floor = 0;
  bool shard_cache_too_small = false;
  std::string shard_cache_advice;
  // Opens served from the cache without the due check against the server
  // (it did not answer), and those objects, "URL (error)" (the first 64).
  int64_t shard_cache_unvalidated = 0;
  std::vector<std::string> shard_cache_unvalidated_objects;
  // The decoded-sample cache (all zero without one).
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t cache_evicted = 0;
  int64_t cache_entries = 0;
  int64_t cache_stale = 0;      // entries dropped by cache_validate (file changed)
  size_t cache_bytes = 0;       // in use
  size_t cache_capacity = 0;
  std::string cache_advice;     // "" unless the cache is too small to help
  // The queue now: batches being filled or waiting (installed in the ring),
  // and the complete ones the consumer can take without waiting.
  int batches_in_flight = 0;
  int ready_batches = 0;
  ImageSizes source_sizes;      // empty unless LoaderOptions::tally_sizes
};

class Loader {
 public:
  static StatusOr<std::unique_ptr<Loader>> Create(std::shared_ptr<Source> source,
                                                  const LoaderOptions& options);
  virtual ~Loader() = default;

  // Batches per epoch for this rank (-1 when the source's size is unknown).
  // Under OnError::kSkip an upper bound: skipped samples shorten the epoch.
  virtual int64_t num_batches() const = 0;
  // Samples per epoch (before drop_last).
  virtual int64_t num_samples() const = 0;
  // The fixed output size; 0 under Collate::kList when the transforms do not
  // end in one.
  virtual int height() const = 0;
  virtual int width() const = 0;
  // The options as given to Create(), with dct_scaling's kAuto resolved.
  virtual const LoaderOptions& options() const = 0;
  virtual std::shared_ptr<Source> source() const = 0;

  // Sets the epoch the next Start() iterates. Without SetEpoch, each Start()
  // after the first advances the epoch by one.
  virtual void SetEpoch(int64_t epoch) = 0;
  virtual int64_t epoch() const = 0;

  // Begins iterating an epoch, cancelling one in progress.
  virtual Status Start() = 0;
  // The run the last Start() began: each Start() begins a new one, numbered
  // from 1 (0 before the first). A consumer that another thread may stop and
  // restart passes its run to Next(): a Next() for a run that is no longer
  // current ends (*end) instead of taking the newer run's batches (a stale
  // iterator never shortens the newer epoch). Any thread.
  static constexpr uint64_t kCurrentRun = 0;
  virtual uint64_t run() const = 0;
  // The next batch in order. Blocks. `*end` is set when the epoch is done.
  virtual Status Next(BatchPtr* batch, bool* end) = 0;
  // The same, calling `poll` about every `poll_ms` while it waits; a non-OK
  // status from `poll` is returned at once (the epoch goes on; call Stop() to
  // end it). The Python layer polls for signals so Ctrl-C is not held up by
  // a slow batch.
  virtual Status Next(BatchPtr* batch, bool* end, const std::function<Status()>& poll,
                      int poll_ms) = 0;
  // The same for `run` (see run(); kCurrentRun: whichever is current).
  virtual Status Next(BatchPtr* batch, bool* end, const std::function<Status()>& poll,
                      int poll_ms, uint64_t run) = 0;
  // Cancels the epoch in progress and waits until no worker touches it.
  virtual void Stop() = 0;
  // Cancels the epoch in progress without waiting: no worker starts another
  // sample and the reader's reads are cancelled, but a worker finishes the
  // sample in hand in the background (a callback may block: Ctrl-C must not
  // wait for it). Next() then ends the epoch (*end); the next Start(),
  // Stop() or the destructor waits for the workers. Any thread.
  virtual void Cancel() = 0;
  // Waits up to `timeout_ms` for every worker to leave the epoch (after
  // Cancel() or an epoch's end they finish the sample in hand); whether none
  // is left in it. Start(), Stop() and the destructor then wait for no
  // worker, so a caller that must stay interruptible (Python's Ctrl-C while
  // a callback blocks) waits in slices. Any thread.
  virtual bool AwaitWorkersLeft(int timeout_ms) = 0;

  virtual LoaderStats stats() const = 0;

  // The loader's span recorder (LoaderOptions::tracer or its own); never
  // null. tracer()->Start() records until Stop(); see stoker/trace.h.
  virtual std::shared_ptr<Tracer> tracer() const = 0;

  // Checkpoints. state(): the epoch in progress (or the last one, when it
  // was stopped before its end) and the global positions consumed so far;
  // after an epoch's end, the next epoch at 0; with the loader's identity
  // (see LoaderState). Consumer thread.
  virtual LoaderState state() const = 0;
  // The next Start() runs `s.epoch` from global position `s.consumed`, for
  // this loader's world size (every sample of the epoch exactly once over
  // both segments). A later SetEpoch to another epoch cancels it.
  // InvalidArgument, naming what differs, for a state of a newer format,
  // another dataset, seed or shuffle, a negative field, `consumed` past the
  // epoch's samples, or a stream saved mid-epoch at another world size
  // (streams resume only at the world size they were saved at: each rank
  // skips its positions already consumed).
  virtual Status Resume(const LoaderState& s) = 0;
  // Batches this rank has left to deliver in the epoch in progress, or in
  // the one the next Start() runs when none is (after a mid-epoch Resume(),
  // the rest of that epoch); -1 for a stream of unknown length. Under
  // OnError::kSkip an upper bound, as num_batches(). Consumer thread.
  virtual int64_t num_batches_left() const = 0;
};

}  // namespace stoker

#endif  // STOKER_LOADER_H_
