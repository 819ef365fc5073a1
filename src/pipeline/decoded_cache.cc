// Copyright 2026 The stoker Authors.
#include "pipeline/decoded_cache.h"

#include <algorithm>
#include <cstdio>

#include "base/rng.h"

namespace stoker {

DecodedCache::DecodedCache(size_t capacity_bytes, int shards) : capacity_(capacity_bytes) {
  // A shard should hold at least 64 MiB (a few large photos).
  const size_t max_shards = std::max<size_t>(1, capacity_bytes / (size_t{64} << 20));
  const size_t n = std::clamp<size_t>(static_cast<size_t>(std::max(shards, 1)), 1, max_shards);
  shard_capacity_ = capacity_bytes / n;
  for (size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
}

DecodedCache::Shard& DecodedCache::ShardOf(int64_t key) {
  return *shards_[Mix64(static_cast<uint64_t>(key)) % shards_.size()];
}

std::shared_ptr<const CachedImage> DecodedCache::Lookup(int64_t key) {
  Shard& s = ShardOf(key);
  MutexLock lock(&s.mu);
  auto it = s.map.find(key);
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
  st.bytes = bytes_.load(std::memory_order_relaxed);
  st.entries = entries_.load(std::memory_order_relaxed);
  st.capacity = capacity_;
  return st;
}

std::string DecodedCache::Advice(int64_t samples) const {
  const DecodedCacheStats st = stats();
  if (st.evicted == 0 && st.rejected == 0) return "";
  if (st.misses <= samples) return "";  // still in the first epoch
  const double per_entry = st.entries > 0 ? static_cast<double>(st.bytes) / st.entries : 0;
  const double need_mib = per_entry * static_cast<double>(samples) / 1048576.0 * 1.1;
  char line[256];
  std::snprintf(line, sizeof(line),
                "cache too small to help: %.0f MiB holds %lld of %lld samples (hit rate %.0f%%); "
                "cache_bytes of about %.0f MiB would hold the epoch",
                st.capacity / 1048576.0, static_cast<long long>(st.entries),
                static_cast<long long>(samples), st.hit_rate() * 100, need_mib);
  return line;
}

}  // namespace stoker
