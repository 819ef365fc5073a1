#!/usr/bin/env bash
# Rehearses the first GPU call here: scripts/gpu-machine-setup.sh from .gpu-kit/ into a
# fresh prefix, with this machine's own -dev packages out of sight, then the host tests
# of what it built and the GPU proof's dry run against that build (docs/gpu.md).
#
#   scripts/gpu-rehearsal.sh [--work DIR] [--jobs N] [--all-targets]
#
# Out of sight: in a private mount namespace (unshare -m; root), /usr is overlaid with
# whiteouts for every file of every installed *-dev package except the C library's, the
# compiler's and Python's own headers, plus pkg-config/pkgconf, nasm and pybind11; the
# set-up then runs with a clean environment (env -i). So a header or library the kit
# does not provide fails here, not on the GPU machine; pkgconf, nasm and pybind11 are
# built from the kit as on a bare machine. Before the set-up it checks that jpeglib.h,
# zlib.h, gtest.h, ... and pkg-config are really gone. Where no namespace can be made
# (no CAP_SYS_ADMIN, no overlayfs), it falls back to a clean environment with CMake's
# system search paths off, and says that it did (system headers stay visible then).
#
# What it builds (to keep CI's cost down; --all-targets builds everything, as the GPU
# machine does): the kit's libraries, then stoker's CLI, the Python extension, and the
# tests that touch each library of the kit and the GPU stage: device_test, cuda_test
# (nvcc-compiled; skips without a GPU), codec_test (libjpeg-turbo with SIMD, libpng,
# libtiff, libwebp), shards_test (libarchive, zstd; no libcurl), arrays_test (no HDF5),
# stats_test (nlohmann-json, xxhash), synth_test. It runs them, then
# python/tests/test_device.py and test_device_records.py with the extension built here, then
# bench/gpu_proof.sh --dry-run with this build. The kit must stay under 48 MiB.
#
# WORK (default build/gpu-rehearsal, under build/ so that ccache reuses the objects of an
# earlier rehearsal) is emptied first. Run by .ci/run.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK="$ROOT/build/gpu-rehearsal"
JOBS=$(nproc 2>/dev/null || echo 2)
ALL=0
KIT_MAX_MIB=48
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) WORK=$(realpath -m "$2"); shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --all-targets) ALL=1; shift ;;
    --inside) shift; INSIDE=1 ;;  # internal: the part that runs in the namespace
    --no-probes) shift; NO_PROBES=1 ;;  # internal: the fallback without a namespace
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-rehearsal: unknown argument $1" >&2; exit 2 ;;
  esac
done
say() { echo "== gpu-rehearsal: $*" >&2; }
die() { echo "gpu-rehearsal: error: $*" >&2; exit 1; }

TESTS=(device_test cuda_test codec_test shards_test arrays_test stats_test synth_test)
# Headers and tools that must be out of sight for the rehearsal to mean anything.
HIDDEN_PROBES=(/usr/include/jpeglib.h /usr/include/zlib.h /usr/include/png.h /usr/include/zstd.h
               /usr/include/x86_64-linux-gnu/tiffio.h /usr/include/tiffio.h /usr/include/archive.h
               /usr/include/webp/decode.h /usr/include/gtest/gtest.h /usr/include/CLI/CLI.hpp
               /usr/include/nlohmann/json.hpp /usr/include/xxhash.h
               /usr/include/pybind11/pybind11.h /usr/include/hdf5/serial/hdf5.h
               /usr/include/x86_64-linux-gnu/curl/curl.h /usr/bin/pkg-config /usr/bin/pkgconf)

# ------------------------------------------------------------- inside the namespace
if [[ "${INSIDE:-0}" == 1 ]]; then
  if [[ "${NO_PROBES:-0}" == 0 ]]; then
    for f in "${HIDDEN_PROBES[@]}"; do
      [[ ! -e "$f" ]] || die "$f is still visible"
    done
    ! command -v pkg-config >/dev/null || die "pkg-config is still visible"
  fi
  t=$(date +%s)
  targets=""
  if [[ $ALL -eq 0 ]]; then targets="stoker_cli _C ${TESTS[*]}"; fi
  "$ROOT/scripts/gpu-machine-setup.sh" --work "$WORK/gpu" --python /usr/bin/python3 \
    --python-out "$WORK/gpu/python/stoker" --jobs "$JOBS" ${targets:+--targets "$targets"}
  echo "setup_s=$(( $(date +%s) - t ))" > "$WORK/times"
  t=$(date +%s)
  BUILD="$WORK/gpu/stoker"
  grep -q '"jpeg_simd": true' "$WORK/gpu/setup.json" || die "libjpeg-turbo was built without SIMD"
  grep -q '"cuda": true' "$WORK/gpu/setup.json" || ! command -v /usr/local/cuda/bin/nvcc >/dev/null ||
    die "nvcc is here but the GPU stage was not built"
  for test in "${TESTS[@]}"; do
    say "$test"
    (cd "$BUILD" && "./src/$test" --gtest_brief=1) > "$WORK/$test.log" 2>&1 || {
      tail -30 "$WORK/$test.log" >&2; die "$test failed ($WORK/$test.log)"; }
    grep -E "^\[  (PASSED|SKIPPED) " "$WORK/$test.log" | tr '\n' ' ' >&2; echo >&2
  done
  say "python/tests/test_device.py and test_device_records.py with the extension built here"
  (cd "$ROOT" && PYTHONPATH="$WORK/gpu/python" STOKER_CLI="$BUILD/stoker" \
     /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs python/tests/test_device.py \
     python/tests/test_device_records.py) \
    > "$WORK/pytest.log" 2>&1 || { tail -30 "$WORK/pytest.log" >&2; die "test_device*.py failed"; }
  tail -1 "$WORK/pytest.log" >&2
  /usr/bin/python3 - "$WORK/gpu/python" <<'EOF' || die "the extension built here is not the one imported"
import sys
sys.path.insert(0, sys.argv[1])
import stoker
assert stoker._C.__file__.startswith(sys.argv[1]), stoker._C.__file__
assert not stoker._C.built_with_hdf5() and not stoker._C.built_with_curl()
EOF
  echo "host_tests_s=$(( $(date +%s) - t ))" >> "$WORK/times"
  t=$(date +%s)
  say "bench/gpu_proof.sh --dry-run with this build"
  OUT="$WORK/proof-out" PYTHON=/usr/bin/python3 "$ROOT/bench/gpu_proof.sh" --dry-run \
    --build "$BUILD" --python-path "$WORK/gpu/python" --data "$WORK/proof-data" all \
    > "$WORK/proof.log" 2>&1 || { tail -30 "$WORK/proof.log" >&2; die "the proof's dry run failed"; }
  echo "proof_dry_run_s=$(( $(date +%s) - t ))" >> "$WORK/times"
  exit 0
fi

# ------------------------------------------------------------- outside: kit, namespace
T0=$(date +%s)
[[ -f "$ROOT/.gpu-kit/MANIFEST.tsv" ]] || "$ROOT/scripts/gpu-kit.sh"
kit_kib=$(du -sk "$ROOT/.gpu-kit" | cut -f1)
(( kit_kib <= KIT_MAX_MIB * 1024 )) || die "the kit is $((kit_kib / 1024)) MiB, over $KIT_MAX_MIB MiB"
say "kit: $((kit_kib / 1024)) MiB ($kit_kib KiB) of at most $KIT_MAX_MIB"

rm -rf "$WORK"
mkdir -p "$WORK/overlay/upper" "$WORK/overlay/work"
# Every file of the packages to hide, as a whiteout (a 0/0 character device) in the upper
# layer of an overlay on /usr. Merged /usr: /lib, /bin, /sbin paths live under /usr.
KEEP='^(libc6-dev|linux-libc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|libpython3[.0-9]*-dev|python3[.0-9]*-dev)$'
mapfile -t hide < <( (dpkg-query -W -f='${Package}\n' | grep -E -- '-dev$' | grep -vE "$KEEP"
                      printf '%s\n' pkgconf pkg-config pkgconf-bin python3-pybind11 googletest nasm yasm) |
                     sort -u)
n=$( (dpkg-query -L "${hide[@]}" 2>/dev/null || true) |
    /usr/bin/python3 -c '
import os, stat, sys
upper, n = sys.argv[1], 0
for f in sys.stdin.read().split("\n"):
    if f.startswith(("/lib/", "/bin/", "/sbin/")):
        f = "/usr" + f
    if not f.startswith("/usr/") or not (os.path.isfile(f) or os.path.islink(f)):
        continue
    w = os.path.join(upper, f[len("/usr/"):])
    if os.path.lexists(w):
        continue
    os.makedirs(os.path.dirname(w), exist_ok=True)
    os.mknod(w, stat.S_IFCHR | 0o600, os.makedev(0, 0))
    n += 1
print(n)' "$WORK/overlay/upper")
say "hiding $n files of ${#hide[@]} packages (the -dev packages, pkg-config, nasm, pybind11)"

ENV=(env -i PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/root}"
     LANG=C.UTF-8 TMPDIR="${TMPDIR:-/tmp}" CCACHE_DIR="${CCACHE_DIR:-${HOME:-/root}/.cache/ccache}")
inside=("$0" --inside --work "$WORK" --jobs "$JOBS")
[[ $ALL -eq 1 ]] && inside+=(--all-targets)
MODE=namespace
if (( n > 0 )) && unshare -m true 2>/dev/null; then
  # shellcheck disable=SC2016
  unshare -m --propagation private bash -c '
    set -e
    mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1,workdir=$2" /usr
    shift 2
    exec "$@"' _ "$WORK/overlay/upper" "$WORK/overlay/work" "${ENV[@]}" "${inside[@]}"
else
  MODE=clean-environment
  say "WARNING: no mount namespace here (unshare -m needs root and overlayfs): falling back to a"
  say "clean environment with CMake's system search paths off; system headers stay visible"
  "${ENV[@]}" STOKER_SETUP_CMAKE_ARGS="-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF" \
    bash -c 'exec "$@"' _ "${inside[@]}" --no-probes
fi
# shellcheck disable=SC1091
. "$WORK/times"
total=$(( $(date +%s) - T0 ))
cat > "$WORK/rehearsal.json" <<EOF
{"mode": "$MODE", "kit_kib": $kit_kib, "kit_max_mib": $KIT_MAX_MIB, "hidden_files": $n,
 "all_targets": $([[ $ALL -eq 1 ]] && echo true || echo false), "jobs": $JOBS,
 "setup_s": $setup_s, "host_tests_s": $host_tests_s, "proof_dry_run_s": $proof_dry_run_s,
 "total_s": $total}
EOF
say "passed ($MODE) in $total s: set-up $setup_s s, host tests $host_tests_s s, proof dry run $proof_dry_run_s s ($WORK/rehearsal.json)"
