// Copyright 2026 The stoker Authors.
#include "pipeline/tuner.h"

#include <algorithm>

namespace stoker {
namespace {

const char* DirName(int d) {
  static const char* const kNames[] = {"", "one more thread", "one thread fewer",
                                       "a deeper prefetch", "a shallower prefetch"};
  return kNames[d];
}

}  // namespace

Tuner::Tuner(const TunerConfig& config, TunerSettings initial) : config_(config) {
  config_.max_threads = std::max(config_.min_threads, config_.max_threads);
  config_.max_prefetch = std::max(config_.min_prefetch, config_.max_prefetch);
  initial.threads = std::clamp(initial.threads, config_.min_threads, config_.max_threads);
  initial.prefetch = std::clamp(initial.prefetch, config_.min_prefetch, config_.max_prefetch);
  base_ = current_ = initial;
}

Tuner::Backoff& Tuner::BackoffOf(Dir d) {
  switch (d) {
    case Dir::kMoreThreads: return more_threads_;
    case Dir::kFewerThreads: return fewer_threads_;
    case Dir::kMorePrefetch: return more_prefetch_;
    default: return less_prefetch_;
  }
}

const Tuner::Backoff& Tuner::BackoffOf(Dir d) const {
  return const_cast<Tuner*>(this)->BackoffOf(d);
}

TunerSettings Tuner::Step(Dir d) const {
  TunerSettings s = base_;
  switch (d) {
    case Dir::kMoreThreads: ++s.threads; break;
    case Dir::kFewerThreads: --s.threads; break;
    case Dir::kMorePrefetch: ++s.prefetch; break;
    case Dir::kLessPrefetch: --s.prefetch; break;
    case Dir::kNone: break;
  }
  return s;
}

bool Tuner::Allowed(Dir d) const {
  const bool threads = d == Dir::kMoreThreads || d == Dir::kFewerThreads;
  if (threads ? !config_.tune_threads : !config_.tune_prefetch) return false;
  const TunerSettings s = Step(d);
  if (s.threads < config_.min_threads || s.threads > config_.max_threads) return false;
  if (s.prefetch < config_.min_prefetch || s.prefetch > config_.max_prefetch) return false;
  return windows_ >= BackoffOf(d).until;
}

void Tuner::Reject(Dir d) {
  Backoff& b = BackoffOf(d);
  b.length = b.length == 0 ? config_.cooldown : std::min(2 * b.length, config_.max_cooldown);
  b.until = windows_ + b.length;
}

void Tuner::StartProbe(Dir d, const char* why) {
  probing_ = d;
  current_ = Step(d);
  ++changes_;
  reason_ = std::string(why) + ": trying " + DirName(static_cast<int>(d));
}

TunerSettings Tuner::Observe(const TunerWindow& w) {
  ++windows_;
  if (w.seconds <= 0 || w.images <= 0) return current_;
  const double rate = w.images / w.seconds;
  const double wait = w.consumer_wait_s / w.seconds;
  const int state = wait > config_.starved_fraction ? 1 : wait < config_.fed_fraction ? -1 : 0;

  if (probing_ != Dir::kNone) {
    const Dir d = probing_;
    probing_ = Dir::kNone;
    const bool grow = d == Dir::kMoreThreads || d == Dir::kMorePrefetch;
    // Growing must raise throughput, or stop the consumer waiting at no
    // cost; shrinking must keep the consumer fed at no cost.
    const bool no_cost = rate >= base_rate_ * (1 - config_.gain);
    const bool keep = grow ? rate > base_rate_ * (1 + config_.gain) ||
                                 (base_state_ == 1 && state != 1 && no_cost)
                           : state != 1 && no_cost;
    if (!keep) {
      Reject(d);
      current_ = base_;
      ++changes_;
      reason_ = std::string("went back: ") + DirName(static_cast<int>(d)) +
                (grow ? " did not raise throughput" : " starved the consumer");
      return current_;
    }
    base_ = current_;
    base_rate_ = rate;
    base_state_ = state;
    BackoffOf(d) = Backoff{};
    reason_ = std::string("kept ") + DirName(static_cast<int>(d));
  } else {
    base_rate_ = base_rate_ == 0 ? rate : 0.5 * (base_rate_ + rate);
    base_state_ = state;
  }

  // The load changed (the consumer went from starved to fed or back):
  // what was learnt about the directions no longer holds.
  if (state != 0) {
    if (last_state_ != 0 && state != last_state_) {
      more_threads_ = fewer_threads_ = more_prefetch_ = less_prefetch_ = Backoff{};
    }
    last_state_ = state;
  }

  if (state == 1) {
    if (Allowed(Dir::kMoreThreads)) {
      StartProbe(Dir::kMoreThreads, "the consumer waits");
    } else if (Allowed(Dir::kMorePrefetch)) {
      StartProbe(Dir::kMorePrefetch, "the consumer waits");
    }
  } else if (state == -1) {
    if (Allowed(Dir::kFewerThreads)) {
      StartProbe(Dir::kFewerThreads, "the consumer never waits");
    } else if (Allowed(Dir::kLessPrefetch)) {
      StartProbe(Dir::kLessPrefetch, "the consumer never waits");
    }
  }
  return current_;
}

}  // namespace stoker
