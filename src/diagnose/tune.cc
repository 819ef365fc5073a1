// Copyright 2026 The stoker Authors.
#include "diagnose/tune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/clock.h"
#include "base/json.h"
#include "base/process.h"
#include "diagnose/diagnose.h"
#include "stoker/video.h"

namespace stoker {
namespace {

void Step(double step_ms) {
  if (step_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
  }
}

// Runs `loader` (restarting epochs as needed): `warmup` batches, then
// batches until `seconds` have passed or `max_batches` were taken.
// `measure_from`: batches (after the warm-up) before measuring starts.
Status Measure(Loader* loader, int warmup, double seconds, int64_t max_batches,
               int64_t measure_from, double step_ms, TuneResult* r) {
  STOKER_RETURN_IF_ERROR(loader->Start());
  int64_t taken = -warmup, images = 0;
  double t0 = 0, cpu0 = 0, wait0 = 0;
  for (;;) {
    if (taken == measure_from) {
      t0 = NowNs() * 1e-9;
      cpu0 = CpuSeconds();
      wait0 = loader->stats().total.consumer_wait_s;
    }
    if (taken >= measure_from && (taken >= max_batches ||
                                  (seconds > 0 && NowNs() * 1e-9 - t0 >= seconds))) {
      break;
    }
    BatchPtr b;
    STOKER_RETURN_IF_ERROR(NextBatchAcrossEpochs(loader, &b));
    if (taken >= measure_from) images += b->size();
    b.reset();
    Step(step_ms);
    ++taken;
  }
  const double dt = NowNs() * 1e-9 - t0;
  const LoaderStats s = loader->stats();
  loader->Stop();
  r->images = images;
  r->images_per_sec = dt > 0 ? images / dt : 0;
  r->cpu_s_per_1000 = images > 0 ? (CpuSeconds() - cpu0) / images * 1000 : 0;
  r->consumer_wait = dt > 0 ? (s.total.consumer_wait_s - wait0) / dt : 0;
  r->peak_rss_mib = PeakRssMiB();
  r->threads = s.threads;
  r->prefetch = s.prefetch;
  r->tuning_changes = s.tuning_changes;
  return Status::OK();
}

std::string Describe(const TuneResult& r) {
  char buf[128];
  if (r.auto_tuned) {
    std::snprintf(buf, sizeof buf, "threads=auto prefetch=auto batch=%d", r.batch_size);
  } else {
    std::snprintf(buf, sizeof buf, "threads=%d prefetch=%d batch=%d", r.threads, r.prefetch,
                  r.batch_size);
  }
  std::string out = buf;
  if (r.codec_threads > 0) out += " codec=" + std::to_string(r.codec_threads);
  return out;
}

}  // namespace

StatusOr<std::vector<TuneResult>> Tune(std::shared_ptr<Source> source, const LoaderOptions& base,
                                       const TuneOptions& options) {
  // A clip source: one source per codec_threads value swept.
  const auto* video = dynamic_cast<const VideoClips*>(source.get());
  std::vector<int> codecs = {0};
  if (video != nullptr) {
    codecs = options.codec_threads.empty() ? std::vector<int>{video->options().codec_threads}
                                           : options.codec_threads;
  }
  std::vector<TuneResult> plan;
  for (int c : codecs) {
    for (int b : options.batch_sizes) {
      for (int t : options.threads) {
        for (int p : options.prefetch) {
          TuneResult r;
          r.threads = t;
          r.prefetch = p;
          r.batch_size = b;
          r.codec_threads = c;
          plan.push_back(r);
        }
      }
      if (options.include_auto) {
        TuneResult r;
        r.auto_tuned = true;
        r.batch_size = b;
        r.codec_threads = c;
        plan.push_back(r);
      }
    }
  }
  if (plan.empty()) return InvalidArgumentError("tune: the grid is empty");
  const int max_threads = *std::max_element(options.threads.begin(), options.threads.end());
  const int max_prefetch = *std::max_element(options.prefetch.begin(), options.prefetch.end());
  std::vector<TuneResult> results;
  for (size_t i = 0; i < plan.size(); ++i) {
    TuneResult r = plan[i];
    if (options.progress) options.progress(static_cast<int>(i), static_cast<int>(plan.size()),
                                           Describe(r));
    LoaderOptions o = base;
    o.batch_size = r.batch_size;
    int64_t max_batches = INT64_MAX, measure_from = 0;
    double seconds = options.seconds;
    if (r.auto_tuned) {
      o.auto_threads = o.auto_prefetch = true;
      o.threads = 1;
      o.prefetch = 2;
      o.max_threads = max_threads;
      o.max_prefetch = std::max(2, max_prefetch);
      max_batches = options.auto_batches;
      measure_from = options.auto_batches * 2 / 3;  // rate over the last third
      seconds = 0;
    } else {
      o.threads = r.threads;
      o.prefetch = r.prefetch;
    }
    std::shared_ptr<Source> src = source;
    if (video != nullptr && r.codec_threads != video->options().codec_threads) {
      VideoClipsOptions vo = video->options();
      vo.codec_threads = r.codec_threads;
      STOKER_ASSIGN_OR_RETURN(std::shared_ptr<VideoClips> reopened, VideoClips::Open(vo));
      src = std::move(reopened);
    }
    ResetPeakRss();
    {
      STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Loader> loader, Loader::Create(src, o));
      Status st = Measure(loader.get(), options.warmup_batches, seconds, max_batches,
                          measure_from, options.step_ms, &r);
      if (!st.ok()) return st.WithContext("tune: " + Describe(r));
    }
    results.push_back(r);
  }
  return results;
}

TuneRecommendation Recommend(const std::vector<TuneResult>& results, double step_ms) {
  TuneRecommendation rec;
  double best = 0;
  int fastest = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].auto_tuned) continue;
    if (fastest < 0 || results[i].images_per_sec > best) {
      best = results[i].images_per_sec;
      fastest = static_cast<int>(i);
    }
  }
  if (fastest < 0) {
    rec.reason = "no static configuration was measured";
    return rec;
  }
  auto smaller = [&](int a, int b) {
    const TuneResult &x = results[a], &y = results[b];
    const int xc = x.threads * std::max(1, x.codec_threads);
    const int yc = y.threads * std::max(1, y.codec_threads);
    if (xc != yc) return xc < yc;
    if (x.threads != y.threads) return x.threads < y.threads;
    if (x.peak_rss_mib != y.peak_rss_mib) return x.peak_rss_mib < y.peak_rss_mib;
    return x.prefetch < y.prefetch;
  };
  auto pick = [&](const std::function<bool(const TuneResult&)>& ok) {
    int chosen = -1;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].auto_tuned || !ok(results[i])) continue;
      if (chosen < 0 || smaller(static_cast<int>(i), chosen)) chosen = static_cast<int>(i);
    }
    return chosen;
  };
  char buf[256];
  if (step_ms > 0) {
    rec.index = pick([](const TuneResult& r) { return r.consumer_wait < 0.02; });
    if (rec.index >= 0) {
      rec.consumer_fed = true;
      const TuneResult& r = results[rec.index];
      std::snprintf(buf, sizeof buf,
                    "the smallest configuration that keeps a %.1f ms step waiting less than 2%% "
                    "of the time (it waited %.1f%%)",
                    step_ms, 100 * r.consumer_wait);
      rec.reason = buf;
      return rec;
    }
    rec.index = fastest;
    std::snprintf(buf, sizeof buf,
                  "no configuration keeps a %.1f ms step fed (waiting < 2%%): data-bound; this "
                  "is the fastest (run `stoker diagnose` to see which stage to speed up)",
                  step_ms);
    rec.reason = buf;
    return rec;
  }
  rec.index = pick([&](const TuneResult& r) { return r.images_per_sec >= 0.95 * best; });
  std::snprintf(buf, sizeof buf,
                "the smallest configuration within 5%% of the best throughput (%.0f images/s)",
                best);
  rec.reason = buf;
  return rec;
}

std::string FormatTune(const std::vector<TuneResult>& results, const TuneRecommendation& rec) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "  %-34s %10s %13s %10s %13s\n", "configuration", "images/s",
                "CPU-s/1000", "peak RSS", "consumer wait");
  out += line;
  double best_static = 0;
  for (const TuneResult& r : results) {
    if (!r.auto_tuned) best_static = std::max(best_static, r.images_per_sec);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const TuneResult& r = results[i];
    std::snprintf(line, sizeof line, "%s %-34s %10.1f %13.3f %7.1f MiB %12.1f%%\n",
                  static_cast<int>(i) == rec.index ? "*" : " ", Describe(r).c_str(),
                  r.images_per_sec, r.cpu_s_per_1000, r.peak_rss_mib, 100 * r.consumer_wait);
    out += line;
  }
  if (rec.index >= 0) {
    out += "recommended: " + Describe(results[rec.index]) + " -- " + rec.reason + "\n";
  }
  for (const TuneResult& r : results) {
    if (!r.auto_tuned || best_static <= 0) continue;
    std::snprintf(line, sizeof line,
                  "auto (batch %d): ended at threads=%d prefetch=%d after %lld changes; %.0f%% "
                  "of the best static configuration\n",
                  r.batch_size, r.threads, r.prefetch, static_cast<long long>(r.tuning_changes),
                  100 * r.images_per_sec / best_static);
    out += line;
  }
  return out;
}

std::string TuneJson(const std::vector<TuneResult>& results, const TuneRecommendation& rec,
                     double step_ms) {
  std::string out = "{\"tool\": \"tune\", \"step_ms\": " + std::to_string(step_ms) +
                    ", \"configs\": [";
  char buf[512];
  for (size_t i = 0; i < results.size(); ++i) {
    const TuneResult& r = results[i];
    std::snprintf(buf, sizeof buf,
                  "%s{\"threads\": %d, \"prefetch\": %d, \"batch_size\": %d, "
                  "\"codec_threads\": %d, \"auto\": %s, "
                  "\"images_per_sec\": %.3f, \"cpu_s_per_1000\": %.4f, \"peak_rss_mib\": %.2f, "
                  "\"consumer_wait\": %.5f, \"images\": %lld, \"tuning_changes\": %lld}",
                  i ? ", " : "", r.threads, r.prefetch, r.batch_size, r.codec_threads,
                  r.auto_tuned ? "true" : "false", r.images_per_sec, r.cpu_s_per_1000,
                  r.peak_rss_mib, r.consumer_wait, static_cast<long long>(r.images),
                  static_cast<long long>(r.tuning_changes));
    out += buf;
  }
  out += "], \"recommended\": " + std::to_string(rec.index) +
         ", \"consumer_fed\": " + (rec.consumer_fed ? "true" : "false") +
         ", \"reason\": " + JsonQuote(rec.reason) + "}";
  return out;
}

}  // namespace stoker
