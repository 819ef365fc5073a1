// Copyright 2026 The stoker Authors.
//
// The Loader tests' shared makers: small JPEG samples held in memory, and a
// consumer that records what an epoch delivered (ids, labels, batch sizes and
// every sample's bytes). The engine's tests, the source tests and the
// conformance suite (testing/conformance.h) use these instead of copies.
//
// Thread-safety: functions of their arguments; a Delivered is one consumer's.
// Errors: TakeBatches and RunEpoch stop at the first non-OK Status and keep
// it in Delivered::status (they record no test failure themselves);
// MakeLoader records a test failure when Loader::Create refuses.
#ifndef STOKER_TESTING_LOADER_FIXTURES_H_
#define STOKER_TESTING_LOADER_FIXTURES_H_

#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "source/memory_source.h"
#include "stoker/loader.h"

namespace stoker::testing {

// Sample i's size in JpegSamples: 24 + (5i mod 17) wide, 20 + (3i mod 13) high.
int JpegSampleWidth(int i);
int JpegSampleHeight(int i);

struct JpegSampleOptions {
  int labels = 5;      // sample i has label i % labels
  std::set<int> bad;   // these samples hold 4 bytes that are no image
  // Name bad samples "mem/bad<i>.jpg" instead of "mem/<i>.jpg".
  bool rename_bad = false;
};

// `n` JPEGs (quality 90, 4:4:4) of MakePixels(w, h, i), named "mem/<i>.jpg".
std::vector<MemorySample> JpegSamples(int n, const JpegSampleOptions& options = {});

// What the consumer got, in delivery order.
struct Delivered {
  std::vector<int64_t> ids;
  std::vector<int64_t> labels;
  std::vector<int> sizes;                        // batch sizes
  std::vector<std::vector<uint8_t>> samples;     // each sample's bytes (image; a clip's "video")
  std::vector<std::array<int64_t, 3>> dims;      // each sample's dims
  std::vector<uint8_t> pixels;                   // every sample's bytes, concatenated
  Status status;                                 // the first error, if any

  int batches() const { return static_cast<int>(sizes.size()); }
  // Sample id -> its bytes (the last delivery of that id).
  std::map<int64_t, std::vector<uint8_t>> ById() const;
  // Label -> its bytes (the last delivery of that label).
  std::map<int64_t, std::vector<uint8_t>> ByLabel() const;
};

// Sample i's label: the batch's label, or, for label-less sources of
// targets, the first entry of its "labels" field (Coco) or the first pixel of
// its "mask" field (SegmentationFolder), -1 when none.
int64_t SampleLabel(const Batch& b, int i);

// Takes up to `max_batches` batches of the epoch already started, appending
// them to `*out`; stops at the epoch's end or the first error.
void TakeBatches(Loader* loader, Delivered* out, int max_batches = INT_MAX);

// Start() and every batch of the epoch.
Delivered RunEpoch(Loader* loader);

// Small shuffled, augmented uint8 batches for engine tests: batch 4,
// RandomResizedCrop(8, 8) + RandomHorizontalFlip, seed `seed`, rank `rank`
// of `world_size`.
LoaderOptions SmallAugmentedOptions(int threads, uint64_t seed, int rank = 0,
                                    int world_size = 1);

// Loader::Create, recording a test failure (and returning null) on error.
std::unique_ptr<Loader> MakeLoader(std::shared_ptr<Source> source, const LoaderOptions& options);

// A host pool of imageless record batches of `batch_size` samples and no
// fields, for the engine's units that only hand buffers around (the ring,
// the next epoch's prefetch).
std::shared_ptr<BatchPool> BareBatchPool(int batch_size);

}  // namespace stoker::testing

#endif  // STOKER_TESTING_LOADER_FIXTURES_H_
