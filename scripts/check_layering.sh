#!/usr/bin/env bash
# The layering rule: the engine's internal headers (src/) are included only
# from src/ itself (its sources and tests) and fuzz/ (the fuzz targets test
# internals). Everything else -- the public headers (include/stoker/), the
# CLI (tools/), the Python binding (python/src/), examples/ -- includes only
# "stoker/..." headers, or a header next to the including file.
#
# And inside src/: the GPU stage's host side (src/device/) never includes the
# CUDA backend (src/cuda/), which depends on it (device/backend.h), so the
# two cannot include each other.
#
#   scripts/check_layering.sh [ROOT]   # exit 1 and list every violation
#   scripts/check_layering.sh --self-test
#
# Run by ctest (layering_check, layering_check_self_test), so `make test`
# and CI fail on an internal include from outside src/.
set -euo pipefail

check() {
  local root=$1 bad=0 file dir inc line
  local dirs=()
  for d in include tools python/src examples; do
    [[ -d "$root/$d" ]] && dirs+=("$root/$d")
  done
  [[ ${#dirs[@]} -eq 0 ]] && { echo "check_layering: nothing to check under $root" >&2; return 2; }
  while IFS= read -r file; do
    dir=$(dirname "$file")
    while IFS= read -r line; do
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$line")
      case "$file" in
        "$root"/include/*)  # public headers: only other public headers
          [[ "$inc" == stoker/* ]] && continue ;;
        *)
          [[ "$inc" == stoker/* ]] && continue
          [[ -f "$dir/$inc" ]] && continue ;;
      esac
      echo "${file#"$root"/}: includes \"$inc\" (internal; use the public API in include/stoker/)"
      bad=1
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
  done < <(find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hh' -o -name '*.hpp' \
                                        -o -name '*.cc' -o -name '*.cpp' -o -name '*.cu' \) | sort)
  if [[ -d "$root/src/device" ]]; then
    while IFS=: read -r file _ line; do
      inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/' <<<"$line")
      echo "${file#"$root"/}: includes \"$inc\" (src/device/ must not include src/cuda/: see device/backend.h)"
      bad=1
    done < <(grep -rEn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"cuda/' "$root/src/device" || true)
  fi
  return $bad
}

self_test() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/include/stoker" "$tmp/tools" "$tmp/src/source"
  printf '#include "stoker/status.h"\n' > "$tmp/include/stoker/a.h"
  printf '#include "local.h"\n#include "stoker/a.h"\n' > "$tmp/tools/ok.cc"
  touch "$tmp/tools/local.h" "$tmp/src/source/npy.h"
  check "$tmp" >/dev/null || { echo "self-test: a clean tree was refused" >&2; return 1; }
  printf '#include "source/npy.h"\n' > "$tmp/tools/bad.cc"
  if check "$tmp" >/dev/null; then
    echo "self-test: tools/ including source/npy.h was not caught" >&2; return 1
  fi
  rm "$tmp/tools/bad.cc"
  printf '#include "stoker/a.h"\n#include "local.h"\n' > "$tmp/include/stoker/b.h"
  touch "$tmp/include/stoker/local.h"
  if check "$tmp" >/dev/null; then
    echo "self-test: a public header including a non-stoker/ header was not caught" >&2; return 1
  fi
  rm "$tmp/include/stoker/b.h"
  mkdir -p "$tmp/src/device" "$tmp/src/cuda"
  printf '#include "device/backend.h"\n' > "$tmp/src/cuda/stage.cc"
  check "$tmp" >/dev/null || { echo "self-test: cuda/ including device/ was refused" >&2; return 1; }
  printf '#include "stoker/device.h"\n#include "cuda/check.h"\n' > "$tmp/src/device/plan.cc"
  if check "$tmp" >/dev/null; then
    echo "self-test: src/device/ including cuda/check.h was not caught" >&2; return 1
  fi
  echo "check_layering self-test: ok"
}

if [[ "${1:-}" == "--self-test" ]]; then
  self_test
  exit $?
fi
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
if check "$root"; then
  echo "check_layering: ok (include/, tools/, python/src/, examples/ use only the public API;" \
       "src/device/ does not include src/cuda/)"
else
  rc=$?
  [[ $rc -eq 1 ]] && echo "check_layering: layering violations found (see above)" >&2
  exit $rc
fi
