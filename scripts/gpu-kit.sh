#!/usr/bin/env bash
# Writes .gpu-kit/: what a lent GPU machine lacks to build stoker, carried to it
# (docs/gpu.md, "First run on a GPU machine"). Run it here, on Debian 12, before the
# first device call; scripts/gpu-machine-setup.sh builds from it there.
#
#   scripts/gpu-kit.sh [--out DIR] [--max-mib N] [--force]
#
# What it carries, and why:
#   The GPU machine has a compiler, cmake, ninja, nvcc, Python 3.12 with torch, but
#   none of stoker's C/C++ libraries, no package registry and no network, and its
#   distribution and glibc are not known in advance. So the kit carries *sources*,
#   never binaries built here: each is a Debian 12 source package (apt-get source:
#   the upstream release with Debian's patches, security fixes included, applied),
#   repacked without the parts its build does not use (tests, documentation,
#   other languages' bindings), one .tar.xz each. Built there with its own
#   compiler, they cannot depend on this machine's glibc.
#
#     zlib libzstd libjpeg-turbo libpng1.6 libwebp tiff   decoders and compression
#     libarchive                                          tar shards (read and write)
#     googletest cli11 nlohmann-json3 xxhash              tests, CLI, stats
#     pybind11      used only when the machine's Python has no pybind11
#     nasm          libjpeg-turbo's SIMD (without it decode is ~2x slower); built
#                   only when the machine has no nasm/yasm
#     pkgconf       CMake's pkg_check_modules; built only without pkg-config
#
#   Left out, to keep the kit small and the set-up short (the GPU proof reads image
#   folders and local shards): HDF5 (stoker.HDF5) and libcurl (http(s):// and s3://
#   shards). The set-up configures stoker with -DSTOKER_WITH_HDF5=OFF
#   -DSTOKER_WITH_CURL=OFF; what needs them then fails with "built without ...",
#   and their tests are skipped, naming the reason.
#
# It downloads with apt-get from this machine's Debian mirror through a private
# apt configuration (deb-src lines in a temporary directory: the system's apt
# settings are not touched). MANIFEST.tsv lists every file with its version,
# size and sha256; the set-up checks them. The kit must stay under --max-mib
# (default 48): 64 MiB of git-ignored files travel to the machine in all.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/.gpu-kit"
MAX_MIB=48
FORCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --max-mib) MAX_MIB=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-kit: unknown argument $1" >&2; exit 2 ;;
  esac
done

# name  debian-source-package  paths left out of the repacked tree (relative to it)
# Each exclusion was checked by scripts/gpu-rehearsal.sh (the build needs none of them).
PACKAGES=(
  "zlib|zlib|contrib doc examples amiga msdos nintendods old os400 qnx watcom zlib.3.pdf"
  "zstd|libzstd|tests contrib doc examples zlibWrapper build/meson build/VS2008 build/VS2010 build/VS_scripts build/single_file_libs"
  "libjpeg-turbo|libjpeg-turbo|testimages java fuzz"
  "libpng|libpng1.6|contrib/pngsuite contrib/testpngs projects ci"
  "libwebp|libwebp|webp_js swig gradle infra"
  "tiff|tiff|test/images doc contrib/pds"
  "libarchive|libarchive|doc contrib libarchive/test/*.uu tar/test/*.uu cpio/test/*.uu"
  "googletest|googletest|docs ci googlemock"
  "cli11|cli11|docs book"
  "nlohmann-json|nlohmann-json3|tests docs tools .github"
  "xxhash|xxhash|tests doc"
  "pybind11|pybind11|tests docs"
  "nasm|nasm|travis"
  "pkgconf|pkgconf|"
)

log() { echo "gpu-kit: $*" >&2; }

if [[ -f "$OUT/MANIFEST.tsv" && $FORCE -eq 0 ]]; then
  log "$OUT exists (use --force to rebuild it)"
  du -sh "$OUT" >&2
  exit 0
fi
for tool in apt-get apt-cache dpkg-source dpkg xz sha256sum; do
  command -v "$tool" >/dev/null || { log "needs $tool (Debian: apt-get install dpkg-dev xz-utils)"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/src"
# The Debian release's source lines, for this machine's mirror.
. /etc/os-release
CODENAME=${VERSION_CODENAME:-bookworm}
MIRROR=$( (awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' /etc/apt/sources.list.d/*.sources
          awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list) 2>/dev/null |
        grep -E '/debian/?$' | head -1 || true)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
MIRROR=${MIRROR%/}
SECURITY=${MIRROR%/debian}/debian-security
cat > "$WORK/apt/sources.list" <<EOF
deb-src $MIRROR $CODENAME main
deb-src $MIRROR $CODENAME-updates main
deb-src $SECURITY $CODENAME-security main
EOF
APT_OPTS=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache"
          -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
log "fetching the $CODENAME source indexes from $MIRROR"
apt-get "${APT_OPTS[@]}" -qq update >/dev/null

# Newest version first; a mirror may list a version whose files it lacks (then the
# next one is taken).
versions_of() {
  apt-cache "${APT_OPTS[@]}" showsrc "$1" 2>/dev/null | awk -v p="$1" '
    /^Package: / { ok = ($2 == p) } ok && /^Version: / { print $2 }' | sort -u |
    sort -rV
}

rm -rf "$OUT.new"
mkdir -p "$OUT.new/src"
printf 'name\tdebian_source\tversion\tfile\tbytes\tsha256\n' > "$OUT.new/MANIFEST.tsv"
for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r name pkg excludes <<<"$entry"
  got=""
  for ver in $(versions_of "$pkg"); do
    rm -rf "$WORK/src/$name"; mkdir -p "$WORK/src/$name"
    if (cd "$WORK/src/$name" && apt-get "${APT_OPTS[@]}" -qq source "$pkg=$ver" >/dev/null 2>&1); then
      got=$ver; break
    fi
    log "$pkg $ver: not downloadable from the mirror, trying an older version"
  done
  [[ -n "$got" ]] || { log "could not fetch the source of $pkg"; exit 1; }
  tree=$(find "$WORK/src/$name" -mindepth 1 -maxdepth 1 -type d | head -1)
  upstream=${got#*:}; upstream=${upstream%-*}; upstream=${upstream%%+*}
  dir="$name-$upstream"
  mv "$tree" "$WORK/src/$dir"
  # shellcheck disable=SC2086  # the patterns are globs
  for x in $excludes; do (cd "$WORK/src/$dir" && rm -rf -- $x); done
  # Debian's repack of zlib drops win32/, but zlib's CMakeLists.txt lists win32/zlib1.rc
  # among the shared library's sources (only a Windows resource compiler reads it): an
  # empty one lets CMake configure on Linux.
  if [[ $name == zlib && ! -e "$WORK/src/$dir/win32/zlib1.rc" ]]; then
    mkdir -p "$WORK/src/$dir/win32"
    echo "/* placeholder: see scripts/gpu-kit.sh */" > "$WORK/src/$dir/win32/zlib1.rc"
  fi
  # Debian's packaging stays for its copyright and patch list; its own build files do not
  # matter here.
  file="$name-$upstream.tar.xz"
  tar -C "$WORK/src" --owner=0 --group=0 --numeric-owner --sort=name -cf - "$dir" |
    xz -6 -T0 > "$OUT.new/src/$file"
  bytes=$(stat -c %s "$OUT.new/src/$file")
  sum=$(sha256sum "$OUT.new/src/$file" | cut -d' ' -f1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$pkg" "$got" "src/$file" "$bytes" "$sum" \
    >> "$OUT.new/MANIFEST.tsv"
  log "$(printf '%-14s %-22s %6d KiB' "$name" "$pkg $got" $((bytes / 1024)))"
  rm -rf "${WORK:?}/src/$dir" "$WORK/src/$name"
done

cat > "$OUT.new/README.txt" <<EOF
stoker's GPU kit, written by scripts/gpu-kit.sh on $(date -u +%Y-%m-%d) from Debian $CODENAME
source packages (MANIFEST.tsv). On the GPU machine: scripts/gpu-machine-setup.sh
(docs/gpu.md, "First run on a GPU machine").
EOF
rm -rf "$OUT"
mv "$OUT.new" "$OUT"
kib=$(du -sk "$OUT" | cut -f1)
log "$OUT: $((kib / 1024)) MiB ($kib KiB)"
if (( kib > MAX_MIB * 1024 )); then
  log "the kit is over the ${MAX_MIB} MiB limit"
  exit 1
fi
