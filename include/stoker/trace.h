// Copyright 2026 The stoker Authors.
//
// Tracer: spans of what the engine's threads do, for a timeline (Chrome
// trace / Perfetto JSON) and for torch.profiler traces.
//
//   std::shared_ptr<Tracer> tracer = loader->tracer();
//   tracer->Start(TraceOptions{});             // off by default
//   ... iterate ...
//   tracer->Stop();
//   STOKER_RETURN_IF_ERROR(tracer->WriteChromeTrace("trace.json"));
//
// What is recorded (docs/diagnosis.md, "Reading a trace"): per worker thread
// the read, decode (with the decode path: region, DCT scale, row-streamed,
// whole), each transform step (fused geometry, each photometric op, the
// conversion into the slot, RandomErasing), the caches and the worker's waits
// for a free batch slot; on the consumer thread the hand-off (one Next()
// call), the wait inside it (with the stage that was short) and the batch's
// assembly (collate); on the device path the launch (copy + kernel enqueued)
// and the hand-off, and the host fallback's conversion. Each span carries
// the sample id, the batch (position batch of the epoch) and the epoch.
//
// Memory: each thread that records owns one ring of `spans_per_thread`
// spans (48 bytes each: 3 MiB per thread at the default 65,536), allocated
// the first time it records while tracing is on and kept until the Tracer
// dies; the ring keeps the newest spans (older ones are overwritten and
// counted as dropped). Nothing is allocated while tracing is off.
//
// Cost: off, a span site is one relaxed load of a flag. On, a span is a few
// relaxed stores into the thread's own ring (no lock, no allocation after
// the first), plus the clock reads of steps that are not timed already
// (docs/performance.md has the measured throughput cost).
//
// Clock: NowNs() of the engine (std::chrono::steady_clock, nanoseconds).
// ChromeEventsJson maps it to a trace's clock by an origin.
//
// Thread-safety: Start, Stop, Collect and the writers are thread-safe and
// may run while threads record. Record(lane, ...) is called only by the
// thread that owns `lane` (RegisterLane / ThisThreadLane made it there).
#ifndef STOKER_TRACE_H_
#define STOKER_TRACE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/mutex.h"
#include "stoker/status.h"
#include "stoker/thread_annotations.h"

namespace stoker {

struct TraceOptions {
  // Ring size per recording thread, rounded up to a power of two (>= 64).
  size_t spans_per_thread = size_t{1} << 16;
};

enum class SpanKind : uint8_t {
  kRead = 0,       // worker: a sample's bytes from the source
  kDecode,         // worker: header + decode; detail: DecodePath bits, value: DCT denominator
  kTransform,      // worker: one transform step; name: which
  kCacheHit,       // worker: a sample served by the decoded or output cache
  kCacheMiss,      // worker: decoded whole and inserted into the decoded cache
  kCacheStore,     // worker: a finished sample stored in the output cache
  kWorkerWait,     // worker: waited for a free batch slot (prefetch bound)
  kHandoff,        // consumer: one Next() call, from entry to the batch handed out
  kConsumerWait,   // consumer: waited for batch `batch`; value: the short Stage
  kCollate,        // consumer: the delivered batch assembled (compaction, carry)
  kDeviceLaunch,   // device: H2D copy and kernel enqueued for a batch
  kDeviceKernel,   // device: the conversion run (host fallback: on its thread)
  kDeviceHandoff,  // device: the consumer's stream made to wait for the batch
  kUser,           // anything else; name says what
  kCount
};

// SpanKind::kDecode's detail bits.
enum DecodePath : uint8_t {
  kDecodeRegion = 1,   // only the rectangle the crop keeps (JPEG region decode)
  kDecodeScaled = 2,   // DCT-domain scaling (value: the denominator 2, 4 or 8)
  kDecodeRows = 4,     // row-streamed into the resampler (no image held)
  kDecodeWhole = 8,    // the whole image (PNG, other formats, the slow path)
  kDecodeRaw = 16,     // no decode: pixels from an array source or the decoded cache
};

// SpanKind::kConsumerWait's value: the stage with the most worker busy time
// since the previous batch (what the consumer waited for).
enum class Stage : uint8_t { kNone = 0, kRead, kDecode, kAugment };
const char* StageName(Stage s);

struct Span {
  int64_t start_ns = 0;  // NowNs() clock
  int64_t end_ns = 0;
  int64_t sample = -1;   // sample id (-1: none)
  int64_t batch = -1;    // batch index in the epoch (-1: none)
  int64_t epoch = -1;
  SpanKind kind = SpanKind::kUser;
  uint8_t detail = 0;
  uint16_t name = 0;     // Tracer::Intern id; 0: the kind's own name
  int32_t value = 0;
};

// A span as collected, with the thread it ran on.
struct CollectedSpan {
  Span span;
  int lane = 0;  // index into Tracer::Lanes()
};

struct LaneInfo {
  std::string name;      // "stoker worker 0", "stoker consumer", ...
  int64_t os_tid = 0;    // the thread's Linux tid
};

class SpanRing;  // src/trace/span_ring.h
class TraceLane;

// How ChromeEventsJson places the spans in another trace.
struct ChromeEventOptions {
  // Engine clock (ns) at the trace's time 0 (may be negative: another
  // trace's clock can be far ahead); kSessionStart: the session's start.
  static constexpr int64_t kSessionStart = INT64_MIN;
  int64_t origin_ns = kSessionStart;
  // The "pid" of every event, as a JSON value ("\"CPU functions\"", "1234");
  // empty: this process's pid.
  std::string pid_json;
  // Emit "M" (metadata) events naming each lane's thread.
  bool thread_names = true;
};

class Tracer {
 public:
  Tracer();
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Starts a session: spans recorded from now on are collected (earlier
  // ones are not). InvalidArgument when spans_per_thread is 0 or above 2^24.
  Status Start(const TraceOptions& options);
  // Stops recording; what was recorded stays for Collect / the writers.
  void Stop();
  // Whether spans are being recorded (one relaxed load).
  bool on() const { return on_.load(std::memory_order_relaxed); }
  // The session's start (NowNs), 0 before the first Start.
  int64_t session_start_ns() const { return session_start_ns_.load(std::memory_order_relaxed); }

  // --- Recording (engine side; C++ users may add their own spans) ---

  // A lane for the calling thread (its name and tid kept for the trace).
  // Cheap (a lock, a small allocation); call once per thread, e.g. at its
  // start. The lane lives as long as the Tracer.
  TraceLane* RegisterLane(std::string name);
  // The calling thread's lane named `name`, registered on first use (a
  // thread_local cache makes repeated calls cheap). For threads the engine
  // does not own (the consumer).
  TraceLane* ThisThreadLane(const char* name);
  // Records `span` in `lane`'s ring when tracing is on. Owner thread only.
  void Record(TraceLane* lane, const Span& span) {
    if (on()) RecordSlow(lane, span);
  }
  // An id for a span name (stable for the Tracer's life; at most 65,535
  // names, later ones get the kind's name).
  uint16_t Intern(const std::string& name);

  // --- Reading ---

  // The spans of the current (or last) session, every lane, by start time;
  // `*dropped`: spans overwritten in the rings before they were collected.
  std::vector<CollectedSpan> Collect(uint64_t* dropped = nullptr) const;
  std::vector<LaneInfo> Lanes() const;
  std::string Name(const Span& span) const;
  // A JSON array of Chrome trace events ("X" events, ts/dur in microseconds
  // from the origin, pid/tid, args: sample, batch, epoch, and the kind's
  // details), plus thread-name metadata.
  std::string ChromeEventsJson(const ChromeEventOptions& options) const;
  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}:
  // opens in Perfetto (ui.perfetto.dev) and chrome://tracing.
  std::string ChromeTraceJson() const;
  Status WriteChromeTrace(const std::string& path) const;

 private:
  void RecordSlow(TraceLane* lane, const Span& span);

  const uint64_t uid_;  // tells Tracers apart in the thread_local lane cache
  std::atomic<bool> on_{false};
  std::atomic<int64_t> session_start_ns_{0};
  std::atomic<size_t> capacity_{size_t{1} << 16};
  // Guards the lane list and the names; a lane's ring is replaced (by its
  // owner) and read (by Collect) under it. Rings are written without it.
  mutable Mutex mu_;
  std::vector<std::unique_ptr<TraceLane>> lanes_ STOKER_GUARDED_BY(mu_);
  std::vector<std::string> names_ STOKER_GUARDED_BY(mu_);
};

// The engine's clock (NowNs), for users who add spans or align traces.
int64_t TraceClockNs();

}  // namespace stoker

#endif  // STOKER_TRACE_H_
