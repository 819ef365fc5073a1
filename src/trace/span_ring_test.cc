// Copyright 2026 The stoker Authors.
#include "trace/span_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace stoker {
namespace {

Span Numbered(int64_t i) {
  Span s;
  s.start_ns = i;
  s.end_ns = i + 1;
  s.sample = i * 3;
  s.batch = i / 7;
  s.epoch = i % 5;
  s.kind = static_cast<SpanKind>(i % static_cast<int>(SpanKind::kCount));
  s.detail = static_cast<uint8_t>(i & 0xff);
  s.name = static_cast<uint16_t>(i & 0xffff);
  s.value = static_cast<int32_t>(-i);
  return s;
}

// Every field of span i is a function of i: a torn span shows.
void ExpectNumbered(const Span& s) {
  const int64_t i = s.start_ns;
  const Span want = Numbered(i);
  ASSERT_EQ(s.end_ns, want.end_ns) << i;
  ASSERT_EQ(s.sample, want.sample) << i;
  ASSERT_EQ(s.batch, want.batch) << i;
  ASSERT_EQ(s.epoch, want.epoch) << i;
  ASSERT_EQ(s.kind, want.kind) << i;
  ASSERT_EQ(s.detail, want.detail) << i;
  ASSERT_EQ(s.name, want.name) << i;
  ASSERT_EQ(s.value, want.value) << i;
}

TEST(SpanRing, KeepsEverythingUntilFull) {
  SpanRing ring(8);
  for (int i = 0; i < 5; ++i) ring.Push(Numbered(i));
  std::vector<Span> out;
  EXPECT_EQ(ring.Snapshot(&out), 0u);
  ASSERT_EQ(out.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(out[static_cast<size_t>(i)].start_ns, i);
    ExpectNumbered(out[static_cast<size_t>(i)]);
  }
}

TEST(SpanRing, OverwritesTheOldest) {
  SpanRing ring(8);
  for (int i = 0; i < 21; ++i) ring.Push(Numbered(i));
  std::vector<Span> out;
  EXPECT_EQ(ring.Snapshot(&out), 13u);  // 21 - 8 overwritten
  ASSERT_EQ(out.size(), 8u);
  for (size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k].start_ns, static_cast<int64_t>(13 + k));
    ExpectNumbered(out[k]);
  }
  EXPECT_EQ(ring.written(), 21u);
}

// A reader copying while the writer laps the ring many times never sees a
// torn span, and what it sees is in push order with no gaps.
TEST(SpanRing, ConcurrentSnapshotsAreNeverTorn) {
  SpanRing ring(64);
  std::atomic<bool> started{false}, stop{false};
  int64_t pushed = 0;
  std::thread writer([&] {
    for (int64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      ring.Push(Numbered(i));
      pushed = i + 1;
      started.store(true, std::memory_order_release);
    }
  });
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  uint64_t laps_seen = 0;
  for (int k = 0; k < 2000; ++k) {
    std::vector<Span> out;
    const uint64_t first = ring.Snapshot(&out);
    for (size_t j = 0; j < out.size(); ++j) {
      ExpectNumbered(out[j]);
      ASSERT_EQ(out[j].start_ns, static_cast<int64_t>(first + j));
    }
    laps_seen = first;
  }
  stop.store(true);
  writer.join();
  EXPECT_GT(laps_seen, 64u);  // the writer overwrote the ring while we read
  std::vector<Span> out;
  ring.Snapshot(&out);
  ASSERT_EQ(out.size(), 64u);
  EXPECT_EQ(out.back().start_ns, pushed - 1);
}

}  // namespace
}  // namespace stoker
