// Copyright 2026 The stoker Authors.
#include "video/video_clips.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/rng.h"
#include "ops/geometry.h"
#include "ops/transform_ops.h"  // HasNormalize, NormalizeOf, IsDeterministic
#include "source/image_folder.h"
#include "source/shards.h"
#include "source/tar_index.h"
#include "stoker/transform_schema.h"
#include "io/stream.h"
#include "video/demux.h"

namespace stoker {
namespace {

// Salts of the clip's two random streams (which frames; the transforms' draw).
constexpr uint64_t kClipSalt = 0x56494445'4f434c50ull;
constexpr uint64_t kTransformSalt = 0x56494445'4f58464dull;

Status Invalid(const std::string& what) { return InvalidArgumentError("VideoClips: " + what); }

Status CheckOptions(const VideoClipsOptions& o) {
  if (o.clip_len < 1 || o.clip_len > 65536) {
    return Invalid("clip_len must be an int in [1, 65536], got " + std::to_string(o.clip_len));
  }
  if (o.frame_stride < 1) {
    return Invalid("frame_stride must be an int >= 1, got " + std::to_string(o.frame_stride));
  }
  if (!(o.frame_rate >= 0) || !std::isfinite(o.frame_rate)) {
    return Invalid("frame_rate must be a positive number (frames per second), got " +
                   std::to_string(o.frame_rate));
  }
  if (o.frame_rate > 0 && o.frame_stride != 1) {
    return Invalid("give frame_stride or frame_rate, not both (frame_stride " +
                   std::to_string(o.frame_stride) + ", frame_rate " +
                   std::to_string(o.frame_rate) + ")");
  }
  if (o.step < 1) {
    return Invalid("step must be an int >= 1 (frames between clips), got " + std::to_string(o.step));
  }
  if (o.sampling == VideoClipsOptions::Sampling::kAll && o.clips_per_video != 1) {
    return Invalid("sampling \"all\" takes every clip of each video: leave clips_per_video at 1 "
                   "(got " + std::to_string(o.clips_per_video) + ")");
  }
  if (o.sampling != VideoClipsOptions::Sampling::kAll &&
      o.sampling != VideoClipsOptions::Sampling::kTorchvisionUniform && o.step != 1) {
    return Invalid("step (frames between clips) goes with sampling=\"all\" or "
                   "\"torchvision_uniform\" (got step " + std::to_string(o.step) + ")");
  }
  if (o.clips_per_video < 1) {
    return Invalid("clips_per_video must be an int >= 1, got " +
                   std::to_string(o.clips_per_video));
  }
  if (o.codec_threads < 1 || o.codec_threads > 64) {
    return Invalid("codec_threads must be an int in [1, 64], got " +
                   std::to_string(o.codec_threads));
  }
  if (o.max_pixels < 1) {
    return Invalid("max_pixels must be >= 1, got " + std::to_string(o.max_pixels));
  }
  if (o.layout != "TCHW" && o.layout != "CTHW") {
    return Invalid("layout must be \"TCHW\" or \"CTHW\", got \"" + o.layout + "\"");
  }
  const int given = !o.root.empty() + !o.files.empty() + !o.shards.empty();
  if (given != 1) {
    return Invalid(given == 0 ? "give a root folder, a list of files or shards"
                              : "give one of a root folder, a list of files or shards, not both or all");
  }
  if (!o.labels.empty() && o.labels.size() != o.files.size()) {
    return Invalid("labels must have one entry per file (" + std::to_string(o.files.size()) +
                   " files, " + std::to_string(o.labels.size()) + " labels)");
  }
  // The transforms: as the Loader checks its own (one Normalize, on a float dtype;
  // warps after every geometric transform).
  int converts = 0;
  const Transform* warp = nullptr;
  for (const Transform& t : o.transforms) {
    STOKER_RETURN_IF_ERROR(CheckTransform(t));
    if (t.schema->needs_boxes) {
      return Invalid(t.ToString() + " draws its crop from a sample's boxes, and clips have none");
    }
    if (t.schema->stage == TransformStage::kWarp && warp == nullptr) warp = &t;
    if (t.schema->stage == TransformStage::kGeometry && warp != nullptr) {
      return Invalid(t.ToString() + " follows " + warp->ToString() +
                     ": place the warps after the crops, resizes and flips");
    }
    if (t.schema->stage == TransformStage::kConvert) {
      if (++converts > 1) return Invalid("more than one Normalize in the transforms");
      if (o.dtype == DType::kUint8) {
        return Invalid("Normalize cannot be applied to uint8 output: give dtype float32, "
                       "float16 or bfloat16, or normalise on the device");
      }
    }
  }
  return Status::OK();
}

// The output-size frame at `rgb` (NCHW, one frame) into frame t of the
// [C, T, H, W] block at `dst`.
void ScatterPlanes(const uint8_t* frame, size_t plane_bytes, int t, int frames, uint8_t* dst) {
  for (int c = 0; c < 3; ++c) {
    std::memcpy(dst + (static_cast<size_t>(c) * frames + t) * plane_bytes,
                frame + static_cast<size_t>(c) * plane_bytes, plane_bytes);
  }
}

// What the decoder's frame sink needs for one clip.
struct ClipSink {
  SampleProcessor* processor;  // null: no transforms (frames at the video's size)
  const PixelWriter* writer;   // the clip's size
  Rng rng{0};                  // copied for each frame: one draw per clip
  uint8_t* out;                // the field's bytes
  size_t frame_bytes;          // one output frame
  int frames;                  // clip_len
  bool cthw;
  std::vector<uint8_t>* frame;  // CTHW: one frame before the scatter
  const std::string* path;

  static Status Sink(void* p, int j, const uint8_t* rgb, int width, int height, const Rect& rect,
                     ptrdiff_t stride) {
    auto* c = static_cast<ClipSink*>(p);
    uint8_t* dst = c->out + static_cast<size_t>(j) * c->frame_bytes;
    if (c->cthw) {
      c->frame->resize(c->frame_bytes);
      dst = c->frame->data();
    }
    if (c->processor != nullptr) {
      SampleData s;
      s.pixels = rgb;
      s.pixel_width = width;
      s.pixel_height = height;
      s.pixel_stride = stride;
      Rng rng = c->rng;
      StageTimes times;
      Status st = rect == Rect{0, 0, width, height}
                      ? c->processor->Process(s, &rng, dst, &times)
                      : c->processor->ProcessRegion(s, rect, &rng, dst, &times);
      if (!st.ok()) return st.WithContext(*c->path + " frame " + std::to_string(j));
    } else {  // the whole frame (no region asked for)
      if (!(rect == Rect{0, 0, width, height})) return InternalError("a region without transforms");
      for (int y = 0; y < height; ++y) c->writer->WriteRow(rgb + y * stride, y, dst);
    }
    if (c->cthw) {
      ScatterPlanes(dst, c->frame_bytes / 3, j, c->frames, c->out);
    }
    return Status::OK();
  }
};

}  // namespace

bool BuiltWithVideo() { return true; }

StatusOr<std::shared_ptr<VideoClips>> VideoClips::Open(const VideoClipsOptions& options) {
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<VideoClipsImpl> impl, VideoClipsImpl::Create(options));
  return std::shared_ptr<VideoClips>(std::move(impl));
}

VideoClipsImpl::VideoClipsImpl(const VideoClipsOptions& options) : options_(options) {}

StatusOr<std::shared_ptr<VideoClipsImpl>> VideoClipsImpl::Create(const VideoClipsOptions& options) {
  STOKER_RETURN_IF_ERROR(CheckOptions(options));
  std::shared_ptr<VideoClipsImpl> s(new VideoClipsImpl(options));
  VideoClipsOptions& o = s->options_;
  for (std::string& ext : o.extensions) {
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  // Before the listing: shards cache their tar indexes there.
  if (!o.index_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.index_dir, ec);
    if (ec) return Invalid("index_dir " + o.index_dir + ": cannot create it (" + ec.message() + ")");
  }
  if (!o.root.empty()) {
    ClassFolderListing listing;
    STOKER_RETURN_IF_ERROR(ListClassFolder(o.root, &o.extensions, &listing));
    o.root = listing.root;
    for (size_t i = 0; i < listing.files.size(); ++i) {
      s->paths_.push_back(listing.root + "/" + listing.files[i]);
      s->labels_.push_back(listing.labels[i]);
    }
    s->classes_ = std::move(listing.classes);
  } else if (!o.shards.empty()) {
    STOKER_RETURN_IF_ERROR(s->ListShards());
  } else {
    s->paths_ = o.files;
    s->labels_ = o.labels.empty() ? std::vector<int64_t>(o.files.size(), -1) : o.labels;
  }
  if (s->where_.empty()) {
    for (const std::string& p : s->paths_) s->where_.push_back(VideoLocation{p, -1, 0, ""});
    s->stamp_path_ = s->paths_;
  }
  s->bad_.resize(s->paths_.size());
  s->clip_ = ClipSpec{o.clip_len, o.frame_stride, o.frame_rate, o.clips_per_video,
                      o.sampling == VideoClipsOptions::Sampling::kUniform};
  s->all_ = o.sampling == VideoClipsOptions::Sampling::kAll ||
            o.sampling == VideoClipsOptions::Sampling::kTorchvisionUniform;
  s->pick_ = o.sampling == VideoClipsOptions::Sampling::kTorchvisionUniform ? o.clips_per_video
                                                                             : 0;
  s->clip_.all = s->all_;
  s->clip_.step = o.step;
  s->cthw_ = o.layout == "CTHW";
  if (!o.transforms.empty()) {
    Status fixed = StaticOutputSize(o.transforms, &s->out_height_, &s->out_width_);
    if (!fixed.ok()) {
      return Invalid(fixed.message() +
                     " (a clip's frames are batched at one size; pass no transforms for "
                     "frames at each video's own size)");
    }
  }
  const int64_t t = o.clip_len;
  const int64_t h = s->out_height_ > 0 ? s->out_height_ : -1;
  const int64_t w = s->out_width_ > 0 ? s->out_width_ : -1;
  s->schema_.fields.push_back(ArrayField(
      "video", ElemTypeOf(o.dtype),
      s->cthw_ ? std::vector<int64_t>{3, t, h, w} : std::vector<int64_t>{t, 3, h, w}));
  s->schema_.fields.push_back(LabelField("label"));
  if (o.with_times) s->schema_.fields.push_back(ArrayField("time", ElemType::kFloat64, {t}));
  STOKER_RETURN_IF_ERROR(CheckSchema(s->schema_));
  s->processor_config_.transforms = o.transforms;
  s->processor_config_.decoder.max_pixels = o.max_pixels;
  s->processor_config_.timing = false;
  if (s->out_height_ > 0) {
    s->writer_ = std::make_unique<PixelWriter>(
        o.dtype, Layout::kNCHW, s->out_height_, s->out_width_, HasNormalize(o.transforms),
        NormalizeOf(o.transforms).mean, NormalizeOf(o.transforms).std);
  }
  s->slots_ = std::make_unique<VideoSlot[]>(s->paths_.size());
  if (s->paths_.empty()) return Invalid(o.shards.empty() ? "no video files" : "no video members in the shards");
  if (s->all_) STOKER_RETURN_IF_ERROR(s->CountClips());
  return s;
}

Status VideoClipsImpl::CountClips() {
  clip_offsets_.assign(1, 0);
  clip_counts_.clear();
  for (int64_t v = 0; v < num_videos(); ++v) {
    StatusOr<std::shared_ptr<const VideoIndex>> index = IndexOf(v);
    const int64_t n = index.ok() ? CountAllClips(*index.value(), clip_) : 0;
    clip_counts_.push_back(n);
    clip_offsets_.push_back(clip_offsets_.back() + (pick_ == 0 ? n : n > 0 ? pick_ : 0));
  }
  if (clip_offsets_.back() == 0) {
    return Invalid(std::string("sampling \"") + (pick_ ? "torchvision_uniform" : "all") +
                   "\": no video has a whole clip of " +
                   std::to_string(options_.clip_len) + " frames (frame_stride " +
                   std::to_string(options_.frame_stride) + ")");
  }
  return Status::OK();
}

int64_t VideoClipsImpl::VideoOf(int64_t index) const {
  if (!all_) return index / options_.clips_per_video;
  return static_cast<int64_t>(
      std::upper_bound(clip_offsets_.begin(), clip_offsets_.end(), index) -
      clip_offsets_.begin()) - 1;
}

int64_t VideoClipsImpl::ClipOf(int64_t index) const {
  if (!all_) return index % options_.clips_per_video;
  const int64_t v = VideoOf(index);
  const int64_t j = index - clip_offsets_[static_cast<size_t>(v)];
  if (pick_ <= 1) return pick_ == 0 ? j : 0;
  // UniformClipSampler: floor(linspace(0, n - 1, k))[j], exactly.
  const int64_t n = clip_counts_[static_cast<size_t>(v)];
  return j * (n - 1) / (pick_ - 1);
}

Status VideoClipsImpl::ListShards() {
  VideoClipsOptions& o = options_;
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> urls, ExpandShardPatterns(o.shards));
  SampleSpec spec;
  spec.image_exts.clear();
  for (const std::string& e : o.extensions) {
    spec.image_exts.push_back(!e.empty() && e[0] == '.' ? e.substr(1) : e);
  }
  spec.label_ext = o.shard_label;
  spec.allow_negative_labels = false;
  // Members are read in place (pread through an AVIOContext), never whole:
  // no limit but the shard's own size, which the index checks.
  spec.max_member_bytes = std::numeric_limits<int64_t>::max();
  spec.require_end_of_archive = true;
  for (const std::string& u : urls) {
    if (IsRemoteUrl(u) || u.size() < 4 || u.compare(u.size() - 4, 4, ".tar") != 0) {
      return Invalid("shards: " + u + " is not a local uncompressed .tar (video members are "
                     "read in place, by random access)");
    }
    STOKER_ASSIGN_OR_RETURN(TarIndex index, LoadOrBuildTarIndex(u, spec, o.index_dir));
    for (TarIndexEntry& e : index.entries) {
      if (e.offset < 0) {
        paths_.push_back(u + ": sample " + std::to_string(paths_.size()));
        where_.push_back(VideoLocation{u, 0, 0, paths_.back()});
        bad_.push_back(e.member);
      } else {
        paths_.push_back(u + ": member " + e.member);
        where_.push_back(VideoLocation{u, e.offset, e.size, paths_.back()});
        bad_.emplace_back();
      }
      labels_.push_back(e.label);
      stamp_path_.push_back(u);
    }
  }
  STOKER_ASSIGN_OR_RETURN(classes_, ReadShardClasses(urls));
  return Status::OK();
}

std::string VideoClipsImpl::Describe() const {
  std::string where = !options_.root.empty()
                          ? options_.root + ", " + std::to_string(classes_.size()) + " classes"
                      : !options_.shards.empty()
                          ? std::to_string(options_.shards.size()) + " shard pattern(s)"
                          : std::to_string(paths_.size()) + " files";
  return "VideoClips(" + where + ", " + std::to_string(paths_.size()) + " videos, " +
         std::to_string(options_.clips_per_video) + " clip(s) of " +
         std::to_string(options_.clip_len) + " frames each)";
}

bool VideoClipsImpl::SamplesVaryByEpoch() const {
  return options_.sampling == VideoClipsOptions::Sampling::kRandom ||
         !IsDeterministic(options_.transforms);
}

std::string VideoClipsImpl::NameOf(int64_t index) const {
  const std::string& path = paths_[static_cast<size_t>(VideoOf(index))];
  return options_.clips_per_video == 1 && !all_ ? path
                                                : path + "#clip" + std::to_string(ClipOf(index));
}

std::vector<int64_t> VideoClipsImpl::Labels() const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(size()));
  for (size_t v = 0; v < labels_.size(); ++v) {
    const int64_t n = all_ ? clip_offsets_[v + 1] - clip_offsets_[v] : options_.clips_per_video;
    out.insert(out.end(), static_cast<size_t>(n), labels_[v]);
  }
  return out;
}

uint64_t VideoClipsImpl::SampleStamp(int64_t index) const {
  return FileStamp(stamp_path_[static_cast<size_t>(VideoOf(index))]);
}

VideoClips::Counters VideoClipsImpl::counters() const {
  Counters c;
  c.indexes_built = indexes_built_.load(std::memory_order_relaxed);
  c.indexes_loaded = indexes_loaded_.load(std::memory_order_relaxed);
  c.clips = clips_.load(std::memory_order_relaxed);
  c.frames_decoded = frames_decoded_.load(std::memory_order_relaxed);
  c.seeks = seeks_.load(std::memory_order_relaxed);
  return c;
}

StatusOr<std::shared_ptr<const VideoIndex>> VideoClipsImpl::IndexOf(int64_t video,
                                                                    bool* built) const {
  VideoSlot& slot = slots_[static_cast<size_t>(video)];
  MutexLock lock(&slot.mu);
  if (!slot.built) {
    slot.built = true;
    if (built != nullptr) *built = true;
    bool loaded = false;
    const std::string& bad = bad_[static_cast<size_t>(video)];
    StatusOr<VideoIndex> index =
        !bad.empty() ? StatusOr<VideoIndex>(DataLossError(bad))
                     : LoadOrBuildVideoIndex(where_[static_cast<size_t>(video)],
                                             options_.max_pixels, options_.index_dir, &loaded);
    if (index.ok()) {
      slot.index = std::make_shared<const VideoIndex>(std::move(index).value());
      (loaded ? indexes_loaded_ : indexes_built_).fetch_add(1, std::memory_order_relaxed);
    } else {
      slot.status = index.status();
    }
  }
  if (!slot.status.ok()) return slot.status;
  return slot.index;
}

std::vector<int64_t> VideoClipsImpl::PlanFrames(const VideoIndex& index, int64_t sample,
                                                uint64_t seed, int64_t epoch) const {
  Rng rng(HashSeed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(sample), kClipSalt));
  return PlanClipFrames(index, clip_, static_cast<int>(ClipOf(sample)), &rng);
}

StatusOr<VideoClips::ClipFrames> VideoClipsImpl::FramesOf(int64_t index, uint64_t seed,
                                                          int64_t epoch) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("clip index " + std::to_string(index) + " out of range [0, " +
                                std::to_string(size()) + ")");
  }
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const VideoIndex> vi,
                          IndexOf(VideoOf(index)));
  ClipFrames out;
  for (int64_t f : PlanFrames(*vi, index, seed, epoch)) {
    out.pts.push_back(vi->pts[static_cast<size_t>(f)]);
    out.seconds.push_back(static_cast<double>(vi->pts[static_cast<size_t>(f)]) * vi->time_base());
  }
  return out;
}

std::unique_ptr<VideoClipsImpl::Worker> VideoClipsImpl::TakeWorker() const {
  {
    MutexLock lock(&pool_mu_);
    if (!pool_.empty()) {
      std::unique_ptr<Worker> w = std::move(pool_.back());
      pool_.pop_back();
      return w;
    }
  }
  auto w = std::make_unique<Worker>();
  if (writer_ != nullptr) {
    w->processor = std::make_unique<SampleProcessor>(processor_config_, writer_.get());
  }
  return w;
}

void VideoClipsImpl::ReturnWorker(std::unique_ptr<Worker> w) const {
  if (w->processor != nullptr) w->processor->TrimScratch();
  MutexLock lock(&pool_mu_);
  pool_.push_back(std::move(w));
}

Status VideoClipsImpl::ReadClip(int64_t index, uint64_t seed, int64_t epoch,
                                SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= size()) {
    return InvalidArgumentError("clip index " + std::to_string(index) + " out of range [0, " +
                                std::to_string(size()) + ")");
  }
  const int64_t video = VideoOf(index);
  const std::string& path = paths_[static_cast<size_t>(video)];
  VideoWork& work = scratch->video;
  work = VideoWork();
  const int64_t t0 = NowNs();
  bool built = false;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const VideoIndex> vi, IndexOf(video, &built));
  work.indexes_built = built ? 1 : 0;
  const std::vector<int64_t> frames = PlanFrames(*vi, index, seed, epoch);
  std::vector<int64_t> targets(frames.size());
  for (size_t j = 0; j < frames.size(); ++j) targets[j] = vi->pts[static_cast<size_t>(frames[j])];

  const int t = options_.clip_len;
  const int h = out_height_ > 0 ? out_height_ : vi->height;
  const int w = out_width_ > 0 ? out_width_ : vi->width;
  std::unique_ptr<PixelWriter> own_writer;
  const PixelWriter* writer = writer_.get();
  if (writer == nullptr) {  // no transforms: the video's own size
    own_writer = std::make_unique<PixelWriter>(options_.dtype, Layout::kNCHW, h, w, false,
                                               std::array<float, 3>{}, std::array<float, 3>{});
    writer = own_writer.get();
  }
  const size_t frame_bytes = writer->sample_bytes();
  const int fields = static_cast<int>(schema_.fields.size());
  scratch->fields.resize(static_cast<size_t>(fields));
  scratch->field_bytes.resize(2);
  std::vector<uint8_t>& video_bytes = scratch->field_bytes[0];
  video_bytes.resize(frame_bytes * static_cast<size_t>(t));

  std::unique_ptr<Worker> worker = TakeWorker();
  ClipSink sink{worker->processor.get(), writer,
                Rng(HashSeed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index),
                             kTransformSalt)),
                video_bytes.data(), frame_bytes, t, cthw_, &worker->frame, &path};
  DecodeStats stats;
  Status st;
  // The clip's one crop (and flip) draw is known before decoding: the
  // decoder converts only the rectangle the transforms read (a draw that
  // fails converts the whole frame, and the sink reports the error).
  Rect want;
  if (sink.processor != nullptr) {
    StatusOr<Rect> region = sink.processor->RawRegion(vi->width, vi->height, sink.rng);
    if (region.ok()) want = region.value();
  }
  {
    StatusOr<std::unique_ptr<VideoFile>> file =
        VideoFile::Open(where_[static_cast<size_t>(video)], options_.max_pixels);
    work.demux_ns = NowNs() - t0;  // the index (when built here) and opening the file
    st = file.status();
    if (st.ok()) {
      st = worker->decoder.Decode(file.value().get(), *vi, targets, options_.codec_threads, want,
                                  &ClipSink::Sink, &sink, &stats);
    }
  }
  ReturnWorker(std::move(worker));
  clips_.fetch_add(1, std::memory_order_relaxed);
  frames_decoded_.fetch_add(stats.frames_decoded, std::memory_order_relaxed);
  seeks_.fetch_add(stats.seeks, std::memory_order_relaxed);
  STOKER_RETURN_IF_ERROR(st);
  work.demux_ns += stats.demux_ns;
  work.seek_ns = stats.seek_ns;
  work.decode_ns = stats.decode_ns;
  work.convert_ns = stats.convert_ns;
  work.transform_ns = stats.sink_ns;
  work.frames_decoded = stats.frames_decoded;
  work.frames_converted = stats.frames_converted;
  work.frames_delivered = stats.frames_delivered;
  work.gops_decoded = stats.gops_decoded;
  work.seeks = stats.seeks;

  FieldValue& v = scratch->fields[0];
  v = FieldValue();
  v.data = video_bytes.data();
  v.size = video_bytes.size();
  v.dtype = ElemTypeOf(options_.dtype);
  v.ndim = 4;
  if (cthw_) {
    v.dims = {3, t, h, w};
  } else {
    v.dims = {t, 3, h, w};
  }
  const int64_t label = labels_[static_cast<size_t>(video)];
  FieldValue& l = scratch->fields[1];
  l = FieldValue();
  l.dtype = ElemType::kInt64;
  l.i = label;
  if (options_.with_times) {
    std::vector<uint8_t>& times = scratch->field_bytes[1];
    times.resize(sizeof(double) * static_cast<size_t>(t));
    for (int j = 0; j < t; ++j) {
      const double sec = static_cast<double>(targets[static_cast<size_t>(j)]) * vi->time_base();
      std::memcpy(times.data() + sizeof(double) * static_cast<size_t>(j), &sec, sizeof(double));
    }
    FieldValue& tv = scratch->fields[2];
    tv = FieldValue();
    tv.data = times.data();
    tv.size = times.size();
    tv.dtype = ElemType::kFloat64;
    tv.ndim = 1;
    tv.dims[0] = t;
  }
  *out = SampleData();
  out->id = index;
  out->label = label;
  out->fields = scratch->fields.data();
  out->num_fields = fields;
  out->video = &work;
  return Status::OK();
}

namespace {

// The RandomAccessSource's epoch reader (order, sampler, rank share, resume
// offset), reading each clip with the epoch's seed and number.
class ClipReader final : public EpochReader {
 public:
  ClipReader(const VideoClipsImpl* source, std::unique_ptr<EpochReader> inner, uint64_t seed,
             int64_t epoch)
      : source_(source), inner_(std::move(inner)), seed_(seed), epoch_(epoch) {}

  int64_t size() const override { return inner_->size(); }
  bool random_access() const override { return true; }
  int64_t padded() const override { return inner_->padded(); }
  int64_t KeyAt(int64_t position) const override { return inner_->KeyAt(position); }
  std::string Name(int64_t position) const override { return inner_->Name(position); }

  Status Read(int64_t position, SampleScratch* scratch, SampleData* out, bool* end) override {
    if (position < 0 || position >= size()) {
      *end = true;
      return Status::OK();
    }
    *end = false;
    return source_->ReadClip(inner_->KeyAt(position), seed_, epoch_, scratch, out);
  }

 private:
  const VideoClipsImpl* source_;
  std::unique_ptr<EpochReader> inner_;
  const uint64_t seed_;
  const int64_t epoch_;
};

}  // namespace

StatusOr<std::unique_ptr<EpochReader>> VideoClipsImpl::StartEpoch(const EpochSpec& spec) {
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<EpochReader> inner,
                          RandomAccessSource::StartEpoch(spec));
  return std::unique_ptr<EpochReader>(
      new ClipReader(this, std::move(inner), spec.seed, static_cast<int64_t>(spec.epoch)));
}

}  // namespace stoker
