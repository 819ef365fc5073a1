// Copyright 2026 The stoker Authors.
//
// The source interface: how samples reach the engine.
//
// A Source starts one EpochReader per epoch. The engine asks the reader for
// samples by *position* in that epoch (0, 1, 2, ...), from many threads at
// once, and never needs to know whether the source is random-access or a
// stream:
//  - random-access sources (image folders, npy, HDF5, indexed tar shards)
//    derive from RandomAccessSource, which maps positions to indices through
//    the (seed, epoch) permutation;
//  - streaming sources (tar shards read sequentially, HTTP) implement
//    EpochReader themselves, handing out positions in stream order and
//    reporting the end with `*end = true`.
//
// Thread-safety: Source::StartEpoch is called from one thread at a time.
// EpochReader::Read is called concurrently from the engine's threads and
// must be thread-safe.
// Errors: Read() returns a Status whose message names the sample (path or
// shard member) and the reason; end of data is not an error (`*end`).
#ifndef STOKER_SOURCE_H_
#define STOKER_SOURCE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/record.h"
#include "stoker/sampler.h"
#include "stoker/status.h"

namespace stoker {

// One field's value in a sample as read (records: stoker/record.h), by kind:
//  - kImage: encoded bytes in [data, data + size); or, with `raw`, pixels:
//    dims {H, W, C}, rows `stride` bytes apart, elements `dtype` (uint8 for
//    mode kRGB with C = 3; uint8 or uint16 for kNative).
//  - kArray: the sample's elements in [data, data + size), C order, native
//    byte order, of `dtype` with shape dims[0..ndim).
//  - kLabel: `i`. kScalar: `i` (dtype kInt64) or `f` (dtype kFloat64).
//  - kText, kBytes, kJson: the bytes in [data, data + size).
// `member`: what the value was read from, when the sample's name does not
// say it (a shard record's member, "s004.txt"), so that an error in this
// field names it; empty otherwise.
// Pointers (and `member`) follow SampleData's rule: a copy kept past the next
// Read() (a cache) must copy the bytes and the name it points at.
struct FieldValue {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ElemType dtype = ElemType::kUint8;
  int ndim = 0;
  std::array<int64_t, kMaxFieldDims> dims{};
  ptrdiff_t stride = 0;
  bool raw = false;
  int64_t i = 0;
  double f = 0;
  std::string_view member;
};

// How an error of field `name` holding `v` names it: "field 'caption'", with
// its member when the value names one: "field 'caption' (member s004.txt)".
std::string FieldContext(const std::string& name, const FieldValue& v);

// Per-thread scratch a source may fill (file bytes). Owned by the engine's
// worker and reused from sample to sample.
// The decode-video stage of one sample (VideoClips, stoker/video.h): what
// the source did inside Read(), which the Loader adds to
// stats()["video"] and splits out of the read time (demux stays read; seek,
// decode and conversion are decode; the clip's transforms are augment).
// Other sources leave SampleData::video null.
struct VideoWork {
  int64_t demux_ns = 0;      // opening the file and reading its packets (libavformat),
                             // the video's index when it is built for this clip
  int64_t seek_ns = 0;       // av_seek_frame + flushing the decoder
  int64_t decode_ns = 0;     // sending packets and receiving frames (libavcodec)
  int64_t convert_ns = 0;    // wanted frames to RGB (libswscale)
  int64_t transform_ns = 0;  // the clip's transforms, writing into the field
  int64_t frames_decoded = 0;    // frames the decoder produced, wanted or not
  int64_t frames_converted = 0;  // distinct frames converted (<= frames_decoded)
  int64_t frames_delivered = 0;  // frames written into the clip (clip_len; repeats count)
  int64_t gops_decoded = 0;      // keyframes among the decoded frames (GOPs entered)
  int64_t seeks = 0;
  int64_t indexes_built = 0;     // 1 when this clip built (or loaded) its video's index
};

struct SampleScratch {
  std::vector<uint8_t> bytes;
  // A VideoClips read fills this and points SampleData::video at it.
  VideoWork video;
  // Records: one value per field of the source's schema, and a byte buffer
  // per field for sources that copy (sized by the source; reused, so the
  // steady state allocates nothing).
  std::vector<FieldValue> fields;
  std::vector<std::vector<uint8_t>> field_bytes;
  // Records: names FieldValue::member points at (reused likewise).
  std::vector<std::string> field_members;
};

// One sample as read. Pointers stay valid until the next Read() with the
// same scratch.
struct SampleData {
  int64_t id = -1;     // stable sample id: seeds the sample's augmentation
  int64_t label = -1;
  // Encoded image bytes (JPEG, PNG, WebP, TIFF, BMP or PNM; the format is
  // sniffed from them) ...
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  // ... or, when `pixels` is non-null, already decoded 8-bit RGB, HWC, rows
  // `pixel_stride` bytes apart (memory-mapped arrays).
  const uint8_t* pixels = nullptr;
  int pixel_width = 0;
  int pixel_height = 0;
  ptrdiff_t pixel_stride = 0;
  // Records (a schema with fields besides the primary image and label): one
  // value per field of Source::schema(), in schema order. The primary image
  // and the primary label are given in the members above (their entries here
  // are not read); a schema without an image leaves bytes and pixels null.
  // Null and 0 for image + label sources.
  const FieldValue* fields = nullptr;
  int num_fields = 0;
  // VideoClips: the decode-video stage's work for this sample (in the
  // scratch); null for every other source.
  const VideoWork* video = nullptr;
};

struct EpochSpec {
  uint64_t seed = 0;
  int64_t epoch = 0;
  bool shuffle = false;
  // Sharding across ranks (data-parallel training), DistributedSampler's
  // rule: the epoch's global order depends on (seed, epoch) alone; the
  // samples left after `offset` are dealt round-robin, rank r taking global
  // positions offset + r, offset + r + world_size, ... The tail is padded by
  // repeating from the start of the epoch's order (DistributedSampler's rule;
  // independent of `offset`, so a resume at the same world size pads with
  // the samples an uninterrupted epoch does) so every rank gets the same
  // count, or dropped under `drop_last`, or (under `uneven`) neither: every
  // sample exactly once, the first (left % world_size) ranks reading one more
  // (distributed evaluation). See RankShareOf.
  int rank = 0;
  int world_size = 1;
  bool drop_last = false;
  bool uneven = false;
  // Global positions of this epoch already consumed (by all ranks together)
  // before a resume; the epoch continues at the next one.
  int64_t offset = 0;
  // Which samples the epoch visits (random-access sources only): null or
  // kAll for each sample once. Borrowed for the StartEpoch call only.
  const SamplerSpec* sampler = nullptr;
};

// One rank's share of an epoch of `n` samples under `spec`.
struct RankShare {
  int64_t samples = 0;  // positions this rank reads
  int64_t padded = 0;   // of all ranks' positions, how many repeat a sample
  // Of this rank's positions, how many repeat a sample (its last ones: the
  // positions that wrap past the end); `padded` summed over the ranks.
  int64_t rank_padded = 0;
};
RankShare RankShareOf(int64_t n, const EpochSpec& spec);
// The global epoch position a rank's `position` reads (padding wrapped).
int64_t GlobalPosition(int64_t n, const EpochSpec& spec, int64_t position);
// The rank split as a function of an epoch's index list (after any
// permutation or sampling): the entries of `order` that rank `spec.rank`
// reads, in its order (order[GlobalPosition(order.size(), spec, p)] for each
// of its positions p). Any index list, e.g. a sampler's, goes through it.
std::vector<int64_t> RankSlice(const std::vector<int64_t>& order, const EpochSpec& spec);

class EpochReader {
 public:
  virtual ~EpochReader() = default;
  // Samples in this epoch, or -1 when unknown until the stream ends.
  virtual int64_t size() const = 0;
  // Whether Read() accepts any position in [0, size()) in any order (needed
  // to replace a bad sample with another one under on_error="skip").
  virtual bool random_access() const = 0;
  // Reads the sample at `position`. Thread-safe.
  virtual Status Read(int64_t position, SampleScratch* scratch, SampleData* out, bool* end) = 0;
  // A name for the sample at `position` (path, shard:member) for messages.
  virtual std::string Name(int64_t position) const = 0;
  // Asks reads in progress to return soon (a stalled remote transfer returns
  // Cancelled within about 0.1 s); the epoch is being stopped. Thread-safe,
  // may run while Read() blocks. Default: nothing to cancel.
  virtual void Cancel() {}

  // This rank's positions of the epoch that repeat a sample to even out the
  // ranks' shares. Random access: its last padded() positions (known when
  // the epoch starts: RankShare::rank_padded); streams: the repeats read so
  // far (re-reads of the rank's shards).
  virtual int64_t padded() const { return 0; }
  // A key for the sample at `position` that is the same in every epoch and
  // known before reading it (the source index), or -1 when the reader cannot
  // tell before reading (streams). Keys the decoded-sample cache.
  virtual int64_t KeyAt(int64_t position) const { return -1; }
};

class Source {
 public:
  virtual ~Source() = default;
  // Samples per epoch, or -1 when unknown.
  virtual int64_t size() const = 0;
  virtual StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec& spec) = 0;
  // One line for logs and errors, e.g. "ImageFolder(/data/train, 1000 classes, 1281167 images)".
  virtual std::string Describe() const = 0;
  // Class names by label id, when the source has them.
  virtual std::vector<std::string> classes() const { return {}; }
  // Whether epochs can be read from any position (EpochSpec::offset and
  // rank sharding are then exact for any world size); false for streams.
  virtual bool random_access() const { return false; }
  // A cheap fingerprint of the dataset (its size and a hash of sample or
  // shard names), stored with a resume state to refuse another dataset. It
  // identifies the dataset, not where it lies: names are hashed relative to
  // the directory they all share (FingerprintNames), so the same data moved,
  // staged or mounted elsewhere has the same fingerprint.
  virtual uint64_t Fingerprint() const;
  // Tar shards read in stream mode that ended right after a member, without
  // the end-of-archive blocks (a copy cut at a member boundary looks so),
  // over the source's life: each epoch that reads one to its end counts it.
  // Such a shard is read as complete, or ends with an error under a
  // declared length. 0 for other sources.
  virtual int64_t truncated_shards() const { return 0; }
  // The node-wide shard cache (Shards(cache_dir=) in stream mode) as this
  // source used it; `enabled` false for other sources.
  struct ShardCacheUse {
    bool enabled = false;
    int64_t capacity = 0;       // cache_bytes (0: unbounded)
    int64_t downloads = 0;      // objects downloaded into the cache, over the source's life
    int64_t hits = 0;           // opens served by a valid entry
    int64_t largest_bytes = 0;  // the largest object downloaded or found
    int concurrent_shards = 1;  // ShardOptions::concurrent_shards
    // Opens served unvalidated (the server did not answer a due check), and
    // the objects, "URL (error)" (ShardCacheCounters).
    int64_t unvalidated = 0;
    std::vector<std::string> unvalidated_objects;
  };
  virtual ShardCacheUse shard_cache() const { return {}; }
  // Whether a sample's content depends on the epoch besides its id (a video
  // clip drawn anew each epoch, VideoClips): the caches, which key samples by
  // id across epochs, refuse such a source. Default: false.
  virtual bool SamplesVaryByEpoch() const { return false; }
  // The fields every sample has (stoker/record.h). Default: image + label.
  virtual Schema schema() const { return Schema::ImageLabel(); }
  // Whether every sample's image has the same size, known without reading a
  // sample (raw pixel arrays: Npy, HDF5 raw); sets *height and *width then.
  // The Loader batches such a source without a size-fixing transform.
  virtual bool FixedImageSize(int* height, int* width) const {
    (void)height;
    (void)width;
    return false;
  }
};

// Base for sources that can read any sample by index in [0, size()).
class RandomAccessSource : public Source {
 public:
  // Reads sample `index`. Thread-safe.
  virtual Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const = 0;
  virtual std::string NameOf(int64_t index) const = 0;
  // Every sample's label, known without reading the samples (from the
  // directory layout, a labels array, an index), or empty when the source
  // cannot tell without reading. Used by class-balanced sampling.
  virtual std::vector<int64_t> Labels() const { return {}; }
  // A cheap stamp of sample `index`'s data as it is now: the FileStamp of
  // the file it is read from (size, mtime, inode), or 0 when the source
  // cannot tell. The decoded-sample cache, with
  // LoaderOptions::cache_validate, serves an entry only while its stamp is
  // unchanged (a file rewritten or deleted between epochs is read again).
  // Thread-safe; one stat() per call.
  virtual uint64_t SampleStamp(int64_t index) const {
    (void)index;
    return 0;
  }

  // Positions map to indices in order, or through a permutation drawn from
  // (seed, epoch) when `spec.shuffle`, then to this rank's share
  // (GlobalPosition).
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec& spec) override;
  bool random_access() const override { return true; }
  // Size plus a hash of up to 1024 evenly spaced sample names
  // (FingerprintNameOf, FingerprintNames).
  uint64_t Fingerprint() const override;

 protected:
  // The name sample `index` has in the fingerprint: NameOf(index), unless a
  // source renamed its samples and keeps their earlier names here so that
  // resume states taken before stay valid.
  virtual std::string FingerprintNameOf(int64_t index) const { return NameOf(index); }
};

// A hash of `seed` and `names` with the directory prefix they all share
// left out ("/mnt/a/train/cat/1.jpg" counts as "cat/1.jpg" when every name
// is under /mnt/a/train/): the fingerprint of a dataset wherever it lies.
uint64_t FingerprintNames(uint64_t seed, const std::vector<std::string>& names);

// A hash of the file at `path`'s size, modification time (ns) and inode,
// never 0; 1 when it cannot be stat'ed (deleted, unreadable).
uint64_t FileStamp(const std::string& path);

// The permutation of [0, n) used by shuffled epochs: Fisher-Yates driven by
// Rng(HashSeed(seed, epoch)). Exposed for tests.
std::vector<uint32_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace stoker

#endif  // STOKER_SOURCE_H_
