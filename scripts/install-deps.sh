#!/usr/bin/env bash
# Installs the Debian packages stoker needs to build and test, when any is
# missing. Idempotent: prints nothing and touches nothing when all are present.
# Needs root (or sudo) only when something has to be installed.
#   scripts/install-deps.sh          what `make`, `make test` and `make check-thread-safety`
#                                    need (clang: the thread-safety analysis)
#   scripts/install-deps.sh fuzz     plus clang 14's libFuzzer (`make fuzz`)
# Also installs s3rver (npm), the S3 server the S3 tests start on loopback,
# into the git-ignored .npm-deps/ of the checkout (see docs/reliability.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
S3RVER=s3rver@3.7.1

PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libjpeg62-turbo-dev libpng-dev libwebp-dev libtiff-dev zlib1g-dev libhdf5-dev
  libarchive-dev libzstd-dev zstd libcurl4-openssl-dev nginx openssl
  libgtest-dev libcli11-dev pybind11-dev nlohmann-json3-dev libxxhash-dev
  python3-dev python3-numpy python3-scipy python3-pytest python3-pil python3-h5py
  python3-torch python3-torchvision python3-matplotlib
  python3-prometheus-client  # stoker.metrics (python/tests/test_metrics.py)
  chromium  # the HTML report checked in a headless browser (python/tests/test_report.py)
  python3-braceexpand python3-yaml  # what the webdataset peer imports (interop tests, benches)
  python3-setuptools python3-wheel python3-build python3-venv python3-pip
  clang
  # Video clips (stoker.VideoClips, src/video/): FFmpeg's libraries; the ffmpeg CLI makes
  # the tests' videos and PyAV decodes the reference frames.
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg python3-av
  dpkg-dev xz-utils  # scripts/gpu-kit.sh: apt-get source, the kit's .tar.xz
)
if [[ "${1:-}" == "fuzz" ]]; then
  PACKAGES+=(clang-14 libclang-rt-14-dev)
fi
# Node and npm for s3rver, from Debian unless a node is already installed.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

install_s3rver() {
  [[ -f "$ROOT/.npm-deps/node_modules/s3rver/package.json" ]] && return 0
  echo "install-deps: installing $S3RVER into $ROOT/.npm-deps" >&2
  mkdir -p "$ROOT/.npm-deps"
  # Not fatal: the build does not need it; the S3 tests skip without it (and fail under CI).
  npm install --prefix "$ROOT/.npm-deps" --no-audit --no-fund --no-save --loglevel=error \
    "$S3RVER" >/dev/null ||
    echo "install-deps: could not install $S3RVER (npm); the S3 tests will be skipped" >&2
}

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  install_s3rver
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: missing packages ${missing[*]} and no apt-get; install them by hand" >&2
  exit 1
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: missing packages ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_s3rver
echo "install-deps: done" >&2
