// Copyright 2026 The stoker Authors.
#include "stoker/trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace stoker {
namespace {

Span At(SpanKind kind, int64_t start, int64_t end) {
  Span s;
  s.kind = kind;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

TEST(Tracer, OffRecordsNothingAndAllocatesNoRing) {
  Tracer t;
  TraceLane* lane = t.RegisterLane("w");
  t.Record(lane, At(SpanKind::kRead, 1, 2));
  EXPECT_FALSE(t.on());
  EXPECT_TRUE(t.Collect().empty());
}

TEST(Tracer, CollectsASessionFromEveryLaneInStartOrder) {
  Tracer t;
  ASSERT_TRUE(t.Start(TraceOptions{}).ok());
  const int64_t base = t.session_start_ns();
  TraceLane* a = nullptr;
  TraceLane* b = nullptr;
  std::thread ta([&] {
    a = t.RegisterLane("stoker worker 0");
    t.Record(a, At(SpanKind::kRead, base + 10, base + 20));
    t.Record(a, At(SpanKind::kDecode, base + 30, base + 40));
  });
  ta.join();
  std::thread tb([&] {
    b = t.RegisterLane("stoker worker 1");
    t.Record(b, At(SpanKind::kRead, base + 25, base + 35));
  });
  tb.join();
  t.Stop();
  // After Stop: not recorded.
  t.Record(a, At(SpanKind::kRead, base + 50, base + 60));
  const std::vector<CollectedSpan> spans = t.Collect();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].span.start_ns, base + 10);
  EXPECT_EQ(spans[1].span.start_ns, base + 25);
  EXPECT_EQ(spans[2].span.kind, SpanKind::kDecode);
  const std::vector<LaneInfo> lanes = t.Lanes();
  ASSERT_EQ(lanes.size(), 2u);
  EXPECT_EQ(lanes[static_cast<size_t>(spans[1].lane)].name, "stoker worker 1");
  EXPECT_NE(lanes[0].os_tid, lanes[1].os_tid);
}

TEST(Tracer, ANewSessionLeavesTheOldSpansOut) {
  Tracer t;
  TraceLane* lane = t.RegisterLane("w");
  ASSERT_TRUE(t.Start(TraceOptions{}).ok());
  const int64_t s1 = t.session_start_ns();
  t.Record(lane, At(SpanKind::kRead, s1 + 1, s1 + 2));
  t.Stop();
  ASSERT_TRUE(t.Start(TraceOptions{}).ok());
  const int64_t s2 = t.session_start_ns();
  ASSERT_GT(s2, s1 + 2);
  t.Record(lane, At(SpanKind::kDecode, s2 + 1, s2 + 2));
  const std::vector<CollectedSpan> spans = t.Collect();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].span.kind, SpanKind::kDecode);
}

TEST(Tracer, RingSizeBoundsMemoryAndCountsDropped) {
  Tracer t;
  TraceOptions o;
  o.spans_per_thread = 100;  // rounded up to 128
  ASSERT_TRUE(t.Start(o).ok());
  TraceLane* lane = t.RegisterLane("w");
  const int64_t base = t.session_start_ns();
  for (int i = 0; i < 1000; ++i) t.Record(lane, At(SpanKind::kRead, base + i, base + i + 1));
  uint64_t dropped = 0;
  const std::vector<CollectedSpan> spans = t.Collect(&dropped);
  EXPECT_EQ(spans.size(), 128u);
  EXPECT_EQ(dropped, 1000u - 128u);
  EXPECT_EQ(spans.back().span.start_ns, base + 999);
  o.spans_per_thread = 0;
  EXPECT_EQ(t.Start(o).code(), StatusCode::kInvalidArgument);
}

TEST(Tracer, ThisThreadLaneIsOnePerThreadAndName) {
  Tracer t;
  TraceLane* a = t.ThisThreadLane("stoker consumer");
  EXPECT_EQ(t.ThisThreadLane("stoker consumer"), a);
  TraceLane* other = nullptr;
  std::thread th([&] { other = t.ThisThreadLane("stoker consumer"); });
  th.join();
  EXPECT_NE(other, a);
  Tracer t2;  // another tracer: its own lane for this thread
  EXPECT_EQ(t2.Lanes().size(), 0u);
  t2.ThisThreadLane("stoker consumer");
  EXPECT_EQ(t2.Lanes().size(), 1u);
  EXPECT_EQ(t.ThisThreadLane("stoker consumer"), a);
}

TEST(Tracer, ChromeJsonParsesWithNamesArgsAndTimes) {
  Tracer t;
  ASSERT_TRUE(t.Start(TraceOptions{}).ok());
  const int64_t base = t.session_start_ns();
  TraceLane* lane = t.RegisterLane("stoker worker 0");
  Span d = At(SpanKind::kDecode, base + 2000, base + 5500);
  d.sample = 17;
  d.batch = 2;
  d.epoch = 1;
  d.detail = kDecodeRegion | kDecodeScaled;
  d.value = 4;
  t.Record(lane, d);
  Span x = At(SpanKind::kTransform, base + 5500, base + 6000);
  x.name = t.Intern("ColorJitter \"q\"");
  t.Record(lane, x);
  Span w = At(SpanKind::kConsumerWait, base + 1000, base + 3500);
  w.value = static_cast<int32_t>(Stage::kDecode);
  t.Record(lane, w);
  const nlohmann::json j = nlohmann::json::parse(t.ChromeTraceJson());
  const auto& ev = j.at("traceEvents");
  int complete = 0, meta = 0;
  for (const auto& e : ev) {
    if (e.at("ph") == "M") {
      ++meta;
      EXPECT_EQ(e.at("args").at("name"), "stoker worker 0");
      continue;
    }
    ++complete;
    EXPECT_EQ(e.at("cat"), "stoker");
    if (e.at("name") == "decode") {
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 2.0);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 3.5);
      EXPECT_EQ(e.at("args").at("sample"), 17);
      EXPECT_EQ(e.at("args").at("batch"), 2);
      EXPECT_EQ(e.at("args").at("epoch"), 1);
      EXPECT_EQ(e.at("args").at("path"), "region, DCT 1/4");
    } else if (e.at("name") == "stoker.wait") {
      EXPECT_EQ(e.at("args").at("short_stage"), "decode");
      EXPECT_DOUBLE_EQ(e.at("args").at("wait_ms").get<double>(), 0.0025);
    } else {
      EXPECT_EQ(e.at("name"), "ColorJitter \"q\"");
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(meta, 1);
  EXPECT_EQ(j.at("otherData").at("dropped_spans"), 0);

  ChromeEventOptions o;
  o.origin_ns = base + 1000;
  o.pid_json = "\"CPU functions\"";
  o.thread_names = false;
  const nlohmann::json events = nlohmann::json::parse(t.ChromeEventsJson(o));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].at("pid"), "CPU functions");
  EXPECT_DOUBLE_EQ(events[0].at("ts").get<double>(), 0.0);  // the wait, at the origin
  EXPECT_DOUBLE_EQ(events[1].at("ts").get<double>(), 1.0);
}

TEST(Tracer, WritesAFileAndNamesAnUnwritablePath) {
  Tracer t;
  ASSERT_TRUE(t.Start(TraceOptions{}).ok());
  const std::string path = ::testing::TempDir() + "/stoker_tracer_test.json";
  ASSERT_TRUE(t.WriteChromeTrace(path).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str());
  EXPECT_TRUE(j.contains("traceEvents"));
  std::remove(path.c_str());
  const Status bad = t.WriteChromeTrace("/nonexistent-dir/x.json");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("/nonexistent-dir/x.json"), std::string::npos);
}

}  // namespace
}  // namespace stoker
