// Copyright 2026 The stoker Authors.
#include "source/tar_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/rng.h"
#include "io/cache_file.h"
#include "io/file.h"

namespace stoker {
namespace {

// Version 2 added the inode, ctime and content fingerprint;
// version 3 marks members past the shard's end and shards without their
// end-of-archive blocks as bad entries, so indexes
// built before are rebuilt; version 4 adds each entry's record fields (the
// (offset, size) of every field's member); version 5 adds the name of each
// field's member past the key (errors name the member).
constexpr char kMagic[8] = {'S', 'T', 'K', 'T', 'I', 'D', 'X', '5'};
std::string SpecText(const SampleSpec& spec) {
  std::string out;
  for (const std::string& e : spec.image_exts) out += e + ";";
  out += "|" + spec.label_ext;
  for (const ShardField& f : spec.fields) {
    out += "|" + f.name + "=";
    for (const std::string& e : f.exts) out += e + ";";
  }
  return out;
}

}  // namespace

std::string TarIndexPath(const std::string& shard, const std::string& cache_dir) {
  if (!cache_dir.empty()) return CachePath(cache_dir, shard) + ".idx";
  return shard + ".idx";
}

std::string EncodeTarIndex(const TarIndex& index) {
  std::string out(kMagic, sizeof(kMagic));
  PutIdentity(&out, FileIdentity{index.shard_size, index.shard_mtime_ns, index.shard_ino,
                                 index.shard_ctime_ns, index.shard_fingerprint});
  PutU32(&out, static_cast<uint32_t>(index.spec.size()));
  out += index.spec;
  PutU64(&out, index.entries.size());
  for (const TarIndexEntry& e : index.entries) {
    PutU64(&out, static_cast<uint64_t>(e.offset));
    PutU64(&out, static_cast<uint64_t>(e.size));
    PutU64(&out, static_cast<uint64_t>(e.label));
    PutU32(&out, static_cast<uint32_t>(e.key.size()));
    PutU32(&out, static_cast<uint32_t>(e.member.size()));
    out += e.key;
    out += e.member;
    PutU32(&out, static_cast<uint32_t>(e.fields.size()));
    for (const auto& f : e.fields) {
      PutU64(&out, static_cast<uint64_t>(f.first));
      PutU64(&out, static_cast<uint64_t>(f.second));
    }
    PutU32(&out, static_cast<uint32_t>(e.field_suffixes.size()));
    out += e.field_suffixes;
  }
  return out;
}

StatusOr<TarIndex> DecodeTarIndex(const std::string& bytes) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return DataLossError("not a stoker tar index");
  }
  ByteCursor c(bytes, sizeof(kMagic));
  TarIndex index;
  FileIdentity id;
  uint64_t n = 0;
  uint32_t spec_size = 0;
  if (!c.GetIdentity(&id) || !c.Get32(&spec_size) || !c.GetString(spec_size, &index.spec) ||
      !c.Get(&n)) {
    return DataLossError("truncated tar index");
  }
  index.shard_size = id.size;
  index.shard_mtime_ns = id.mtime_ns;
  index.shard_ino = id.ino;
  index.shard_ctime_ns = id.ctime_ns;
  index.shard_fingerprint = id.fingerprint;
  if (n > bytes.size() / 32) return DataLossError("corrupt tar index (count)");
  index.entries.resize(n);
  for (TarIndexEntry& e : index.entries) {
    uint64_t off, size, label;
    uint32_t kn, mn, fn;
    if (!c.Get(&off) || !c.Get(&size) || !c.Get(&label) || !c.Get32(&kn) || !c.Get32(&mn) ||
        !c.GetString(kn, &e.key) || !c.GetString(mn, &e.member) || !c.Get32(&fn)) {
      return DataLossError("truncated tar index");
    }
    for (uint32_t k = 0; k < fn; ++k) {
      uint64_t foff, fsize;
      if (!c.Get(&foff) || !c.Get(&fsize)) return DataLossError("truncated tar index");
      const auto fo = static_cast<int64_t>(foff);
      const auto fs = static_cast<int64_t>(fsize);
      if (fo < 0 || fs < 0 || fo > static_cast<int64_t>(index.shard_size) - fs) {
        return DataLossError("corrupt tar index (field member outside the shard)");
      }
      e.fields.emplace_back(fo, fs);
    }
    uint32_t sn = 0;
    if (!c.Get32(&sn) || !c.GetString(sn, &e.field_suffixes)) {
      return DataLossError("truncated tar index");
    }
    if (std::count(e.field_suffixes.begin(), e.field_suffixes.end(), '\0') !=
        static_cast<std::ptrdiff_t>(fn)) {
      return DataLossError("corrupt tar index (field member names)");
    }
    e.offset = static_cast<int64_t>(off);
    e.size = static_cast<int64_t>(size);
    e.label = static_cast<int64_t>(label);
    const bool bad_sample = e.offset == -1 && e.size == 0;
    if (!bad_sample && (e.offset < 0 || e.size < 0 ||
                        e.offset > static_cast<int64_t>(index.shard_size) - e.size)) {
      return DataLossError("corrupt tar index (member outside the shard)");
    }
  }
  if (!c.done()) return DataLossError("corrupt tar index (trailing bytes)");
  return index;
}

StatusOr<TarIndex> LoadOrBuildTarIndex(const std::string& shard, const SampleSpec& spec,
                                       const std::string& cache_dir, bool* built) {
  if (built) *built = false;
  FileIdentity id;
  STOKER_RETURN_IF_ERROR(IdentifyFile(shard, &id));
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string fallback = TarIndexPath(shard, tmpdir && *tmpdir ? tmpdir : "/tmp");
  const std::string beside = TarIndexPath(shard, "");
  const std::string cached = cache_dir.empty() ? "" : TarIndexPath(shard, cache_dir);
  const std::string spec_text = SpecText(spec);
  std::vector<std::string> candidates = {beside, fallback};
  if (!cache_dir.empty()) candidates = {cached};
  for (const std::string& path : candidates) {
    std::ifstream f(path, std::ios::binary);
    if (!f) continue;
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    auto index = DecodeTarIndex(bytes);
    if (index.ok() && index.value().shard_size == id.size &&
        index.value().shard_mtime_ns == id.mtime_ns && index.value().shard_ino == id.ino &&
        index.value().shard_ctime_ns == id.ctime_ns &&
        index.value().shard_fingerprint == id.fingerprint && index.value().spec == spec_text) {
      return index;
    }
  }
  auto reader = ShardSampleReader::Open(shard, spec, StreamOptions(), /*read_images=*/false);
  if (!reader.ok()) return reader.status();
  TarIndex index;
  index.shard_size = id.size;
  index.shard_mtime_ns = id.mtime_ns;
  index.shard_ino = id.ino;
  index.shard_ctime_ns = id.ctime_ns;
  index.shard_fingerprint = id.fingerprint;
  index.spec = spec_text;
  ShardSample s;
  for (;;) {
    bool end = false;
    Status st = reader.value()->Next(&s, &end);
    if (!st.ok()) {  // kept as a bad sample: reading it reports this error
      TarIndexEntry e;
      e.offset = -1;
      e.member = st.message();
      index.entries.push_back(std::move(e));
      continue;
    }
    if (end) break;
    TarIndexEntry e;
    // The header's size is a claim the file does not back: a bad sample,
    // never a buffer of that size at read time.
    std::string past_end;
    auto check = [&](const std::string& member, int64_t offset, int64_t size) {
      if (past_end.empty() && offset > static_cast<int64_t>(id.size) - size) {
        past_end = shard + ": member " + member + ": declares " + std::to_string(size) +
                   " bytes, more than the " + std::to_string(id.size) +
                   "-byte shard holds (truncated or corrupt)";
      }
    };
    check(s.image_member, s.data_offset, s.data_size);
    for (size_t f = 0; f < spec.fields.size() && f < s.field_offsets.size(); ++f) {
      check(s.field_members[f], s.field_offsets[f], s.field_sizes[f]);
      e.fields.emplace_back(s.field_offsets[f], s.field_sizes[f]);
      // A member's name is its key, then the rest (SplitKey).
      const std::string& m = s.field_members[f];
      e.field_suffixes.append(m, std::min(s.key.size(), m.size()));
      e.field_suffixes.push_back('\0');
    }
    if (!past_end.empty()) {
      e = TarIndexEntry();
      e.offset = -1;
      e.member = past_end;
      index.entries.push_back(std::move(e));
      continue;
    }
    e.offset = s.data_offset;
    e.size = s.data_size;
    e.label = s.label;
    e.key = s.key;
    e.member = s.image_member;
    index.entries.push_back(std::move(e));
  }
  if (built) *built = true;
  const std::string bytes = EncodeTarIndex(index);
  if (cache_dir.empty()) {
    // Beside the shard; a read-only directory falls back to $TMPDIR.
    if (!WriteFileAtomically(beside, bytes)) WriteFileAtomically(fallback, bytes);
  } else {
    WriteFileAtomically(cached, bytes);
  }
  return index;
}

}  // namespace stoker
