// Copyright 2026 The stoker Authors.
#include "pipeline/sample_producer.h"

#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/rng.h"
#include "pipeline/batch_assembler.h"
#include "trace/nvtx.h"

namespace stoker {
namespace {

// HashSeed's last word for the field steps' seeds (the image's is `attempt`, 0).
constexpr uint64_t kFieldStepSeedWord = 0x5354455053ULL;  // "STEPS"

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

}  // namespace

namespace {

// Records: copies of the sample's field values and their bytes into `out`
// (the decoded cache keeps them with the decoded image).
void CopyFields(const SampleData& sample, CachedImage* out) {
  out->fields.assign(sample.fields, sample.fields + sample.num_fields);
  out->field_bytes.resize(static_cast<size_t>(sample.num_fields));
  out->field_members.resize(static_cast<size_t>(sample.num_fields));
  for (int k = 0; k < sample.num_fields; ++k) {
    FieldValue& v = out->fields[static_cast<size_t>(k)];
    std::vector<uint8_t>& b = out->field_bytes[static_cast<size_t>(k)];
    // The member's name points into the worker's scratch: the entry keeps
    // its own copy (its errors name the member as the first read's did).
    std::string& name = out->field_members[static_cast<size_t>(k)];
    name.assign(v.member);
    v.member = name;
    if (v.data == nullptr) continue;
    size_t bytes = v.size;
    if (v.raw && v.ndim == 3) {  // raw pixels: packed rows
      const size_t row = static_cast<size_t>(v.dims[1] * v.dims[2]) * ElemSize(v.dtype);
      bytes = row * static_cast<size_t>(v.dims[0]);
      b.resize(bytes);
      for (int64_t y = 0; y < v.dims[0]; ++y) {
        std::memcpy(b.data() + row * y, v.data + v.stride * y, row);
      }
      v.stride = static_cast<ptrdiff_t>(row);
    } else {
      b.assign(v.data, v.data + bytes);
    }
    v.data = b.data();
  }
}

}  // namespace

SampleProducer::SampleProducer(const ProducerContext& context)
    : ctx_(context), processor_(*context.processor, context.writer) {
  if (ctx_.record != nullptr && ctx_.record->records()) {
    record_ = std::make_unique<RecordProcessor>(ctx_.record, context.processor->decoder,
                                                context.processor);
  }
}

size_t SampleProducer::scratch_bytes() const {
  return processor_.scratch_bytes() + scratch_.bytes.capacity() +
         (record_ != nullptr ? record_->scratch_bytes() : 0);
}

bool SampleProducer::Produce(EpochReader* reader, int64_t epoch, int64_t p, int s,
                             BatchBuffer* buf, WorkerCounters* c, bool prefetch) {
  const LoaderOptions& options = *ctx_.options;
  const int64_t n = reader->size();
  const int64_t pos = p;
  // Tracing: the spans' labels; the sample id is filled in once read.
  SampleTrace trace_labels;
  const SampleTrace* trace = nullptr;
  if (lane_ != nullptr && ctx_.tracer->on()) {
    trace_labels = SampleTrace{ctx_.tracer, lane_, ctx_.trace_names, -1,
                               p / options.batch_size, epoch};
    trace = &trace_labels;
  }
  if (ctx_.output_cache && ServeFromOutputCache(reader, pos, s, buf, c, trace)) return true;
  constexpr int attempt = 0;  // the augmentation stream's last seed word (no retries)
  SampleData sample;
  bool end = false;
  const bool timing = (options.stage_timing && sample_timing_) || trace != nullptr;
  const int64_t t0 = timing ? NowNs() : 0;
  std::shared_ptr<const CachedImage> cached;  // holds the pixels `sample` points at
  int64_t cache_decode_ns = 0;
  nvtx::Range read_range("read");
  Status st = NoThrow(
      [&] {
        return ctx_.cache == nullptr || ctx_.output_cache
                   ? reader->Read(pos, &scratch_, &sample, &end)
                   : ReadThroughCache(reader, pos, &sample, &end, &cached, &cache_decode_ns);
      },
      [&] { return reader->Name(pos); });
  read_range.End();
  const int64_t t1 = timing ? NowNs() : 0;
  // VideoClips: the clip's seek, decode and conversion are the decode stage,
  // its transforms augment; demuxing stays in read.
  int64_t video_decode_ns = 0, video_augment_ns = 0;
  if (st.ok() && !end && sample.video != nullptr) {
    const VideoWork& w = *sample.video;
    c->AddVideo(w);
    if (timing) {
      video_decode_ns = w.seek_ns + w.decode_ns + w.convert_ns;
      video_augment_ns = w.transform_ns;
    }
  }
  c->Add(c->read_ns, t1 - t0 - cache_decode_ns - video_decode_ns - video_augment_ns);
  c->Add(c->decode_ns, cache_decode_ns + video_decode_ns);
  c->Add(c->augment_ns, video_augment_ns);
  if (trace != nullptr) {
    trace_labels.sample = st.ok() && !end ? sample.id : -1;
    if (cached != nullptr && cache_decode_ns == 0) {
      trace->Add(SpanKind::kCacheHit, t0, t1);
    } else {
      trace->Add(SpanKind::kRead, t0, t1 - cache_decode_ns);
      if (cache_decode_ns > 0) trace->Add(SpanKind::kCacheMiss, t1 - cache_decode_ns, t1);
    }
  }
  if (st.ok() && end && n < 0) {  // past the end of a stream: an empty slot
    buf->errors()[s] = Status::OK();
    buf->ids()[s] = -1;
    return false;
  }
  if (st.ok() && end) st = DataLossError("source ended before position " + std::to_string(pos));
  if (st.ok()) {
    int64_t bytes = static_cast<int64_t>(sample.size);
    for (int k = 0; k < sample.num_fields; ++k) bytes += static_cast<int64_t>(sample.fields[k].size);
    c->Add(c->bytes, bytes);
    Rng rng(HashSeed(options.seed, static_cast<uint64_t>(epoch),
                     static_cast<uint64_t>(sample.id), static_cast<uint64_t>(attempt)));
    StageTimes times;
    times.trace = trace;
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
          Status r;
          ImageDraw draw{rng};  // before the primary image draws: other image fields replay it
          // The field steps' own stream (the last seed word apart from the image's).
          draw.step_seed = HashSeed(options.seed, static_cast<uint64_t>(epoch),
                                    static_cast<uint64_t>(sample.id), kFieldStepSeedWord);
          if (ctx_.record == nullptr || ctx_.record->image >= 0) {
            const std::vector<double>* boxes = nullptr;
            if (record_ != nullptr && ctx_.record->plan_boxes >= 0) {
              r = record_->PlanBoxes(sample, &plan_boxes_);
              boxes = &plan_boxes_;
              draw.boxes = boxes;
            }
            if (r.ok()) r = processor_.Process(sample, &rng, out, &times, boxes);
            draw.width = times.source_width;
            draw.height = times.source_height;
          }
          if (r.ok() && record_ != nullptr) {
            int64_t removed = 0;
            r = record_->Process(sample, buf, s, &processor_.geometry(), &removed, &draw);
            if (r.ok() && removed > 0) c->Add(c->boxes_removed, removed);
          }
          threw = false;
          return r;
        },
        [&] { return reader->Name(pos); });
    c->Add(c->decode_ns, times.decode_ns);
    c->Add(c->augment_ns, times.augment_ns);
    c->Add(c->callback_ns, times.callback_ns);
    if (tally_ != nullptr) tally_->Add(times.source_width, times.source_height);
    if (!st.ok() && !threw) st = st.WithContext(reader->Name(pos));
  }
  if (!in_run_) TrimScratch();
  if (st.ok()) {
    buf->labels()[s] = sample.label;
    buf->ids()[s] = sample.id;
    buf->errors()[s] = Status::OK();
    c->Add(c->images, 1);
    if (ctx_.output_cache) {
      const int64_t t2 = trace != nullptr ? NowNs() : 0;
      StoreInOutputCache(reader, pos, s, buf);
      if (trace != nullptr) trace->Add(SpanKind::kCacheStore, t2, NowNs(), 0, /*output*/ 1);
    }
    return true;
  }
  // Cancelled is no bad sample but an interrupt (a Python callable's
  // KeyboardInterrupt, SystemExit or MemoryError, a cancelled read): never
  // skipped, it stops the epoch under either policy.
  if (options.on_error == OnError::kRaise || st.code() == StatusCode::kCancelled) {
    buf->errors()[s] = st;
    buf->ids()[s] = -1;
    return true;
  }
  // Skip: the slot is marked and removed when the consumer assembles the
  // batches (BatchAssembler), so every good sample is delivered once and the
  // bad one is counted once; no replacement is read.
  c->Add(c->skipped, 1);
  const int64_t key = reader->KeyAt(pos);
  ctx_.skips->Note(SkipLedger::FileOf(key, key >= 0 ? std::string() : reader->Name(pos)), pos,
                   st, prefetch);
  buf->errors()[s] = Status::OK();
  buf->ids()[s] = BatchAssembler::kSkippedId;
  return true;
}

uint64_t SampleProducer::StampOf(int64_t key) const {
  return ctx_.stamps != nullptr && key >= 0 ? ctx_.stamps->SampleStamp(key) : 0;
}

std::shared_ptr<const CachedImage> SampleProducer::LookupCached(int64_t key, uint64_t stamp) {
  return ctx_.stamps != nullptr ? ctx_.cache->Lookup(key, stamp) : ctx_.cache->Lookup(key);
}

// Read() through the decoded-sample cache: a hit fills `sample` with the
// cached pixels (no read, no decode); a miss reads, decodes the whole image
// and caches it (`*decode_ns`: the time that took).
Status SampleProducer::ReadThroughCache(EpochReader* reader, int64_t pos, SampleData* sample,
                                        bool* end, std::shared_ptr<const CachedImage>* cached,
                                        int64_t* decode_ns) {
  const int64_t key = reader->KeyAt(pos);
  int64_t bytes_read = 0;
  // Stamped before the read: a file changed while it is read is read again
  // at its next lookup.
  const uint64_t stamp = StampOf(key);
  if (key >= 0) *cached = LookupCached(key, stamp);
  if (*cached == nullptr) {
    STOKER_RETURN_IF_ERROR(reader->Read(pos, &scratch_, sample, end));
    if (*end || key < 0 || sample->pixels != nullptr) return Status::OK();
    const int64_t t0 = NowNs();
    auto image = std::make_shared<CachedImage>();
    // A failed decode is left to Process(), which names the error as usual.
    if (!processor_.DecodeWhole(*sample, image.get()).ok()) return Status::OK();
    image->id = sample->id;
    image->label = sample->label;
    image->stamp = stamp;
    if (sample->fields != nullptr) CopyFields(*sample, image.get());
    (void)ctx_.cache->Insert(key, image);  // too large for the cache: used this once
    *cached = std::move(image);
    *decode_ns = NowNs() - t0;
    bytes_read = static_cast<int64_t>(sample->size);
  }
  *end = false;
  const CachedImage& img = **cached;
  const VideoWork* video = sample->video;  // a miss's decode-video work, counted
  *sample = SampleData();
  sample->video = video;
  sample->size = static_cast<size_t>(bytes_read);  // counted as read (0 on a hit)
  sample->id = img.id;
  sample->label = img.label;
  sample->pixels = img.pixels.data();
  sample->pixel_width = img.width;
  sample->pixel_height = img.height;
  sample->pixel_stride = static_cast<ptrdiff_t>(img.width) * 3;
  if (!img.fields.empty()) {
    sample->fields = img.fields.data();
    sample->num_fields = static_cast<int>(img.fields.size());
  }
  return Status::OK();
}

// cache_kind kOutput: a hit copies the finished sample into slot `s`.
bool SampleProducer::ServeFromOutputCache(EpochReader* reader, int64_t pos, int s,
                                          BatchBuffer* buf, WorkerCounters* c,
                                          const SampleTrace* trace) {
  const int64_t key = reader->KeyAt(pos);
  slot_stamp_ = 0;
  if (key < 0) return false;
  const int64_t t0 = trace != nullptr ? NowNs() : 0;
  slot_stamp_ = StampOf(key);  // before the read, for StoreInOutputCache
  const std::shared_ptr<const CachedImage> hit = LookupCached(key, slot_stamp_);
  if (hit == nullptr) return false;
  uint8_t* slot = buf->slot(s);
  if (buf->shape().variable) {  // the cached sample's own size
    auto reserved = buf->ReserveSlot(s, hit->height, hit->width);
    if (!reserved.ok()) return false;  // made again (and failing there, named)
    slot = reserved.value();
  }
  if (buf->shape().image) std::memcpy(slot, hit->pixels.data(), buf->slot_bytes(s));
  for (int f = 0; f < buf->num_fields() && f < static_cast<int>(hit->fields.size()); ++f) {
    const FieldValue& v = hit->fields[static_cast<size_t>(f)];
    auto reserved = buf->ReserveField(f, s, v.size, v.dtype, v.dims.data(), v.ndim);
    if (!reserved.ok()) return false;  // made again (and failing there, named)
    if (v.size > 0) std::memcpy(reserved.value(), v.data, v.size);
  }
  buf->labels()[s] = hit->label;
  buf->ids()[s] = hit->id;
  buf->errors()[s] = Status::OK();
  c->Add(c->images, 1);
  if (trace != nullptr) {
    SampleTrace labelled = *trace;
    labelled.sample = hit->id;
    labelled.Add(SpanKind::kCacheHit, t0, NowNs(), 0, /*output*/ 1);
  }
  return true;
}

void SampleProducer::StoreInOutputCache(EpochReader* reader, int64_t pos, int s,
                                        BatchBuffer* buf) {
  const int64_t key = reader->KeyAt(pos);
  if (key < 0) return;
  auto image = std::make_shared<CachedImage>();
  if (buf->shape().image) {
    const size_t bytes = buf->slot_bytes(s);
    image->pixels.assign(buf->slot(s), buf->slot(s) + bytes);
    image->width = buf->slot_width(s);
    image->height = buf->slot_height(s);
  }
  image->fields.resize(static_cast<size_t>(buf->num_fields()));
  image->field_bytes.resize(static_cast<size_t>(buf->num_fields()));
  for (int f = 0; f < buf->num_fields(); ++f) {
    const FieldSlot& slot = buf->field_slot(f, s);
    std::vector<uint8_t>& b = image->field_bytes[static_cast<size_t>(f)];
    b.assign(slot.data, slot.data + slot.bytes);
    FieldValue& v = image->fields[static_cast<size_t>(f)];
    v.data = b.data();
    v.size = slot.bytes;
    v.dtype = slot.elem;
    v.ndim = slot.ndim;
    v.dims = slot.dims;
  }
  image->id = buf->ids()[s];
  image->label = buf->labels()[s];
  image->stamp = slot_stamp_;
  (void)ctx_.cache->Insert(key, std::move(image));
}

// Frees the file read buffer when it (with the processor's scratch) is above
// the budget; the processor trims its own scratch after each sample.
void SampleProducer::TrimScratch() {
  const size_t budget = ctx_.options->scratch_budget;
  if (budget == 0) return;
  if (scratch_bytes() <= budget) return;
  bool released = processor_.TrimScratch();
  if (record_ != nullptr && record_->scratch_bytes() > 0 && scratch_bytes() > budget) {
    record_->ReleaseScratch();  // other image fields' decode memory
    released = true;
  }
  if (scratch_bytes() > budget) {
    std::vector<uint8_t>().swap(scratch_.bytes);
    released = true;
  }
  if (released) ctx_.scratch_releases->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace stoker
