// Copyright 2026 The stoker Authors.
//
// SpanRing: a fixed-size ring of Spans with one writer (the thread that owns
// it) and any number of readers, without a lock. The writer overwrites the
// oldest span when the ring is full. A reader's Snapshot copies what the ring
// holds and leaves out every span the writer may have overwritten while it
// copied (a seqlock on the write index), so a snapshot never holds a torn
// span.
//
// Protocol: before writing index i into slot i % capacity the writer
// announces it (begun_ = i + 1, then a release fence), writes the slot's
// words with relaxed atomic stores, then publishes it (published_ = i + 1,
// release). A reader loads published_ (acquire), copies the slots, issues an
// acquire fence and loads begun_: any index j with j + capacity < begun_
// might have been overwritten, so only indices >= begun_ - capacity are
// kept. The slot words are atomics, so concurrent reads are defined
// behaviour (and ThreadSanitizer sees no race); on x86 a relaxed store is a
// plain store.
//
// Thread-safety: Push from the owning thread only; Snapshot and written()
// from any thread.
#ifndef STOKER_TRACE_SPAN_RING_H_
#define STOKER_TRACE_SPAN_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/trace.h"

namespace stoker {

class SpanRing {
 public:
  // `capacity`: a power of two.
  explicit SpanRing(size_t capacity);

  size_t capacity() const { return static_cast<size_t>(mask_ + 1); }
  // Spans ever pushed.
  uint64_t written() const { return published_.load(std::memory_order_acquire); }

  void Push(const Span& span);

  // Appends the spans held, oldest first, to `out`. Returns the index (in
  // push order) of the oldest span held: the spans before it were
  // overwritten.
  uint64_t Snapshot(std::vector<Span>* out) const;

  // Bytes one span takes in a ring.
  static constexpr size_t kSpanBytes = 48;

 private:
  struct Slot {
    std::atomic<int64_t> w[6];
  };
  static_assert(sizeof(Slot) == kSpanBytes);

  const uint64_t mask_;
  std::unique_ptr<Slot[]> slots_;
  uint64_t next_ = 0;  // the writer's own copy of published_
  std::atomic<uint64_t> begun_{0};
  std::atomic<uint64_t> published_{0};
};

}  // namespace stoker

#endif  // STOKER_TRACE_SPAN_RING_H_
