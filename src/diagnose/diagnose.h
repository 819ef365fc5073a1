// Copyright 2026 The stoker Authors.
//
// Internal helpers of the diagnosis; the public API (Diagnose, Diagnosis,
// FormatDiagnosis) is in include/stoker/diagnose.h.
#ifndef STOKER_DIAGNOSE_DIAGNOSE_H_
#define STOKER_DIAGNOSE_DIAGNOSE_H_

#include "stoker/diagnose.h"
#include "stoker/loader.h"

namespace stoker {

// Takes the next batch of a started loader, starting the next epoch when
// one ends (measurements run for a number of batches, not epochs). An epoch
// that ends before its first batch is an error (DataLoss), not a spin.
Status NextBatchAcrossEpochs(Loader* loader, BatchPtr* batch);

// Who used the CPU over `wall` seconds of rounds: `cores` usable here, the
// machine's `machine_cores`, this process's and the machine's busy CPU
// seconds, the cores the step used alone, the step's wait fraction. The
// cores are saturated at >= 90% busy (the machine's count only when it is
// ours whole); contended when saturated and other processes plus the step's
// own threads (for the time it runs) take >= max(0.5, cores / 4). Pure.
// The decode-video stage's split (demux, seek, decode, convert, transforms)
// and frame counts, as one line; and that line with the advice for a
// loader whose video decoding is the bottleneck (workers x codec_threads
// against the cores, frames decoded per delivered frame). Pure.
std::string VideoStageLine(const VideoStageStats& v);
std::string VideoAdvice(const VideoStageStats& v, int threads, int codec_threads,
                        const CpuUse& cpu);

CpuUse JudgeCpuUse(int cores, int machine_cores, double wall, double process_cpu_s,
                   double machine_busy_s, double step_alone, double wait);

}  // namespace stoker

#endif  // STOKER_DIAGNOSE_DIAGNOSE_H_
