#!/usr/bin/env bash
# Installs the Debian packages stoker needs to build and test, when any is
# missing. Idempotent: prints nothing and touches nothing when all are present.
# Needs root (or sudo) only when something has to be installed.
#   scripts/install-deps.sh          what `make`, `make test` and `make check-thread-safety`
#                                    need (clang: the thread-safety analysis)
#   scripts/install-deps.sh fuzz     plus clang 14's libFuzzer (`make fuzz`)
#   scripts/install-deps.sh torch2   plus the modern lane's venv, .venvs/torch2/ (torch 2.x and
#                                    torchvision from pip: requirements/torch2.txt, ~5.5 GB)
# Also makes .venvs/s3/, a venv with moto's S3 server (requirements/s3-server.txt), which
# the S3 tests start on loopback (docs/reliability.md). The venvs are git-ignored, in the
# checkout, made with $STOKER_VENV_PYTHON (default: python3 on PATH) and remade only when
# their requirements file changes. Nothing is installed into a system Python.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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
VENVS=(s3)
for arg in "$@"; do
  case "$arg" in
    fuzz) PACKAGES+=(clang-14 libclang-rt-14-dev) ;;
    torch2) VENVS+=(torch2) ;;
    *) echo "install-deps: unknown argument '$arg' (fuzz, torch2)" >&2; exit 2 ;;
  esac
done

# Whether DIR was made from REQ (its stamp DIR/.requirements.txt is the same file).
made_from() {
  [[ -f "$1/.requirements.txt" ]] && cmp -s "$2" "$1/.requirements.txt"
}

# pip_stamped DIR REQ PYTHON [PIP ARGS...]: PYTHON -m pip install [PIP ARGS] -r REQ, its
# output in DIR.log (shown when it fails), then the stamp. A failed install leaves no
# stamp, so the next run starts DIR again from nothing.
pip_stamped() {
  local dir=$1 req=$2 py=$3 start=$SECONDS
  shift 3
  if ! "$py" -m pip install -q --disable-pip-version-check "$@" -r "$req" > "$dir.log" 2>&1; then
    grep -v "is ignored: it is neither a file nor a directory" "$dir.log" | tail -n 30 >&2
    echo "install-deps: pip could not install requirements/$(basename "$req") into $dir" >&2
    exit 1
  fi
  cp "$req" "$dir/.requirements.txt"
  echo "install-deps: $dir ready ($((SECONDS - start)) s)" >&2
}

# make_venv NAME: .venvs/NAME from requirements/NAME.txt (s3 -> s3-server.txt), unless the
# venv was made from the same file.
make_venv() {
  local name=$1 req venv py
  req="$ROOT/requirements/$name.txt"
  [[ "$name" == "s3" ]] && req="$ROOT/requirements/s3-server.txt"
  venv="$ROOT/.venvs/$name"
  [[ -x "$venv/bin/python" ]] && made_from "$venv" "$req" && return 0
  py=${STOKER_VENV_PYTHON:-python3}
  echo "install-deps: making $venv from requirements/$(basename "$req") with $py" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv"
  pip_stamped "$venv" "$req" "$venv/bin/python"
}

# .venvs/debian-lane: requirements/debian-lane.txt installed with Debian's pip into a folder
# (--target, --no-deps) that the Debian lane puts on its PYTHONPATH; remade when the file
# changes.
make_debian_lane() {
  local req="$ROOT/requirements/debian-lane.txt" dir="$ROOT/.venvs/debian-lane"
  made_from "$dir" "$req" && return 0
  echo "install-deps: making $dir from requirements/debian-lane.txt" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  pip_stamped "$dir" "$req" /usr/bin/python3 --no-deps --target "$dir"
}

make_venvs() {
  for v in "${VENVS[@]}"; do make_venv "$v"; done
  make_debian_lane
}

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  make_venvs
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
make_venvs
echo "install-deps: done" >&2
