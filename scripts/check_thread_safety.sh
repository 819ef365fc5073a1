#!/usr/bin/env bash
# Proves that clang's thread-safety analysis runs on stoker's lock annotations
# (include/stoker/thread_annotations.h, include/stoker/mutex.h): a correctly
# locked snippet must compile with -Wthread-safety -Werror=thread-safety, and
# each deliberately wrong snippet (a guarded member read without its lock, a
# REQUIRES function called without it, a member read after MutexLock::Unlock,
# a CondVar wait without the mutex) must be refused with the analysis' error.
# With GCC the annotations must expand to nothing: every snippet compiles.
#   scripts/check_thread_safety.sh [CLANGXX]   (default: clang++; GCC: g++ if present)
# Exit 0 when all of that holds, 1 otherwise. `make check-thread-safety` and the
# ctest entry thread_safety_self_test run it.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLANGXX=${1:-clang++}
if ! command -v "$CLANGXX" >/dev/null 2>&1; then
  echo "check_thread_safety: $CLANGXX not found (scripts/install-deps.sh installs clang)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FLAGS=(-std=c++20 -fsyntax-only -Wall -Wextra -Wthread-safety -Werror=thread-safety -I"$ROOT/include")

cat > "$TMP/common.h" <<'CC'
#include <chrono>
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"
class Counter {
 public:
  void Add() STOKER_LOCKS_EXCLUDED(mu_);
  int Wait();
  int Bad();
 private:
  void AddLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ++n_; }
  stoker::Mutex mu_;
  stoker::CondVar cv_;
  int n_ STOKER_GUARDED_BY(mu_) = 0;
};
void Counter::Add() {
  stoker::MutexLock lock(&mu_);
  AddLocked();
  cv_.SignalAll();
}
int Counter::Wait() {
  stoker::MutexLock lock(&mu_);
  while (n_ == 0) cv_.Wait(&mu_);
  lock.Unlock();
  lock.Lock();
  if (!cv_.WaitFor(&mu_, std::chrono::milliseconds(1))) ++n_;
  return n_;
}
CC
# name | body of Counter::Bad | the error clang must give
CASES=(
  "good|stoker::MutexLock lock(&mu_); return n_;|"
  "unlocked_read|return n_;|reading variable 'n_' requires holding mutex 'mu_'"
  "unlocked_call|AddLocked(); return 0;|calling function 'AddLocked' requires holding mutex 'mu_'"
  "read_after_unlock|stoker::MutexLock lock(&mu_); lock.Unlock(); return n_;|reading variable 'n_' requires holding mutex 'mu_'"
  "wait_unlocked|cv_.Wait(&mu_); return 0;|calling function 'Wait' requires holding mutex 'mu_'"
  "double_lock|stoker::MutexLock a(&mu_); stoker::MutexLock b(&mu_); return n_;|acquiring mutex 'mu_' that is already held"
)
fail=0
for c in "${CASES[@]}"; do
  IFS='|' read -r name body want <<<"$c"
  printf '#include "common.h"\nint Counter::Bad() { %s }\n' "$body" > "$TMP/$name.cc"
  out=$("$CLANGXX" "${FLAGS[@]}" "$TMP/$name.cc" 2>&1); rc=$?
  if [[ -z "$want" ]]; then
    if [[ $rc -ne 0 ]]; then echo "check_thread_safety: $name must compile:"; echo "$out"; fail=1; fi
  elif [[ $rc -eq 0 ]]; then
    echo "check_thread_safety: $name compiled, but the analysis must refuse it"; fail=1
  elif ! grep -qF -- "$want" <<<"$out" || ! grep -q -- "-Werror,-Wthread-safety" <<<"$out"; then
    echo "check_thread_safety: $name failed, but not with \"$want\" [-Werror,-Wthread-safety...]:"
    echo "$out"; fail=1
  fi
  # Elsewhere the annotations are no-ops: GCC takes every snippet.
  if command -v g++ >/dev/null 2>&1 &&
     ! g++ -std=c++20 -fsyntax-only -I"$ROOT/include" "$TMP/$name.cc" 2>"$TMP/gcc.log"; then
    echo "check_thread_safety: g++ refused $name:"; cat "$TMP/gcc.log"; fail=1
  fi
done
[[ $fail -eq 0 ]] && echo "check_thread_safety: ok (${#CASES[@]} snippets, $("$CLANGXX" --version | head -1))"
exit $fail
