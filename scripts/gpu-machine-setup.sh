#!/usr/bin/env bash
# Builds stoker on a lent GPU machine from this checkout and .gpu-kit/ alone: no package
# registry, no network (docs/gpu.md, "First run on a GPU machine").
#
#   scripts/gpu-machine-setup.sh [--kit DIR] [--work DIR] [--python PY] [--cuda-arch A]
#                                [--jobs N] [--targets "T1 T2 ..."] [--python-out DIR]
#
# 1. Prints the machine first (uname -a, ldd --version, the distribution, nvcc --version,
#    Python and torch, nvidia-smi, compiler, cmake), so that a failure says why.
# 2. Builds, when the machine lacks them, pkgconf (pkg-config) and nasm (libjpeg-turbo's
#    SIMD) from the kit; then the kit's libraries into WORK/prefix (shared, with their
#    RUNPATH there), several at once: zlib, zstd, libjpeg-turbo, libpng, libwebp, libtiff,
#    libarchive, GoogleTest, CLI11, nlohmann-json, xxhash (and pybind11 when the Python has
#    none). Skipped when WORK/prefix was built from the same kit (its stamp).
# 3. Configures stoker against that prefix only (pkg-config sees nothing else), without
#    HDF5 and libcurl (not in the kit), for the given Python (default: the venv at
#    /opt/torch/.venv, else python3) and CUDA architecture (default 90: H100/H200), and
#    builds everything (or --targets): the CLI WORK/stoker/stoker, the C++ tests, and the
#    Python extension into python/stoker/ (or --python-out DIR, beside a copy of the
#    package's .py files). Running it again rebuilds only what changed.
#
# Writes WORK/setup.json (versions, what was built from the kit, seconds per phase).
# Defaults: --kit .gpu-kit, --work build-gpu (both in the checkout), --jobs: all cores.
# Extra CMake arguments for stoker: $STOKER_SETUP_CMAKE_ARGS (the rehearsal uses it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIT="$ROOT/.gpu-kit"
WORK="$ROOT/build-gpu"
PY=""
CUDA_ARCH=90
JOBS=$(nproc 2>/dev/null || echo 4)
TARGETS=""
PY_OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kit) KIT=$(realpath -m "$2"); shift 2 ;;
    --work) WORK=$(realpath -m "$2"); shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --cuda-arch) CUDA_ARCH=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --python-out) PY_OUT=$(realpath -m "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-machine-setup: unknown argument $1" >&2; exit 2 ;;
  esac
done
PREFIX="$WORK/prefix"
LOGS="$WORK/logs"
T0=$(date +%s)
PHASES=()

say() { echo "== gpu-machine-setup: $*" >&2; }
die() { echo "gpu-machine-setup: error: $*" >&2; exit 1; }
phase_done() { PHASES+=("\"$1\": $(( $(date +%s) - $2 ))"); }
show() { echo "\$ $*"; "$@" 2>&1 || echo "($1 failed: exit $?)"; }

# ---------------------------------------------------------------- 1. the machine
if [[ -z "$PY" ]]; then
  if [[ -x /opt/torch/.venv/bin/python ]]; then PY=/opt/torch/.venv/bin/python; else PY=python3; fi
fi
NVCC=$(command -v nvcc || true)
[[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
{
  show uname -a
  echo "\$ ldd --version"; ldd --version 2>&1 | head -1 || true
  echo "\$ distribution"; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || echo unknown
  echo "\$ nproc; memory"; nproc; (free -g 2>/dev/null | head -2) || true
  if [[ -n "$NVCC" ]]; then show "$NVCC" --version; else echo "nvcc: not found"; fi
  show "$PY" -c 'import sys; print("python", sys.version.split()[0], sys.executable)'
  show "$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "devices", torch.cuda.device_count()); print("torchvision", torchvision.__version__)'
  show nvidia-smi
  show compute-sanitizer --version
  show g++ --version
  show cmake --version
  show ninja --version
} 2>&1 | sed 's/^/  /' >&2

command -v g++ >/dev/null || die "no g++ on this machine: stoker and the kit's libraries need a C/C++ compiler"
command -v gcc >/dev/null || die "no gcc on this machine"
command -v cmake >/dev/null || die "no cmake on this machine"
command -v ninja >/dev/null || die "no ninja on this machine"
[[ -n "$NVCC" ]] || say "no nvcc: stoker is built without the GPU stage (device='cuda' will say so)"
PY_INCLUDE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') ||
  die "$PY does not run"
[[ -f "$PY_INCLUDE/Python.h" ]] ||
  die "$PY has no Python.h in $PY_INCLUDE (the python3-dev headers): the extension cannot be built"
[[ -f "$KIT/MANIFEST.tsv" ]] || die "no kit at $KIT (run scripts/gpu-kit.sh before the device call, and carry .gpu-kit)"

mkdir -p "$WORK" "$LOGS" "$PREFIX"
export PATH="$PREFIX/tools/bin:$PATH"
# pkg-config sees the prefix only; CMake searches it first.
export PKG_CONFIG_LIBDIR="$PREFIX/lib/pkgconfig:$PREFIX/share/pkgconfig"
unset PKG_CONFIG_PATH
export CMAKE_PREFIX_PATH="$PREFIX"
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# ---------------------------------------------------------------- 2. the kit's libraries
kit_file() {  # name -> path of its archive (checked against MANIFEST.tsv)
  local line file sum
  line=$(awk -F'\t' -v n="$1" '$1 == n' "$KIT/MANIFEST.tsv")
  [[ -n "$line" ]] || die "the kit has no $1 (MANIFEST.tsv)"
  file="$KIT/$(cut -f4 <<<"$line")"; sum=$(cut -f6 <<<"$line")
  [[ -f "$file" ]] || die "the kit lacks $file"
  echo "$sum  $file" | sha256sum -c --quiet - >/dev/null 2>&1 || die "$file: sha256 mismatch"
  echo "$file"
}
unpack() {  # name -> the unpacked source tree under WORK/src
  local file dir
  file=$(kit_file "$1")
  dir="$WORK/src/$(basename "$file" .tar.xz)"
  if [[ ! -d "$dir" ]]; then
    mkdir -p "$WORK/src"
    if command -v xz >/dev/null; then
      tar -C "$WORK/src" -xJf "$file"
    else  # no xz binary: Python's lzma
      "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$file" "$WORK/src"
    fi
  fi
  echo "$dir"
}

DEP_ARGS=(-G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX"
          -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_INSTALL_LIBDIR:STRING=lib -DBUILD_SHARED_LIBS=ON
          -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_RPATH="$PREFIX/lib"
          -DBUILD_TESTING=OFF -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
          # CMake 4 refuses projects that ask for CMake < 3.5 (zlib, libarchive, ...)
          -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "${LAUNCHER[@]}")

# (The steps are chained with &&: these functions run under `||`, where bash ignores set -e.)
cmake_dep() {  # name source-subdir cmake-args...: configure, build, install into PREFIX
  local name=$1 sub=$2 src; shift 2
  src=$(unpack "$name") &&
    cmake -S "$src/$sub" -B "$WORK/deps/$name" "${DEP_ARGS[@]}" "$@" &&
    cmake --build "$WORK/deps/$name" -j "$JOBS" &&
    cmake --install "$WORK/deps/$name"
}

autotools_tool() {  # name binary: ./configure && make, the binary into PREFIX/tools/bin
  local name=$1 bin=$2 src
  src=$(unpack "$name") || return 1
  command -v make >/dev/null || { echo "no make: cannot build $name"; return 1; }
  mkdir -p "$WORK/deps/$name" "$PREFIX/tools/bin"
  (cd "$WORK/deps/$name" && "$src/configure" --prefix="$PREFIX/tools" --disable-shared \
     CC="${LAUNCHER:+ccache }gcc" && make -j "$JOBS" && make install) &&
    [[ -x "$PREFIX/tools/bin/$bin" ]]
}

build_pkgconf() {
  autotools_tool pkgconf pkgconf && ln -sf pkgconf "$PREFIX/tools/bin/pkg-config"
}
build_nasm() {
  local src; src=$(unpack nasm) || return 1
  command -v make >/dev/null || { echo "no make: cannot build nasm"; return 1; }
  mkdir -p "$PREFIX/tools/bin"
  # In its source tree: nasm's Makefile does not make its object folders out of tree.
  (cd "$src" && ./configure --prefix="$PREFIX/tools" CC="${LAUNCHER:+ccache }gcc" &&
     make -j "$JOBS" nasm && cp nasm "$PREFIX/tools/bin/")
}

build_jpeg() {  # nasm first, when missing (without it libjpeg-turbo has no SIMD: ~2x slower)
  local simd=(-DREQUIRE_SIMD=ON) with=true
  if ! command -v nasm >/dev/null && ! command -v yasm >/dev/null; then
    build_nasm || { echo "WARNING: no nasm: libjpeg-turbo without SIMD"; simd=(-DWITH_SIMD=OFF); with=false; }
  fi
  cmake_dep libjpeg-turbo . -DENABLE_STATIC=OFF -DWITH_TURBOJPEG=OFF -DWITH_JAVA=OFF "${simd[@]}" &&
    echo "$with" > "$PREFIX/.jpeg-simd"
}

# Runs "name command..." jobs at once, each logged to LOGS/name.log; stops at the first
# failure, printing the end of its log.
run_parallel() {
  local pids=() names=() i rc=0
  for job in "$@"; do
    local name=${job%% *}
    ( t=$(date +%s); eval "${job#* }" || exit 1; echo "[$name: $(( $(date +%s) - t )) s]" ) \
      > "$LOGS/$name.log" 2>&1 &
    pids+=($!); names+=("$name")
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      say "built ${names[$i]} ($(tail -1 "$LOGS/${names[$i]}.log" | tr -d '[]'))"
    else
      rc=1
      echo "gpu-machine-setup: building ${names[$i]} failed; the end of $LOGS/${names[$i]}.log:" >&2
      tail -40 "$LOGS/${names[$i]}.log" >&2
    fi
  done
  return $rc
}

PYBIND11_DIR=$("$PY" -c 'import pybind11; print(pybind11.get_cmake_dir())' 2>/dev/null || true)
KIT_SUM=$(sha256sum "$KIT/MANIFEST.tsv" "$0" | sha256sum | cut -c1-16)
STAMP="$PREFIX/.kit-$KIT_SUM${PYBIND11_DIR:+-py}"
t=$(date +%s)
if [[ -f "$STAMP" ]]; then
  say "the kit's libraries are already in $PREFIX"
else
  say "building the kit's libraries into $PREFIX ($JOBS jobs)"
  rm -rf "$PREFIX" "$WORK/deps"
  mkdir -p "$PREFIX/tools/bin"
  if ! command -v pkg-config >/dev/null; then
    run_parallel "pkgconf build_pkgconf" || die "pkgconf (pkg-config) did not build"
  fi
  wave1=(
    "zlib cmake_dep zlib ."
    "zstd cmake_dep zstd build/cmake -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_TESTS=OFF -DZSTD_BUILD_STATIC=OFF -DZSTD_BUILD_CONTRIB=OFF -DZSTD_LEGACY_SUPPORT=OFF"
    "libjpeg-turbo build_jpeg"
    "libwebp cmake_dep libwebp . -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF -DWEBP_BUILD_DWEBP=OFF -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF -DWEBP_BUILD_VWEBP=OFF -DWEBP_BUILD_WEBPINFO=OFF -DWEBP_BUILD_WEBPMUX=OFF -DWEBP_BUILD_EXTRAS=OFF"
    "googletest cmake_dep googletest . -DBUILD_GMOCK=OFF -DINSTALL_GTEST=ON -DBUILD_SHARED_LIBS=OFF"
    "cli11 cmake_dep cli11 . -DCLI11_BUILD_TESTS=OFF -DCLI11_BUILD_EXAMPLES=OFF -DCLI11_BUILD_DOCS=OFF -DCLI11_SINGLE_FILE=OFF -DCLI11_INSTALL=ON"
    "nlohmann-json cmake_dep nlohmann-json . -DJSON_BuildTests=OFF -DJSON_Install=ON"
    "xxhash cmake_dep xxhash cmake_unofficial -DXXHASH_BUILD_XXHSUM=OFF"
  )
  if [[ -z "$PYBIND11_DIR" ]]; then
    wave1+=("pybind11 cmake_dep pybind11 . -DPYBIND11_TEST=OFF -DPYBIND11_INSTALL=ON -DPYBIND11_NOPYTHON=ON")
  fi
  run_parallel "${wave1[@]}" || die "a library of the kit did not build"
  wave2=(
    "libpng cmake_dep libpng . -DPNG_SHARED=ON -DPNG_STATIC=OFF -DPNG_TESTS=OFF -DPNG_EXECUTABLES=OFF"
    "tiff cmake_dep tiff . -Dtiff-tools=OFF -Dtiff-tests=OFF -Dtiff-contrib=OFF -Dtiff-docs=OFF -Dcxx=OFF -Dzlib=ON -Djpeg=ON -Dzstd=ON -Dlibdeflate=OFF -Djbig=OFF -Dlerc=OFF -Dlzma=OFF -Dwebp=OFF -Djpeg12=OFF -Dtiff-opengl=OFF"
    "libarchive cmake_dep libarchive . -DENABLE_WERROR=OFF -DENABLE_TEST=OFF -DENABLE_TAR=OFF -DENABLE_CPIO=OFF -DENABLE_CAT=OFF -DENABLE_ZLIB=ON -DENABLE_ZSTD=ON -DENABLE_OPENSSL=OFF -DENABLE_MBEDTLS=OFF -DENABLE_NETTLE=OFF -DENABLE_LIBB2=OFF -DENABLE_LZ4=OFF -DENABLE_LZO=OFF -DENABLE_LZMA=OFF -DENABLE_BZip2=OFF -DENABLE_LIBXML2=OFF -DENABLE_EXPAT=OFF -DENABLE_PCREPOSIX=OFF -DENABLE_CNG=OFF -DENABLE_XATTR=OFF -DENABLE_ACL=OFF -DENABLE_ICONV=OFF -DENABLE_LIBGCC=OFF"
  )
  run_parallel "${wave2[@]}" || die "a library of the kit did not build"
  touch "$STAMP"
fi
[[ -z "$PYBIND11_DIR" ]] && PYBIND11_DIR="$PREFIX/share/cmake/pybind11"
phase_done deps_s "$t"

# ---------------------------------------------------------------- 3. stoker
t=$(date +%s)
BUILD="$WORK/stoker"
STOKER_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX"
             -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
             -DSTOKER_WITH_HDF5=OFF -DSTOKER_WITH_CURL=OFF -DSTOKER_WITH_VIDEO=OFF
             -DPython_EXECUTABLE="$(command -v "$PY")" -Dpybind11_DIR="$PYBIND11_DIR")
if [[ -n "$NVCC" ]]; then
  STOKER_ARGS+=(-DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
fi
if [[ -n "$PY_OUT" ]]; then
  # A package of its own: the checkout's .py files beside the extension built here.
  mkdir -p "$PY_OUT"
  cp "$ROOT"/python/stoker/*.py "$ROOT"/python/stoker/py.typed "$PY_OUT/"
  STOKER_ARGS+=(-DSTOKER_PYTHON_OUTPUT_DIR="$PY_OUT")
fi
# shellcheck disable=SC2206
STOKER_ARGS+=(${STOKER_SETUP_CMAKE_ARGS:-})
say "configuring stoker in $BUILD"
cmake -S "$ROOT" -B "$BUILD" "${STOKER_ARGS[@]}" > "$LOGS/stoker-configure.log" 2>&1 || {
  tail -40 "$LOGS/stoker-configure.log" >&2; die "configuring stoker failed ($LOGS/stoker-configure.log)"; }
grep -E "^-- stoker:" "$LOGS/stoker-configure.log" >&2 || true
# shellcheck disable=SC2086
build_targets=(); for x in $TARGETS; do build_targets+=(--target "$x"); done
say "building stoker (${TARGETS:-all targets}, $JOBS jobs)"
cmake --build "$BUILD" -j "$JOBS" "${build_targets[@]}" > "$LOGS/stoker-build.log" 2>&1 || {
  grep -E "error|Error" "$LOGS/stoker-build.log" | head -20 >&2
  tail -30 "$LOGS/stoker-build.log" >&2; die "building stoker failed ($LOGS/stoker-build.log)"; }
phase_done stoker_s "$t"

# ---------------------------------------------------------------- checks and record
# Every library of the kit that a built binary loads must come from the prefix.
bad=""
for bin in "$BUILD/stoker" "$BUILD"/src/*_test "${PY_OUT:-$ROOT/python/stoker}"/_C*.so; do
  [[ -f "$bin" ]] || continue
  out=$(ldd "$bin" 2>&1 || true)
  if grep -q "not found" <<<"$out"; then bad+="$bin: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"$'\n'; fi
  for lib in libjpeg libpng16 libtiff libwebp libarchive libzstd libz.so libxxhash; do
    where=$(grep -E "^\s*${lib}[^ ]* => " <<<"$out" | awk '{print $3}' || true)
    if [[ -n "$where" && "$where" != "$PREFIX"/* ]]; then bad+="$bin: $lib from $where"$'\n'; fi
  done
done
[[ -z "$bad" ]] || die "libraries not from $PREFIX:"$'\n'"$bad"
CUDA_ON=$(grep -q "GPU stage on" "$LOGS/stoker-configure.log" && echo true || echo false)
cat > "$WORK/setup.json" <<EOF
{"kit": "$KIT", "prefix": "$PREFIX", "build": "$BUILD", "python": "$(command -v "$PY")",
 "python_out": "${PY_OUT:-$ROOT/python/stoker}", "cuda_arch": "$CUDA_ARCH", "cuda": $CUDA_ON,
 "nvcc": "${NVCC}", "pybind11_dir": "$PYBIND11_DIR", "jobs": $JOBS,
 "with_hdf5": false, "with_curl": false, "jpeg_simd": $(cat "$PREFIX/.jpeg-simd" 2>/dev/null || echo null),
 "seconds": {${PHASES[0]}, ${PHASES[1]}, "total_s": $(( $(date +%s) - T0 ))}}
EOF
say "done in $(( $(date +%s) - T0 )) s: CLI $BUILD/stoker, tests in $BUILD/src, module in ${PY_OUT:-$ROOT/python/stoker} (GPU stage: $CUDA_ON)"
