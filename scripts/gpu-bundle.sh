#!/usr/bin/env bash
# Prepares, on this (Rust) machine, everything scripts/gpu-test.sh needs on the GPU
# machine, which has no Rust, no Vulkan loader and no Vulkan headers:
#   .dev/gpu/libvkcuda.so        the release library (debug info stripped)
#   .dev/gpu/tests/<kind>-<name> every Rust test executable (lib unit tests and each
#                                integration test), built with --release, stripped
#   .dev/gpu/include/            /usr/include/vulkan (the C headers; the *.hpp C++
#                                bindings are left out for size), /usr/include/vk_video and
#                                stb/stb_image_write.h (libstb-dev: the PNG writer of the
#                                examples and GPU tests; CMake finds it as
#                                VKCUDA_STB_INCLUDE_DIR, gpu-test.sh passes the path),
#                                vk_mem_alloc.h (scripts/fetch-vma.sh) and ffnvcodec/
#                                (libffmpeg-nvenc-dev: FFmpeg's nv-codec-headers, for the
#                                NVDEC/NVENC programs; CMake finds them there)
#   .dev/gpu/clips/              the NVDEC test clips and their CPU reference hashes
#                                (scripts/make-clips.sh, about 2.3 MB)
#   .dev/gpu/tsan-threads        with VKCUDA_BUNDLE_TSAN=1 only: tests/threads.rs built
#                                with ThreadSanitizer (std rebuilt: needs rust-src and
#                                RUSTC_BOOTSTRAP; about 2 minutes); the TSan runtime is
#                                linked in, so it runs on the GPU machine as it is
#   .dev/gpu/python/vkcuda-*.whl the Python release wheel (scripts/python-wheel.sh:
#                                py3-none-manylinux_2_28_x86_64, its own stripped
#                                library; the GPU machine's Python 3.12, glibc 2.39) and
#                                the sdist beside it
#   .dev/gpu/MANIFEST            commit, build directory, files with sizes and sha256
#   .gl/*.deb                    the Vulkan loader (the workplace's prepare-loader.sh:
#                                VKCUDA_PREPARE_LOADER=FILE, else ../shared/gpu/ beside
#                                the repository)
#                                and the validation layer of Debian sid
#                                (scripts/fetch-vvl.sh; see there why not Debian 12's)
# .dev/ and .gl/ are git-ignored; the GPU run carries them (64 MiB at most in all).
#
#   scripts/gpu-bundle.sh        then, there: scripts/gpu-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
limit_mib=64
out=.dev/gpu
prepare_loader=${VKCUDA_PREPARE_LOADER:-}
if [ -z "$prepare_loader" ]; then
    c=$top/../shared/gpu/prepare-loader.sh
    if [ -x "$c" ]; then prepare_loader=$c; fi
fi
[ -n "$prepare_loader" ] || { echo "gpu-bundle: prepare-loader.sh not found (set VKCUDA_PREPARE_LOADER)" >&2; exit 1; }
for h in /usr/include/vulkan/vulkan_core.h /usr/include/vk_video; do
    [ -e "$h" ] || { echo "gpu-bundle: $h is missing: apt-get install libvulkan-dev" >&2; exit 1; }
done
[ -e /usr/include/ffnvcodec/dynlink_loader.h ] ||
    { echo "gpu-bundle: /usr/include/ffnvcodec is missing: apt-get install libffmpeg-nvenc-dev" >&2; exit 1; }
[ -e /usr/include/stb/stb_image_write.h ] ||
    { echo "gpu-bundle: /usr/include/stb/stb_image_write.h is missing: apt-get install libstb-dev" >&2; exit 1; }

echo "== cargo build --release"
cargo build --release

echo "== cargo test --release --no-run"
json=target/gpu-bundle-tests.json
cargo test --release --no-run --message-format=json > "$json"

echo "== cargo bench --no-run (bench/interop.rs, bench/calls.rs)"
bench_json=target/gpu-bundle-bench.json
cargo bench --no-run --message-format=json > "$bench_json"

rm -rf "$out"
mkdir -p "$out/tests" "$out/include"
# JSON TARGET DEST WHAT: copies the executable cargo reported for TARGET to DEST.
copy_executable() {
    python3 - "$@" <<'EOF2'
import json, shutil, sys
src, target, dst, what = sys.argv[1:5]
for line in open(src):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == target:
        shutil.copy2(m["executable"], dst)
        print("  %s %s <- %s" % (what, dst, m["executable"]))
        break
else:
    sys.exit("gpu-bundle: cargo built no %s" % what)
EOF2
}
copy_executable "$bench_json" interop "$out/bench-interop" "interop benchmark"
strip --strip-debug "$out/bench-interop"
copy_executable "$bench_json" calls "$out/bench-calls" "per-call CPU cost benchmark"
strip --strip-debug "$out/bench-calls"
cp target/release/libvkcuda.so "$out/libvkcuda.so"
strip --strip-debug "$out/libvkcuda.so"

# The Python release wheel (the GPU machine cannot build it): what users install.
echo "== the Python release wheel and sdist (scripts/python-wheel.sh)"
rm -rf "$out/python"
scripts/python-wheel.sh "$out/python"

# Each test executable as "<kind>-<name>": lib-vkcuda (unit tests), test-buffer, ...
python3 - "$json" "$out/tests" <<'EOF'
import json, shutil, sys, os
src, dst = sys.argv[1], sys.argv[2]
seen = 0
for line in open(src):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not m.get("profile", {}).get("test"):
        continue
    kind = m["target"]["kind"][0]
    kind = {"cdylib": "lib", "staticlib": "lib", "rlib": "lib"}.get(kind, kind)
    name = "%s-%s" % (kind, m["target"]["name"])
    shutil.copy2(m["executable"], os.path.join(dst, name))
    print("  test executable %-30s <- %s" % (name, os.path.relpath(m["executable"])))
    seen += 1
if seen == 0:
    sys.exit("gpu-bundle: cargo reported no test executables")
EOF
# All symbols out: the bundle travels under 64 MiB (debug info alone left 44 MiB of tests).
strip --strip-all "$out"/tests/*

if [ "${VKCUDA_BUNDLE_TSAN:-0}" = 1 ]; then
    echo "== tests/threads.rs with ThreadSanitizer"
    tsan_json=target/gpu-bundle-tsan.json
    RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zsanitizer=thread CARGO_TARGET_DIR=target/tsan \
        cargo test -Zbuild-std --target x86_64-unknown-linux-gnu --release --test threads \
        --no-run --message-format=json > "$tsan_json"
    copy_executable "$tsan_json" threads "$out/tsan-threads" "ThreadSanitizer threads test"
    strip --strip-debug "$out/tsan-threads"
fi

# The C headers only: the C++ bindings (*.hpp, about 11 MB) are not needed for C.
mkdir -p "$out/include/vulkan"
find /usr/include/vulkan -maxdepth 1 -type f ! -name '*.hpp' -exec cp {} "$out/include/vulkan/" \;
cp -r /usr/include/vk_video "$out/include/"
mkdir -p "$out/include/stb"
cp /usr/include/stb/stb_image_write.h "$out/include/stb/"
cp -r /usr/include/ffnvcodec "$out/include/"

echo "== scripts/make-clips.sh (the NVDEC clips and their CPU reference)"
scripts/make-clips.sh "$out/clips"

# VulkanMemoryAllocator's header for the VMA example and test (examples/vma,
# tests/gpu): from the vk-mem crate's package (scripts/fetch-vma.sh); CMake finds
# it in .dev/gpu/include there.
scripts/fetch-vma.sh
cp .dev/vma/include/vk_mem_alloc.h "$out/include/"

echo "== $prepare_loader --validation"
"$prepare_loader" --validation
# Debian 12's layer (1.3.239) misreads timelines that CUDA signals; the GPU machine
# runs a newer one (VKCUDA_VVL_SUITE=bookworm keeps Debian 12's).
if [ "${VKCUDA_VVL_SUITE:-sid}" != bookworm ]; then
    echo "== scripts/fetch-vvl.sh ${VKCUDA_VVL_SUITE:-sid}"
    scripts/fetch-vvl.sh "${VKCUDA_VVL_SUITE:-sid}"
fi

{
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock tests || echo ' (with uncommitted changes in src/tests)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(rustc --version)"
    echo "build_dir: $top"
    echo "files:"
    (cd "$out" && find . -type f ! -name MANIFEST ! -path './include/*' | sort | while read -r f; do
        printf '  %10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "$f"
    done)
} > "$out/MANIFEST"
cat "$out/MANIFEST"

echo "== sizes"
du -sh .dev/gpu/libvkcuda.so .dev/gpu/tests .dev/gpu/include .dev/gpu/clips .gl
total_kib=$(du -sk .dev .gl | awk '{ s += $1 } END { print s }')
echo "total .dev + .gl: $((total_kib / 1024)) MiB ($total_kib KiB; limit $limit_mib MiB)"
if [ "$total_kib" -gt $((limit_mib * 1024)) ]; then
    echo "gpu-bundle: FAIL: .dev + .gl is over $limit_mib MiB: the GPU run cannot carry it" >&2
    exit 1
fi
echo "gpu-bundle: done. On the GPU machine, from the repository root: scripts/gpu-test.sh"
