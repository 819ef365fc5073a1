// Copyright 2026 The stoker Authors.
#include "pipeline/decoded_cache.h"

#include <algorithm>
#include <cstdio>

#include "base/rng.h"

namespace stoker {

size_t DecodedCache::ShardCount(size_t capacity, int shards) {
  // A shard should hold at least 64 MiB (a few large photos).
  const size_t max_shards = std::max<size_t>(1, capacity / (size_t{64} << 20));
  return std::clamp<size_t>(static_cast<size_t>(std::clamp(shards, 1, int{kMaxShards})), 1,
                            max_shards);
}

DecodedCache::DecodedCache(size_t capacity_bytes, int shards)
    : capacity_(capacity_bytes), requested_shards_(std::clamp(shards, 1, int{kMaxShards})) {
  const size_t n = ShardCount(capacity_bytes, shards);
  shard_capacity_ = capacity_bytes / n;
  for (size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
  MutexLock lock(&demand_mu_);
  for (int k = 1; k <= requested_shards_; ++k) demand_.emplace_back(static_cast<size_t>(k), 0);
}

DecodedCache::Shard& DecodedCache::ShardOf(int64_t key) {
  return *shards_[Mix64(static_cast<uint64_t>(key)) % shards_.size()];
}

void DecodedCache::NoteDemand(int64_t key, size_t bytes) {
  if (key < 0) return;
  MutexLock lock(&demand_mu_);
  if (key < kDenseKeys) {
    const size_t word = static_cast<size_t>(key) / 64;
    const uint64_t bit = uint64_t{1} << (key % 64);
    if (word >= seen_.size()) seen_.resize(std::max(word + 1, seen_.size() * 2), 0);
    if ((seen_[word] & bit) != 0) return;
    seen_[word] |= bit;
  } else if (!seen_sparse_.insert(key).second) {
    return;
  }
  const uint64_t h = Mix64(static_cast<uint64_t>(key));
  for (size_t k = 1; k <= demand_.size(); ++k) demand_[k - 1][h % k] += bytes;
}

size_t DecodedCache::NeededCapacity() const {
  MutexLock lock(&demand_mu_);
  const size_t unit = size_t{64} << 20;
  size_t best = 0;
  for (size_t k = 1; k <= demand_.size(); ++k) {
    const size_t most = *std::max_element(demand_[k - 1].begin(), demand_[k - 1].end());
    if (most == 0) continue;
    // Capacities with k shards: [k * unit, (k + 1) * unit) (from 0 for k = 1;
    // unbounded for the largest k), each shard holding capacity / k bytes.
    const size_t lo = k == 1 ? 0 : k * unit;
    const size_t mib = size_t{1} << 20;
    const size_t c = (std::max(lo, k * most) + mib - 1) / mib * mib;  // whole MiB
    if (k < demand_.size() && c >= (k + 1) * unit) continue;
    if (ShardCount(c, requested_shards_) != k) continue;
    if (best == 0 || c < best) best = c;
  }
  return best;
}

std::shared_ptr<const CachedImage> DecodedCache::Lookup(int64_t key) {
  return Find(key, nullptr);
}

std::shared_ptr<const CachedImage> DecodedCache::Lookup(int64_t key, uint64_t stamp) {
  return Find(key, &stamp);
}

std::shared_ptr<const CachedImage> DecodedCache::Find(int64_t key, const uint64_t* stamp) {
  Shard& s = ShardOf(key);
  MutexLock lock(&s.mu);
  auto it = s.map.find(key);
  if (stamp != nullptr && it != s.map.end() && it->second.image->stamp != *stamp) {
    // The file changed since the entry was made: dropped.
    const size_t freed = it->second.image->bytes();
    s.bytes -= freed;
    bytes_.fetch_sub(freed, std::memory_order_relaxed);
    s.lru.erase(it->second.pos);
    s.map.erase(it);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    stale_.fetch_add(1, std::memory_order_relaxed);
    it = s.map.end();
  }
  if (it == s.map.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second.pos);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second.image;
}

bool DecodedCache::Insert(int64_t key, std::shared_ptr<const CachedImage> image) {
  const size_t need = image->bytes();
  if (need > shard_capacity_) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Shard& s = ShardOf(key);
  MutexLock lock(&s.mu);
  auto it = s.map.find(key);
  if (it != s.map.end()) {  // another worker got there first: keep the older copy
    s.lru.splice(s.lru.begin(), s.lru, it->second.pos);
    return true;
  }
  while (s.bytes + need > shard_capacity_ && !s.lru.empty()) {
    const int64_t victim = s.lru.back();
    s.lru.pop_back();
    auto v = s.map.find(victim);
    const size_t freed = v->second.image->bytes();
    s.bytes -= freed;
    bytes_.fetch_sub(freed, std::memory_order_relaxed);
    s.map.erase(v);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  NoteDemand(key, need);
  s.lru.push_front(key);
  s.map.emplace(key, Shard::Entry{std::move(image), s.lru.begin()});
  s.bytes += need;
  bytes_.fetch_add(need, std::memory_order_relaxed);
  entries_.fetch_add(1, std::memory_order_relaxed);
  inserted_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

DecodedCacheStats DecodedCache::stats() const {
  DecodedCacheStats st;
  st.hits = hits_.load(std::memory_order_relaxed);
  st.misses = misses_.load(std::memory_order_relaxed);
  st.inserted = inserted_.load(std::memory_order_relaxed);
  st.evicted = evicted_.load(std::memory_order_relaxed);
  st.rejected = rejected_.load(std::memory_order_relaxed);
  st.stale = stale_.load(std::memory_order_relaxed);
  st.bytes = bytes_.load(std::memory_order_relaxed);
  st.entries = entries_.load(std::memory_order_relaxed);
  st.capacity = capacity_;
  return st;
}

std::string DecodedCache::Advice(int64_t samples) const {
  const DecodedCacheStats st = stats();
  if (st.evicted == 0 && st.rejected == 0) return "";
  if (st.misses <= samples) return "";  // still in the first epoch
  const size_t mib = NeededCapacity() >> 20;  // whole MiB already
  char line[256];
  std::snprintf(line, sizeof(line),
                "cache too small to help: %.0f MiB holds %lld of %lld samples (hit rate %.0f%%); "
                "cache_bytes of %zu MiB holds the epoch",
                st.capacity / 1048576.0, static_cast<long long>(st.entries),
                static_cast<long long>(samples), st.hit_rate() * 100, mib);
  return line;
}

}  // namespace stoker
