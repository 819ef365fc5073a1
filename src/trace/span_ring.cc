// Copyright 2026 The stoker Authors.
#include "trace/span_ring.h"

namespace stoker {
namespace {

uint64_t Pack(const Span& s) {
  return static_cast<uint64_t>(s.kind) | static_cast<uint64_t>(s.detail) << 8 |
         static_cast<uint64_t>(s.name) << 16 |
         static_cast<uint64_t>(static_cast<uint32_t>(s.value)) << 32;
}

void Unpack(uint64_t w, Span* s) {
  s->kind = static_cast<SpanKind>(w & 0xff);
  s->detail = static_cast<uint8_t>(w >> 8);
  s->name = static_cast<uint16_t>(w >> 16);
  s->value = static_cast<int32_t>(static_cast<uint32_t>(w >> 32));
}

}  // namespace

SpanRing::SpanRing(size_t capacity)
    : mask_(static_cast<uint64_t>(capacity) - 1), slots_(new Slot[capacity]) {}

void SpanRing::Push(const Span& span) {
  const uint64_t i = next_++;
  begun_.store(i + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  Slot& slot = slots_[i & mask_];
  constexpr auto r = std::memory_order_relaxed;
  slot.w[0].store(span.start_ns, r);
  slot.w[1].store(span.end_ns, r);
  slot.w[2].store(span.sample, r);
  slot.w[3].store(span.batch, r);
  slot.w[4].store(span.epoch, r);
  slot.w[5].store(static_cast<int64_t>(Pack(span)), r);
  published_.store(i + 1, std::memory_order_release);
}

uint64_t SpanRing::Snapshot(std::vector<Span>* out) const {
  const uint64_t cap = mask_ + 1;
  const uint64_t end = published_.load(std::memory_order_acquire);
  const uint64_t lo = end > cap ? end - cap : 0;
  std::vector<Span> copied;
  copied.reserve(static_cast<size_t>(end - lo));
  constexpr auto r = std::memory_order_relaxed;
  for (uint64_t i = lo; i < end; ++i) {
    const Slot& slot = slots_[i & mask_];
    Span s;
    s.start_ns = slot.w[0].load(r);
    s.end_ns = slot.w[1].load(r);
    s.sample = slot.w[2].load(r);
    s.batch = slot.w[3].load(r);
    s.epoch = slot.w[4].load(r);
    Unpack(static_cast<uint64_t>(slot.w[5].load(r)), &s);
    copied.push_back(s);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t begun = begun_.load(r);
  // Index i may have been overwritten once index i + cap was begun.
  const uint64_t first_intact = begun > cap ? begun - cap : 0;
  const uint64_t keep_from = first_intact > lo ? first_intact : lo;
  for (uint64_t i = keep_from; i < end; ++i) out->push_back(copied[static_cast<size_t>(i - lo)]);
  return keep_from;
}

}  // namespace stoker
