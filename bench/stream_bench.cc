// Copyright 2026 The stoker Authors.
//
// stream_bench: the costs that bound streamed shards as cores are added, measured
// without decoding (docs/performance.md, "Parallel streaming").
//
//   stream_bench 'DIR/train-*.tar.zst' [--threads 1,2] [--work-us 0,400,1600]
//                [--concurrent 4] [--buffer 1000] [--epochs 3]
//
// Prints:
//  - feed: samples/s of one shard reader (open, read, decompress, split into
//    samples) over every shard in turn on one thread: what each of the
//    `concurrent` per-shard threads can supply.
//  - for each thread count and synthetic per-sample work W (a busy loop of W
//    microseconds standing in for decode + augment): samples/s of the stream
//    reader drained as the engine drains it (threads claim positions from one
//    counter and Read them), against the ideal threads/W. With W = 0 this is
//    the ceiling of the merge (the one mutex left on the stream path) plus
//    the feeds on this machine.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "source/shards.h"
#include "source/tar_reader.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) out.push_back(std::atoi(part.c_str()));
  return out;
}

// CPU seconds of the calling thread (not counting time spent descheduled or blocked).
double ThreadCpu() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// `us` microseconds of this thread's CPU (a shared machine's preemption does not count).
void Spin(int us) {
  if (us <= 0) return;
  const double until = ThreadCpu() + 1e-6 * us;
  while (ThreadCpu() < until) {
  }
}

// One thread reading every shard with one ShardSampleReader at a time; returns
// its CPU microseconds per sample.
double FeedCost(const std::vector<std::string>& urls) {
  int64_t n = 0;
  const auto t0 = Clock::now();
  const double c0 = ThreadCpu();
  for (const std::string& u : urls) {
    auto r = ShardSampleReader::Open(u, SampleSpec(), StreamOptions());
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    ShardSample s;
    for (bool end = false;;) {
      Status st = r.value()->Next(&s, &end);
      if (end) break;
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        std::exit(1);
      }
      ++n;
    }
  }
  const double sec = Seconds(t0), cpu = ThreadCpu() - c0;
  std::printf("feed: %lld samples, %.1f us wall and %.1f us CPU per sample in one shard reader\n",
              static_cast<long long>(n), 1e6 * sec / n, 1e6 * cpu / n);
  return 1e6 * cpu / n;
}

// Samples/s of one epoch drained by `threads` threads doing `work_us` each.
// `*read_us`: the draining threads' CPU microseconds inside Read(), per sample.
double Drain(Source* source, int threads, int work_us, int64_t epoch, int64_t* count,
             double* read_us) {
  auto reader = source->StartEpoch(EpochSpec{7, epoch, true}).value();
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::atomic<int64_t> read_ns{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      SampleScratch scratch;
      SampleData data;
      for (;;) {
        const int64_t p = next.fetch_add(1);
        bool end = false;
        const double c0 = ThreadCpu();
        Status s = reader->Read(p, &scratch, &data, &end);
        read_ns.fetch_add(static_cast<int64_t>(1e9 * (ThreadCpu() - c0)));
        if (end) return;
        if (!s.ok()) failed = true;
        Spin(work_us);
        done.fetch_add(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  const double sec = Seconds(t0);
  if (failed) std::fprintf(stderr, "read errors\n");
  *count = done.load();
  *read_us = 1e-3 * read_ns.load() / std::max<int64_t>(1, *count);
  return *count / sec;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stream_bench PATTERN [--threads 1,2] [--work-us 0,1600] "
                         "[--concurrent 4] [--buffer 1000] [--epochs 3]\n");
    return 2;
  }
  ShardOptions o;
  o.patterns = {argv[1]};
  o.mode = ShardMode::kStream;
  std::vector<int> threads = {1, 2}, work = {0, 400, 1600};
  int epochs = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") threads = ParseList(v);
    else if (k == "--work-us") work = ParseList(v);
    else if (k == "--concurrent") o.concurrent_shards = std::atoi(v.c_str());
    else if (k == "--buffer") o.shuffle_buffer = std::atoi(v.c_str());
    else if (k == "--epochs") epochs = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  auto urls = ExpandShardPatterns(o.patterns);
  if (!urls.ok()) {
    std::fprintf(stderr, "%s\n", urls.status().ToString().c_str());
    return 1;
  }
  auto source = OpenShards(o);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().ToString().c_str());
    return 1;
  }
  std::printf("%zu shards, concurrent_shards %d, shuffle_buffer %d, %u cores\n",
              urls.value().size(), o.concurrent_shards, o.shuffle_buffer,
              std::thread::hardware_concurrency());
  const double feed_us = FeedCost(urls.value());
  std::printf("%8s %8s %12s %12s %8s %14s\n", "threads", "work_us", "samples/s", "ideal", "ratio",
              "read CPU us");
  double merge_us = 0;
  for (int w : work) {
    for (int t : threads) {
      int64_t n = 0;
      double read_us = 0;
      Drain(source.value().get(), t, w, 0, &n, &read_us);  // warm-up epoch
      std::vector<double> rates, reads;
      for (int e = 1; e <= epochs; ++e) {
        rates.push_back(Drain(source.value().get(), t, w, e, &n, &read_us));
        reads.push_back(read_us);
      }
      std::sort(rates.begin(), rates.end());
      std::sort(reads.begin(), reads.end());
      const double med = rates[rates.size() / 2], read_med = reads[reads.size() / 2];
      merge_us = std::max(merge_us, read_med);  // the largest seen: an upper bound
      const double ideal = w > 0 ? t * 1e6 / w : 0;
      std::printf("%8d %8d %12.0f %12.0f %8s %14.2f\n", t, w, med, ideal,
                  w > 0 ? std::to_string(med / ideal).substr(0, 5).c_str() : "-", read_med);
    }
  }
  if (merge_us > 0) {
    // Where each design saturates, from the CPU costs above: per-sample work W
    // on N threads needs N/W samples/s; the per-shard feeds supply C/feed; the
    // merge (everything a Read does, under the one mutex, at its largest in
    // the runs above: an upper bound on its serial part) supplies 1/merge. The previous reader also decompressed
    // under its mutex: 1/(feed + merge).
    const int w = work.back() > 0 ? work.back() : 1600;
    std::printf("\nmodel, work %d us/sample: feed %.1f us (x%d shards in parallel), merge <= %.2f us"
                " (serial)\n", w, feed_us, o.concurrent_shards, merge_us);
    std::printf("%8s %12s %14s %14s %12s %12s\n", "threads", "demand/s", "feeds cap/s",
                "merge cap/s", "now/s", "one lock/s");
    for (int n : {1, 2, 4, 8, 16, 32, 64, 128}) {
      const double demand = n * 1e6 / w, feeds = o.concurrent_shards * 1e6 / feed_us,
                   merge = 1e6 / merge_us, old = 1e6 / (feed_us + merge_us);
      std::printf("%8d %12.0f %14.0f %14.0f %12.0f %12.0f\n", n, demand, feeds, merge,
                  std::min({demand, feeds, merge}), std::min(demand, old));
    }
  }
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) { return stoker::Main(argc, argv); }
