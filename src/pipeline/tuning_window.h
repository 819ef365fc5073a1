// Copyright 2026 The stoker Authors.
//
// TuningWindow: turns the consumer's stream of taken batches into the
// windows a Tuner observes (src/pipeline/tuner.h). A window closes after
// `min_batches` batches and at least 0.1 s; windows span epochs, and the gap
// before an epoch's first batch (the pipeline restarting) is left out.
//
// Not thread-safe: the Loader calls it under its mutex, from Next().
#ifndef STOKER_PIPELINE_TUNING_WINDOW_H_
#define STOKER_PIPELINE_TUNING_WINDOW_H_

#include <cstdint>
#include <optional>

#include "pipeline/tuner.h"

namespace stoker {

class TuningWindow {
 public:
  explicit TuningWindow(int min_batches) : min_batches_(min_batches < 1 ? 1 : min_batches) {}

  // A batch of `images` was taken at `now_ns` after the consumer waited
  // `waited_ns` for it; `consumer_wait_ns` is the consumer's total wait so
  // far (including this one). `epoch_restart`: the first batch since
  // Start(). Returns the window to feed the tuner when one closes.
  std::optional<TunerWindow> OnBatch(int64_t now_ns, int images, int64_t waited_ns,
                                     int64_t consumer_wait_ns, bool epoch_restart);

 private:
  const int min_batches_;
  int64_t start_ns_ = 0;        // 0: no window open
  int64_t images_ = 0;
  int64_t batches_ = 0;
  int64_t wait_at_start_ns_ = 0;
  int64_t last_batch_ns_ = 0;
};

}  // namespace stoker

#endif  // STOKER_PIPELINE_TUNING_WINDOW_H_
