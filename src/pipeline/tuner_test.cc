// Copyright 2026 The stoker Authors.
#include "pipeline/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/rng.h"

namespace stoker {
namespace {

// A simulated pipeline: `per_thread` images/s per worker up to `cores`
// workers, losing `contention` of the total per thread beyond that; a
// consumer that takes at most `consumer` images/s (0: infinitely fast);
// `jitter`: the fraction of time the consumer waits with prefetch 1 because
// of uneven batch times, shrinking with the square of the prefetch depth
// and vanishing as the workers' surplus grows; `noise`: the relative spread
// of a measured window.
struct Sim {
  double per_thread = 100;
  int cores = 8;
  double contention = 0.02;
  double consumer = 0;
  double jitter = 0;
  double noise = 0;

  double DataRate(int threads) const {
    const int useful = std::min(threads, cores);
    double r = per_thread * useful;
    if (threads > cores) r *= std::max(0.1, 1 - contention * (threads - cores));
    return r;
  }
  // Images/s delivered and the fraction of time the consumer waits.
  void Steady(TunerSettings s, double* rate, double* wait) const {
    const double data = DataRate(s.threads);
    double jit = jitter / (s.prefetch * s.prefetch);
    if (consumer > 0 && data > consumer) jit *= std::exp(-8 * (data / consumer - 1));
    if (consumer > 0 && data >= consumer) {
      *rate = consumer * (1 - jit);
      *wait = jit;
    } else {
      *rate = data * (1 - jit);
      *wait = consumer > 0 ? 1 - *rate / consumer : 1 - jit;
      if (consumer == 0) *wait = 0.5;  // an infinitely fast consumer always waits
    }
  }
  TunerWindow Window(TunerSettings s, Rng* rng) const {
    double rate, wait;
    Steady(s, &rate, &wait);
    const double u = rng->Uniform() * 2 - 1;
    rate *= 1 + noise * u;
    TunerWindow w;
    w.images = 8 * 64;
    w.seconds = w.images / rate;
    w.consumer_wait_s = wait * w.seconds;
    return w;
  }
  double BestStatic(const TunerConfig& c) const {
    double best = 0;
    for (int t = c.min_threads; t <= c.max_threads; ++t) {
      for (int p = c.min_prefetch; p <= c.max_prefetch; ++p) {
        double rate, wait;
        Steady({t, p}, &rate, &wait);
        best = std::max(best, rate);
      }
    }
    return best;
  }
};

// Runs `windows` windows; returns the noise-free rate at the settings the
// tuner has accepted at the end.
double Simulate(const Sim& sim, Tuner* tuner, int windows, uint64_t seed = 1) {
  Rng rng(HashSeed(seed, 0));
  for (int i = 0; i < windows; ++i) tuner->Observe(sim.Window(tuner->settings(), &rng));
  double rate, wait;
  sim.Steady(tuner->accepted(), &rate, &wait);
  return rate;
}

TunerConfig Config(int max_threads) {
  TunerConfig c;
  c.max_threads = max_threads;
  return c;
}

TEST(TunerTest, GrowsThreadsWhileThroughputRises) {
  Sim sim;  // 8 cores, consumer infinitely fast: data-bound
  sim.noise = 0.03;
  const TunerConfig c = Config(16);
  Tuner tuner(c, {1, 2});
  // 40 windows of 8 batches: 320 batches.
  const double rate = Simulate(sim, &tuner, 40);
  EXPECT_GE(rate, 0.9 * sim.BestStatic(c));
  EXPECT_GE(tuner.accepted().threads, 8);
  EXPECT_LE(tuner.accepted().threads, 9);  // past the cores only within noise
}

TEST(TunerTest, ShrinksToTheSmallestConfigurationThatKeepsTheConsumerFed) {
  Sim sim;
  sim.consumer = 350;  // 4 threads (400/s) feed it, 3 (300/s) do not
  sim.noise = 0.03;
  const TunerConfig c = Config(16);
  Tuner tuner(c, {12, 2});
  const double rate = Simulate(sim, &tuner, 60);
  EXPECT_EQ(tuner.accepted().threads, 4) << tuner.reason();
  EXPECT_GE(rate, 0.9 * sim.BestStatic(c));
  double r, wait;
  sim.Steady(tuner.accepted(), &r, &wait);
  EXPECT_LT(wait, c.starved_fraction);
}

TEST(TunerTest, StopsAtThePeakWhenMoreThreadsContend) {
  Sim sim;
  sim.cores = 6;
  sim.contention = 0.15;
  sim.noise = 0.03;
  const TunerConfig c = Config(16);
  Tuner tuner(c, {2, 2});
  const double rate = Simulate(sim, &tuner, 40);
  EXPECT_EQ(tuner.accepted().threads, 6);
  EXPECT_GE(rate, 0.9 * sim.BestStatic(c));
}

TEST(TunerTest, DeepensPrefetchToHideJitter) {
  Sim sim;
  sim.consumer = 390;    // 4 threads give 400/s: almost no surplus
  sim.jitter = 0.16;     // prefetch 1: 16% waiting, 2: 4%, 3: 1.8%, 4: 1%
  sim.noise = 0.01;
  TunerConfig c = Config(4);  // threads cannot hide it
  Tuner tuner(c, {4, 1});
  Simulate(sim, &tuner, 40);
  double rate, wait;
  sim.Steady(tuner.accepted(), &rate, &wait);
  EXPECT_GE(tuner.accepted().prefetch, 3);
  EXPECT_LT(wait, c.starved_fraction);
}

TEST(TunerTest, SettledTunerRarelyProbes) {
  Sim sim;
  sim.noise = 0.05;
  Tuner tuner(Config(16), {8, 2});
  Simulate(sim, &tuner, 50);
  const TunerSettings settled = tuner.accepted();
  EXPECT_GE(settled.threads, 8);
  const int64_t changes = tuner.changes();
  Rng rng(HashSeed(7, 0));
  int away = 0;
  for (int i = 0; i < 200; ++i) {
    tuner.Observe(sim.Window(tuner.settings(), &rng));
    away += !(tuner.settings() == tuner.accepted());
    EXPECT_LE(std::abs(tuner.accepted().threads - settled.threads), 1);
  }
  // Backoff doubles from 6 to 96 windows: a handful of probes in 200 windows.
  EXPECT_LE(tuner.changes() - changes, 24);
  EXPECT_LE(away, 12);
}

TEST(TunerTest, FollowsALoadChange) {
  Sim sim;
  sim.consumer = 350;
  sim.noise = 0.02;
  const TunerConfig c = Config(16);
  Tuner tuner(c, {8, 2});
  Simulate(sim, &tuner, 60);
  EXPECT_EQ(tuner.accepted().threads, 4);
  sim.consumer = 0;  // the training step got much faster
  const double rate = Simulate(sim, &tuner, 40, 2);
  EXPECT_GE(rate, 0.9 * sim.BestStatic(c));
}

TEST(TunerTest, LeavesFixedDimensionsAlone) {
  Sim sim;
  sim.consumer = 150;
  TunerConfig c = Config(16);
  c.tune_threads = false;
  Tuner tuner(c, {8, 4});
  Simulate(sim, &tuner, 60);
  EXPECT_EQ(tuner.settings().threads, 8);
  EXPECT_EQ(tuner.accepted().threads, 8);
}

TEST(TunerTest, ClampsInitialSettingsAndIgnoresEmptyWindows) {
  TunerConfig c = Config(4);
  c.min_prefetch = 2;
  c.max_prefetch = 3;
  Tuner tuner(c, {32, 1});
  EXPECT_EQ(tuner.settings().threads, 4);
  EXPECT_EQ(tuner.settings().prefetch, 2);
  EXPECT_EQ(tuner.Observe(TunerWindow{}), tuner.settings());
  EXPECT_EQ(tuner.changes(), 0);
}

}  // namespace
}  // namespace stoker
