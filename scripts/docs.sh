#!/usr/bin/env bash
# Doxygen HTML of include/vkcuda.h and vkcuda.hpp with docs/GUIDE.md as the main page
# (docs/Doxyfile); any warning, dead link or dead anchor fails (CTest: docs). Pass 1:
# vkcuda.hpp alone with WARN_IF_UNDOCUMENTED=YES (no output); pass 2: the HTML of both
# headers, GUIDE.md and CROSS_PROCESS.md (vkcuda.h, generated, has members without
# comments yet). Then the sources the guides link to are copied into html/files/ and
# every relative link and anchor of every page must resolve.
#
#   scripts/docs.sh [OUT-DIR]     default: build/docs; the HTML is OUT-DIR/html/index.html
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mkdir -p "${1:-build/docs}"
out="$(cd "${1:-build/docs}" && pwd)" html="$(cd "${1:-build/docs}" && pwd)/html"
command -v doxygen >/dev/null 2>&1 ||
  { echo "docs.sh: doxygen is not installed (apt-get install doxygen, or scripts/install-deps.sh)" >&2; exit 1; }
# The C header's documentation: the C library's version (capi/Cargo.toml, vkcuda-c).
version="$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p' capi/Cargo.toml | head -n1)"
rm -rf "$html"
echo "docs.sh: doxygen $(doxygen --version) -> $html (vkcuda $version)"
export VKCUDA_DOCS_OUT="$out" VKCUDA_VERSION="$version"
fail() { echo "docs.sh: FAIL: $*" >&2; exit 1; }

# run_pass <name> <extra Doxyfile lines>: doxygen with docs/Doxyfile plus the lines.
run_pass() {
  local status=0
  rm -f "$out/warnings.log"
  { cat docs/Doxyfile; printf '%s\n' "$2"; } | doxygen - || status=$?
  [ ! -s "$out/warnings.log" ] || { sed 's/^/  /' "$out/warnings.log" >&2; fail "doxygen warnings ($1)"; }
  [ "$status" -eq 0 ] || fail "doxygen exited with status $status ($1)"
  echo "docs.sh: $1: no warnings"
}
run_pass "pass 1: vkcuda.hpp, every member documented" "INPUT = include/vkcuda.hpp
WARN_IF_UNDOCUMENTED = YES
ENABLED_SECTIONS =
GENERATE_HTML = NO
GENERATE_XML = YES
OUTPUT_DIRECTORY = $out/strict"
rm -rf "$out/strict"
run_pass "pass 2: HTML of vkcuda.h, vkcuda.hpp, docs/GUIDE.md and docs/CROSS_PROCESS.md" ""
# The sources the guides link to (read as files/PATH: docs/Doxyfile) are copied
# there, so the HTML stands alone; then every relative link and anchor must resolve.
while read -r f; do
  [ -f "$f" ] || fail "a guide links to $f, which is not in the tree"
  mkdir -p "$html/files/$(dirname "$f")" && cp "$f" "$html/files/$f"
done < <({ grep -oh 'href="files/[^"#]*' "$html"/*.html || true; } | sed 's/^href="files\///' | sort -u)
dead=0
for page in "$html"/*.html; do
  while read -r href; do
    target="${href%%#*}" anchor=""
    [[ "$href" != *"#"* ]] || anchor="${href#*#}"
    file="$html/${target:-$(basename "$page")}"
    if [ ! -e "$file" ]; then
      echo "docs.sh: dead link in $(basename "$page"): $href" >&2 && dead=1
    elif [ -n "$anchor" ] && [[ "$file" == *.html ]] && ! grep -q "id=\"$anchor\"\|name=\"$anchor\"" "$file"; then
      echo "docs.sh: dead anchor in $(basename "$page"): $href" >&2 && dead=1
    fi
  done < <({ grep -o 'href="[^"]*"' "$page" || true; } | sed 's/^href="//; s/"$//' | { grep -v '^[a-z]*:' || true; } | sort -u)
done
[ "$dead" -eq 0 ] || fail "dead links in the HTML"
echo "docs.sh: every link and anchor resolves"
for page in index.html vkcuda_8h.html vkcuda_8hpp.html classvkcuda_1_1Buffer.html; do
  [ -s "$html/$page" ] || fail "$html/$page was not generated"
done
echo "docs.sh: PASS: no warnings; $(find "$html" -name '*.html' | wc -l) pages, open $html/index.html"
