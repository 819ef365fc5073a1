// Copyright 2026 The stoker Authors.
//
// DecodedCache: decoded images kept in memory across epochs, so later
// epochs skip reading and decoding (Loader cache="decoded"). Bounded by
// bytes; the least recently used entries are evicted first.
//
// Keys are sample ids (stable across epochs). Values are immutable and
// shared: Lookup() returns a reference that stays valid after the entry is
// evicted, for as long as the caller holds it.
//
// Thread-safety: every method may be called from any thread. The cache is
// split into shards by key, each with its own mutex and LRU list, so workers
// rarely contend; each shard holds at most capacity / shards bytes.
#ifndef STOKER_PIPELINE_DECODED_CACHE_H_
#define STOKER_PIPELINE_DECODED_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "program/decoded_image.h"  // CachedImage
#include "stoker/mutex.h"
#include "stoker/source.h"
#include "stoker/thread_annotations.h"

namespace stoker {

struct DecodedCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t inserted = 0;
  int64_t evicted = 0;
  int64_t rejected = 0;   // entries larger than a shard's share of the capacity
  int64_t stale = 0;      // entries dropped by Lookup(key, stamp): their file changed
  size_t bytes = 0;       // in use now
  size_t capacity = 0;
  int64_t entries = 0;
  double hit_rate() const {
    return hits + misses > 0 ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0;
  }
};

class DecodedCache {
 public:
  // `capacity_bytes` > 0. `shards` >= 1 (fewer when the capacity is small,
  // so that a shard can hold a large image).
  explicit DecodedCache(size_t capacity_bytes, int shards = 8);

  // The cached image of `key`, or null (counted as a miss).
  std::shared_ptr<const CachedImage> Lookup(int64_t key);
  // The same, serving the entry only when its stamp equals `stamp`: an entry
  // with another stamp is dropped (counted as stale and as a miss).
  std::shared_ptr<const CachedImage> Lookup(int64_t key, uint64_t stamp);
  // Caches `image` under `key`, evicting least recently used entries of its
  // shard to make room. False when the image alone exceeds the shard's share.
  bool Insert(int64_t key, std::shared_ptr<const CachedImage> image);

  DecodedCacheStats stats() const;
  // One line when the cache is too small to help (entries were evicted and
  // later epochs still miss), naming the capacity it would need; else "".
  // `samples`: samples per epoch. The capacity named is exact for the
  // samples inserted so far (after one epoch, the epoch's): a cache of that
  // capacity, with the same shard count asked for, holds every one of them
  // without an eviction (NeededCapacity).
  std::string Advice(int64_t samples) const;
  // The smallest capacity whose cache (constructed with the same `shards`
  // argument) holds every distinct key inserted so far at once: each key's
  // bytes (as first inserted) summed per shard, for the shard count that
  // capacity gives; a whole number of MiB. 0 before any insert.
  size_t NeededCapacity() const;

 private:
  struct Shard {
    struct Entry {
      std::shared_ptr<const CachedImage> image;
      std::list<int64_t>::iterator pos;
    };
    Mutex mu;
    std::list<int64_t> lru STOKER_GUARDED_BY(mu);  // front: most recent
    std::unordered_map<int64_t, Entry> map STOKER_GUARDED_BY(mu);
    size_t bytes STOKER_GUARDED_BY(mu) = 0;
  };
  Shard& ShardOf(int64_t key);
  // Lookup; with `stamp`, an entry of another stamp is dropped first.
  std::shared_ptr<const CachedImage> Find(int64_t key, const uint64_t* stamp);

  // How many shards a cache of `capacity` bytes has when `shards` are asked for.
  static size_t ShardCount(size_t capacity, int shards);
  // Records `key`'s bytes the first time it is inserted (NeededCapacity).
  void NoteDemand(int64_t key, size_t bytes);

  static constexpr size_t kMaxShards = 64;
  const size_t capacity_;
  const int requested_shards_;
  size_t shard_capacity_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<int64_t> hits_{0}, misses_{0}, inserted_{0}, evicted_{0}, rejected_{0}, stale_{0};
  std::atomic<size_t> bytes_{0};
  std::atomic<int64_t> entries_{0};
  // Keys ever inserted and, for
  // each shard count a capacity could give (1 .. requested), the bytes each
  // shard would hold with all of them.
  mutable Mutex demand_mu_;
  // Keys seen so far: a bitset for keys below kDenseKeys (sample indices),
  // a hash set for the rest (sparse keys: a Mix's source bits, ids).
  static constexpr int64_t kDenseKeys = int64_t{1} << 27;  // at most 16 MiB of bits
  std::vector<uint64_t> seen_ STOKER_GUARDED_BY(demand_mu_);
  std::unordered_set<int64_t> seen_sparse_ STOKER_GUARDED_BY(demand_mu_);
  std::vector<std::vector<size_t>> demand_ STOKER_GUARDED_BY(demand_mu_);
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_DECODED_CACHE_H_
