// Copyright 2026 The stoker Authors.
//
// libFuzzer target: the tar shard reader (libarchive with the gzip/zstd
// filters, member grouping by key, label parsing) and the tar index decoder.
//
// The input is read as a shard twice: with images read (streaming) and with
// offsets only (indexing); both must agree on the samples they find, every
// offset must lie inside the input when it is an uncompressed tar, and the
// reader must end after at most one error that ends the shard. The input is
// also decoded as a cached index file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/stream.h"
#include "source/tar_index.h"
#include "source/tar_reader.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Found {
  std::vector<std::string> keys;
  std::vector<int64_t> sizes;
  std::vector<int64_t> offsets;
  std::vector<std::vector<uint8_t>> bytes;
};

Found ReadShard(const uint8_t* data, size_t size, bool read_images) {
  using namespace stoker;
  SampleSpec spec;
  spec.max_member_bytes = int64_t{16} << 20;  // decompression bombs are errors, not OOM
  Found f;
  auto reader = ShardSampleReader::FromStream(
      MemoryStream(std::vector<uint8_t>(data, data + size), "fuzz.tar", 1 + size % 4093), spec,
      read_images);
  if (!reader.ok()) return f;
  for (int i = 0; i < 100000; ++i) {
    ShardSample s;
    bool end = false;
    Status st = reader.value()->Next(&s, &end);
    if (!st.ok()) {
      Check(st.message().rfind("fuzz.tar", 0) == 0);  // errors name the shard
      continue;
    }
    if (end) return f;
    Check(s.data_size >= 0 && s.data_offset >= 0);
    if (read_images) Check(static_cast<int64_t>(s.bytes.size()) == s.data_size);
    f.keys.push_back(s.key);
    f.sizes.push_back(s.data_size);
    f.offsets.push_back(s.data_offset);
    f.bytes.push_back(std::move(s.bytes));
  }
  __builtin_trap();  // the reader never ended
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const Found streamed = ReadShard(data, size, true);
  const Found indexed = ReadShard(data, size, false);
  Check(streamed.keys == indexed.keys);
  Check(streamed.sizes == indexed.sizes);
  Check(streamed.offsets == indexed.offsets);
  // An uncompressed tar: the offsets address the member bytes in the input.
  const bool compressed = size >= 4 && ((data[0] == 0x1f && data[1] == 0x8b) ||
                                        (data[0] == 0x28 && data[1] == 0xb5 && data[2] == 0x2f));
  if (!compressed) {
    for (size_t i = 0; i < streamed.keys.size(); ++i) {
      Check(streamed.offsets[i] + streamed.sizes[i] <= static_cast<int64_t>(size));
      Check(std::equal(streamed.bytes[i].begin(), streamed.bytes[i].end(),
                       data + streamed.offsets[i]));
    }
  }
  auto index = DecodeTarIndex(std::string(reinterpret_cast<const char*>(data), size));
  if (index.ok()) {
    for (const TarIndexEntry& e : index.value().entries) {
      Check(e.offset == -1 || e.offset + e.size <= static_cast<int64_t>(index.value().shard_size));
    }
    Check(DecodeTarIndex(EncodeTarIndex(index.value())).ok());
  }
  return 0;
}
