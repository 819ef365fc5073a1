#!/usr/bin/env bash
# The C++ package as a user installs and uses it (ctest: cpp_find_package_consumer).
#   1. `cmake --install BUILD --prefix P` into a temporary folder (the build's own objects:
#      nothing is compiled); checks what is there: the public headers and nothing else under
#      include/, the static libraries without the testing one, the CLI and its scripts, and
#      no path into the checkout in the CMake package;
#   2. copies examples/ out of the checkout and configures it as a project of its own with
#      -DCMAKE_PREFIX_PATH=P (find_package(stoker CONFIG)), builds folder_throughput, and
#      checks that no compile or link line names the checkout; a request for an
#      incompatible version (find_package(stoker 99)) must fail;
#   3. writes a small ImageFolder with the installed `stoker synth` and runs the example on
#      it: exit status 0, one line per epoch with the image and batch counts, a total line
#      with images/s; and a missing folder must fail with a message.
# Usage: scripts/consumer_test.sh BUILD_DIR
#   (CMAKE_GENERATOR and CXX, when set, are used for the consumer's build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: consumer_test.sh BUILD_DIR}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stoker-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
version=$(for p in MAJOR MINOR PATCH; do
  sed -n "s/^#define STOKER_VERSION_$p \([0-9]*\)$/\1/p" "$root/include/stoker/version.h"
done | paste -sd.)

step() { echo "consumer_test [${SECONDS}s]: $*" >&2; }
fail() { echo "consumer_test: $*" >&2; exit 1; }
quiet() {  # run "$@", showing its output only when it fails
  local log="$tmp/log"
  if ! "$@" >"$log" 2>&1; then tail -n 60 "$log" >&2; fail "failed: $*"; fi
}

step "cmake --install $build --prefix $prefix"
quiet cmake --install "$build" --prefix "$prefix"
diff <(cd "$root/include" && find . -type f | sort) <(cd "$prefix/include" && find . -type f | sort) \
  || fail "include/ of the install is not exactly the public headers (diff above)"
cfg=$(find "$prefix" -name stokerConfig.cmake)
[[ -n "$cfg" ]] || fail "no stokerConfig.cmake installed"
libdir=$(dirname "$(dirname "$(dirname "$cfg")")")
for lib in base codec ops source pipeline shards hdf5 synth diagnose device convert stats; do
  [[ -f "$libdir/libstoker_$lib.a" ]] || fail "libstoker_$lib.a not installed in $libdir"
done
[[ ! -e "$libdir/libstoker_testing.a" ]] || fail "the testing library was installed"
[[ "$(ls "$prefix/bin")" == "stoker" ]] || fail "bin/ holds more than the CLI: $(ls "$prefix/bin")"
for f in tools/plot_tune.py tools/plot_stats.py bench/run_bench.py; do
  [[ -f "$prefix/share/stoker/$f" ]] || fail "share/stoker/$f not installed"
done
if grep -rl "$root" "$(dirname "$cfg")"; then fail "the CMake package names the checkout"; fi
[[ "$("$prefix/bin/stoker" --version)" == *"$version"* ]] || fail "installed stoker --version"

step "the examples as a project of their own, against $prefix"
cp -r "$root/examples" "$tmp/src"
gen=()
[[ -n "${CMAKE_GENERATOR:-}" ]] && gen=(-G "$CMAKE_GENERATOR")
launcher=()
if command -v ccache >/dev/null; then  # paths under $tmp hash alike from run to run
  export CCACHE_BASEDIR=$tmp
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
quiet cmake -S "$tmp/src" -B "$tmp/build" "${gen[@]}" "${launcher[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
grep -q "stoker $version from $(dirname "$cfg")" "$tmp/log" || fail "stoker was not found in $prefix"
quiet cmake --build "$tmp/build"
if grep -l "$root" "$tmp/build/compile_commands.json" "$(find "$tmp/build" -name link.txt -o \
     -name build.ninja | head -1)"; then
  fail "the consumer's build names the checkout"
fi
mkdir -p "$tmp/v99"
printf 'cmake_minimum_required(VERSION 3.22)\nproject(v LANGUAGES NONE)\nfind_package(stoker 99 CONFIG REQUIRED)\n' \
  > "$tmp/v99/CMakeLists.txt"
if cmake -S "$tmp/v99" -B "$tmp/v99/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/log" 2>&1; then
  fail "find_package(stoker 99) succeeded against stoker $version"
fi
grep -q "$version" "$tmp/log" || { cat "$tmp/log" >&2; fail "the version refusal does not name $version"; }

step "the example on a folder written by the installed stoker synth"
quiet "$prefix/bin/stoker" synth "$tmp/data" --classes 2 --per-class 6 --width 64 --height 48
exe=$tmp/build/folder_throughput
"$exe" "$tmp/data" --epochs 2 --batch-size 5 --threads 2 --size 32 >"$tmp/out" 2>&1 \
  || { cat "$tmp/out" >&2; fail "folder_throughput failed"; }
cat "$tmp/out"
grep -q "^stoker $version$" "$tmp/out" || fail "no version line"
grep -q "^source: ImageFolder(.*2 classes, 12 images)" "$tmp/out" || fail "no source line"
for e in 0 1; do
  grep -Eq "^epoch $e: 12 images, 3 batches, [0-9.]+ s, [0-9.]+ images/s$" "$tmp/out" \
    || fail "no line for epoch $e with 12 images in 3 batches"
done
grep -Eq "^total: 24 images, 2 epochs, [0-9.]+ s, [0-9]*[1-9][0-9]*\.[0-9] images/s$" "$tmp/out" \
  || fail "no total line with a positive images/s"
if "$exe" "$tmp/no-such-folder" >"$tmp/out" 2>&1; then fail "a missing folder succeeded"; fi
grep -q "no-such-folder" "$tmp/out" || { cat "$tmp/out" >&2; fail "the error does not name the folder"; }
step "ok"
