#!/usr/bin/env bash
# The GPU run, on the maintainers' GPU machine (NVIDIA driver, CUDA 13, nvcc, CMake, gcc;
# no Rust, no Vulkan loader), from the repository root, as root, with the bundle that
# scripts/lab/gpu-bundle.sh made on the Rust machine (.dev/gpu and .gl). (Elsewhere, with
# Rust and a Vulkan loader: `ctest -L gpu` in the build directory of scripts/test.sh.)
#
#   scripts/gpu-test.sh [CTEST ARG...]     default: -L gpu
#   scripts/gpu-test.sh -L sanitizer       the hardening run (compute-sanitizer, leaks, threads)
#   scripts/gpu-test.sh -L gpu -LE vvl     the GPU tests without the validation-layer runs
#   scripts/gpu-test.sh -L gpu -j 4        in parallel: the tests that read device-wide
#                                          figures (free memory, timings) still run alone
#   scripts/gpu-test.sh -L '^gpu$' -L '^alone$'     only those (label alone), and
#   scripts/gpu-test.sh -L '^gpu$' -LE '^alone$' -j 4   the rest: the suite in two calls
#                                          (anchored: `-L gpu` also matches the label wgpu)
#   scripts/gpu-test.sh -L bench           the benchmarks: bench/c/nvdec_throughput.c (NVDEC
#                                          throughput), bridges/ffmpeg/bench/ffmpeg_throughput.c
#                                          (FFmpeg + bridge, where .dev/ffmpeg is carried), then
#                                          bench/interop.rs (minutes), bench/batch.rs and
#                                          bench_wgpu (crates/vkcuda-wgpu)
#
# Unpacks the Vulkan loader into / and the layer into .dev/vvl, finds the NVIDIA ICD,
# configures with the prebuilt library and test executables (tests/CMakeLists.txt),
# builds the C/C++ programs and runs ctest; no test starts after
# $VKCUDA_GPU_TEST_BUDGET_S s (default 450). PNGs, CSVs, doctor.json and CTest's
# LastTest.log go to $OUT (default gpu-out/). A Rust test process still running 15 s
# before its CTest TIMEOUT prints where each of its threads is (system call, frames as
# library+address, kernel stack) and aborts: VKCUDA_TEST_WATCHDOG_S, tests/support/watchdog.rs.
# The test executables travel stripped: read their offsets on the Rust machine with
# `addr2line -f -C -e target/gpu-bundle-symbols/NAME ADDRESS` (the unstripped copies that
# scripts/lab/gpu-bundle.sh keeps, NAME as in .dev/gpu/tests, and libvkcuda.so).
# Elsewhere: VKCUDA_GPU_TEST_ROOT=DIR unpacks the loader into DIR instead of /,
# VKCUDA_GPU_TEST_ICD=FILE uses that Vulkan ICD json.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$PWD
OUT=${OUT:-$top/gpu-out}
bundle=$top/.dev/gpu
build=$top/build/gpu
mkdir -p "$OUT"
# The test executables travel xz-compressed (scripts/lab/gpu-bundle.sh).
if [ -f "$bundle/tests.tar.xz" ]; then
    rm -rf "$bundle/tests" && tar -xJf "$bundle/tests.tar.xz" -C "$bundle" || exit 1
fi
[ -f "$bundle/libvkcuda.so" ] && [ -d "$bundle/tests" ] && ls .gl/*.deb > /dev/null 2>&1 ||
    { echo "gpu-test: no bundle: run scripts/lab/gpu-bundle.sh on the Rust machine and carry .dev and .gl"; exit 1; }
sed -n '1,3p' "$bundle/MANIFEST"
# crates/vkcuda-wgpu's executables travel xz-compressed; CMake registers them from wgpu/.
if [ -f "$bundle/wgpu.tar.xz" ]; then
    rm -rf "$bundle/wgpu" && mkdir -p "$bundle/wgpu" && tar -xJf "$bundle/wgpu.tar.xz" -C "$bundle/wgpu" || exit 1
fi
rm -rf .dev/vvl && mkdir -p .dev/vvl
for f in .gl/*.deb; do # the layer into .dev/vvl, the loader into /
    case $f in *validationlayers*) dpkg -x "$f" .dev/vvl ;; *) dpkg -x "$f" "${VKCUDA_GPU_TEST_ROOT:-/}" || exit 1 ;; esac
done
[ -n "${VKCUDA_GPU_TEST_ROOT:-}" ] || ldconfig
icd=${VKCUDA_GPU_TEST_ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
[ -f "$icd" ] || icd=$(find /usr/share/vulkan /etc/vulkan /usr/local/nvidia -name 'nvidia_icd*.json' 2>/dev/null | head -1)
[ -n "$icd" ] || { echo "gpu-test: no NVIDIA Vulkan ICD json found"; exit 1; }
# The Rust tests may read files through the path they were built in.
built=$(sed -n 's/^build_dir: //p' "$bundle/MANIFEST")
if [ -n "$built" ] && [ "$built" != "$top" ] && [ ! -e "$built" ]; then
    mkdir -p "$(dirname "$built")" && ln -s "$top" "$built"
fi
export VK_DRIVER_FILES=$icd LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH=$PATH:/usr/local/cuda/bin RUST_BACKTRACE=1
# The minimal FFmpeg of scripts/lab/build-ffmpeg.sh, where the bundle carries it: the FFmpeg
# bridge (bridges/ffmpeg), its GPU test gpu_ffmpeg_decode and its benchmark
# bench_ffmpeg_throughput are built against it.
ffmpeg_args=()
if [ -f .dev/ffmpeg/lib/libavcodec.so ]; then
    ffmpeg_args=(-DVKCUDA_FFMPEG_ROOT="$top/.dev/ffmpeg")
    export LD_LIBRARY_PATH="$top/.dev/ffmpeg/lib:$LD_LIBRARY_PATH"
    echo "FFmpeg: $(cat .dev/ffmpeg/VERSION 2>/dev/null || echo .dev/ffmpeg) (the bridge's GPU test)"
fi
echo "VK_DRIVER_FILES=$icd; kernel $(uname -r)"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>/dev/null
echo "libvulkan: $(ldconfig -p | grep -m1 'libvulkan.so.1'); nvcc: $(nvcc --version 2>/dev/null | grep release)"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVKCUDA_PREBUILT_LIBRARY="$bundle/libvkcuda.so" \
    -DVulkan_INCLUDE_DIR="$bundle/include" -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
    -DVKCUDA_STB_INCLUDE_DIR="$bundle/include/stb" -DVKCUDA_BUILD_EXAMPLES=ON -DVKCUDA_BUILD_TESTS=ON \
    -DVKCUDA_RUST_TEST_DIR="$bundle/tests" -DVKCUDA_VVL_DIR="$top/.dev/vvl" \
    -DVKCUDA_TEST_OUTPUT_DIR="$OUT" "${ffmpeg_args[@]}" ${VKCUDA_CMAKE_ARGS:-} &&
    cmake --build "$build" -j "$(nproc)" || { echo "gpu-test: FAILED: the CMake build"; exit 1; }
[ $# -gt 0 ] || set -- -L gpu
stop=$(date -d "+${VKCUDA_GPU_TEST_BUDGET_S:-450} seconds" +%H:%M:%S)
(cd "$build" && ctest --output-on-failure --stop-time "$stop" "$@")
rc=$?
cp "$build/Testing/Temporary/LastTest.log" "$OUT/" 2>/dev/null
echo "Skip reasons:"
grep -h 'SKIPPED[: ]' "$OUT/LastTest.log" | sed 's/^[[:space:]]*/  /' | sort -u
exit $rc
