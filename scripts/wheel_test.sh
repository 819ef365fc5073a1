#!/usr/bin/env bash
# The package as a user installs it, away from the checkout (ctest: python_wheel_install,
# and python_editable_install for --editable).
#   1. builds a wheel: python3 -m build --wheel --no-isolation (Debian's python3-build; no
#      network), CMake in build-wheel/ beside build/ so ccache reuses make's objects (the
#      modern lane, scripts/torch2_lane.sh, installs with pip into a torch 2.x venv);
#   2. installs it with pip --no-index into a fresh venv (--system-site-packages: numpy and
#      torch from Debian) in a temporary folder;
#   3. from that folder, with no PYTHONPATH: imports stoker (checking it, and every module it
#      loads, comes from the venv), runs a short loader, and runs the CLI (`stoker --version`,
#      `synth`, `bench`, `tune --plot`, which runs a script shipped in the package, and
#      `python -m stoker`); the installed binaries must not contain the checkout's path;
# With --editable instead: `pip install -e` of the checkout into a fresh venv (it builds
# `make`'s build/ tree and uses python/ in place), and the same import and CLI checks.
# Usage: scripts/wheel_test.sh [--editable]   (PYTHON=... picks the interpreter)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
editable=0
[[ "${1:-}" == "--editable" ]] && editable=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stoker-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH STOKER_CLI STOKER_DATA_DIR STOKER_PYTHON
version=$(for p in MAJOR MINOR PATCH; do
  sed -n "s/^#define STOKER_VERSION_$p \([0-9]*\)$/\1/p" "$root/include/stoker/version.h"
done | paste -sd.)
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "wheel_test: no version in version.h" >&2; exit 1; }

step() { echo "wheel_test [${SECONDS}s]: $*" >&2; }
quiet() {  # run "$@", showing its output only when it fails
  local log="$tmp/log"
  if ! "$@" >"$log" 2>&1; then tail -n 60 "$log" >&2; echo "wheel_test: failed: $*" >&2; exit 1; fi
}

# Checks a venv's stoker from $tmp/work; $1 = venv, $2 = where stoker must be imported from.
check_env() {
  local venv=$1 pkg_root=$2
  mkdir -p "$tmp/work" && cd "$tmp/work"
  step "import and a short loader ($venv)"
  "$venv/bin/python" - "$root" "$pkg_root" "$version" "$venv/bin/stoker" <<'EOF'
import importlib.metadata, os, subprocess, sys
root, pkg_root, version, cli = sys.argv[1:]
import stoker
assert stoker.__file__.startswith(pkg_root + os.sep), (stoker.__file__, pkg_root)
assert stoker.__version__ == version, (stoker.__version__, version)
assert importlib.metadata.version("stoker") == version
data = os.path.abspath("data")
subprocess.run([cli, "synth", data, "--classes", "2", "--per-class", "5", "--width", "64",
                "--height", "48"], check=True, capture_output=True)
loader = stoker.Loader(stoker.ImageFolder(data), batch_size=4, drop_last=True, threads=2,
                       transforms=[stoker.Resize(40), stoker.CenterCrop(32)], dtype="uint8")
batches = [(tuple(x.shape), tuple(y.tolist())) for x, y in loader]
assert [b[0] for b in batches] == [(4, 3, 32, 32)] * 2, batches
assert [b[1] for b in batches] == [(0, 0, 0, 0), (0, 1, 1, 1)], batches
if pkg_root.startswith(root + os.sep):  # editable: the package is the checkout's python/
    sys.exit(0)
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None) or ""
    assert not f.startswith(root + os.sep), f"{name} was loaded from the checkout: {f}"
EOF
  step "the CLI ($venv/bin/stoker)"
  local out
  out=$("$venv/bin/stoker" --version)
  [[ "$out" == "stoker $version" ]] || { echo "wheel_test: --version said '$out'" >&2; exit 1; }
  out=$("$venv/bin/python" -m stoker --version)
  [[ "$out" == "stoker $version" ]] || { echo "wheel_test: -m stoker said '$out'" >&2; exit 1; }
  quiet "$venv/bin/stoker" bench data --pipeline val --epochs 1 --batch-size 4 --json
  grep -q '"images_per_sec"' "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  # tune --plot runs tools/plot_tune.py, found beside the binary, with the venv's Python.
  quiet "$venv/bin/stoker" tune data --threads 1 --prefetch 1 --batch-size 4 --seconds 0.2 \
    --auto-batches 4 --json --plot "$tmp/work/tune.png"
  [[ "$(head -c 4 "$tmp/work/tune.png" | od -An -c | tr -d ' ')" == "211PNG" ]] ||
    { echo "wheel_test: tune --plot wrote no PNG" >&2; exit 1; }
  cd "$tmp"
}

if [[ $editable -eq 1 ]]; then
  step "editable install of the checkout into a fresh venv"
  quiet "$py" -m venv --system-site-packages "$tmp/venv"
  quiet "$tmp/venv/bin/python" -m pip install --no-index --no-build-isolation -e "$root"
  check_env "$tmp/venv" "$root/python/stoker"
  step "ok"
  exit 0
fi

step "building the wheel"
cd "$root"
# --skip-dependency-check: Debian's Python has no pybind11 module (pyproject asks for pip's
# >= 2.12, for numpy 2); CMake takes Debian's pybind11-dev, matched to Debian's numpy 1.24.
quiet "$py" -m build --wheel --no-isolation --skip-dependency-check --outdir "$tmp/dist" .
wheel=$(ls "$tmp"/dist/stoker-"$version"-*.whl)
step "installing $(basename "$wheel") into a fresh venv"
cd "$tmp"
quiet "$py" -m venv --system-site-packages "$tmp/venv"
quiet "$tmp/venv/bin/python" -m pip install --no-index "$wheel"
site=$("$tmp/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
for f in "$site"/stoker/bin/stoker "$site"/stoker/_C*.so; do
  if grep -qF "$root" "$f"; then echo "wheel_test: $f contains the checkout path $root" >&2; exit 1; fi
done
check_env "$tmp/venv" "$site/stoker"
step "ok"
