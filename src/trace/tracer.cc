// Copyright 2026 The stoker Authors.
#include "stoker/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "stoker/json.h"
#include "stoker/version.h"
#include "trace/span_ring.h"

namespace stoker {

// One recording thread's ring. The owner replaces `owned` (under the
// Tracer's mutex) when the capacity changed; readers read it under the mutex.
class TraceLane {
 public:
  TraceLane(std::string n, int64_t t) : name(std::move(n)), tid(t) {}
  const std::string name;
  const int64_t tid;
  std::atomic<SpanRing*> ring{nullptr};  // the owner's fast path
  std::unique_ptr<SpanRing> owned;        // under Tracer::mu_
  uint64_t base = 0;                      // under Tracer::mu_: ring index at session start
};

namespace {

std::atomic<uint64_t> g_next_uid{1};

int64_t ThreadId() { return static_cast<int64_t>(::syscall(SYS_gettid)); }

struct LaneCache {
  uint64_t uid = 0;
  TraceLane* lane = nullptr;
};
thread_local LaneCache tl_lane;

const char* KindName(SpanKind k) {
  switch (k) {
    case SpanKind::kRead: return "read";
    case SpanKind::kDecode: return "decode";
    case SpanKind::kTransform: return "transform";
    case SpanKind::kCacheHit: return "cache hit";
    case SpanKind::kCacheMiss: return "cache miss (decode whole + insert)";
    case SpanKind::kCacheStore: return "cache store";
    case SpanKind::kWorkerWait: return "wait for a free batch slot";
    case SpanKind::kHandoff: return "stoker.hand-off";
    case SpanKind::kConsumerWait: return "stoker.wait";
    case SpanKind::kCollate: return "stoker.collate";
    case SpanKind::kDeviceLaunch: return "device launch (copy + kernel)";
    case SpanKind::kDeviceKernel: return "device kernel";
    case SpanKind::kDeviceHandoff: return "device hand-off";
    case SpanKind::kUser:
    case SpanKind::kCount: break;
  }
  return "span";
}

std::string DecodePathText(uint8_t detail, int32_t denom) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (detail & kDecodeRaw) add("raw pixels (no decode)");
  if (detail & kDecodeWhole) add("whole image");
  if (detail & kDecodeRegion) add("region");
  if (detail & kDecodeScaled) add("DCT 1/" + std::to_string(denom));
  if (detail & kDecodeRows) add("row-streamed");
  return out.empty() ? "full" : out;
}

// Microseconds with nanosecond precision, as Chrome's JSON takes them.
std::string Micros(int64_t ns) {
  if (ns < 0) return "-" + Micros(-ns);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

std::string Millis(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

const char* StageName(Stage s) {
  switch (s) {
    case Stage::kRead: return "read";
    case Stage::kDecode: return "decode";
    case Stage::kAugment: return "augment";
    case Stage::kNone: break;
  }
  return "none";
}

int64_t TraceClockNs() { return NowNs(); }

Tracer::Tracer() : uid_(g_next_uid.fetch_add(1)) {
  MutexLock lock(&mu_);
  names_.emplace_back();  // id 0: the kind's own name
}

Tracer::~Tracer() = default;

Status Tracer::Start(const TraceOptions& options) {
  if (options.spans_per_thread == 0 || options.spans_per_thread > (size_t{1} << 24)) {
    return InvalidArgumentError("spans_per_thread must be in [1, 2^24], got " +
                                std::to_string(options.spans_per_thread));
  }
  size_t cap = 64;
  while (cap < options.spans_per_thread) cap *= 2;
  MutexLock lock(&mu_);
  capacity_.store(cap, std::memory_order_relaxed);
  for (const auto& lane : lanes_) {
    if (lane->owned != nullptr) lane->base = lane->owned->written();
  }
  session_start_ns_.store(NowNs(), std::memory_order_relaxed);
  on_.store(true, std::memory_order_release);
  return Status::OK();
}

void Tracer::Stop() { on_.store(false, std::memory_order_release); }

TraceLane* Tracer::RegisterLane(std::string name) {
  MutexLock lock(&mu_);
  lanes_.push_back(std::make_unique<TraceLane>(std::move(name), ThreadId()));
  return lanes_.back().get();
}

TraceLane* Tracer::ThisThreadLane(const char* name) {
  if (tl_lane.uid == uid_) return tl_lane.lane;
  const int64_t tid = ThreadId();
  TraceLane* found = nullptr;
  {
    MutexLock lock(&mu_);
    for (const auto& lane : lanes_) {
      if (lane->tid == tid && lane->name == name) found = lane.get();
    }
    if (found == nullptr) {
      lanes_.push_back(std::make_unique<TraceLane>(name, tid));
      found = lanes_.back().get();
    }
  }
  tl_lane = LaneCache{uid_, found};
  return found;
}

void Tracer::RecordSlow(TraceLane* lane, const Span& span) {
  SpanRing* ring = lane->ring.load(std::memory_order_relaxed);
  const size_t cap = capacity_.load(std::memory_order_relaxed);
  if (ring == nullptr || ring->capacity() != cap) {
    MutexLock lock(&mu_);  // Collect may be reading the old ring
    lane->owned = std::make_unique<SpanRing>(cap);
    lane->base = 0;
    ring = lane->owned.get();
    lane->ring.store(ring, std::memory_order_relaxed);
  }
  ring->Push(span);
}

uint16_t Tracer::Intern(const std::string& name) {
  MutexLock lock(&mu_);
  for (size_t i = 1; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<uint16_t>(i);
  }
  if (names_.size() > 0xffff) return 0;
  names_.push_back(name);
  return static_cast<uint16_t>(names_.size() - 1);
}

std::vector<CollectedSpan> Tracer::Collect(uint64_t* dropped) const {
  const int64_t since = session_start_ns();
  std::vector<CollectedSpan> out;
  uint64_t lost = 0;
  {
    MutexLock lock(&mu_);
    std::vector<Span> spans;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const TraceLane& lane = *lanes_[i];
      if (lane.owned == nullptr) continue;
      spans.clear();
      // Spans still running at the session's start are kept (end >= start).
      const uint64_t first = lane.owned->Snapshot(&spans);
      if (first > lane.base) lost += first - lane.base;
      for (const Span& s : spans) {
        if (s.end_ns >= since) out.push_back(CollectedSpan{s, static_cast<int>(i)});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CollectedSpan& a, const CollectedSpan& b) {
    return a.span.start_ns < b.span.start_ns;
  });
  if (dropped != nullptr) *dropped = lost;
  return out;
}

std::vector<LaneInfo> Tracer::Lanes() const {
  MutexLock lock(&mu_);
  std::vector<LaneInfo> out;
  for (const auto& lane : lanes_) out.push_back(LaneInfo{lane->name, lane->tid});
  return out;
}

std::string Tracer::Name(const Span& span) const {
  if (span.name != 0) {
    MutexLock lock(&mu_);
    if (span.name < names_.size()) return names_[span.name];
  }
  return KindName(span.kind);
}

std::string Tracer::ChromeEventsJson(const ChromeEventOptions& options) const {
  const int64_t origin = options.origin_ns != ChromeEventOptions::kSessionStart
                             ? options.origin_ns
                             : session_start_ns();
  const std::string pid =
      options.pid_json.empty() ? std::to_string(static_cast<long long>(::getpid()))
                               : options.pid_json;
  const std::vector<CollectedSpan> spans = Collect();
  const std::vector<LaneInfo> lanes = Lanes();
  std::vector<std::string> names;
  {
    MutexLock lock(&mu_);
    names = names_;
  }
  std::string out = "[";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  if (options.thread_names) {
    std::vector<bool> used(lanes.size(), false);
    for (const CollectedSpan& c : spans) used[static_cast<size_t>(c.lane)] = true;
    for (size_t i = 0; i < lanes.size(); ++i) {
      if (!used[i]) continue;
      sep();
      out += "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid +
             ", \"tid\": " + std::to_string(lanes[i].os_tid) +
             ", \"args\": {\"name\": " + JsonQuote(lanes[i].name) + "}}";
    }
  }
  for (const CollectedSpan& c : spans) {
    const Span& s = c.span;
    const std::string name =
        s.name != 0 && s.name < names.size() ? names[s.name] : std::string(KindName(s.kind));
    sep();
    out += "{\"name\": " + JsonQuote(name) + ", \"cat\": \"stoker\", \"ph\": \"X\", \"ts\": " +
           Micros(s.start_ns - origin) + ", \"dur\": " + Micros(std::max<int64_t>(0, s.end_ns -
                                                                                  s.start_ns)) +
           ", \"pid\": " + pid + ", \"tid\": " +
           std::to_string(lanes[static_cast<size_t>(c.lane)].os_tid) + ", \"args\": {";
    std::string args;
    auto arg = [&](const char* key, const std::string& json_value) {
      args += std::string(args.empty() ? "" : ", ") + "\"" + key + "\": " + json_value;
    };
    if (s.sample >= 0) arg("sample", std::to_string(s.sample));
    if (s.batch >= 0) arg("batch", std::to_string(s.batch));
    if (s.epoch >= 0) arg("epoch", std::to_string(s.epoch));
    switch (s.kind) {
      case SpanKind::kDecode: arg("path", JsonQuote(DecodePathText(s.detail, s.value))); break;
      case SpanKind::kConsumerWait:
        arg("short_stage", JsonQuote(StageName(static_cast<Stage>(s.value))));
        arg("wait_ms", Millis(s.end_ns - s.start_ns));
        break;
      case SpanKind::kCacheHit:
      case SpanKind::kCacheMiss:
      case SpanKind::kCacheStore:
        arg("cache", s.detail ? "\"output\"" : "\"decoded\"");
        break;
      case SpanKind::kCollate:
      case SpanKind::kHandoff:
      case SpanKind::kDeviceLaunch:
      case SpanKind::kDeviceHandoff:
        if (s.value > 0) arg("images", std::to_string(s.value));
        break;
      case SpanKind::kUser:
        if (s.value != 0) arg("value", std::to_string(s.value));
        break;
      default: break;
    }
    out += args + "}}";
  }
  out += "]";
  return out;
}

std::string Tracer::ChromeTraceJson() const {
  uint64_t dropped = 0;
  (void)Collect(&dropped);
  return "{\"traceEvents\": " + ChromeEventsJson(ChromeEventOptions{}) +
         ",\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"producer\": " +
         JsonQuote(std::string("stoker ") + STOKER_VERSION_STRING) +
         ", \"clock\": \"steady_clock; ts in microseconds from the trace's start\", "
         "\"spans_per_thread\": " +
         std::to_string(capacity_.load(std::memory_order_relaxed)) +
         ", \"dropped_spans\": " + std::to_string(dropped) + "}}\n";
}

Status Tracer::WriteChromeTrace(const std::string& path) const {
  return AtomicWriteFile(path, ChromeTraceJson());
}

}  // namespace stoker
