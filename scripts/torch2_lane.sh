#!/usr/bin/env bash
# The modern lane: the Python tests against torch 2.x and torchvision from pip, with stoker
# installed into that venv as a user installs it (`pip install .`), not from the checkout.
#   scripts/torch2_lane.sh install   the venv .venvs/torch2/ (requirements/torch2.txt, via
#                                    scripts/install-deps.sh torch2), then `pip install .`
#                                    into it; CMake builds in build-torch2/ (ccache shares
#                                    make's objects) against the venv's Python, numpy 2 and
#                                    pybind11. `make test` runs this before ctest.
#   scripts/torch2_lane.sh test [PYTEST ARGS]
#                                    python/tests (or the files and options given) with the
#                                    venv's interpreter (ctest:
#                                    python_tests_torch2), the installed package's CLI as
#                                    STOKER_CLI; fails, saying so, if install has not run.
# The other lane is Debian's Python with its torch 1.13 (ctest: python_tests, on the
# checkout's python/ as `make` builds it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venvs/torch2
cmd=${1:-}
shift || true

case "$cmd" in
  install)
    "$root/scripts/install-deps.sh" torch2
    start=$SECONDS
    mkdir -p "$root/build-torch2"
    log=$root/build-torch2/pip-install.log
    cd "$root"
    # --no-build-isolation: the build uses the venv's pinned setuptools and pybind11 (a
    # pybind11 that knows numpy 2), as `pip install .` with isolation would fetch them.
    if ! STOKER_WHEEL_BUILD_DIR="$root/build-torch2" \
         CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc 2>/dev/null || echo 2)} \
         "$venv/bin/python" -m pip install --no-build-isolation --no-deps --force-reinstall \
         --disable-pip-version-check . >"$log" 2>&1; then
      grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -n 60 >&2
      echo "torch2_lane: pip install . into $venv failed (log: $log)" >&2
      exit 1
    fi
    echo "torch2_lane: stoker $("$venv/bin/stoker" --version | cut -d' ' -f2) installed" \
         "into $venv ($((SECONDS - start)) s)" >&2
    ;;
  test)
    if [[ ! -x "$venv/bin/stoker" ]]; then
      echo "torch2_lane: stoker is not installed in $venv: run scripts/torch2_lane.sh install" \
           "(make test does)" >&2
      exit 1
    fi
    cd "$root"
    unset PYTHONPATH STOKER_PYTHON
    # The package must come from the venv, never from the checkout's python/.
    "$venv/bin/python" - "$root" <<'EOF'
import os, sys
import stoker, torch, torchvision
root = sys.argv[1]
assert not stoker.__file__.startswith(os.path.join(root, "python") + os.sep), stoker.__file__
print(f"torch2_lane: stoker {stoker.__version__} from {os.path.dirname(stoker.__file__)}, "
      f"torch {torch.__version__}, torchvision {torchvision.__version__}", file=sys.stderr)
EOF
    # Arguments: pytest's; without a test file or folder among them, the whole suite.
    paths=0
    for a in "$@"; do [[ -e "$a" || "$a" == *::* ]] && paths=1; done
    [[ $paths -eq 1 ]] || set -- "$root/python/tests" "$@"
    STOKER_CLI="$venv/bin/stoker" exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
    ;;
  *)
    echo "usage: scripts/torch2_lane.sh install | test [PYTEST ARGS]" >&2
    exit 2
    ;;
esac
