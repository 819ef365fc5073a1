// Copyright 2026 The stoker Authors.
#include "source/shards.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/json.h"
#include "base/rng.h"
#include "io/file.h"
#include "io/s3.h"
#include "source/shard_records.h"
#include "source/tar_index.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---------------------------------------------------------------- indexed

class IndexedShards : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<Source>> Open(const std::vector<std::string>& urls,
                                                const ShardOptions& o,
                                                std::vector<std::string> classes) {
    std::shared_ptr<IndexedShards> s(new IndexedShards());
    s->urls_ = urls;
    s->classes_ = std::move(classes);
    s->max_member_bytes_ = o.spec.max_member_bytes;
    s->allow_negative_labels_ = o.spec.allow_negative_labels;
    if (!o.spec.fields.empty()) {
      STOKER_ASSIGN_OR_RETURN(s->schema_, ShardSchema(o.spec.fields));
      s->formats_ = ShardMemberFormats(o.spec.fields);
      s->record_ = true;
    }
    // Random access needs a whole shard: one cut at a member boundary is an
    // error after its last sample (a bad entry), not a shorter shard.
    SampleSpec spec = o.spec;
    spec.require_end_of_archive = true;
    for (size_t i = 0; i < urls.size(); ++i) {
      auto index = LoadOrBuildTarIndex(urls[i], spec, o.cache_dir);
      if (!index.ok()) return index.status();
      s->shard_sizes_.push_back(index.value().shard_size);
      s->starts_.push_back(static_cast<int64_t>(s->entries_.size()));
      for (TarIndexEntry& e : index.value().entries) {
        s->entries_.push_back(std::move(e));
        s->shard_of_.push_back(static_cast<uint32_t>(i));
      }
    }
    return std::shared_ptr<Source>(std::move(s));
  }

  int64_t size() const override { return static_cast<int64_t>(entries_.size()); }
  Schema schema() const override { return record_ ? schema_ : Schema::ImageLabel(); }
  std::vector<std::string> classes() const override { return classes_; }
  std::vector<int64_t> Labels() const override {
    std::vector<int64_t> labels;
    labels.reserve(entries_.size());
    for (const TarIndexEntry& e : entries_) labels.push_back(e.label);
    return labels;
  }
  std::string Describe() const override {
    return "Shards(" + std::to_string(urls_.size()) + " shards, " + std::to_string(size()) +
           " samples, indexed" + (urls_.empty() ? "" : ", " + urls_[0] + " ...") + ")";
  }
  // A record is named by its key (its errors name the field and member), an
  // image + label sample by its image member.
  std::string NameOf(int64_t index) const override {
    const TarIndexEntry& e = entries_[index];
    if (e.offset < 0) return urls_[shard_of_[index]];
    if (record_) return urls_[shard_of_[index]] + ": sample " + e.key;
    return urls_[shard_of_[index]] + ": member " + e.member;
  }
  // The shard the sample is in (FileStamp): a rewritten shard is read again.
  uint64_t SampleStamp(int64_t index) const override {
    return FileStamp(urls_[shard_of_[index]]);
  }
  // The relative sample names (RandomAccessSource), each shard's size and
  // sample count (its index): the dataset, wherever its shards lie.
  uint64_t Fingerprint() const override {
    uint64_t h = RandomAccessSource::Fingerprint();
    for (size_t i = 0; i < shard_sizes_.size(); ++i) {
      const int64_t end = i + 1 < starts_.size() ? starts_[i + 1] : size();
      h = Mix64(h ^ shard_sizes_[i]);
      h = Mix64(h ^ static_cast<uint64_t>(end - starts_[i]));
    }
    return h;
  }

  Status ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const override {
    if (index < 0 || index >= size()) {
      return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
    }
    const TarIndexEntry& e = entries_[index];
    if (e.offset < 0) return DataLossError(e.member);
    const std::string& path = urls_[shard_of_[index]];
    if (record_) return ReadRecord(index, e, path, scratch, out);
    // What the member declares is checked before anything is allocated for
    // it: against max_sample_bytes, as in stream mode, and against the bytes
    // the shard holds now.
    if (e.size > max_member_bytes_) {
      return DataLossError(path + ": member " + e.member + ": " + std::to_string(e.size) +
                           " bytes, more than the limit of " + std::to_string(max_member_bytes_) +
                           " (max_sample_bytes)");
    }
    int fd = -1;
    STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd));
    if (scratch->bytes.size() < static_cast<size_t>(e.size)) {
      scratch->bytes.resize(static_cast<size_t>(e.size));
    }
    Status st = PreadMember(fd, path, e.member, nullptr, e.offset, e.size, scratch->bytes.data());
    ::close(fd);
    STOKER_RETURN_IF_ERROR(st);
    const size_t want = static_cast<size_t>(e.size);
    out->id = index;
    out->label = e.label;
    out->bytes = scratch->bytes.data();
    out->size = want;
    out->pixels = nullptr;
    return Status::OK();
  }

 private:
  std::vector<std::string> urls_;
  std::vector<std::string> classes_;  // from classes.json beside the shards
  std::vector<int64_t> starts_;
  std::vector<uint64_t> shard_sizes_;  // as indexed
  std::vector<TarIndexEntry> entries_;
  std::vector<uint32_t> shard_of_;
  int64_t max_member_bytes_ = 0;
  bool allow_negative_labels_ = false;
  bool record_ = false;  // spec.fields: samples are records of schema_
  Schema schema_;
  std::vector<ShardMemberFormat> formats_;  // how each field's member is read

  // Records were named by their first member until their errors named each
  // field's: the fingerprint keeps that name, so earlier states resume.
  std::string FingerprintNameOf(int64_t index) const override {
    const TarIndexEntry& e = entries_[index];
    if (e.offset < 0) return urls_[shard_of_[index]];
    return urls_[shard_of_[index]] + ": member " + e.member;
  }

  // Reads `size` bytes at `offset` of the open shard `fd` into `dst`,
  // checking first that the shard still holds them. Errors name the member
  // (and the record's field, when `field` is not null); the name is composed
  // only for an error, not per read.
  static Status PreadMember(int fd, const std::string& path, const std::string& member,
                            const std::string* field, int64_t offset, int64_t size,
                            uint8_t* dst) {
    auto name = [&] { return field ? member + " (field '" + *field + "')" : member; };
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      return IoError(path + ": cannot stat: " + std::strerror(errno));
    }
    if (offset > static_cast<int64_t>(st.st_size) - size) {
      return DataLossError(path + ": member " + name() + ": declares " + std::to_string(size) +
                           " bytes at offset " + std::to_string(offset) + ", past the end of the " +
                           std::to_string(st.st_size) + "-byte shard (truncated since indexed?)");
    }
    const size_t want = static_cast<size_t>(size);
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, dst + got, want - got, offset + static_cast<int64_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != want) {
      return DataLossError(path + ": member " + name() + ": shard shorter than its index (" +
                           std::to_string(got) + " of " + std::to_string(want) + " bytes)");
    }
    return Status::OK();
  }

  // Records: every field's member, one after another in scratch->bytes.
  Status ReadRecord(int64_t index, const TarIndexEntry& e, const std::string& path,
                    SampleScratch* scratch, SampleData* out) const {
    const size_t nf = schema_.fields.size();
    if (e.fields.size() != nf) return InternalError("index entry without its record fields");
    size_t total = 0;
    thread_local std::vector<size_t> starts;  // reused: no allocation per sample
    thread_local std::vector<int64_t> sizes;
    starts.resize(nf);
    sizes.resize(nf);
    for (size_t f = 0; f < nf; ++f) {
      if (e.fields[f].second > max_member_bytes_) {
        return DataLossError(path + ": sample " + e.key + ": field '" + schema_.fields[f].name +
                             "': " + std::to_string(e.fields[f].second) +
                             " bytes, more than the limit of " +
                             std::to_string(max_member_bytes_) + " (max_sample_bytes)");
      }
      starts[f] = total;
      sizes[f] = e.fields[f].second;
      total += static_cast<size_t>(sizes[f]);
    }
    if (scratch->bytes.size() < total) scratch->bytes.resize(total);
    int fd = -1;
    STOKER_RETURN_IF_ERROR(OpenRegularFile(path, &fd));
    for (size_t f = 0; f < nf; ++f) {
      Status st = PreadMember(fd, path, e.key, &schema_.fields[f].name,
                              e.fields[f].first, sizes[f], scratch->bytes.data() + starts[f]);
      if (!st.ok()) {
        ::close(fd);
        return st;
      }
    }
    ::close(fd);
    // Each field's member name, for FieldValue::member (reused strings).
    scratch->field_members.resize(nf);
    size_t at = 0;
    for (size_t f = 0; f < nf; ++f) {
      const size_t end = std::min(e.field_suffixes.find('\0', at), e.field_suffixes.size());
      scratch->field_members[f].assign(e.key).append(e.field_suffixes, at, end - at);
      at = end + 1;
    }
    out->id = index;
    Status st = FillShardRecord(schema_, scratch->bytes.data(), starts.data(), sizes.data(),
                                allow_negative_labels_, scratch, out, &formats_);
    if (!st.ok()) return st.WithContext(path + ": sample " + e.key);
    return Status::OK();
  }
};

// ---------------------------------------------------------------- stream

struct Item {
  Status status;
  std::vector<uint8_t> bytes;
  int64_t id = -1;
  int64_t label = -1;
  std::string name;
  bool repeat = false;  // read in a padding pass (declared length)
  // Records: where each field's member lies in `bytes`, and its name.
  std::vector<size_t> field_starts;
  std::vector<int64_t> field_sizes;
  std::vector<std::string> field_members;
};

// Sample byte buffers kept from one epoch's reader to the next and passed
// from the engine's threads (done with a sample) back to the shard readers,
// so that filling the shuffle buffer does not allocate (and page-fault) anew
// each epoch. Thread-safe.
class BufferPool {
 public:
  explicit BufferPool(size_t cap) : cap_(cap) {}
  std::vector<uint8_t> Take() {
    MutexLock lock(&mu_);
    if (buffers_.empty()) return {};
    std::vector<uint8_t> b = std::move(buffers_.back());
    buffers_.pop_back();
    return b;
  }
  void Give(std::vector<uint8_t> b) {
    MutexLock lock(&mu_);
    if (b.capacity() > 0 && buffers_.size() < cap_) buffers_.push_back(std::move(b));
  }

 private:
  const size_t cap_;
  Mutex mu_;
  std::vector<std::vector<uint8_t>> buffers_ STOKER_GUARDED_BY(mu_);
};

// One epoch of the stream. Each shard is opened, read and decompressed by its
// own thread (ShardFeed) into a small queue; up to `concurrent_shards` feeds
// are interleaved round-robin and as many more are started ahead, so opening
// (and downloading) the next shards overlaps with reading the current ones.
// The merge (round-robin, shuffle buffer, position window) runs under mu_ and
// only moves Items: the sequence is a function of the shards' contents and
// (seed, epoch) alone, whatever the thread timing.
//
// Rank r of W reads the shards at positions r, r + W, ... of the epoch's
// shard order. With a declared length, size() is the rank's share of it: the
// rank's shards are read again from the start when they run out (padding)
// and positions past the share are never asked for. Resumed (spec.offset),
// the rank's first offset / W outputs are made and dropped.
class StreamReader : public EpochReader {
 public:
  StreamReader(const std::vector<std::string>* urls, const ShardOptions* o,
               const Schema* schema, const EpochSpec& spec, std::shared_ptr<BufferPool> pool,
               std::shared_ptr<std::atomic<int64_t>> truncated)
      : urls_(urls), o_(o), schema_(schema), pool_(std::move(pool)),
        truncated_(std::move(truncated)),
        rng_(HashSeed(spec.seed, static_cast<uint64_t>(spec.epoch), 0x7A25ull)) {
    // Under a declared length a shard cut at a member boundary would
    // silently shorten what the ranks share: an error.
    sample_spec_ = o->spec;
    sample_spec_.require_end_of_archive = o->length > 0;
    formats_ = ShardMemberFormats(o->spec.fields);
    std::vector<uint32_t> order(urls->size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    if (spec.shuffle) {
      order = EpochPermutation(static_cast<int64_t>(urls->size()), spec.seed, spec.epoch);
      buffer_size_ = static_cast<size_t>(std::max(0, o->shuffle_buffer));
      concurrent_ = static_cast<size_t>(std::max(1, o->concurrent_shards));
    }
    ahead_max_ = std::max<size_t>(1, concurrent_);
    const size_t w = static_cast<size_t>(std::max(1, spec.world_size));
    for (size_t i = static_cast<size_t>(spec.rank); i < order.size(); i += w) {
      order_.push_back(order[i]);
    }
    if (o->length > 0) {
      size_ = RankShareOf(o->length, spec).samples;
      wrap_ = true;
    }
    skip_ = std::max<int64_t>(0, spec.offset) / static_cast<int64_t>(w);
  }

  ~StreamReader() override {
    cancel_->store(true, std::memory_order_relaxed);  // a feed stalled in a transfer returns
    {
      MutexLock lock(&mu_);
      stop_ = true;
      for (auto& f : open_) f->space.Signal();
      for (auto& f : ahead_) f->space.Signal();
    }
    for (auto& f : open_) f->thread.join();
    for (auto& f : ahead_) f->thread.join();
    for (auto& f : open_) GiveItems(&f->queue);
    for (auto& f : ahead_) GiveItems(&f->queue);
    for (auto& it : buffer_) pool_->Give(std::move(it.bytes));
    for (auto& it : window_) pool_->Give(std::move(it.bytes));
  }

  int64_t size() const override { return size_; }
  bool random_access() const override { return false; }
  void Cancel() override { cancel_->store(true, std::memory_order_relaxed); }
  int64_t padded() const override {
    MutexLock lock(&mu_);
    return padded_;
  }

  Status Read(int64_t p, SampleScratch* scratch, SampleData* out, bool* end) override {
    MutexLock lock(&mu_);
    *end = false;
    if (p < base_) return InternalError("stream position " + std::to_string(p) + " read twice");
    // One thread at a time extends the window; the others wait for it (the
    // wait releases mu_, so positions already in the window are served).
    while (base_ + static_cast<int64_t>(window_.size()) <= p && !output_done_) {
      if (producing_) {
        ++window_waiters_;
        window_cv_.Wait(&mu_);
        --window_waiters_;
        continue;
      }
      producing_ = true;
      ProduceLocked();
      producing_ = false;
      if (window_waiters_ > 0) window_cv_.SignalAll();
    }
    if (p >= base_ + static_cast<int64_t>(window_.size())) {
      if (p == 0 && pushed_ == 0) {
        // As in indexed mode, where such shards fail stoker.Shards(...): an
        // epoch without a single sample (every shard empty) is an error, not
        // an epoch of zero batches.
        return DataLossError("Shards(" + std::to_string(urls_->size()) + " shards, " +
                             urls_->front() + (urls_->size() > 1 ? " ..." : "") +
                             ") has no samples: every shard is empty");
      }
      *end = true;
      return Status::OK();
    }
    Item& it = window_[static_cast<size_t>(p - base_)];
    it.bytes.swap(scratch->bytes);
    Status status = std::move(it.status);
    out->id = it.id;
    out->label = it.label;
    out->bytes = scratch->bytes.data();
    out->size = scratch->bytes.size();
    out->pixels = nullptr;
    if (status.ok() && schema_ != nullptr) {
      it.field_members.swap(scratch->field_members);
      status = FillShardRecord(*schema_, scratch->bytes.data(), it.field_starts.data(),
                               it.field_sizes.data(), o_->spec.allow_negative_labels, scratch,
                               out, &formats_);
      if (!status.ok()) status = status.WithContext(it.name);
    }
    taken_[static_cast<size_t>(p - base_)] = true;
    if (it.repeat) ++padded_;
    while (!window_.empty() && taken_.front()) {
      // The engine's previous buffer (swapped in above) goes back to the feeds.
      pool_->Give(std::move(window_.front().bytes));
      recent_names_.push_back(std::move(window_.front().name));
      if (recent_names_.size() > kRecentNames) recent_names_.pop_front();
      window_.pop_front();
      taken_.pop_front();
      ++base_;
    }
    return status;
  }

  std::string Name(int64_t p) const override {
    MutexLock lock(&mu_);
    if (p >= base_ && p < base_ + static_cast<int64_t>(window_.size())) {
      return window_[static_cast<size_t>(p - base_)].name;
    }
    const int64_t first_recent = base_ - static_cast<int64_t>(recent_names_.size());
    if (p >= first_recent && p < base_) return recent_names_[static_cast<size_t>(p - first_recent)];
    return "<stream position " + std::to_string(p) + ">";
  }

 private:
  static constexpr size_t kRecentNames = 4096;
  static constexpr size_t kInitialFill = 64;
  // Samples a feed holds ready ahead of the merge. A feed that filled its
  // queue sleeps until the merge has taken half of it (one wake-up per
  // kFeedQueue / 2 samples, not one per sample).
  static constexpr size_t kFeedQueue = 16;

  // One shard's reader thread and the samples it has read, in shard order;
  // `done` once the shard ended (after its last item is queued).
  // (`queue` and `done` are guarded by the reader's mu_, which a nested
  // struct cannot name in an annotation: the analysis does not check them.)
  struct ShardFeed {
    uint32_t shard = 0;
    bool repeat = false;     // a padding pass (declared length)
    std::deque<Item> queue;  // guarded by the reader's mu_
    bool done = false;       // guarded by the reader's mu_
    CondVar space;           // the queue fell to half, or stop_
    std::thread thread;
  };

  void GiveItems(std::deque<Item>* q) {
    for (auto& it : *q) pool_->Give(std::move(it.bytes));
    q->clear();
  }

  // The feed's thread: opens and reads its shard outside mu_, queueing each
  // sample (or error) as an Item; waits while its queue is full.
  void RunFeed(ShardFeed* feed) {
    const std::string& url = (*urls_)[feed->shard];
    auto push = [&](Item item) {
      MutexLock lock(&mu_);
      while (!stop_ && feed->queue.size() >= kFeedQueue) feed->space.Wait(&mu_);
      if (stop_) {
        pool_->Give(std::move(item.bytes));
        return false;
      }
      feed->queue.push_back(std::move(item));
      if (waiting_for_ == feed) data_cv_.Signal();
      return true;
    };
    auto finish = [&] {
      MutexLock lock(&mu_);
      feed->done = true;
      if (waiting_for_ == feed) data_cv_.Signal();
    };
    auto reader = ShardSampleReader::Open(url, sample_spec_, StreamOptionsFor());
    if (!reader.ok()) {
      Item item;
      item.status = reader.status();
      item.name = url;
      push(std::move(item));
      finish();
      return;
    }
    ShardSample sample;
    int64_t ordinal = 0;
    for (;;) {  // push() answers false once the reader is being destroyed
      if (sample.bytes.capacity() == 0) sample.bytes = pool_->Take();
      sample.bytes.clear();
      bool end = false;
      Status s = reader.value()->Next(&sample, &end);
      if (s.ok() && end) break;
      Item item;
      item.id = (static_cast<int64_t>(feed->shard) << 32) | ordinal++;
      item.repeat = feed->repeat;
      if (!s.ok()) {
        item.status = std::move(s);
        item.name = url;
      } else {
        item.name = url + ": member " + sample.image_member;
        if (!sample.field_starts.empty()) {
          item.name = url + ": sample " + sample.key;
          item.field_starts = sample.field_starts;
          item.field_sizes = sample.field_sizes;
          item.field_members = std::move(sample.field_members);
        }
        item.label = sample.label;
        item.bytes = std::move(sample.bytes);
        sample.bytes = std::vector<uint8_t>();
      }
      if (!push(std::move(item))) break;
    }
    // Counted whether it ended the shard quietly or, required, as an error.
    if (reader.value()->missing_end_of_archive()) {
      truncated_->fetch_add(1, std::memory_order_relaxed);
    }
    pool_->Give(std::move(sample.bytes));
    finish();
  }

  std::unique_ptr<ShardFeed> StartFeedLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto feed = std::make_unique<ShardFeed>();
    feed->shard = order_[next_shard_++];
    feed->repeat = pass_ > 0;
    feed->thread = std::thread(&StreamReader::RunFeed, this, feed.get());
    return feed;
  }

  // The next sample of the interleaved shard stream; false at its end.
  // Waits (releasing mu_) for the feed whose turn it is.
  bool NextInputLocked(Item* item) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (;;) {
      while (open_.size() < concurrent_ && (!ahead_.empty() || next_shard_ < order_.size())) {
        if (ahead_.empty()) ahead_.push_back(StartFeedLocked());
        open_.push_back(std::move(ahead_.front()));
        ahead_.pop_front();
      }
      while (ahead_.size() < ahead_max_ && next_shard_ < order_.size()) {
        ahead_.push_back(StartFeedLocked());
      }
      if (open_.empty()) return false;
      rr_ %= open_.size();
      ShardFeed* f = open_[rr_].get();
      if (f->queue.empty() && !f->done) {
        waiting_for_ = f;
        while (f->queue.empty() && !f->done) data_cv_.Wait(&mu_);
        waiting_for_ = nullptr;
      }
      if (f->queue.empty()) {  // the shard ended
        mu_.Unlock();
        f->thread.join();  // done: the thread is leaving RunFeed
        mu_.Lock();
        open_.erase(open_.begin() + static_cast<ptrdiff_t>(rr_));
        continue;
      }
      *item = std::move(f->queue.front());
      f->queue.pop_front();
      ++pass_samples_;
      if (f->queue.size() == kFeedQueue / 2) f->space.Signal();
      rr_ = (rr_ + 1) % open_.size();
      return true;
    }
  }

  StreamOptions StreamOptionsFor() const {
    StreamOptions s = o_->stream;
    s.cancel = cancel_;
    if (s.cache_dir.empty()) s.cache_dir = o_->cache_dir;
    return s;
  }

  // Declared length: once every sample of the rank's shards has been read, a
  // new pass reads them again (padding, shuffled among themselves), unless
  // the last pass gave nothing. False: no new pass.
  bool NewPassLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!wrap_ || order_.empty() || pass_samples_ == 0) return false;
    next_shard_ = 0;
    pass_samples_ = 0;
    input_done_ = false;
    ++pass_;
    return true;
  }

  // Appends the next output sample to the window, or sets output_done_.
  void ProduceLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Item item;
    if (buffer_size_ == 0) {
      if (NextInputLocked(&item) || (NewPassLocked() && NextInputLocked(&item))) {
        PushLocked(std::move(item));
      } else {
        output_done_ = true;
      }
      return;
    }
    // Fill gradually, as webdataset does: output starts once kInitialFill
    // samples are held, and each output adds up to two inputs until the
    // buffer is full, so the first batch does not wait for a whole buffer.
    const size_t want = std::min(buffer_size_, kInitialFill);
    for (int added = 0; !input_done_ && buffer_.size() < buffer_size_ &&
                        (added < 2 || buffer_.size() < want);
         ++added) {
      if (NextInputLocked(&item)) buffer_.push_back(std::move(item));
      else input_done_ = true;
    }
    if (buffer_.empty()) {
      if (NewPassLocked()) {
        ProduceLocked();  // at most once more: a pass that gives nothing ends it
        return;
      }
      output_done_ = true;
      return;
    }
    const size_t k = static_cast<size_t>(rng_.Below(buffer_.size()));
    std::swap(buffer_[k], buffer_.back());
    PushLocked(std::move(buffer_.back()));
    buffer_.pop_back();
  }

  void PushLocked(Item item) STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++pushed_;
    if (skipped_ < skip_) {  // resumed: this rank consumed this output before
      ++skipped_;
      pool_->Give(std::move(item.bytes));
      return;
    }
    window_.push_back(std::move(item));
    taken_.push_back(false);
  }

  const std::vector<std::string>* urls_;
  const ShardOptions* o_;
  const Schema* schema_;  // records: the shard schema (owned by StreamShards); else null
  std::vector<ShardMemberFormat> formats_;  // how each field's member is read
  const std::shared_ptr<BufferPool> pool_;
  const std::shared_ptr<std::atomic<int64_t>> truncated_;  // StreamShards::truncated_shards()
  SampleSpec sample_spec_;  // o_->spec, plus require_end_of_archive (set once)
  // Set by Cancel() without mu_ (a stalled Read holds it); seen by the
  // remote streams this reader opens.
  const std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);

  mutable Mutex mu_;
  CondVar data_cv_;    // waiting_for_ queued an item or ended
  CondVar window_cv_;  // the window grew (or the stream ended)
  // Everything below is guarded by mu_ (set once by the constructor: size_,
  // wrap_, skip_); the merge state (rng_ ... buffer_, input_done_) is also
  // only touched by the thread with producing_ set.
  bool stop_ STOKER_GUARDED_BY(mu_) = false;
  bool producing_ STOKER_GUARDED_BY(mu_) = false;
  int window_waiters_ STOKER_GUARDED_BY(mu_) = 0;
  // The feed the producer waits on.
  const ShardFeed* waiting_for_ STOKER_GUARDED_BY(mu_) = nullptr;
  Rng rng_ STOKER_GUARDED_BY(mu_);
  std::vector<uint32_t> order_ STOKER_GUARDED_BY(mu_);
  size_t next_shard_ STOKER_GUARDED_BY(mu_) = 0;
  size_t concurrent_ STOKER_GUARDED_BY(mu_) = 1;
  // Items ever produced this epoch (a resume skips some).
  int64_t pushed_ STOKER_GUARDED_BY(mu_) = 0;
  size_t ahead_max_ STOKER_GUARDED_BY(mu_) = 1;
  std::vector<std::unique_ptr<ShardFeed>> open_ STOKER_GUARDED_BY(mu_);  // round-robin
  std::deque<std::unique_ptr<ShardFeed>> ahead_ STOKER_GUARDED_BY(mu_);  // started, next in order
  size_t rr_ STOKER_GUARDED_BY(mu_) = 0;
  size_t buffer_size_ STOKER_GUARDED_BY(mu_) = 0;
  std::vector<Item> buffer_ STOKER_GUARDED_BY(mu_);
  bool input_done_ STOKER_GUARDED_BY(mu_) = false;
  std::deque<Item> window_ STOKER_GUARDED_BY(mu_);  // positions base_, base_ + 1, ...
  std::deque<bool> taken_ STOKER_GUARDED_BY(mu_);
  int64_t base_ STOKER_GUARDED_BY(mu_) = 0;
  bool output_done_ STOKER_GUARDED_BY(mu_) = false;
  // Names of the positions just below base_.
  std::deque<std::string> recent_names_ STOKER_GUARDED_BY(mu_);
  int64_t size_ = -1;  // declared length: this rank's share (constant, read without mu_)
  bool wrap_ STOKER_GUARDED_BY(mu_) = false;  // read the rank's shards again when they run out
  int pass_ STOKER_GUARDED_BY(mu_) = 0;  // passes over the rank's shards started after the first
  int64_t pass_samples_ STOKER_GUARDED_BY(mu_) = 0;  // samples read in the current pass
  int64_t padded_ STOKER_GUARDED_BY(mu_) = 0;  // repeats handed out (read in later passes)
  int64_t skip_ STOKER_GUARDED_BY(mu_) = 0;  // resumed: this rank's outputs consumed before
  int64_t skipped_ STOKER_GUARDED_BY(mu_) = 0;
};

class StreamShards : public Source {
 public:
  StreamShards(std::vector<std::string> urls, const ShardOptions& o,
               std::vector<std::string> classes)
      : fingerprint_(FingerprintOf(urls, o.length)),
        urls_(std::move(urls)),
        classes_(std::move(classes)),
        options_(WithCacheCounters(o)),
        record_(!o.spec.fields.empty()),
        schema_(record_ ? ShardSchema(o.spec.fields).value() : Schema::ImageLabel()),
        pool_(std::make_shared<BufferPool>(static_cast<size_t>(std::max(0, o.shuffle_buffer)) + 64 +
                                           32 * static_cast<size_t>(std::max(1, o.concurrent_shards)))) {}
  int64_t size() const override { return options_.length > 0 ? options_.length : -1; }
  Schema schema() const override { return schema_; }
  uint64_t Fingerprint() const override { return fingerprint_; }
  int64_t truncated_shards() const override {
    return truncated_->load(std::memory_order_relaxed);
  }
  ShardCacheUse shard_cache() const override {
    ShardCacheUse u;
    u.enabled = !options_.cache_dir.empty() || !options_.stream.cache_dir.empty();
    if (!u.enabled) return u;
    const ShardCacheCounters& c = *options_.stream.cache_counters;
    u.capacity = options_.stream.cache_bytes;
    u.downloads = c.downloads.load(std::memory_order_relaxed);
    u.hits = c.hits.load(std::memory_order_relaxed);
    u.largest_bytes = c.largest_bytes.load(std::memory_order_relaxed);
    u.unvalidated = c.unvalidated.load(std::memory_order_relaxed);
    u.unvalidated_objects = c.UnvalidatedObjects();
    u.concurrent_shards = std::max(1, options_.concurrent_shards);
    return u;
  }
  std::vector<std::string> classes() const override { return classes_; }
  std::string Describe() const override {
    return "Shards(" + std::to_string(urls_.size()) + " shards, stream" +
           (urls_.empty() ? "" : ", " + urls_[0] + " ...") + ")";
  }
  StatusOr<std::unique_ptr<EpochReader>> StartEpoch(const EpochSpec& spec) override {
    if (spec.world_size < 1 || spec.rank < 0 || spec.rank >= spec.world_size) {
      return InvalidArgumentError("rank " + std::to_string(spec.rank) +
                                  " is not in [0, world_size " +
                                  std::to_string(spec.world_size) + ")");
    }
    if (spec.world_size > 1 && urls_.size() < static_cast<size_t>(spec.world_size)) {
      return InvalidArgumentError(
          "Shards in stream mode split whole shards across ranks: " +
          std::to_string(urls_.size()) + " shards cannot feed " +
          std::to_string(spec.world_size) + " ranks; write more shards (at least one per "
          "rank, ideally many) or use mode=\"indexed\" for local .tar shards");
    }
    return std::unique_ptr<EpochReader>(
        new StreamReader(&urls_, &options_, record_ ? &schema_ : nullptr, spec, pool_,
                         truncated_));
  }

 private:
  static ShardOptions WithCacheCounters(ShardOptions o) {
    if (o.stream.cache_counters == nullptr) {
      o.stream.cache_counters = std::make_shared<ShardCacheCounters>();
    }
    return o;
  }

  // The declared length, the shard names relative to where they lie (a
  // local directory, a URL's path) and the local shards' sizes: the same
  // shards staged or mounted elsewhere have the same fingerprint.
  static uint64_t FingerprintOf(const std::vector<std::string>& urls, int64_t length) {
    uint64_t h = FingerprintNames(static_cast<uint64_t>(length > 0 ? length : -1), urls);
    for (const std::string& u : urls) {
      struct stat st;
      const bool local = !IsRemoteUrl(u) && ::stat(u.c_str(), &st) == 0;
      h = Mix64(h ^ (local ? static_cast<uint64_t>(st.st_size) : ~uint64_t{0}));
    }
    return h;
  }

  const uint64_t fingerprint_;  // computed once, at construction
  const std::vector<std::string> urls_;
  const std::vector<std::string> classes_;
  const ShardOptions options_;
  const bool record_;    // options_.spec.fields: records of schema_
  const Schema schema_;  // checked by OpenShards before construction
  const std::shared_ptr<BufferPool> pool_;
  const std::shared_ptr<std::atomic<int64_t>> truncated_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace

// Class names from the classes.json that `stoker convert` writes beside the
// shards (src/convert/convert.h), looked for in the first shard's directory
// (local shards only); none when the file is absent.
StatusOr<std::vector<std::string>> ReadShardClasses(const std::vector<std::string>& urls) {
  std::vector<std::string> classes;
  if (urls.empty() || IsRemoteUrl(urls[0])) return classes;
  const size_t slash = urls[0].find_last_of('/');
  const std::string path =
      (slash == std::string::npos ? std::string(".") : urls[0].substr(0, slash)) + "/classes.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return classes;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!ParseJsonStringArray(text, &classes)) {
    return DataLossError(path + ": not a JSON array of class names");
  }
  return classes;
}

StatusOr<std::vector<std::string>> ExpandBraces(const std::string& pattern) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) return std::vector<std::string>{pattern};
  const size_t close = pattern.find('}', open);
  if (close == std::string::npos) {
    return InvalidArgumentError("unbalanced '{' in shard pattern '" + pattern + "'");
  }
  const std::string head = pattern.substr(0, open);
  const std::string body = pattern.substr(open + 1, close - open - 1);
  auto tails = ExpandBraces(pattern.substr(close + 1));
  if (!tails.ok()) return tails.status();
  std::vector<std::string> parts;
  const size_t dots = body.find("..");
  if (dots != std::string::npos && AllDigits(body.substr(0, dots)) &&
      AllDigits(body.substr(dots + 2))) {
    const std::string lo_s = body.substr(0, dots), hi_s = body.substr(dots + 2);
    if (lo_s.size() > 18 || hi_s.size() > 18) {
      return InvalidArgumentError("brace range too large in '" + pattern + "'");
    }
    const int64_t lo = std::stoll(lo_s), hi = std::stoll(hi_s);
    if (hi < lo) return InvalidArgumentError("empty brace range in '" + pattern + "'");
    if (hi - lo >= kMaxShardNames) {
      return InvalidArgumentError("brace range in '" + pattern + "' names " +
                                  std::to_string(hi - lo + 1) + " shards, more than the limit of " +
                                  std::to_string(kMaxShardNames));
    }
    const size_t width = lo_s.size() > 1 && lo_s[0] == '0' ? lo_s.size() : 0;
    for (int64_t v = lo; v <= hi; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      parts.push_back(std::move(s));
    }
  } else if (body.find(',') != std::string::npos) {
    size_t start = 0;
    for (;;) {
      const size_t comma = body.find(',', start);
      parts.push_back(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else {
    parts.push_back("{" + body + "}");  // not a brace pattern: literal
  }
  const uint64_t total = static_cast<uint64_t>(parts.size()) * tails.value().size();
  if (total > static_cast<uint64_t>(kMaxShardNames)) {
    return InvalidArgumentError("shard pattern '" + pattern + "' names " + std::to_string(total) +
                                " shards, more than the limit of " +
                                std::to_string(kMaxShardNames));
  }
  std::vector<std::string> out;
  out.reserve(total);
  for (const std::string& p : parts) {
    for (const std::string& t : tails.value()) out.push_back(head + p + t);
  }
  return out;
}

StatusOr<std::vector<std::string>> ExpandShardPatterns(const std::vector<std::string>& patterns,
                                                       const StreamOptions& stream) {
  if (patterns.empty()) return InvalidArgumentError("no shard patterns given");
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    auto expanded = ExpandBraces(pattern);
    if (!expanded.ok()) return expanded.status();
    if (out.size() + expanded.value().size() > static_cast<size_t>(kMaxShardNames)) {
      return InvalidArgumentError("the shard patterns name more than " +
                                  std::to_string(kMaxShardNames) + " shards");
    }
    for (std::string p : expanded.value()) {
      if (IsS3Url(p)) {
        STOKER_ASSIGN_OR_RETURN(std::vector<std::string> objects, ExpandS3Pattern(p, stream));
        out.insert(out.end(), objects.begin(), objects.end());
        continue;
      }
      if (IsRemoteUrl(p)) {
        out.push_back(p);
        continue;
      }
      const size_t scheme = p.find("://");
      if (scheme != std::string::npos && scheme > 0 &&
          p.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
              scheme) {
        const std::string name = p.substr(0, scheme);
        if (name != "file") {
          return InvalidArgumentError("shard pattern '" + pattern + "': URL scheme '" + name +
                                      "://' is not supported (local paths, file://, http://, "
                                      "https:// and s3:// are)");
        }
        p = p.substr(scheme + 3);  // file:///data/x.tar -> /data/x.tar
        if (p.empty() || p[0] != '/') {
          return InvalidArgumentError("shard pattern '" + pattern +
                                      "': a file:// URL needs an absolute path (file:///...)");
        }
      }
      if (p.find_first_of("*?[") != std::string::npos) {
        glob_t g;
        const int rc = ::glob(p.c_str(), 0, nullptr, &g);
        if (rc == GLOB_NOMATCH) {
          ::globfree(&g);
          return NotFoundError("shard pattern '" + pattern + "': nothing matches " + p);
        }
        if (rc != 0) {
          ::globfree(&g);
          return IoError("shard pattern '" + pattern + "': glob failed on " + p);
        }
        std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + g.gl_pathc);
        ::globfree(&g);
        std::sort(matches.begin(), matches.end());
        out.insert(out.end(), matches.begin(), matches.end());
        continue;
      }
      struct stat st;
      if (::stat(p.c_str(), &st) != 0) {
        return NotFoundError("shard pattern '" + pattern + "': " + p + ": " + std::strerror(errno));
      }
      out.push_back(p);
    }
  }
  return out;
}

StatusOr<std::shared_ptr<Source>> OpenShards(const ShardOptions& options) {
  if (!options.spec.fields.empty()) {
    STOKER_RETURN_IF_ERROR(ShardSchema(options.spec.fields).status());
  } else if (options.spec.image_exts.empty()) {
    return InvalidArgumentError("Shards: no image extension given (e.g. image=\"jpg;png;jpeg\")");
  }
  if (options.shuffle_buffer < 0) return InvalidArgumentError("shuffle_buffer must be >= 0");
  if (options.concurrent_shards < 1) return InvalidArgumentError("concurrent_shards must be >= 1");
  if (options.length < 0) return InvalidArgumentError("length must be >= 0 (0: unknown)");
  auto urls = ExpandShardPatterns(options.patterns, options.stream);
  if (!urls.ok()) return urls.status();
  bool indexable = true;
  for (const std::string& u : urls.value()) {
    if (IsRemoteUrl(u) || !EndsWith(u, ".tar")) indexable = false;
  }
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> classes, ReadShardClasses(urls.value()));
  ShardMode mode = options.mode;
  if (mode == ShardMode::kAuto) mode = indexable ? ShardMode::kIndexed : ShardMode::kStream;
  if (mode == ShardMode::kIndexed) {
    if (!indexable) {
      return InvalidArgumentError(
          "Shards: mode=\"indexed\" needs local uncompressed .tar shards; use mode=\"stream\" for "
          "compressed or remote shards");
    }
    return IndexedShards::Open(urls.value(), options, std::move(classes));
  }
  return std::shared_ptr<Source>(
      new StreamShards(std::move(urls).value(), options, std::move(classes)));
}

}  // namespace stoker
