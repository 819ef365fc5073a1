// Copyright 2026 The stoker Authors.
//
// MixSource: several sources read as one, with weights -- what tf.data's
// sample_from_datasets, WebDataset's RandomMix and MosaicML's
// Stream(proportion=) do, as a Source the Loader reads like any other:
//
//   MixOptions o;
//   o.weights = {0.7, 0.3};
//   o.mode = MixOptions::Mode::kFirstExhausted;
//   auto mix = MixSource::Open({web, curated}, o).value();
//   auto loader = Loader::Create(mix, loader_options).value();
//   ... MixSource::SourceOf(batch->ids()[i])   // 0 (web) or 1 (curated)
//
// The epoch. Before any sample is read, the epoch's whole sequence -- which
// source each position reads, and which of that source's samples -- is drawn
// from (seed, epoch) and the options alone. So the output is identical for
// any thread count, ranks split it as they split any epoch (every rank
// computes the same sequence and takes its positions: RankSlice), a resume
// at another world size continues it exactly, skip, the caches and the
// cross-epoch prefetch work as for one source. How long an epoch is and how
// it draws (`mode`); p_i is source i's weight over the weights' sum:
//
//  - kAllExhausted (default): every sample of every source once. The
//    sources are drawn at the rates p_i, each draw among the sources that
//    still have samples (one that runs out leaves the mix and the others go
//    on at their relative rates). tf.data's sample_from_datasets with
//    stop_on_empty_dataset=False, WebDataset's RandomMix(longest=True).
//  - kFirstExhausted: the epoch ends where the first source, relative to its
//    weight, is used up: it has L samples, the most for which every source's
//    share of L (the schedule below) fits in its size; no sample twice. The
//    shares are fixed, not random: about L p_i each. (tf.data's
//    stop_on_empty_dataset=True and RandomMix(longest=False) stop at a
//    random point instead: the first draw that picks an empty source.)
//  - kNumSamples: `num_samples` samples, source i its share of them (about
//    num_samples * p_i); a source whose share exceeds its size is read
//    again, pass after pass (each pass a new permutation when shuffled):
//    up- or down-sampling to fixed proportions.
//  - kReplacement: `num_samples` (default: the sizes' sum) independent
//    draws: a source with probability p_i, then one of its samples
//    uniformly. Random shares (the counts are multinomial).
// The schedule: a fixed sequence of sources in which every prefix holds
// each source's share within one sample of its quota -- after N samples,
// |count_i - N p_i| <= 1 - 1/(2m - 2) for m sources (Tijdeman's chairman
// assignment, 1980). Source i's share of N samples is its count among the
// schedule's first N.
//
// Order. With LoaderOptions::shuffle, each source's samples come in a
// permutation drawn from (seed, epoch, source), and the sources interleave
// at random (kAllExhausted: draws at the rates p_i; kFirstExhausted and
// kNumSamples: a uniform shuffle of the schedule's N choices, so the shares
// stay exact). Without shuffle nothing is random (but kReplacement's draws,
// which are random by nature, as for WeightedSampler): each source in its
// own order, interleaved in the schedule's order, so equal weights alternate
// 0, 1, 0, 1, ... (kAllExhausted: when a source is used up, the schedule
// starts again over the others). The choices are redrawn every
// epoch (tf.data's rerandomize_each_iteration=True; its default, False,
// repeats epoch 0's choices).
//
// Sources. Children must be random access (ImageFolder, Npy, HDF5, indexed
// Shards), each with at least one sample, at most 127 of them: a stream's
// samples arrive in stream order, which a sequence drawn in advance cannot
// address exactly at every rank and after a resume at another world size
// (Open refuses it, naming it). A Mix is not a child of a Mix (list the
// sources in one Mix). LoaderOptions::sampler does not apply (the Mix draws
// its own epoch).
//
// Sample ids and the source of a sample. A sample of source i has id
// (i << kSourceShift) | its id in source i, so ids are unique across sources
// (they seed the augmentation; source 0's ids, and so its pixels, are those
// it has alone) and every batch tells where each of its samples came from
// (Batch ids; SourceOf, IdInSource).
//
// Labels (`labels`): kSame (default) requires every source to report the same
// class list (or all none: one integer label space, as with two .npy label
// arrays), and keeps labels; kUnion maps each source's labels by class name
// into the union of the class lists (the first source's classes, then each
// later source's new ones, in order; every source must name its classes);
// kPerSource keeps each source's labels unchanged and has no class list (the
// label means a class of the sample's own source: read SourceOf(id)). Sources
// whose class lists differ are refused under kSame, so a label is never read
// against another source's classes by accident.
//
// Ownership: the Mix keeps its children alive. Thread-safety: immutable
// after Open; as any Source (source.h). Errors: Open returns InvalidArgument
// naming the argument or the source at fault.
#ifndef STOKER_MIX_H_
#define STOKER_MIX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/source.h"
#include "stoker/status.h"

namespace stoker {

struct MixOptions {
  // One weight per source: finite and > 0, not necessarily normalised.
  // Empty: each source's size (every sample equally likely; with
  // kAllExhausted the sources are then spread evenly over the epoch).
  std::vector<double> weights;
  enum class Mode { kAllExhausted, kFirstExhausted, kNumSamples, kReplacement };
  Mode mode = Mode::kAllExhausted;
  // kNumSamples: samples per epoch (> 0, required). kReplacement: draws per
  // epoch (-1: the sources' sizes summed). Other modes: -1.
  int64_t num_samples = -1;
  enum class Labels { kSame, kUnion, kPerSource };
  Labels labels = Labels::kSame;
};

class MixSource : public Source {
 public:
  // The source index sits in bits 56..62 of a sample id.
  static constexpr int kSourceShift = 56;
  static constexpr int kMaxSources = 127;

  static StatusOr<std::shared_ptr<MixSource>> Open(std::vector<std::shared_ptr<Source>> sources,
                                                   const MixOptions& options = MixOptions());

  // The source a sample id of a Mix names, and the sample's id there.
  static int SourceOf(int64_t id) { return static_cast<int>(id >> kSourceShift); }
  static int64_t IdInSource(int64_t id) { return id & ((int64_t{1} << kSourceShift) - 1); }

  virtual int num_sources() const = 0;
  virtual std::shared_ptr<Source> source(int i) const = 0;
  virtual const MixOptions& options() const = 0;
  // The weights normalised to sum to 1 (p_i above).
  virtual const std::vector<double>& probabilities() const = 0;
  // Samples each source gives per epoch, fixed by the options
  // (kAllExhausted: the sizes; kFirstExhausted, kNumSamples: the shares);
  // kReplacement: the expected counts, rounded down.
  virtual std::vector<int64_t> SamplesPerSource() const = 0;
};

}  // namespace stoker

#endif  // STOKER_MIX_H_
