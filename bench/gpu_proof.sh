#!/usr/bin/env bash
# stoker's GPU proof: everything a first GPU run must show, in stages that each fit one
# 10-minute device command, written into $OUT (docs/gpu.md, "First run on a GPU machine").
#
#   bench/gpu_proof.sh [--dry-run] [--out DIR] [--build DIR] [--python-path DIR]
#                      [--data DIR] [--quick] STAGE... [-- ARGS for bench/gpu_proof.py]
#                      (ARGS with one stage only: each stage has its own, see its --help)
#
# STAGE: tests copy train scaling decode, or all (the five in that order).
#   tests    the GPU tests, none skipped (cuda_test and device_test from the C++ build,
#            python/tests/test_device.py and test_device_records.py), then cuda_test under
#            compute-sanitizer memcheck
#            and racecheck;
#   copy, train, scaling, decode: bench/gpu_proof.py (its docstring says what each does).
# Output: OUT/<stage>.json and OUT/<stage>.md per stage, OUT/summary.md for all stages
# found in OUT, raw logs in OUT/tests/, the set-up's record in OUT/setup/ when the build
# came from scripts/gpu-machine-setup.sh. A stage that fails to run exits non-zero; a
# missed target is a FAIL line in the summary, not an error.
#
# Defaults: OUT=$OUT (the device tool's output folder) else ./gpu-proof-out; --build
# build-gpu/stoker (scripts/gpu-machine-setup.sh's); --python-path python (where the set-up
# puts the extension); --data BUILD/proof-data (made by `stoker synth` once, 10,000
# photo-like 500x375 JPEGs, reused by later calls); PYTHON=$PYTHON, else
# /opt/torch/.venv/bin/python, else /usr/bin/python3. --quick: fewer steps (a first look).
#
# --dry-run: no GPU needed. Every stage runs its plumbing here (arguments, stoker synth,
# the host fallback standing in for the device, output files, the summary writer) on a
# few tiny images, then checks the files it wrote (ctest's gpu_proof_dry_run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DRY=0
QUICK=0
OUT_DIR=${OUT:-$PWD/gpu-proof-out}
BUILD="$ROOT/build-gpu/stoker"
PYPATH="$ROOT/python"
DATA=""
STAGES=()
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) DRY=1; shift ;;
    --quick) QUICK=1; shift ;;
    --out) OUT_DIR=$2; shift 2 ;;
    --build) BUILD=$(realpath -m "$2"); shift 2 ;;
    --python-path) PYPATH=$(realpath -m "$2"); shift 2 ;;
    --data) DATA=$(realpath -m "$2"); shift 2 ;;
    all) STAGES+=(tests copy train scaling decode); shift ;;
    tests|copy|train|scaling|decode) STAGES+=("$1"); shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_proof: unknown argument $1 (stages: tests copy train scaling decode all)" >&2
       exit 2 ;;
  esac
done
[[ ${#STAGES[@]} -gt 0 ]] || { echo "gpu_proof: name a stage (tests copy train scaling decode all)" >&2; exit 2; }
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x /opt/torch/.venv/bin/python ]]; then PYTHON=/opt/torch/.venv/bin/python
  else PYTHON=/usr/bin/python3; fi
fi
OUT_DIR=$(realpath -m "$OUT_DIR")
[[ -n "$DATA" ]] || DATA="$BUILD/proof-data"
CLI="$BUILD/stoker"
[[ -x "$CLI" ]] || { echo "gpu_proof: no stoker CLI at $CLI (run scripts/gpu-machine-setup.sh, or pass --build)" >&2; exit 1; }
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PYPATH${PYTHONPATH:+:$PYTHONPATH}"
export STOKER_CLI="$CLI"
DRYARG=(); [[ $DRY -eq 1 ]] && DRYARG=(--dry-run)
QUICKARGS=()
say() { echo "== gpu_proof: $*" >&2; }

# The set-up's record, when there is one.
if [[ -f "$BUILD/../setup.json" ]]; then
  mkdir -p "$OUT_DIR/setup"
  cp "$BUILD/../setup.json" "$OUT_DIR/setup/"
  cp "$BUILD"/../logs/*.log "$OUT_DIR/setup/" 2>/dev/null || true
fi

run_tests_stage() {
  local raw="$OUT_DIR/tests" t
  local t0; t0=$(date +%s)
  rm -rf "$raw"; mkdir -p "$raw"
  for t in cuda_test device_test; do
    if [[ ! -x "$BUILD/src/$t" ]]; then
      echo "gpu_proof: $BUILD/src/$t is not built" >&2
      [[ $DRY -eq 1 ]] && continue  # a build without CUDA: the report says what is missing
      return 1
    fi
    say "$t"
    # A failing test is reported by tests-report (from the JSON), not fatal here.
    "$BUILD/src/$t" --gtest_output="json:$raw/$t.json" > "$raw/$t.log" 2>&1 || true
    tail -3 "$raw/$t.log" >&2
  done
  local sel=() py
  # The dry run only proves the plumbing: the GPU tests (skipped here) and one CPU test.
  [[ $DRY -eq 1 ]] && sel=(-k "gpu or cpu_unaffected")
  for py in test_device test_device_records; do  # records and targets on the device
    say "python/tests/$py.py"
    (cd "$ROOT" && "$PYTHON" -m pytest -q -rs -p no:cacheprovider "${sel[@]}" \
       --junitxml="$raw/$py.xml" "python/tests/$py.py") > "$raw/$py.log" 2>&1 || true
    tail -1 "$raw/$py.log" >&2
  done
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || true)
  for candidate in "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")" /usr/local/cuda/bin; do
    [[ -z "$sanitizer" && -x "$candidate/compute-sanitizer" ]] && sanitizer="$candidate/compute-sanitizer"
  done
  for tool in memcheck racecheck; do
    local args=(--tool "$tool" --error-exitcode 99)
    [[ $tool == memcheck ]] && args+=(--leak-check full)
    if [[ -n "$sanitizer" && $DRY -eq 0 ]]; then
      say "compute-sanitizer $tool cuda_test"
      timeout 150 "$sanitizer" "${args[@]}" "$BUILD/src/cuda_test" \
        --gtest_filter='DeviceStageGpuTest.*:EventPoolTest.*:DeviceLoaderGpuTest.*' \
        > "$raw/sanitizer-$tool.log" 2>&1 || echo "(exit $?)" >> "$raw/sanitizer-$tool.log"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$raw/sanitizer-$tool.log" >&2 || true
    elif [[ $DRY -eq 1 ]]; then
      # The command that would run, and a stand-in log in compute-sanitizer's format, so that
      # the report's parser is exercised.
      { echo "dry run: ${sanitizer:-compute-sanitizer} ${args[*]} $BUILD/src/cuda_test"
        echo "[  PASSED  ] 0 tests."
        if [[ $tool == racecheck ]]; then  # racecheck's own summary line, as on an H200
          echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
        else
          echo "========= ERROR SUMMARY: 0 errors"
        fi; } > "$raw/sanitizer-$tool.log"
    else
      echo "compute-sanitizer not found" > "$raw/sanitizer-$tool.log"
    fi
  done
  "$PYTHON" "$ROOT/bench/gpu_proof.py" tests-report --out "$OUT_DIR" --started "$t0" "${DRYARG[@]}"
}

for stage in "${STAGES[@]}"; do
  t=$(date +%s)
  say "stage $stage$([[ $DRY -eq 1 ]] && echo ' (dry run)')"
  if [[ $stage == tests ]]; then
    run_tests_stage
  else
    QUICKARGS=()
    if [[ $QUICK -eq 1 ]]; then
      case $stage in
        copy) QUICKARGS=(--iters 20 --timeline-steps 20) ;;
        train) QUICKARGS=(--steps 60 --warmup 10 --dl-sweep 8,16) ;;
        scaling) QUICKARGS=(--seconds 3) ;;
        decode) QUICKARGS=(--images 1024 --seconds 3) ;;
      esac
    fi
    "$PYTHON" "$ROOT/bench/gpu_proof.py" "$stage" --out "$OUT_DIR" --data "$DATA" --cli "$CLI" \
      "${DRYARG[@]}" "${QUICKARGS[@]}" "${EXTRA[@]}"
  fi
  say "stage $stage done in $(( $(date +%s) - t )) s: $OUT_DIR/$stage.md"
done
"$PYTHON" "$ROOT/bench/gpu_proof.py" summary --out "$OUT_DIR"
if [[ $DRY -eq 1 ]]; then
  "$PYTHON" "$ROOT/bench/gpu_proof.py" verify --out "$OUT_DIR" --dry-run \
    --stages "$(IFS=,; echo "${STAGES[*]}")"
fi
say "summary: $OUT_DIR/summary.md"
