#!/usr/bin/env bash
# Prepares, on this (Rust) machine, what scripts/gpu-test.sh needs on the maintainers' GPU
# machine (no Rust, no Vulkan loader, no Vulkan headers), in .dev/gpu:
#   libvkcuda.so, bench-interop, bench-calls, bench-batch   release builds, debug info stripped
#   wgpu.tar.xz           crates/vkcuda-wgpu's example (wgpu-example), benchmark
#                         (bench-wgpu) and test executable (test-wgpu), release,
#                         stripped, xz-compressed (17 MiB of wgpu code travel as 3):
#                         scripts/gpu-test.sh unpacks it into .dev/gpu/wgpu
#   tests.tar.xz          tests/<kind>-<name>, xz-compressed: every cargo test executable of the Rust library and the C door
#                         (lib-vkcuda, lib-vkcuda_c, test-<suite>),
#                         release, stripped: CTest's VKCUDA_RUST_TEST_DIR there
#   tsan-threads          with VKCUDA_BUNDLE_TSAN=1: tests/threads.rs under
#                         ThreadSanitizer (std rebuilt: rust-src, RUSTC_BOOTSTRAP)
#   include/              the Vulkan C headers, vk_video, stb_image_write.h, vk_mem_alloc.h,
#                         ffnvcodec/ (FFmpeg's nv-codec-headers: the NVDEC/NVENC programs)
#   clips/                the NVDEC test clips and their CPU reference (scripts/lab/make-clips.sh)
#   python/               the Python release wheel and sdist (scripts/python-wheel.sh)
# and, with VKCUDA_BUNDLE_FFMPEG=1, in .dev/ffmpeg the minimal shared FFmpeg of
# scripts/lab/build-ffmpeg.sh (the FFmpeg bridge's GPU test; slow the first time, then kept)
#   MANIFEST              commit, build directory, files with sizes and sha256
# and in .gl/ the Vulkan loader (the workplace's prepare-loader.sh: VKCUDA_PREPARE_LOADER,
# else ../shared/gpu/ beside the repository) and the validation layer of Debian sid
# (scripts/lab/fetch-vvl.sh says why not Debian 12's). Both are git-ignored; the GPU run
# carries them (64 MiB at most).
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
limit_mib=64
out=.dev/gpu
prepare_loader=${VKCUDA_PREPARE_LOADER:-$top/../shared/gpu/prepare-loader.sh}
[ -x "$prepare_loader" ] || { echo "gpu-bundle: no $prepare_loader (set VKCUDA_PREPARE_LOADER)" >&2; exit 1; }
for h in vulkan/vulkan_core.h:libvulkan-dev vk_video:libvulkan-dev ffnvcodec/dynlink_loader.h:libffmpeg-nvenc-dev \
    stb/stb_image_write.h:libstb-dev; do
    [ -e "/usr/include/${h%:*}" ] || { echo "gpu-bundle: /usr/include/${h%:*} is missing: apt-get install ${h#*:}" >&2; exit 1; }
done

echo "== cargo build --release; cargo test --release --no-run; cargo bench --no-run"
cargo build --release -p vkcuda-c
cargo test --release --no-run -p vkcuda -p vkcuda-c --message-format=json > target/gpu-bundle-tests.json
cargo bench --no-run -p vkcuda-c --message-format=json > target/gpu-bundle-bench.json

rm -rf "$out"
mkdir -p "$out/tests" "$out/include/vulkan" "$out/include/stb"
# executables JSON DEST [TARGET]: the executable cargo reported for TARGET copied to DEST;
# without TARGET every test executable into the directory DEST as <kind>-<name>.
executables() {
    python3 -c 'import json, os, shutil, sys
src, dst, target = (sys.argv[1:] + [None])[:3]
seen = 0
for m in map(json.loads, filter(lambda l: l.startswith("{"), open(src))):
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if target is None and m.get("profile", {}).get("test"):
        kind = m["target"]["kind"][0]
        name = "%s-%s" % ("lib" if kind in ("cdylib", "staticlib", "rlib") else kind, m["target"]["name"])
        shutil.copy2(m["executable"], os.path.join(dst, name))
        print("  %-34s <- %s" % (name, os.path.relpath(m["executable"]))); seen += 1
    elif m["target"]["name"] == target:
        shutil.copy2(m["executable"], dst); print("  %s <- %s" % (dst, m["executable"])); sys.exit()
sys.exit(0 if seen else "gpu-bundle: cargo built no " + (target or "test executable"))' "$@"
}
executables target/gpu-bundle-bench.json "$out/bench-interop" interop
executables target/gpu-bundle-bench.json "$out/bench-calls" calls
executables target/gpu-bundle-bench.json "$out/bench-batch" batch
executables target/gpu-bundle-tests.json "$out/tests"
cp target/release/libvkcuda_c.so "$out/libvkcuda.so" # the C door's library, by its C name
# Unstripped copies stay here, in target/gpu-bundle-symbols (not carried), for addr2line
# on the library+address frames a hung test's watchdog prints (scripts/gpu-test.sh).
syms=target/gpu-bundle-symbols
rm -rf "$syms" && mkdir -p "$syms" && cp "$out/libvkcuda.so" "$out"/tests/* "$syms/"
strip --strip-debug "$out/libvkcuda.so" "$out/bench-interop" "$out/bench-calls" "$out/bench-batch"
# All symbols out: the bundle travels under 64 MiB (with debug symbols, 44 MiB of tests),
# and xz-compressed (43 MiB of stripped test executables travel as about a quarter):
# scripts/gpu-test.sh unpacks tests.tar.xz into .dev/gpu/tests.
strip --strip-all "$out"/tests/*
tar -cJf "$out/tests.tar.xz" -C "$out" tests
if [ "${VKCUDA_BUNDLE_TSAN:-0}" = 1 ]; then
    echo "== tests/threads.rs with ThreadSanitizer"
    RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zsanitizer=thread CARGO_TARGET_DIR=target/tsan \
        cargo test -Zbuild-std --target x86_64-unknown-linux-gnu --release -p vkcuda --test threads \
        --no-run --message-format=json > target/gpu-bundle-tsan.json
    executables target/gpu-bundle-tsan.json "$out/tsan-threads" threads
    strip --strip-debug "$out/tsan-threads"
fi

echo "== crates/vkcuda-wgpu: the example, the benchmark and the tests (release)"
wgpu_json=target/gpu-bundle-wgpu.json
{
    cargo build --release -p vkcuda-wgpu --example compute_to_cuda --message-format=json
    cargo bench --no-run -p vkcuda-wgpu --bench frame_loop --message-format=json
    cargo test --release --no-run -p vkcuda-wgpu --test wgpu --message-format=json
} > "$wgpu_json"
wgpu_dir=target/gpu-bundle-wgpu
rm -rf "$wgpu_dir" && mkdir -p "$wgpu_dir"
executables "$wgpu_json" "$wgpu_dir/wgpu-example" compute_to_cuda
executables "$wgpu_json" "$wgpu_dir/bench-wgpu" frame_loop
executables "$wgpu_json" "$wgpu_dir/test-wgpu" wgpu
strip --strip-all "$wgpu_dir"/*
tar -cJf "$out/wgpu.tar.xz" -C "$wgpu_dir" wgpu-example bench-wgpu test-wgpu

# The Python release wheel (the GPU machine cannot build it): what users install.
echo "== the Python release wheel and sdist (scripts/python-wheel.sh)"
scripts/python-wheel.sh "$out/python"
# The C headers only: the C++ bindings (*.hpp, about 11 MB) are not needed for C.
find /usr/include/vulkan -maxdepth 1 -type f ! -name '*.hpp' -exec cp {} "$out/include/vulkan/" \;
cp -r /usr/include/vk_video /usr/include/ffnvcodec "$out/include/"
cp /usr/include/stb/stb_image_write.h "$out/include/stb/"
scripts/lab/make-clips.sh "$out/clips"
# VulkanMemoryAllocator's header for the VMA example and test, from the vk-mem crate.
scripts/fetch-vma.sh
cp .dev/vma/include/vk_mem_alloc.h "$out/include/"

if [ "${VKCUDA_BUNDLE_FFMPEG:-0}" = 1 ]; then
    echo "== scripts/lab/build-ffmpeg.sh (.dev/ffmpeg)"
    scripts/lab/build-ffmpeg.sh .dev/ffmpeg
fi

echo "== $prepare_loader --validation"
"$prepare_loader" --validation
# Debian 12's layer (1.3.239) misreads timelines that CUDA signals; the GPU machine
# runs a newer one (VKCUDA_VVL_SUITE=bookworm keeps Debian 12's).
if [ "${VKCUDA_VVL_SUITE:-sid}" != bookworm ]; then
    scripts/lab/fetch-vvl.sh "${VKCUDA_VVL_SUITE:-sid}"
fi

{
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src capi Cargo.toml Cargo.lock tests || echo ' (with uncommitted changes in src/tests)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(rustc --version)"
    echo "build_dir: $top"
    echo "files:"
    (cd "$out" && find . -type f ! -name MANIFEST ! -path './include/*' | sort | while read -r f; do
        printf '  %10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "$f"
    done)
} > "$out/MANIFEST"
cat "$out/MANIFEST"

rm -rf "$out/tests" # travels as tests.tar.xz
du -sh "$out/libvkcuda.so" "$out/wgpu.tar.xz" "$out/tests.tar.xz" "$out/include" "$out/clips" .gl
[ ! -d .dev/ffmpeg ] || du -sh .dev/ffmpeg
total_kib=$(du -sk .dev .gl | awk '{ s += $1 } END { print s }')
echo "total .dev + .gl: $((total_kib / 1024)) MiB ($total_kib KiB; limit $limit_mib MiB)"
if [ "$total_kib" -gt $((limit_mib * 1024)) ]; then
    echo "gpu-bundle: FAIL: .dev + .gl is over $limit_mib MiB: the GPU run cannot carry it" >&2
    exit 1
fi
echo "gpu-bundle: done. On the GPU machine, from the repository root: scripts/gpu-test.sh"
