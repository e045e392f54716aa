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
#   ptx              scripts/gen-ptx.sh --check: kernels_ptx.h (and every other
#                    header gen-ptx.sh made) is what this nvcc makes of its .cu
#                    (nvcc version line excepted)
#   configure, build CMake with -DVKCUDA_PREBUILT_LIBRARY=.dev/gpu/libvkcuda.so;
#                    if CMake fails, the two GPU examples are built with gcc
#                    directly so that they still run (configure stays FAIL)
#   rust:NAME        each Rust test executable in .dev/gpu/tests, --test-threads=1
#   vkcuda_info, buffer_roundtrip, frame_loop, image_formats, image_fractal (PNG to
#                    $OUT/fractal.png), ipc_demo (two processes)    the examples
#   engine_postfx    the C++ engine-style example (examples/cpp): 1000 frames, every
#                    pixel checked; PNG to $OUT/engine_postfx.png
#   fresh-ptx        buffer_roundtrip and frame_loop once more with the PTX this
#                    nvcc made (VKCUDA_EXAMPLES_PTX): same checks, same results
#   vvl:NAME         each example under VK_LAYER_KHRONOS_validation; any line with
#                    "VUID" or "Validation Error" fails the step
#   bench            .dev/gpu/bench-interop --csv $OUT/bench.csv (bench/interop.rs);
#                    only when named: `scripts/gpu-test.sh bench` (it takes minutes)
#   planar, vvl:planar, memcheck:planar, video, vvl:video   multi-planar images (issue
#                    18): tests/planar.rs with its GPU tests (--include-ignored), the
#                    same under the validation layer and under compute-sanitizer
#                    memcheck (100 frames in the handoff loop there), and the
#                    examples/video example (PNG to $OUT/video_ycbcr.png)
# Everything runs with VKCUDA_REQUIRE_GPU=1. Output goes to $OUT/gpu.log as it
# comes (and per step to $OUT/steps/STEP.log); a summary table ends it. Exits 1 if
# any step failed. New steps stop being started after $VKCUDA_GPU_TEST_BUDGET_S
# seconds (default 450), so the whole run fits in about 8 minutes.
#
# To try the script itself elsewhere: VKCUDA_GPU_TEST_ROOT=DIR unpacks the loader
# into DIR instead of /, VKCUDA_GPU_TEST_ICD=FILE uses that Vulkan ICD json.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
OUT=${OUT:-$top/gpu-out}
mkdir -p "$OUT/steps"
log_file=$OUT/gpu.log
: > "$log_file"
budget_s=${VKCUDA_GPU_TEST_BUDGET_S:-450}
t_start=$(date +%s)
bundle=$top/.dev/gpu
build=$top/build/gpu
export top bundle build OUT
export VKCUDA_REQUIRE_GPU=1
export RUST_BACKTRACE=1

log() { echo "$*" | tee -a "$log_file"; }

wanted=("$@")
for w in "${wanted[@]}"; do
    case ${w%%:*} in
        setup|ptx|configure|build|build-by-hand|rust|vkcuda_info|buffer_roundtrip|frame_loop|image_formats|image_fractal|ipc_demo|engine_postfx|fresh-ptx|vvl|bench) ;;
        planar|memcheck|video) ;; # multi-planar images (issue 18)
        *) echo "gpu-test.sh: unknown step '$w' (see the comment at the top of $0)" >&2; exit 2 ;;
    esac
done
is_wanted() {
    local step=$1 w
    [ ${#wanted[@]} -eq 0 ] && return 0
    for w in "${wanted[@]}"; do
        [ "$step" = "$w" ] && return 0
        case $step in "$w":*) return 0 ;; esac
    done
    return 1
}

summary_names=() summary_results=() summary_times=() summary_notes=()
add_summary() { summary_names+=("$1"); summary_results+=("$2"); summary_times+=("$3"); summary_notes+=("$4"); }

# run_step NAME TIMEOUT_S COMMAND...: runs it with its output to the log, records
# PASS / FAIL / TIMEOUT. The command's exit status is in $step_rc afterwards.
step_rc=0
run_step() {
    local name=$1 limit=$2 left t0 t1 rc result note=""
    shift 2
    step_rc=1
    if ! is_wanted "$name"; then return 0; fi
    left=$((budget_s - ($(date +%s) - t_start)))
    if [ "$left" -le 10 ]; then
        log "---- $name: not started, the time budget of ${budget_s}s is spent"
        add_summary "$name" SKIP 0 "time budget spent"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    log ""
    log "---- $name (limit ${limit}s): $*"
    t0=$(date +%s%N)
    # Shell functions run in a child bash (they are exported); timeout kills the
    # whole process group; stdbuf makes every program in it line-buffered.
    timeout -k 5 "$limit" stdbuf -oL -eL bash -c '"$@"' "$name" "$@" 2>&1 |
        tee "$OUT/steps/${name//[:\/]/_}.log" | tee -a "$log_file"
    rc=${PIPESTATUS[0]}
    t1=$(date +%s%N)
    secs=$(( (t1 - t0) / 1000000000 )).$(( (t1 - t0) / 100000000 % 10 ))
    step_rc=$rc
    case $rc in
        0) result=PASS ;;
        124|137) result=TIMEOUT; note="killed after ${limit}s" ;;
        *) result=FAIL; note="exit status $rc" ;;
    esac
    if [ -n "${STEP_NOTE_CMD:-}" ]; then
        note="$note${note:+; }$($STEP_NOTE_CMD "$OUT/steps/${name//[:\/]/_}.log" "$rc")"
    elif [ "$rc" -ne 0 ]; then # say what went wrong: the first error line, else the last line
        note="$note; $( (grep -m1 -iE 'error|fail|not found|missing' "$OUT/steps/${name//[:\/]/_}.log" ||
            grep -v '^[[:space:]]*$' "$OUT/steps/${name//[:\/]/_}.log" | tail -1) | cut -c1-100)"
    fi
    if [ -n "${STEP_VERDICT_CMD:-}" ] && [ "$result" = PASS ] && ! $STEP_VERDICT_CMD "$OUT/steps/${name//[:\/]/_}.log"; then
        result=FAIL
    fi
    log "---- $name: $result in ${secs}s${note:+ ($note)}"
    add_summary "$name" "$result" "$secs" "$note"
}

last_line_note() { # the example's last PASS/FAIL/SKIP line, shortened
    grep -E '(PASS|FAIL|SKIP)' "$1" | tail -1 | cut -c1-110
}
setup_note() { echo "$(grep -m1 '^GPU 0' "$1" | cut -c1-60); kernel $(uname -r)"; }
rust_note() { grep -E '^test result:' "$1" | tail -1 | cut -c1-110; }
vvl_count() { grep -cE 'VUID|Validation Error' "$1" || true; }
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
        -DVKCUDA_BUILD_EXAMPLES=ON ${VKCUDA_CMAKE_ARGS:-}
}

build_cmake() {
    cmake --build "$build/cmake" -j "$(nproc)"
}

# Used only when CMake cannot build: the two GPU examples with the flags CMake uses.
build_by_hand() {
    local d=$build/manual flags="-std=c99 -O2 -g -Wall -Wextra -Wpedantic -Werror"
    mkdir -p "$d"
    echo "building buffer_roundtrip and frame_loop with gcc into $d (CMake did not)"
    # The library's soname (libvkcuda.so.0) must resolve at run time: link it there.
    soname=$(objdump -p "$bundle/libvkcuda.so" 2>/dev/null | awk '/SONAME/ { print $2 }')
    ln -sf "$bundle/libvkcuda.so" "$d/libvkcuda.so"
    [ -z "$soname" ] || ln -sf "$bundle/libvkcuda.so" "$d/$soname"
    gcc $flags -D_POSIX_C_SOURCE=200809L -Iinclude -I"$bundle/include" c_examples/buffer_roundtrip.c \
        c_examples/cuda_driver.c c_examples/vk_loader.c -L"$d" -lvkcuda -ldl -Wl,-rpath,"$d" -o "$d/buffer_roundtrip" &&
    gcc $flags -D_POSIX_C_SOURCE=200809L -Iinclude -I"$bundle/include" c_examples/frame_loop.c \
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

ptx_check() { # kernels.cu (its fresh PTX kept for fresh-ptx), then every generated header
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

# ---------------------------------------------------------------------------------
log "gpu-test.sh: steps: ${wanted[*]:-all}; log: $log_file"

wanted_saved=("${wanted[@]}")
wanted=() # setup always runs
STEP_NOTE_CMD=setup_note run_step setup 180 setup
wanted=("${wanted_saved[@]}")
if [ "$step_rc" -ne 0 ]; then
    log "setup failed: nothing else can run"
else
    export VK_DRIVER_FILES
    VK_DRIVER_FILES=$(cat "$OUT/icd-path")
    export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    PATH=$PATH:/usr/local/cuda/bin

    rm -f "$OUT/kernels.fresh.ptx"
    run_step ptx 90 ptx_check

    need_build=0
    for s in configure build vkcuda_info buffer_roundtrip frame_loop image_formats image_fractal ipc_demo engine_postfx fresh-ptx vvl:vkcuda_info vvl:buffer_roundtrip vvl:frame_loop vvl:image_formats video vvl:video; do
        is_wanted "$s" && need_build=1
    done
    if [ $need_build = 1 ]; then
        saved=("${wanted[@]}")
        wanted=()
        rm -rf "$build/manual"
        run_step configure 120 configure
        if [ "$step_rc" -eq 0 ]; then run_step build 240 build_cmake; fi
        if [ "$step_rc" -ne 0 ]; then run_step build-by-hand 120 build_by_hand; fi
        wanted=("${saved[@]}")
    fi

    for t in "$bundle"/tests/*; do
        STEP_NOTE_CMD=rust_note run_step "rust:$(basename "$t")" 150 "$t" --test-threads=1
    done

    STEP_NOTE_CMD=last_line_note run_step vkcuda_info 60 run_example vkcuda_info
    STEP_NOTE_CMD=last_line_note run_step buffer_roundtrip 200 run_example buffer_roundtrip
    STEP_NOTE_CMD=last_line_note run_step frame_loop 180 run_example frame_loop
    STEP_NOTE_CMD=last_line_note run_step image_formats 180 run_example image_formats
    STEP_NOTE_CMD=last_line_note run_step image_fractal 120 run_example image_fractal --out "$OUT/fractal.png"
    STEP_NOTE_CMD=last_line_note run_step ipc_demo 180 c_examples/ipc_demo.sh --bin "$build/cmake/c_examples"
    STEP_NOTE_CMD=last_line_note run_step engine_postfx 180 run_example engine_postfx --out "$OUT/engine_postfx.png"

    if [ -s "$OUT/kernels.fresh.ptx" ]; then
        STEP_NOTE_CMD=last_line_note run_step fresh-ptx 120 fresh_ptx
    elif is_wanted fresh-ptx; then
        add_summary fresh-ptx SKIP 0 "no fresh PTX (the ptx step did not produce one)"
    fi

    if [ ${#wanted[@]} -gt 0 ] && is_wanted bench; then
        STEP_NOTE_CMD=last_line_note run_step bench 500 "$bundle/bench-interop" --csv "$OUT/bench.csv"
    fi

    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:vkcuda_info 60 with_vvl run_example vkcuda_info
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:buffer_roundtrip 150 \
        with_vvl run_example buffer_roundtrip 4 1M+1 64M --cycles 50
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:image_formats 150 \
        with_vvl run_example image_formats
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:frame_loop 150 \
        with_vvl run_example frame_loop --frames 1000 --latency-rounds 20
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:image_fractal 120 \
        with_vvl run_example image_fractal --out "$OUT/fractal-vvl.png"
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:ipc_demo 180 \
        with_vvl c_examples/ipc_demo.sh --bin "$build/cmake/c_examples"
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:engine_postfx 180 \
        with_vvl run_example engine_postfx --frames 300 --out "$OUT/engine_postfx-vvl.png"

    # --- multi-planar images (issue 18): the GPU tests of tests/planar.rs, plain, under
    # the validation layer (synchronization validation) and under compute-sanitizer
    # memcheck; the NV12 YCbCr sampling example, plain and under the layer.
    planar_run() { "$bundle/tests/test-planar" --test-threads=1 --include-ignored --nocapture "$@"; }
    planar_memcheck() {
        local cs
        cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
        [ -n "$cs" ] || { echo "compute-sanitizer not found"; return 1; }
        VKCUDA_PLANAR_FRAMES=100 "$cs" --tool memcheck --leak-check full --error-exitcode 1 \
            "$bundle/tests/test-planar" --test-threads=1 --include-ignored --nocapture
    }
    planar_note() { echo "$(grep -cE '^PASS' "$1") PASS lines; $(grep -E '^test result:' "$1" | tail -1 | cut -c1-70)"; }
    san_verdict() { grep -q 'ERROR SUMMARY: 0 errors' "$1" && ! grep -E 'ERROR SUMMARY: [1-9]' "$1"; }
    export -f planar_run planar_memcheck
    STEP_NOTE_CMD=planar_note run_step planar 300 planar_run
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:planar 300 with_vvl planar_run
    STEP_NOTE_CMD=planar_note STEP_VERDICT_CMD=san_verdict run_step memcheck:planar 400 planar_memcheck
    STEP_NOTE_CMD=last_line_note run_step video 120 run_example video_ycbcr --out "$OUT/video_ycbcr.png"
    STEP_NOTE_CMD=vvl_note STEP_VERDICT_CMD=vvl_verdict run_step vvl:video 120 \
        with_vvl run_example video_ycbcr --out "$OUT/video_ycbcr-vvl.png"
fi

# ---------------------------------------------------------------------------------
failed=0
log ""
log "==== summary ($(($(date +%s) - t_start)) s; full log: $log_file, per step: $OUT/steps/)"
log "$(printf '| %-24s | %-7s | %7s | %s' step result seconds note)"
log "|--------------------------|---------|---------|------"
for i in "${!summary_names[@]}"; do
    log "$(printf '| %-24s | %-7s | %7s | %s' "${summary_names[$i]}" "${summary_results[$i]}" "${summary_times[$i]}" "${summary_notes[$i]}")"
    case ${summary_results[$i]} in FAIL|TIMEOUT) failed=$((failed + 1)) ;; esac
done
if [ $failed -gt 0 ]; then
    log "gpu-test: FAIL: $failed step(s) failed; see the step logs above or in $OUT/steps/"
    exit 1
fi
log "gpu-test: PASS: ${#summary_names[@]} step(s)"
