// Copyright 2026 The stoker Authors.
#include "pipeline/skip_ledger.h"

#include <utility>

namespace stoker {

std::string SkipLedger::FileOf(int64_t key, const std::string& name) {
  return key >= 0 ? std::to_string(key) : "#" + name;
}

void SkipLedger::Note(std::string file, int64_t position, const Status& error, bool prefetch) {
  MutexLock lock(&mu_);
  files_total_.insert(file);
  Record& r = prefetch ? prefetch_ : epoch_;
  r.files.insert(std::move(file));
  if (r.first.ok() || position < r.first_position) {
    r.first = error;
    r.first_position = position;
  }
}

void SkipLedger::BeginEpoch(bool adopt_prefetch) {
  MutexLock lock(&mu_);
  epoch_ = adopt_prefetch ? std::move(prefetch_) : Record();
  prefetch_ = Record();
}

Status SkipLedger::FirstFailure() const {
  MutexLock lock(&mu_);
  return epoch_.first;
}

int64_t SkipLedger::files_total() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(files_total_.size());
}

int64_t SkipLedger::files_epoch() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(epoch_.files.size());
}

}  // namespace stoker
