#!/usr/bin/env bash
# Installs the Debian packages stoker needs to build and test, when any is
# missing. Idempotent: prints nothing and touches nothing when all are present.
# Needs root (or sudo) only when something has to be installed.
#   scripts/install-deps.sh          what `make` and `make test` need
#   scripts/install-deps.sh fuzz     plus clang and libFuzzer (`make fuzz`)
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libjpeg62-turbo-dev libpng-dev zlib1g-dev libhdf5-dev
  libarchive-dev libzstd-dev zstd libcurl4-openssl-dev nginx
  libgtest-dev libcli11-dev pybind11-dev
  python3-dev python3-numpy python3-pytest python3-pil python3-h5py
  python3-torch python3-torchvision python3-matplotlib
  python3-setuptools python3-wheel python3-build python3-venv python3-pip
)
if [[ "${1:-}" == "fuzz" ]]; then
  PACKAGES+=(clang-14 libclang-rt-14-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

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
echo "install-deps: done" >&2
