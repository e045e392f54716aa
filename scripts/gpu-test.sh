#!/usr/bin/env bash
# Runs the GPU checks on the GPU machine (NVIDIA driver, CUDA 13 driver API, nvcc,
# cmake, gcc; no Rust, no Vulkan loader), from the repository root, as root, with
# the bundle made here by scripts/gpu-bundle.sh (.dev/gpu and .gl).
#
#   scripts/gpu-test.sh [STEP...]      default: every step
#
# Steps, in order (a STEP argument selects the steps equal to it or starting with
# "STEP:", e.g. "rust" = every Rust test, "vvl" = every validation-layer run):
#   setup            unpack the Vulkan loader into /, the validation layer into
#                    .dev/vvl; print GPU, kernel, driver, nvcc (always runs)
#   ptx              scripts/gen-ptx.sh --check: every committed .ptx (kernels.ptx
#                    and the others in gen-ptx.sh's table) is what this nvcc makes
#                    of its .cu (nvcc version line excepted)
#   configure, build CMake with -DVKCUDA_PREBUILT_LIBRARY=.dev/gpu/libvkcuda.so, the
#                    examples and the GPU test programs (tests/gpu); if CMake fails,
#                    buffer_roundtrip and frame_loop are built with gcc directly so
#                    that they still run (configure stays FAIL)
#   rust:NAME        each Rust test executable in .dev/gpu/tests, --test-threads=1 --include-ignored (the GPU tests are #[ignore]d without a GPU)
#   vkcuda_info      the c_examples program (devices, pairing, standalone context)
#   buffer_roundtrip, frame_loop, image_formats, image_fractal (PNG to
#                    $OUT/fractal.png), ipc_demo (two processes)    the GPU test
#                    programs of tests/gpu
#   engine_postfx    tests/gpu/engine_postfx_test (the engine of examples/cpp): 1000
#                    frames, every pixel checked; PNG to $OUT/engine_postfx.png
#   example:NAME     each short example (c_examples, examples/cpp) as it ships:
#                    five_minutes, buffer_cuda_to_vulkan, buffer_vulkan_to_cuda,
#                    frame_timeline, image_to_png, cross_process, engine_postfx,
#                    video_ycbcr (examples/video: PNG to $OUT/video_ycbcr.png)
#   doctor, doctor-json  tools/vkcuda_doctor, text and --json ($OUT/doctor.json): must
#                    exit 0 (every check passes or warns: interop will work)
#   doctor-deep      tools/vkcuda_doctor --deep: every shared resource both ways,
#                    one line per resource with its time, deep.total (<= 10 s)
#   vma_interop, vma_wrap  the VMA example (examples/vma) and test (tests/gpu): VMA
#                    pools with export info, every byte both ways; also as vvl: steps
#   fresh-ptx        buffer_roundtrip and frame_loop once more with the PTX this
#                    nvcc made (VKCUDA_EXAMPLES_PTX): same checks, same results
#   vvl:NAME, vvl:example:NAME
#                    each of the above under VK_LAYER_KHRONOS_validation; any line
#                    with "Validation Error" or "[ VUID-" (the layer's messages, not
#                    a VUID that the library's own error message names) fails it
#   python:install   the wheel from .dev/gpu/python into .dev/py (pip --no-index --target)
#   python:tests     pytest -s python/tests: the API and DLPack tests with the real
#                    driver, torch/CuPy/JAX reading and writing shared buffers, the
#                    1000-frame torch/Vulkan loop, leak figures
#   python:example   examples/python/conv_inplace.py (PNG to $OUT/conv_inplace.png)
#   python:bench     bench/dlpack.py: DLPack export + torch import in us, zero-copy check
#   calls            .dev/gpu/bench-calls --csv $OUT/calls.csv (bench/calls.rs): the
#                    per-call CPU cost of each per-frame call against the raw calls
#   bench            .dev/gpu/bench-interop --csv $OUT/bench.csv (bench/interop.rs);
#                    only when named: `scripts/gpu-test.sh bench` (it takes minutes)
# Everything runs with VKCUDA_REQUIRE_GPU=1. Output goes to $OUT/gpu.log as it
# comes (and per step to $OUT/steps/STEP.log); a summary table ends it, the checks
# skipped inside a step (ignored tests, "SKIPPED" lines) listed under it (the runner:
# scripts/lib/steps.sh). Exits 1 if any step failed or timed out. New steps stop
# being started after $VKCUDA_GPU_TEST_BUDGET_S seconds (default 450), so the whole
# run fits in about 8 minutes. The examples' steps are at the end of this script,
# one line each.
#
# To try the script itself elsewhere: VKCUDA_GPU_TEST_ROOT=DIR unpacks the loader
# into DIR instead of /, VKCUDA_GPU_TEST_ICD=FILE uses that Vulkan ICD json.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
OUT=${OUT:-$top/gpu-out}
bundle=$top/.dev/gpu
build=$top/build/gpu
export top bundle build OUT
export VKCUDA_REQUIRE_GPU=1
export RUST_BACKTRACE=1

# shellcheck source=scripts/lib/steps.sh
. "$top/scripts/lib/steps.sh"
steps_init gpu-test "$OUT/steps" "$OUT/gpu.log"
STEPS_BUDGET_S=${VKCUDA_GPU_TEST_BUDGET_S:-450}
log() { steps_log "$@"; }

# The examples, in the order they run (their steps are at the end of this file).
examples="vkcuda_info buffer_roundtrip frame_loop image_formats image_fractal ipc_demo engine_postfx"
examples="$examples doctor doctor-json doctor-deep vma_interop vma_wrap"
steps_select "setup ptx configure build build-by-hand rust $examples example fresh-ptx python calls vvl bench" "$@"

last_line_note() { # the example's last PASS/FAIL/SKIP line, shortened
    grep -E '(PASS|FAIL|SKIP)' "$1" | tail -1 | cut -c1-110
}
setup_note() { # the GPU and the kernel, or what went wrong
    if [ "$2" -ne 0 ] && grep -q '^setup: ' "$1"; then grep -m1 '^setup: ' "$1" | cut -c1-100; return; fi
    local gpu
    gpu=$(grep -m1 '^GPU 0' "$1" | cut -c1-60)
    echo "${gpu:-no GPU 0 in nvidia-smi -L}; kernel $(uname -r)"
}
rust_note() { grep -E '^test result:' "$1" | tail -1 | cut -c1-110; }
pytest_note() { grep -E '[0-9]+ (passed|failed)' "$1" | tail -1 | cut -c1-110; }
pytest_skipped() { grep -E '^SKIPPED \[[0-9]+\]' "$1" || true; }
vvl_count() { grep -cE 'Validation Error|\[ VUID-' "$1" || true; } # the layer's messages, not a VUID the library's own message names
vvl_note() { echo "$(vvl_count "$1") validation messages; $(last_line_note "$1")"; }
vvl_verdict() { [ "$(vvl_count "$1")" -eq 0 ]; }

# ---------------------------------------------------------------------------------
setup() {
    local f icd
    echo "repository: $top ($(git rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ ! -f "$bundle/libvkcuda.so" ] || [ ! -d "$bundle/tests" ]; then
        echo "setup: $bundle is incomplete: run scripts/gpu-bundle.sh on the Rust machine and carry .dev"
        return 1
    fi
    ls .gl/*.deb > /dev/null 2>&1 || { echo "setup: no .gl/*.deb: run scripts/gpu-bundle.sh and carry .gl"; return 1; }
    sed -n '1,3p' "$bundle/MANIFEST"
    for f in .gl/*.deb; do
        case $f in
            *validationlayers*) ;;
            *) dpkg -x "$f" "${VKCUDA_GPU_TEST_ROOT:-/}" || { echo "setup: dpkg -x $f failed"; return 1; } ;;
        esac
    done
    [ -n "${VKCUDA_GPU_TEST_ROOT:-}" ] || ldconfig
    rm -rf .dev/vvl
    mkdir -p .dev/vvl
    for f in .gl/*validationlayers*.deb; do
        [ -e "$f" ] && dpkg -x "$f" .dev/vvl
    done
    icd=${VKCUDA_GPU_TEST_ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
    if [ ! -f "$icd" ]; then
        echo "setup: $icd is missing; looking elsewhere"
        icd=$(find /usr/share/vulkan /etc/vulkan /usr/local/nvidia -name 'nvidia_icd*.json' 2>/dev/null | head -1)
    fi
    [ -n "$icd" ] && [ -f "$icd" ] || { echo "setup: no NVIDIA Vulkan ICD json found"; return 1; }
    echo "VK_DRIVER_FILES=$icd"
    echo "$icd" > "$OUT/icd-path"
    # The Rust tests may read files through the path they were built in.
    local built
    built=$(sed -n 's/^build_dir: //p' "$bundle/MANIFEST")
    if [ -n "$built" ] && [ "$built" != "$top" ] && [ ! -e "$built" ]; then
        mkdir -p "$(dirname "$built")" && ln -s "$top" "$built" && echo "linked $built -> $top (the build directory of the test executables)"
    fi
    echo "== nvidia-smi -L"; nvidia-smi -L || echo "(nvidia-smi failed)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>/dev/null || true
    echo "== kernel: $(uname -r)"
    case $(uname -r) in
        4.4.0*) echo "NOTE: kernel 4.4.0 means the gVisor runtime, not Firecracker: fd export may behave differently" ;;
    esac
    echo "== libvulkan: $(ldconfig -p | grep -m1 'libvulkan.so.1' || echo 'NOT FOUND')"
    echo "== validation layer: $(ls .dev/vvl/usr/share/vulkan/explicit_layer.d/ 2>/dev/null | tr '\n' ' ')"
    echo "== nvcc: $( (command -v nvcc || ls /usr/local/cuda/bin/nvcc) 2>/dev/null) $( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | grep release)"
    echo "== cmake: $(cmake --version 2>/dev/null | head -1); gcc: $(gcc --version 2>/dev/null | head -1)"
    echo "== rust test executables: $(ls "$bundle/tests" | tr '\n' ' ')"
    return 0
}

find_example() { # the newest built executable of that name
    find "$build" -type f -name "$1" -perm -u+x 2>/dev/null | head -1
}

configure() {
    [ -f CMakeLists.txt ] || { echo "configure: there is no top-level CMakeLists.txt"; return 1; }
    rm -rf "$build/cmake"
    cmake -S . -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release \
        -DVKCUDA_PREBUILT_LIBRARY="$bundle/libvkcuda.so" \
        -DVulkan_INCLUDE_DIR="$bundle/include" \
        -DVulkan_LIBRARY=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 \
        -DVKCUDA_STB_INCLUDE_DIR="$bundle/include/stb" \
        -DVKCUDA_BUILD_EXAMPLES=ON -DVKCUDA_BUILD_TESTS=ON ${VKCUDA_CMAKE_ARGS:-}
}

build_cmake() {
    cmake --build "$build/cmake" -j "$(nproc)"
}

# Used only when CMake cannot build: two GPU test programs with the flags CMake uses.
build_by_hand() {
    local d=$build/manual flags="-std=c99 -O2 -g -Wall -Wextra -Wpedantic -Werror"
    mkdir -p "$d"
    echo "building buffer_roundtrip and frame_loop with gcc into $d (CMake did not)"
    # kernels_ptx.h from the committed PTX, as the CMake build makes it.
    cmake -DPTX=c_examples/kernels.ptx -DOUT="$d/kernels_ptx.h" -P cmake/vkcudaPtx.cmake || return 1
    # The library's soname (libvkcuda.so.0) must resolve at run time: link it there.
    soname=$(objdump -p "$bundle/libvkcuda.so" 2>/dev/null | awk '/SONAME/ { print $2 }')
    ln -sf "$bundle/libvkcuda.so" "$d/libvkcuda.so"
    [ -z "$soname" ] || ln -sf "$bundle/libvkcuda.so" "$d/$soname"
    gcc $flags -D_POSIX_C_SOURCE=200809L -Iinclude -Ic_examples -I"$d" -I"$bundle/include" tests/gpu/buffer_roundtrip.c \
        c_examples/cuda_driver.c c_examples/vk_loader.c -L"$d" -lvkcuda -ldl -Wl,-rpath,"$d" -o "$d/buffer_roundtrip" &&
    gcc $flags -D_POSIX_C_SOURCE=200809L -Iinclude -Ic_examples -I"$d" -I"$bundle/include" tests/gpu/frame_loop.c \
        c_examples/cuda_driver.c c_examples/vk_loader.c -L"$d" -lvkcuda -ldl -lpthread -Wl,-rpath,"$d" -o "$d/frame_loop"
}

run_example() { # NAME ARGS...: runs a built example
    local exe
    exe=$(find_example "$1")
    [ -n "$exe" ] || { echo "$1 was not built (no executable named $1 under $build)"; return 1; }
    shift
    echo "$exe $*"
    "$exe" "$@"
}

# shellcheck source=scripts/gpu-vvl.sh
. "$top/scripts/gpu-vvl.sh"

ptx_check() { # kernels.cu (its fresh PTX kept for fresh-ptx), then every kernel file
    local rc=0
    scripts/gen-ptx.sh --check --src c_examples/kernels.cu --ptx-out "$OUT/kernels.fresh.ptx" || rc=1
    scripts/gen-ptx.sh --check || rc=1
    return $rc
}

fresh_ptx() { # the examples with the PTX this nvcc made of kernels.cu
    export VKCUDA_EXAMPLES_PTX=$OUT/kernels.fresh.ptx
    run_example buffer_roundtrip 4 1M+1 64M --cycles 0 && run_example frame_loop --frames 1000 --latency-rounds 0
}

export -f setup ptx_check find_example configure build_cmake build_by_hand run_example with_vvl fresh_ptx

# The Python package: the bundled wheel into .dev/py; the tests, example and benchmark
# import it from there (the GPU machine has torch, CuPy, JAX and pytest, no pip downloads).
python_install() {
    rm -rf "$top/.dev/py"
    python3 -m pip install --no-index --no-deps --target "$top/.dev/py" "$bundle"/python/vkcuda-*.whl
}
python_tests() { PYTHONPATH=$top/.dev/py python3 -m pytest -s -rs -p no:cacheprovider python/tests; }
python_example() { PYTHONPATH=$top/.dev/py python3 examples/python/conv_inplace.py --out "$OUT/conv_inplace.png"; }
python_bench() { PYTHONPATH=$top/.dev/py python3 bench/dlpack.py --repeats 2000 --csv "$OUT/dlpack-bench.csv"; }
export -f python_install python_tests python_example python_bench

# The short examples (c_examples/, examples/cpp/): STEP|EXECUTABLE [ARGS] (no spaces in
# the arguments); each is run as is and under the validation layer.
short_examples=(
    "five_minutes|five_minutes"
    "buffer_cuda_to_vulkan|buffer_cuda_to_vulkan"
    "buffer_vulkan_to_cuda|buffer_vulkan_to_cuda"
    "frame_timeline|frame_timeline"
    "image_to_png|image_to_png $OUT/image_to_png.png"
    "cross_process|cross_process_producer"
    "engine_postfx|engine_postfx $OUT/engine_postfx-example.png"
    "video_ycbcr|video_ycbcr --out $OUT/video_ycbcr.png" # examples/video: NV12 + YCbCr sampling
)

# ---------------------------------------------------------------------------------
log "gpu-test.sh: steps: ${STEPS_WANTED[*]:-all}; log: $STEPS_LOG"

step --always --timeout 180 --note setup_note setup setup # always runs
if [ "$STEP_RC" -ne 0 ]; then
    log "setup failed: nothing else can run"
else
    export VK_DRIVER_FILES
    VK_DRIVER_FILES=$(cat "$OUT/icd-path")
    export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    PATH=$PATH:/usr/local/cuda/bin

    rm -f "$OUT/kernels.fresh.ptx"
    step --timeout 90 ptx ptx_check

    # The examples are built when any step but ptx, rust:*, bench is selected.
    need_build=0
    [ ${#STEPS_WANTED[@]} -eq 0 ] && need_build=1
    for w in "${STEPS_WANTED[@]}"; do
        case ${w%%:*} in setup|ptx|rust|bench|calls|python) ;; *) need_build=1 ;; esac
    done
    if [ $need_build = 1 ]; then
        rm -rf "$build/manual"
        step --always --timeout 120 configure configure
        if [ "$STEP_RC" -eq 0 ]; then step --always --timeout 240 build build_cmake; fi
        if [ "$STEP_RC" -ne 0 ]; then step --always --timeout 120 build-by-hand build_by_hand; fi
    fi

    for t in "$bundle"/tests/*; do
        step --timeout 150 --note rust_note "rust:$(basename "$t")" "$t" --test-threads=1 --include-ignored --nocapture
    done

    # ex NAME TIMEOUT_S COMMAND...: an example as step NAME (a new NAME goes into
    # $examples above too); vvl NAME TIMEOUT_S COMMAND...: step vvl:NAME, the same
    # under the validation layer, where any "Validation Error" or "[ VUID-" line fails.
    ex() { local name=$1 limit=$2; shift 2; step --timeout "$limit" --note last_line_note "$name" "$@"; }
    vvl() {
        local name=$1 limit=$2
        shift 2
        step --timeout "$limit" --note vvl_note --verdict vvl_verdict "vvl:$name" with_vvl "$@"
    }

    ex vkcuda_info       60 run_example vkcuda_info
    ex buffer_roundtrip 200 run_example buffer_roundtrip
    ex frame_loop       180 run_example frame_loop
    ex image_formats    180 run_example image_formats
    ex image_fractal    120 run_example image_fractal --out "$OUT/fractal.png"
    ex ipc_demo         180 tests/gpu/ipc_demo.sh --bin "$build/cmake/tests/gpu"
    ex engine_postfx    180 run_example engine_postfx_test --out "$OUT/engine_postfx.png"
    # The doctor (tools/) and the VMA recipe (examples/vma, tests/gpu).
    ex doctor            60 run_example vkcuda_doctor
    ex doctor-json       60 bash -c 'run_example vkcuda_doctor --json | tee "$OUT/doctor.json"; exit ${PIPESTATUS[0]}'
    ex doctor-deep       60 run_example vkcuda_doctor --deep
    ex vma_interop      120 run_example vma_interop
    ex vma_wrap         180 run_example vma_wrap
    # The short examples, as a user runs them (each ends with "NAME: PASS").
    for e in "${short_examples[@]}"; do
        # shellcheck disable=SC2086 # the arguments are split on purpose
        ex "example:${e%%|*}" 120 run_example ${e#*|}
    done

    if [ -s "$OUT/kernels.fresh.ptx" ]; then
        ex fresh-ptx 120 fresh_ptx
    else
        step_skip fresh-ptx "no fresh PTX (the ptx step did not produce one)"
    fi

    if [ ${#STEPS_WANTED[@]} -gt 0 ] && steps_wanted bench; then # only when named
        ex bench 500 "$bundle/bench-interop" --csv "$OUT/bench.csv"
    fi
    # The Python package: install the wheel, then its tests, example and benchmark.
    step --timeout 60 python:install python_install
    if [ "$STEP_RC" -eq 0 ]; then
        step --timeout 300 --note pytest_note --skips pytest_skipped python:tests python_tests
        ex python:example 120 python_example
        ex python:bench 120 python_bench
    fi

    # The per-call CPU cost (bench/calls.rs): under a minute, so always.
    ex calls 120 "$bundle/bench-calls" --csv "$OUT/calls.csv"

    vvl vkcuda_info       60 run_example vkcuda_info
    vvl buffer_roundtrip 150 run_example buffer_roundtrip 4 1M+1 64M --cycles 50
    vvl image_formats    150 run_example image_formats
    vvl frame_loop       150 run_example frame_loop --frames 1000 --latency-rounds 20
    vvl image_fractal    120 run_example image_fractal --out "$OUT/fractal-vvl.png"
    vvl ipc_demo         180 tests/gpu/ipc_demo.sh --bin "$build/cmake/tests/gpu"
    vvl engine_postfx    180 run_example engine_postfx_test --frames 300 --out "$OUT/engine_postfx-vvl.png"
    vvl vma_interop      120 run_example vma_interop
    vvl vma_wrap         180 run_example vma_wrap
    for e in "${short_examples[@]}"; do
        # shellcheck disable=SC2086
        vvl "example:${e%%|*}" 120 run_example ${e#*|}
    done
fi

# ---------------------------------------------------------------------------------
steps_summary
