#!/usr/bin/env bash
# VulkanMemoryAllocator's header (vk_mem_alloc.h) for examples/vma and tests/gpu, from
# a registry package, never a copy in this repository: the `vk-mem` crate's sources
# carry it. A throwaway cargo project fetches that exact version; the header goes to
# .dev/vma/include (git-ignored), where CMake looks first (VKCUDA_VMA_INCLUDE_DIR
# overrides it). Does nothing when the header is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
crate=vk-mem
version=0.5.0 # VMA 3.3.0
out=.dev/vma/include
stamp=.dev/vma/SOURCE
if [ -f "$out/vk_mem_alloc.h" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$crate $version" ]; then
    echo "fetch-vma: $out/vk_mem_alloc.h is there ($crate $version)"
    exit 0
fi
command -v cargo >/dev/null || PATH="$HOME/.cargo/bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-fetch-vma.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "fetch-vma: cargo fetch $crate $version"
src=$(cd "$work" && cargo new --quiet --vcs none fetch-vma && cd fetch-vma &&
    cargo add --quiet "$crate@=$version" && cargo fetch --quiet &&
    cargo metadata --format-version 1 --quiet | python3 -c 'import json, os, sys
m = json.load(sys.stdin)
p = next(p for p in m["packages"] if p["name"] == sys.argv[1] and p["version"] == sys.argv[2])
print(os.path.dirname(p["manifest_path"]))' "$crate" "$version")
header="$src/vendor/VulkanMemoryAllocator/include/vk_mem_alloc.h"
[ -f "$header" ] || { echo "fetch-vma: $header is missing in the $crate package" >&2; exit 1; }
mkdir -p "$out"
cp "$header" "$out/vk_mem_alloc.h"
echo "$crate $version" > "$stamp"
echo "fetch-vma: $out/vk_mem_alloc.h ($(grep -m1 -o 'Version [0-9.]*' "$out/vk_mem_alloc.h"), from $crate $version)"
