#!/usr/bin/env bash
# scripts/abi-check.sh catches what it must: run against scratch copies of
# include/vkcuda.h, CHANGELOG.md and the baseline, each with one unlisted change,
# it must fail (exit 1) naming the change; on the tree as it is it must pass.
#   tests/abi/self_test.sh [--lib SO]   (without --lib: cargo build --lib, target/debug)
# Cases: a function removed; a struct member's type changed; a member renamed; a
# function added; an enumerator added; an added function dropped from the CHANGELOG;
# an exported symbol gone from the library (baseline lists one more); a constant's
# value changed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
check="$root/scripts/abi-check.sh"
lib=""
[ "${1:-}" = --lib ] && lib="$2"
if [ -z "$lib" ]; then
  if [ -d "$HOME/.cargo/bin" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
  (cd "$root" && cargo build --quiet -p vkcuda-c --lib) || { echo "cargo build -p vkcuda-c --lib failed"; exit 2; }
  lib="$root/target/debug/libvkcuda_c.so"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-abi-self.XXXXXX")" || exit 2
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/abi" && cp "$root"/abi/* "$work/abi/" || exit 2
newest="$(printf '%s\n' "$work"/abi/vkcuda-*.abi.xml | sed 's/\.abi\.xml$//' | sort -V | tail -n1)"

# The scratch files, each with one change.
python3 - "$root" "$work" <<'PY' || exit 2
import re, sys
root, work = sys.argv[1], sys.argv[2]
h = open(root + "/include/vkcuda.h").read()
c = open(root + "/CHANGELOG.md").read()
def put(name, text):
    open(work + "/" + name, "w").write(text)
# A function of the baseline removed (its whole prototype).
m = re.search(r"VKCUDA_API\s+VKCUDA_NODISCARD\s+enum vkcuda_result vkcuda_buffer_get_info\([^;]*;", h)
put("removed.h", h[:m.start()] + h[m.end():])
# A member of a baseline struct: type changed, then renamed.
i = h.index("typedef struct vkcuda_buffer_create_info {"); j = h.index("} vkcuda_buffer_create_info;")
body = h[i:j]
assert "  uint64_t size;" in body
put("member.h", h[:i] + body.replace("  uint64_t size;", "  uint32_t size;") + h[j:])
put("rename.h", h[:i] + body.replace("  uint64_t size;", "  uint64_t byte_size;") + h[j:])
# A function added.
k = h.rindex("#ifdef __cplusplus")
put("added.h", h[:k] + "VKCUDA_API VKCUDA_NODISCARD enum vkcuda_result "
    "vkcuda_buffer_get_selftest(const struct vkcuda_buffer *buffer, uint32_t *out);\n\n" + h[k:])
# An enumerator added.
assert "VKCUDA_ERROR_TIMEOUT = -11," in h
put("enum.h", h.replace("VKCUDA_ERROR_TIMEOUT = -11,", "VKCUDA_ERROR_TIMEOUT = -11,\n  VKCUDA_ERROR_SELFTEST = -999,"))
# An added function dropped from the CHANGELOG's Unreleased section.
put("CHANGELOG.md", c.replace("vkcuda_image_get_plane_pointer", "a getter"))
PY

pass=0 fail=0
expect() { # expect WANT_RC NAME_IN_OUTPUT DESCRIPTION ARGS...
  local want=$1 name=$2 what=$3 rc
  shift 3
  "$check" --lib "$lib" "$@" > "$work/out.txt" 2>&1
  rc=$?
  if [ "$rc" -eq "$want" ] && { [ -z "$name" ] || grep -q "NOT LISTED .*$name" "$work/out.txt"; }; then
    echo "ok   $what (exit $rc${name:+, names $name})"; pass=$((pass + 1))
  else
    echo "FAIL $what: exit $rc (want $want${name:+, naming $name}):"; tail -n 20 "$work/out.txt"; fail=$((fail + 1))
  fi
}
expect 0 "" "the tree as it is passes"
expect 1 vkcuda_buffer_get_info "a removed function fails" --header "$work/removed.h"
expect 1 vkcuda_buffer_create_info "a member whose type changed fails" --header "$work/member.h"
expect 1 vkcuda_buffer_create_info "a renamed member fails" --header "$work/rename.h"
expect 1 vkcuda_buffer_get_selftest "an added function fails" --header "$work/added.h"
expect 1 VKCUDA_ERROR_SELFTEST "an added enumerator fails" --header "$work/enum.h"
expect 1 vkcuda_image_get_plane_pointer "a change missing from the CHANGELOG fails" --changelog "$work/CHANGELOG.md"
cp "$newest.symbols" "$work/symbols" && { cat "$work/symbols"; echo vkcuda_buffer_get_selftest_gone; } |
  LC_ALL=C sort > "$newest.symbols"
expect 1 vkcuda_buffer_get_selftest_gone "an exported symbol gone from the library fails" --baseline-dir "$work/abi"
cp "$work/symbols" "$newest.symbols"
sed -i 's/^VKCUDA_SHARE_MAX_FDS 3$/VKCUDA_SHARE_MAX_FDS 4/' "$newest.constants"
expect 1 VKCUDA_SHARE_MAX_FDS "a changed constant fails" --baseline-dir "$work/abi"
echo "abi-check self-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
