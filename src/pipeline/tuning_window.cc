// Copyright 2026 The stoker Authors.
#include "pipeline/tuning_window.h"

namespace stoker {

std::optional<TunerWindow> TuningWindow::OnBatch(int64_t now_ns, int images, int64_t waited_ns,
                                                 int64_t consumer_wait_ns, bool epoch_restart) {
  if (start_ns_ == 0) {
    start_ns_ = now_ns;
    images_ = batches_ = 0;
    wait_at_start_ns_ = consumer_wait_ns;
    last_batch_ns_ = now_ns;
    return std::nullopt;
  }
  if (epoch_restart) {  // shift the window past the restart gap and its wait
    start_ns_ += now_ns - last_batch_ns_;
    wait_at_start_ns_ += waited_ns;
    last_batch_ns_ = now_ns;
    return std::nullopt;
  }
  last_batch_ns_ = now_ns;
  images_ += images;
  ++batches_;
  const int64_t elapsed = now_ns - start_ns_;
  if (batches_ < min_batches_ || elapsed < 100'000'000) return std::nullopt;
  TunerWindow w;
  w.seconds = elapsed * 1e-9;
  w.images = images_;
  w.consumer_wait_s = (consumer_wait_ns - wait_at_start_ns_) * 1e-9;
  start_ns_ = now_ns;
  images_ = batches_ = 0;
  wait_at_start_ns_ = consumer_wait_ns;
  return w;
}

}  // namespace stoker
