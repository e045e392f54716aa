#!/usr/bin/env bash
# The GPU half of issue 8 (hardening), on the GPU machine, from the repository
# root, with the bundle from scripts/gpu-bundle.sh (.dev/gpu and .gl), like
# scripts/gpu-test.sh:
#
#   scripts/gpu-hardening.sh [STEP...]      default: every step, in this order
#
#   setup            `scripts/gpu-test.sh setup` (always runs; its log in
#                    $OUT/gpu-test-setup/): nothing else runs if it fails
#   leaks            tests/faults.rs gpu_create_destroy_cycles_do_not_leak with
#                    VKCUDA_FAULT_CYCLES=10000: 10,000 cycles of a Vulkan-allocated
#                    and a CUDA-allocated buffer, an image with a surface and a
#                    texture object, a timeline or binary semaphore; open fds, live
#                    objects and CUDA free memory (cuMemGetInfo) back to the start
#   faults           the rest of tests/faults.rs: device memory exhausted (4 GiB
#                    buffers until the driver refuses, Vulkan- and CUDA-allocated),
#                    the caller's CUDA context destroyed before our objects, OOM and
#                    limits, contexts destroyed first
#   threads          tests/threads.rs: 8 threads x 1000 cycles on one CUDA context
#                    (surfaces, a shared timeline semaphore) and on a Vulkan-only one
#   tsan             tests/threads.rs built with ThreadSanitizer (bundled by
#                    VKCUDA_BUNDLE_TSAN=1 scripts/gpu-bundle.sh; SKIP without it):
#                    the library's Rust code instrumented, the drivers not; any
#                    "WARNING: ThreadSanitizer" fails the step
#   misuse           tests/misuse.rs: the matrix on a CUDA context (semaphore cases
#                    included), on a Vulkan-only one and with the fake driver
#   vvl:NAME         every Rust test executable under VK_LAYER_KHRONOS_validation
#                    with synchronization validation; any "Validation Error" or
#                    "[ VUID-" line (the layer's, not a VUID that the library's own
#                    message names) fails the step (threads and faults with 100
#                    cycles; graph with VKCUDA_GRAPH_LAYER_SEES_A=1: the layer
#                    cannot see CUDA's signals, tests/graph.rs says why)
#   memcheck:NAME    compute-sanitizer --tool memcheck --leak-check full on the Rust
#                    tests that use CUDA; "ERROR SUMMARY: 0 errors" required
#   racecheck:EXAMPLE:TOOL  compute-sanitizer --tool racecheck and --tool memcheck
#                    on every GPU test program (buffer_roundtrip, frame_loop,
#                    image_formats, image_fractal, ipc_demo, engine_postfx: the
#                    tests/gpu programs) and every example (vkcuda_info and
#                    example:NAME for five_minutes, buffer_cuda_to_vulkan,
#                    buffer_vulkan_to_cuda, frame_timeline, image_to_png,
#                    cross_process, engine_postfx), built by
#                    `scripts/gpu-test.sh configure build` if they are not there
# A STEP argument selects the steps equal to it or starting with "STEP:" ("vvl" =
# every validation-layer run). Everything runs with VKCUDA_REQUIRE_GPU=1. Output:
# $OUT/hardening.log and $OUT/steps/STEP.log; a summary table with the figures for
# docs/RELIABILITY.md ends it, the checks skipped inside a step (ignored tests,
# "SKIPPED" lines) listed under it (the runner: scripts/lib/steps.sh). Exits 1 if
# any step failed or timed out; a sanitizer step with nothing to check is N/A. New
# steps stop being started after $VKCUDA_GPU_HARDENING_BUDGET_S seconds (default
# 540: the whole run fits in one 10-minute command; it was planned at 6-8 minutes).
#
# To try the script itself on a machine without a GPU (lavapipe): the variables of
# scripts/gpu-test.sh (VKCUDA_GPU_TEST_ROOT, VKCUDA_GPU_TEST_ICD), and
# VKCUDA_HARDENING_REQUIRE_GPU=0 so that the GPU tests skip instead of failing.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
OUT=${OUT:-$top/gpu-out}
bundle=$top/.dev/gpu
build=$top/build/gpu
export top bundle build OUT
export VKCUDA_REQUIRE_GPU=${VKCUDA_HARDENING_REQUIRE_GPU:-1}
export RUST_BACKTRACE=1

# shellcheck source=scripts/lib/steps.sh
. "$top/scripts/lib/steps.sh"
steps_init gpu-hardening "$OUT/steps" "$OUT/hardening.log"
STEPS_BUDGET_S=${VKCUDA_GPU_HARDENING_BUDGET_S:-540}
log() { steps_log "$@"; }
steps_select "setup leaks faults threads tsan misuse vvl memcheck racecheck" "$@"

rust_note() { # the test result line, and the figures the tests print
    local figures
    figures=$(grep -hE '^(cuda|vulkan-only|book|contexts): |cycles in|misuse matrix on|buffers of' "$1" | cut -c1-160 | tr '\n' ';')
    echo "$(grep -E '^test result:' "$1" | tail -1 | cut -c1-70)${figures:+; $figures}"
}
vvl_count() { grep -cE 'Validation Error|\[ VUID-' "$1" || true; } # the layer's messages, not a VUID the library's own message names
vvl_note() { echo "$(vvl_count "$1") validation messages; $(grep -E '^test result:' "$1" | tail -1 | cut -c1-60)"; }
vvl_verdict() { [ "$(vvl_count "$1")" -eq 0 ] && grep -q '^test result: ok' "$1"; }
san_errors() { # the sum of compute-sanitizer's ERROR SUMMARY lines; "none" when there is none
    local n
    # memcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)"
    n=$(sed -n -e 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' -e 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' "$1" | awk '{ s += $1 } END { if (NR) print s; else print "none" }')
    echo "$n"
}
# An executable that makes no CUDA call at all (its GPU tests are Vulkan-only)
# leaves compute-sanitizer nothing to check: "terminated before first instrumented
# API call", exit status 255. Reported as such, not as a pass.
san_nothing() { grep -q 'terminated before first instrumented API call' "$1" && grep -q '^test result: ok' "$1"; }
san_na() { # LOG RC: such a step is N/A, not FAIL
    [ "$2" = 255 ] && san_nothing "$1"
}
san_note() {
    if san_nothing "$1"; then echo "no CUDA call in this executable: nothing for the sanitizer (N/A)"; return; fi
    echo "$(san_errors "$1") sanitizer errors ($(grep -cE '(ERROR|RACECHECK) SUMMARY' "$1") summary lines)"
}
san_verdict() { [ "$(san_errors "$1")" = 0 ]; }

test_exe() { # NAME: the bundled test executable
    local f=$bundle/tests/test-$1
    [ -x "$f" ] || { echo "no $f: rebuild the bundle (scripts/gpu-bundle.sh) with tests/$1.rs"; return 1; }
    echo "$f"
}

run_test() { # NAME ARGS...: a bundled Rust test executable, one test at a time
    local exe
    exe=$(test_exe "$1") || return 1
    shift
    echo "$exe --test-threads=1 --include-ignored $*"
    "$exe" --test-threads=1 --include-ignored "$@"
}

# shellcheck source=scripts/gpu-vvl.sh
. "$top/scripts/gpu-vvl.sh"

sanitizer() { # TOOL COMMAND...: compute-sanitizer on a command
    local tool=$1 cs
    shift
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
    [ -n "$cs" ] || { echo "compute-sanitizer not found (CUDA toolkit: /usr/local/cuda/bin)"; return 1; }
    local extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    echo "$cs --tool $tool ${extra[*]} --target-processes all --error-exitcode 1 $*"
    "$cs" --tool "$tool" "${extra[@]}" --target-processes all --error-exitcode 1 "$@"
}

find_example() { find "$build" -type f -name "$1" -perm -u+x 2>/dev/null | head -1; }

run_example() { # NAME ARGS...
    local exe
    exe=$(find_example "$1")
    [ -n "$exe" ] || { echo "$1 was not built (no executable named $1 under $build)"; return 1; }
    shift
    echo "$exe $*"
    "$exe" "$@"
}

export -f test_exe run_test with_vvl sanitizer find_example run_example

# ---------------------------------------------------------------------------------
log "gpu-hardening.sh: steps: ${STEPS_WANTED[*]:-all}; log: $STEPS_LOG"
setup_note() { grep -m1 -E '^setup: |^GPU 0' "$1" | cut -c1-100; }
step --always --timeout 200 --note setup_note setup env OUT="$OUT/gpu-test-setup" scripts/gpu-test.sh setup
if [ "$STEP_RC" -ne 0 ]; then
    log "setup failed (see $OUT/gpu-test-setup/gpu.log): nothing can run"
    steps_summary
    exit 1
fi
export VK_DRIVER_FILES
VK_DRIVER_FILES=$(cat "$OUT/gpu-test-setup/icd-path")
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PATH=$PATH:/usr/local/cuda/bin
log "VK_DRIVER_FILES=$VK_DRIVER_FILES; commit: $(sed -n 's/^commit: //p' "$bundle/MANIFEST")"

step --timeout 300 --note rust_note leaks \
    env VKCUDA_FAULT_CYCLES=10000 bash -c 'run_test faults --exact gpu_create_destroy_cycles_do_not_leak --nocapture'
step --timeout 150 --note rust_note faults run_test faults --skip gpu_create_destroy_cycles_do_not_leak --nocapture
# The watchdog reports where each thread is before the step's limit kills it.
step --timeout 240 --note rust_note threads \
    env VKCUDA_THREAD_WATCHDOG_S="${VKCUDA_THREAD_WATCHDOG_S:-180}" bash -c 'run_test threads --nocapture' 
tsan_count() { grep -c 'WARNING: ThreadSanitizer' "$1" || true; }
tsan_note() { echo "$(tsan_count "$1") ThreadSanitizer warnings; $(rust_note "$1")"; }
tsan_verdict() { [ "$(tsan_count "$1")" -eq 0 ] && grep -q '^test result: ok' "$1"; }
if [ -x "$bundle/tsan-threads" ]; then
    step --timeout 280 --note tsan_note --verdict tsan_verdict tsan \
        env TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0" bash -c '"$bundle/tsan-threads" --test-threads=1 --include-ignored --nocapture'
else
    step_skip tsan "not bundled: no $bundle/tsan-threads (VKCUDA_BUNDLE_TSAN=1 scripts/gpu-bundle.sh)"
fi
step --timeout 120 --note rust_note misuse run_test misuse --nocapture

for t in "$bundle"/tests/test-*; do
    name=$(basename "$t")
    name=${name#test-}
    # header: no Vulkan; fake_cuda: its child processes replace LD_LIBRARY_PATH, so
    # the layer's library is not found there (the misuse matrix's fake-driver run
    # keeps it and covers the same paths).
    case $name in header|fake_cuda) continue ;; esac
    step --timeout 150 --note vvl_note --verdict vvl_verdict "vvl:$name" \
        env VKCUDA_THREAD_CYCLES=100 VKCUDA_FAULT_CYCLES=100 VKCUDA_GRAPH_LAYER_SEES_A=1 bash -c 'with_vvl run_test "$0" --skip gpu_device_memory_exhausted' "$name"
done

for name in buffer image semaphore ipc faults threads misuse context graph handoff planar; do
    step --timeout 150 --note san_note --verdict san_verdict --na-if san_na "memcheck:$name" \
        env VKCUDA_THREAD_CYCLES=50 VKCUDA_FAULT_CYCLES=50 VKCUDA_PLANAR_FRAMES=100 bash -c 'sanitizer memcheck "$(test_exe "$0")" --test-threads=1 --include-ignored --skip gpu_device_memory_exhausted --skip gpu_cuda_context_destroyed_first --skip misuse_matrix_with_fake_driver' "$name"
done
# (The fake-driver matrix is skipped there: a stand-in libcuda cannot be instrumented.)
# The caller destroying its CUDA context first is the misuse under test: the
# driver's own report of it (API calls failing with CONTEXT_IS_DESTROYED /
# INVALID_VALUE, the allocations alive in the context when it went "leaked") is
# what the test provokes. Memory access errors are still checked.
step --timeout 120 --note san_note --verdict san_verdict --na-if san_na "memcheck:faults:context-destroyed" \
    bash -c '"$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck --report-api-errors no --leak-check no --error-exitcode 1 "$(test_exe faults)" --test-threads=1 --include-ignored --exact gpu_cuda_context_destroyed_first --nocapture' 

# Every GPU test program and example, under racecheck and memcheck: NAME|ARGS (the
# arguments are shortened where the sanitizer makes the full run too long:
# image_formats without its 16384x16384 cases, fewer frames). The executable is NAME,
# except where example_exe says otherwise.
examples=(
    "vkcuda_info|"
    "buffer_roundtrip|4 1M+1 --cycles 2"
    "frame_loop|--frames 50 --latency-rounds 0"
    "image_formats|--no-big"
    "image_fractal|--out $OUT/fractal-sanitizer.png"
    "ipc_demo|--frames 50"
    "engine_postfx|--frames 30 --out $OUT/engine_postfx-sanitizer.png"
    "example:five_minutes|"
    "example:buffer_cuda_to_vulkan|"
    "example:buffer_vulkan_to_cuda|"
    "example:frame_timeline|"
    "example:image_to_png|$OUT/image_to_png-sanitizer.png"
    "example:cross_process|"
    "example:engine_postfx|$OUT/engine_postfx-example-sanitizer.png"
    "example:video_ycbcr|--size 1280x720 --out $OUT/video_ycbcr-sanitizer.png"
    "example:nvdec_to_vulkan|$bundle/clips/hevc_main10_1080p.hevc"
    "nvdec_frames|--clips $bundle/clips --rounds 0" # no timing under the sanitizer
)
example_exe() { # NAME: the executable the step runs
    case $1 in
        engine_postfx) echo engine_postfx_test ;;
        example:cross_process) echo cross_process_producer ;; # it starts the consumer
        example:*) echo "${1#example:}" ;;
        *) echo "$1" ;;
    esac
}
any_example=0
for e in "${examples[@]}"; do steps_wanted "racecheck:${e%%|*}" && any_example=1; done
if [ "$any_example" = 1 ]; then
    if [ -z "$(find_example engine_postfx_test)" ] || [ -z "$(find_example ipc_producer)" ] ||
        [ -z "$(find_example cross_process_producer)" ]; then
        log "== building the examples: scripts/gpu-test.sh configure build"
        OUT="$OUT/gpu-test-build" scripts/gpu-test.sh configure build >> "$STEPS_LOG" 2>&1 ||
            log "the build step failed (see $OUT/gpu-test-build/gpu.log)"
    fi
    # The executables are found first: compute-sanitizer starts its target without
    # this shell's exported functions. ipc_demo.sh is a shell script starting a
    # producer and a consumer process, cross_process_producer starts its consumer:
    # --target-processes all instruments both.
    ipc_bin=$(dirname "$(find_example ipc_producer)")
    export ipc_bin
    for e in "${examples[@]}"; do
        name=${e%%|*} args=${e#*|}
        for tool in racecheck memcheck; do
            if [ "$name" = ipc_demo ]; then
                # shellcheck disable=SC2016
                cmd='sanitizer "$0" tests/gpu/ipc_demo.sh --bin "$ipc_bin" $1'
            else
                # shellcheck disable=SC2016
                cmd='sanitizer "$0" "$(find_example "$2")" $1'
            fi
            step --timeout 150 --note san_note --verdict san_verdict --na-if san_na "racecheck:$name:$tool" \
                bash -c "$cmd" "$tool" "$args" "$(example_exe "$name")"
        done
    done
fi

# ---------------------------------------------------------------------------------
steps_summary
