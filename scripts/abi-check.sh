#!/usr/bin/env bash
# The C ABI against the last release (README.md "ABI policy", docs/GUIDE.md section 9):
# fails on a change that CHANGELOG.md's Unreleased section does not name.
#
#   scripts/abi-check.sh [--header H] [--lib SO] [--changelog MD] [--baseline-dir DIR]
#   scripts/abi-check.sh --write-baseline VERSION [--header H] [--lib SO]
#
# It describes the current header and library as the baseline abi/vkcuda-<version>.*
# describes the last release (abi/README.md: .abi.xml, .symbols, .constants), runs
# `abidiff --harmless --leaf-changes-only` (added enumerators and renamed members count
# too) and diffs the lists; each function, type, enumerator, symbol or constant removed,
# changed or added must appear as a word in the Unreleased section. Changes of types
# that are not vkcuda's (a newer Vulkan header's VkFormat) are shown, not required.
# Without --lib it builds target/debug/libvkcuda.so. Needs abidw/abidiff (abigail-tools:
# scripts/install-deps.sh), cc, nm, python3. Exit status: 0 every change is listed,
# 1 a change is not listed, 2 the check could not run.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
header="$root/include/vkcuda.h"
lib=""
changelog="$root/CHANGELOG.md"
basedir="$root/abi"
write=""
while [ $# -gt 0 ]; do
  case "$1" in
    --header) header="$2"; shift 2 ;;
    --lib) lib="$2"; shift 2 ;;
    --changelog) changelog="$2"; shift 2 ;;
    --baseline-dir) basedir="$2"; shift 2 ;;
    --write-baseline) write="$2"; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "abi-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "abi-check: $*" >&2; exit 2; }
cc="${CC:-cc}"
for t in abidw abidiff nm python3 "$cc"; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found (abidw/abidiff: apt-get install abigail-tools)"
done
[ -f "$header" ] || die "no header $header"
work="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-abi.XXXXXX")" || exit 2
trap 'rm -rf "$work"' EXIT

if [ -z "$lib" ]; then
  if [ -d "$HOME/.cargo/bin" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
  echo "+ cargo build -p vkcuda-c --lib"
  (cd "$root" && cargo build --quiet -p vkcuda-c --lib) || die "cargo build -p vkcuda-c --lib failed"
  lib="$root/target/debug/libvkcuda_c.so"
fi
[ -f "$lib" ] || die "no library $lib"

# surface HEADER LIB OUT_PREFIX: OUT.abi.xml, OUT.symbols, OUT.constants
surface() {
  local h="$1" l="$2" out="$3" inc="$work/inc.$RANDOM"
  mkdir -p "$inc" && cp "$h" "$inc/vkcuda.h" || return 1
  python3 "$root/scripts/lib/abi-surface.py" tu "$inc/vkcuda.h" > "$work/abi_surface.c" || return 1
  # -Wno-deprecated-declarations: the unit names the deprecated aliases too.
  (cd "$work" && "$cc" -g -O0 -std=gnu11 -fPIC -shared -Wall -Werror -Wno-deprecated-declarations \
    -I"$inc" abi_surface.c -o libvkcuda_abi_surface.so) || { echo "the ABI unit does not compile"; return 1; }
  abidw --no-corpus-path --no-comp-dir-path --no-show-locs "$work/libvkcuda_abi_surface.so" > "$out.abi.xml" || return 1
  nm -D --defined-only "$l" | awk '$3 ~ /^vkcuda_/ { print $3 }' | LC_ALL=C sort -u > "$out.symbols" || return 1
  [ -s "$out.symbols" ] || { echo "no vkcuda_* symbol exported by $l"; return 1; }
  python3 "$root/scripts/lib/abi-surface.py" constants "$inc/vkcuda.h" | LC_ALL=C sort > "$out.constants"
}

if [ -n "$write" ]; then
  mkdir -p "$basedir" || exit 2
  surface "$header" "$lib" "$basedir/vkcuda-$write" || die "could not describe $header / $lib"
  echo "abi-check: wrote $basedir/vkcuda-$write.{abi.xml,symbols,constants}" \
    "($(wc -l < "$basedir/vkcuda-$write.symbols") symbols, $(wc -l < "$basedir/vkcuda-$write.constants") constants)"
  exit 0
fi

base="$(printf '%s\n' "$basedir"/vkcuda-*.abi.xml | grep -v '\*' | sed 's/\.abi\.xml$//' | sort -V | tail -n1)"
[ -n "$base" ] || die "no baseline in $basedir (vkcuda-<version>.abi.xml)"
for ext in symbols constants; do [ -f "$base.$ext" ] || die "missing $base.$ext"; done
version="${base##*/vkcuda-}"
echo "abi-check: baseline $version (${base#"$root"/}.*), header ${header#"$root"/}, library ${lib#"$root"/}"
surface "$header" "$lib" "$work/current" || die "could not describe the current header/library"

[ -f "$changelog" ] || die "no $changelog"
# The Unreleased section: from "## [Unreleased]" to the next "## [".
awk '/^## \[Unreleased\]/ { on = 1; next } /^## \[/ { on = 0 } on' "$changelog" > "$work/unreleased.md"
[ -s "$work/unreleased.md" ] || echo "abi-check: CHANGELOG.md has no \"## [Unreleased]\" section (or it is empty)"

# What changed, one "KIND NAME" line each, from the three comparisons.
abidiff --harmless --leaf-changes-only --no-show-locs "$base.abi.xml" "$work/current.abi.xml" > "$work/abidiff.txt"
rc=$?
[ $((rc & 3)) -eq 0 ] || { cat "$work/abidiff.txt"; die "abidiff could not compare (exit status $rc)"; }
echo "--- abidiff --harmless --leaf-changes-only (exit status $rc)"
sed 's/^/  /' "$work/abidiff.txt"
{
  # Added/removed/changed functions and types: the unit's abi_fn_NAME / abi_type_NAME.
  sed -nE "s/^ *\[([ADC])\] .*[ {'\"]abi_(fn|type)_([A-Za-z0-9_]+)['} ].*/\1 \2 \3/p" "$work/abidiff.txt" |
    awk '{ k = ($1 == "A" ? "added" : $1 == "D" ? "removed" : "changed"); print k " " ($2 == "fn" ? "function" : "type") " " $3 }'
  # Changed leaf types ('struct vkcuda_x' changed:) and enumerators.
  sed -nE "s/^'(struct|enum|union|typedef) ([A-Za-z0-9_]+)' changed:.*/changed type \2/p" "$work/abidiff.txt"
  grep -oE "'[A-Za-z0-9_]+::[A-Za-z0-9_]+' (from value|value)" "$work/abidiff.txt" |
    sed -E "s/^'[A-Za-z0-9_]+::([A-Za-z0-9_]+)'.*/changed enumerator \1/"
  # Renamed struct members (an API break a C engine sees): the struct, with both names.
  sed -nE "s/^ *name of '([A-Za-z0-9_]+)::([A-Za-z0-9_]+)' changed to '[A-Za-z0-9_]+::([A-Za-z0-9_]+)'.*/changed type \1 (member \2 renamed \3)/p" \
    "$work/abidiff.txt"
  # Exported symbols.
  LC_ALL=C comm -23 "$base.symbols" "$work/current.symbols" | sed 's/^/removed symbol /'
  LC_ALL=C comm -13 "$base.symbols" "$work/current.symbols" | sed 's/^/added symbol /'
  # Constants: removed, added, or a new value.
  awk 'NR == FNR { old[$1] = $2; next } { new[$1] = $2 }
       END { for (n in old) if (!(n in new)) print "removed constant " n;
             for (n in new) if (!(n in old)) print "added constant " n;
               else if (old[n] != new[n]) print "changed constant " n " (" old[n] " -> " new[n] ")" }' \
    "$base.constants" "$work/current.constants"
} | LC_ALL=C sort -u > "$work/changes.txt"

echo "--- changes since $version, each to be named in CHANGELOG.md's Unreleased section"
missing=0 listed=0 foreign=0
while read -r how kind name rest; do
  case "$name" in
    vkcuda_* | VKCUDA_* | CU*) ;;
    *) echo "  (not vkcuda's) $how $kind $name $rest"; foreign=$((foreign + 1)); continue ;;
  esac
  if grep -qw -- "$name" "$work/unreleased.md"; then
    echo "  listed       $how $kind $name $rest"; listed=$((listed + 1))
  else
    echo "  NOT LISTED   $how $kind $name $rest"; missing=$((missing + 1))
  fi
done < "$work/changes.txt"
echo "abi-check: $listed change(s) listed, $missing not listed in CHANGELOG.md's Unreleased section" \
  "($foreign change(s) of types that are not vkcuda's)"
if [ "$missing" -gt 0 ]; then
  echo "abi-check: FAILED: name each change above under \"## [Unreleased]\" in CHANGELOG.md" \
    "(README.md \"ABI policy\"), or undo it"
  exit 1
fi
exit 0
