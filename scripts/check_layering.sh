#!/usr/bin/env bash
# The layering rule: the engine's internal headers (src/) are included only
# from src/ itself (its sources and tests) and fuzz/ (the fuzz targets test
# internals). Everything else -- the public headers (include/stoker/), the
# CLI (tools/), the Python binding (python/src/), examples/ -- includes only
# "stoker/..." headers, or a header next to the including file.
#
# And inside src/: the modules are in layers (LAYERS, low to high): a module's
# library files include its own headers and those of the modules below it,
# never one above (its tests, *_test.cc, may use any module: a source's tests
# run it through the Loader) (so the GPU stage's host side, src/device/, never
# includes the CUDA backend, src/cuda/, which depends on it). A public header
# (include/stoker/X.h) counts as the module that implements it (OWNER), so an
# upward dependency through the public API is caught too. An upward include
# that must exist for a while goes in DEBTS, with its reason, to be dissolved
# (there is none today); one that no longer occurs must leave the list, so it
# only shrinks.
#
#   scripts/check_layering.sh [ROOT]   # exit 1 and list every violation
#   scripts/check_layering.sh --self-test
#
# Run by ctest (layering_check, layering_check_self_test), so `make test`
# and CI fail on an internal include from outside src/.
set -euo pipefail

# Low to high: a module may include the modules before it.
LAYERS=(base codec io trace ops source program video synth stats pipeline device cuda diagnose
        convert testing)

# The module that implements each public header (a header-only one: where it belongs).
declare -A OWNER=(
  [status.h]=base [mutex.h]=base [thread_annotations.h]=base [choice.h]=base [json.h]=base
  [process.h]=base [version.h]=base [types.h]=base [record.h]=base
  [decode.h]=codec [stream.h]=io [trace.h]=trace
  [transforms.h]=ops [augment.h]=ops [transform_schema.h]=ops
  [source.h]=source [sources.h]=source [sampler.h]=source [mix.h]=source [shard_writer.h]=source
  [batch.h]=program
  [synth.h]=synth [stats.h]=stats [drift.h]=stats
  [device.h]=device [device_host.h]=device [device_loader.h]=device
  [loader.h]=pipeline [video.h]=video [diagnose.h]=diagnose [convert.h]=convert
)

# "from -> to: why": upward dependencies tolerated until removed (none today).
DEBTS=(
)

# Inside src/: every include of a module above the including one (through its own headers
# or a public header it implements) that DEBTS does not list. With STRICT_DEBTS=1, a debt
# that no longer occurs is an error too.
check_layers() {
  local root=$1 bad=0 dir module file inc to key debt known i
  declare -A rank=() seen=()
  for i in "${!LAYERS[@]}"; do rank[${LAYERS[$i]}]=$i; done
  # (file, module): each library file of src/<module>/, and each public header as a file of
  # the module that implements it.
  local files=() modules=()
  for dir in "$root"/src/*/; do
    [[ -d "$dir" ]] || continue
    module=$(basename "$dir")
    if [[ -z "${rank[$module]+x}" ]]; then
      echo "src/$module: a module in no layer (add it to LAYERS in scripts/check_layering.sh)"
      bad=1; continue
    fi
    for file in "$dir"*.h "$dir"*.cc "$dir"*.cu; do
      [[ -f "$file" && "$file" != *_test.cc ]] || continue
      files+=("$file"); modules+=("$module")
    done
  done
  for file in "$root"/include/stoker/*.h; do
    [[ -f "$file" ]] || continue
    module=${OWNER[$(basename "$file")]:-}
    if [[ -z "$module" ]]; then
      echo "${file#"$root"/}: a public header with no module in OWNER"; bad=1; continue
    fi
    files+=("$file"); modules+=("$module")
  done
  for i in "${!files[@]}"; do
    file=${files[$i]}; module=${modules[$i]}
    while IFS= read -r inc; do
      case "$inc" in
        stoker/*) to=${OWNER[${inc#stoker/}]:-} ;;
        */*) to=${inc%%/*} ;;
        *) continue ;;  # a header beside the file
      esac
      if [[ -z "$to" ]]; then
        echo "${file#"$root"/}: includes \"$inc\", a public header with no module in OWNER"
        bad=1; continue
      fi
      [[ -n "${rank[$to]+x}" ]] || continue  # not a module
      (( rank[$to] > rank[$module] )) || continue
      key="$module -> $to"
      seen[$key]=1
      known=0
      for debt in "${DEBTS[@]}"; do [[ "${debt%%:*}" == "$key" ]] && known=1; done
      if [[ $known -eq 0 ]]; then
        echo "${file#"$root"/}: includes \"$inc\" ($module may not depend on $to, a layer above it)"
        bad=1
      fi
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$file")
  done
  if [[ "${STRICT_DEBTS:-0}" == 1 ]]; then
    for debt in "${DEBTS[@]}"; do
      key=${debt%%:*}
      if [[ -z "${seen[$key]+x}" ]]; then
        echo "DEBTS: \"$key\" no longer occurs: remove it from scripts/check_layering.sh"
        bad=1
      fi
    done
  fi
  return $bad
}

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
  check_layers "$root" || bad=1
  return $bad
}

self_test() {
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/include/stoker" "$tmp/tools" "$tmp/src/source"
  printf '#include "stoker/status.h"\n' > "$tmp/include/stoker/choice.h"
  printf '#include "local.h"\n#include "stoker/choice.h"\n' > "$tmp/tools/ok.cc"
  touch "$tmp/tools/local.h" "$tmp/src/source/npy.h"
  check "$tmp" >/dev/null || { echo "self-test: a clean tree was refused" >&2; return 1; }
  printf '#include "source/npy.h"\n' > "$tmp/tools/bad.cc"
  if check "$tmp" >/dev/null; then
    echo "self-test: tools/ including source/npy.h was not caught" >&2; return 1
  fi
  rm "$tmp/tools/bad.cc"
  printf '#include "stoker/choice.h"\n#include "local.h"\n' > "$tmp/include/stoker/json.h"
  touch "$tmp/include/stoker/local.h"
  if check "$tmp" >/dev/null; then
    echo "self-test: a public header including a non-stoker/ header was not caught" >&2; return 1
  fi
  rm "$tmp/include/stoker/json.h" "$tmp/include/stoker/local.h"
  mkdir -p "$tmp/src/device" "$tmp/src/cuda"
  printf '#include "device/backend.h"\n' > "$tmp/src/cuda/stage.cc"
  check "$tmp" >/dev/null || { echo "self-test: cuda/ including device/ was refused" >&2; return 1; }
  printf '#include "stoker/device.h"\n#include "cuda/check.h"\n' > "$tmp/src/device/plan.cc"
  if check "$tmp" >/dev/null; then
    echo "self-test: src/device/ including cuda/check.h was not caught" >&2; return 1
  fi
  rm "$tmp/src/device/plan.cc"
  check "$tmp" >/dev/null || { echo "self-test: a clean tree was refused" >&2; return 1; }
  printf '#include "stoker/loader.h"\n' > "$tmp/src/source/up.cc"  # pipeline's header
  if check "$tmp" >/dev/null; then
    echo "self-test: src/source/ including stoker/loader.h (pipeline) was not caught" >&2
    return 1
  fi
  rm "$tmp/src/source/up.cc"
  mkdir -p "$tmp/src/newmodule"
  if check "$tmp" >/dev/null; then
    echo "self-test: a module in no layer was not caught" >&2; return 1
  fi
  echo "check_layering self-test: ok"
}

if [[ "${1:-}" == "--self-test" ]]; then
  self_test
  exit $?
fi
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
if STRICT_DEBTS=1 check "$root"; then
  debts=""
  (( ${#DEBTS[@]} == 0 )) || debts=", but for the known debts: ${#DEBTS[@]}"
  echo "check_layering: ok (include/, tools/, python/src/, examples/ use only the public API;" \
       "src/'s ${#LAYERS[@]} modules include none above them${debts})"
else
  rc=$?
  [[ $rc -eq 1 ]] && echo "check_layering: layering violations found (see above)" >&2
  exit $rc
fi
