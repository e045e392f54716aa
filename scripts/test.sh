#!/usr/bin/env bash
# THE test command: scripts/test.sh (from any directory).
#
# Installs what is missing (scripts/install-deps.sh), then runs, in order:
#   cargo fmt --check, cargo clippy --all-targets -- -D warnings, cargo test (all
#   Rust tests, the header staleness test too; on lavapipe, GPU tests skip without a
#   GPU), python (the Python package's tests, python/tests, in a fresh venv), vvl (the Rust tests that drive the library's Vulkan calls again under
#   VK_LAYER_KHRONOS_validation with synchronization validation, after proving the
#   layer is on; any "VUID" or "Validation Error" line fails; about 20 s), a
#   one-minute fuzz run (scripts/fuzz.sh --time 10: six cargo-fuzz targets, 10 s
#   each; the first run also installs cargo-fuzz and builds them, a few minutes),
#   bench-smoke, ptx (the committed PTX against its .cu: scripts/gen-ptx.sh --check
#   with the pinned nvcc, installed from PyPI into target/tools on the first run;
#   without it, a SKIPPED line says why), the CMake build of the library, examples and C tests, ctest,
#   vkcuda_info in an empty environment, cmake --install into a temporary prefix,
#   and the consumer checks against it (tests/consumer/run.sh), then the C++ checks
#   (tests/cpp/run.sh: the vkcuda.hpp compiler matrix, the C++ consumers, Doxygen,
#   engine_postfx under the validation layer).
# Every step runs even when an earlier independent one failed; steps that need a
# failed one are skipped. Ends with a summary table (the runner: scripts/lib/
# steps.sh) that lists under each step the checks it skipped: tests cargo ignored
# (with cargo's reason), "SKIPPED:" and the other skip lines steps.sh knows, the
# skip lines of ctest's tests and the tests it did not run; the last line counts
# them. Exits non-zero on any failure. Logs: $VKCUDA_BUILD_DIR/test-logs/.
#
# Environment:
#   VKCUDA_BUILD_DIR    the CMake build directory (default: <repo>/build)
#   VKCUDA_SKIP_DEPS=1  do not run scripts/install-deps.sh
#   VKCUDA_REQUIRE_GPU=1  passed through: GPU tests then fail instead of skipping
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
build="${VKCUDA_BUILD_DIR:-$root/build}"
mkdir -p "$build" || exit 1
build="$(cd "$build" && pwd)"
logs="$build/test-logs"
mkdir -p "$logs"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-test.XXXXXX")" || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ -d "$HOME/.cargo/bin" ]; then
  PATH="$HOME/.cargo/bin:$PATH"
fi
jobs="$(nproc 2>/dev/null || echo 2)"
locked=()
[ -f Cargo.lock ] && locked=(--locked)

# shellcheck source=scripts/lib/steps.sh
. "$root/scripts/lib/steps.sh"
steps_init test.sh "$logs"

x() { # prints a command, then runs it
  echo "+ $*"
  "$@"
}

have_tool() { # have_tool <cargo subcommand>
  if ! cargo "$1" --version >/dev/null 2>&1; then
    echo "cargo $1 is not installed: run \`rustup component add $1\`"
    return 1
  fi
}

run_fmt() { have_tool fmt && x cargo fmt --all --check; }
run_clippy() { have_tool clippy && x cargo clippy "${locked[@]}" --all-targets -- -D warnings; }
run_cargo_test() { x cargo test "${locked[@]}"; }
# The Rust tests that drive the library's Vulkan calls on lavapipe, once more under
# the Khronos validation layer with synchronization validation (Debian's
# vulkan-validationlayers: 1.3.239 on Debian 12, which reads VK_LAYER_ENABLES; newer
# layers read VK_LAYER_VALIDATE_SYNC). The loader drops a layer it cannot load and
# carries on, so first the layer must be seen inserted (VK_LOADER_DEBUG=layer) and
# must report the deliberate hazard of tests/buffer.rs validation_layer_canary.
# Then any "VUID" or "Validation Error" line fails the step; each is listed with its
# test (one test at a time, so a message follows the test that caused it).
vvl_tests=(buffer context image ipc misuse semaphore faults threads handoff handles diagnostics)
# NAME|TEST|WHY: tests left out under the layer, reported as skipped checks.
vvl_skips=(
  # The test's own barrier from GENERAL on the image device B just imported, without
  # an acquire from VK_QUEUE_FAMILY_EXTERNAL: layer 1.3.239 tracks that image as
  # UNDEFINED (UNASSIGNED-CoreValidation-DrawState-InvalidImageLayout); the 1.4.363
  # layer on the H200 does not report it. A test matter, not the library.
  "ipc|images_are_described_sent_and_imported|the test's barrier from GENERAL on a just-imported image is InvalidImageLayout to layer 1.3.239 (see scripts/test.sh)"
)
run_vvl() {
  local json="" d
  for d in ${VK_LAYER_PATH:-} /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
    [ -f "$d/VkLayer_khronos_validation.json" ] && { json="$d/VkLayer_khronos_validation.json"; break; }
  done
  if [ -z "$json" ]; then
    echo "VK_LAYER_KHRONOS_validation is not installed (apt-get install vulkan-validationlayers; scripts/install-deps.sh does)"
    return 1
  fi
  echo "layer: $json ($(grep -ho '"api_version": *"[^"]*"' "$json" | head -1))"
  export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
  export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT VK_LAYER_VALIDATE_SYNC=1
  echo "VK_INSTANCE_LAYERS=$VK_INSTANCE_LAYERS VK_LAYER_ENABLES=$VK_LAYER_ENABLES VK_LAYER_VALIDATE_SYNC=1"

  local canary="$tmp/vvl-canary.log"
  echo "+ VK_LOADER_DEBUG=layer cargo test --test buffer -- --ignored --exact validation_layer_canary"
  VK_LOADER_DEBUG=layer cargo test "${locked[@]}" --test buffer -- --ignored --exact validation_layer_canary \
    > "$canary" 2>&1
  if ! grep -q 'Insert instance layer "VK_LAYER_KHRONOS_validation"' "$canary"; then
    echo "the loader did not insert VK_LAYER_KHRONOS_validation (its messages: $canary):"
    grep -iE 'error|khronos_validation' "$canary" | head -10
    return 1
  fi
  if ! grep -q 'SYNC-HAZARD-WRITE-AFTER-WRITE' "$canary"; then
    echo "the layer is loaded but did not report the canary's SYNC-HAZARD-WRITE-AFTER-WRITE: synchronization validation is off"
    grep -E '^test |^test result' "$canary"
    return 1
  fi
  echo "layer check: loaded (VK_LOADER_DEBUG: inserted), and the canary's SYNC-HAZARD-WRITE-AFTER-WRITE was reported"

  local t e n skip why skip_args nfailed=0 total=0 rc
  for t in "${vvl_tests[@]}"; do
    skip_args=()
    for e in "${vvl_skips[@]}"; do
      IFS='|' read -r n skip why <<< "$e"
      if [ "$n" = "$t" ]; then
        skip_args+=(--skip "$skip")
        echo "SKIPPED: $t $skip under the layer: $why"
      fi
    done
    echo "+ cargo test --test $t -- --test-threads=1 ${skip_args[*]}"
    cargo test "${locked[@]}" --test "$t" -- --test-threads=1 "${skip_args[@]}" > "$tmp/vvl-$t.log" 2>&1
    rc=$?
    # (Not as "test result:" lines: the tests ignored here are the cargo-test step's.)
    sed -n "s/^test result: /$t: /p" "$tmp/vvl-$t.log"
    n=$(grep -cE 'VUID|Validation Error' "$tmp/vvl-$t.log")
    total=$((total + n))
    if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
      nfailed=$((nfailed + 1))
      echo "$t: exit status $rc, $n validation message(s):"
      # Each message with the test it came after, and its message ID.
      awk '
        /^test [^ ]+ \.\.\. / { name = $2 }
        /VUID|Validation Error/ {
          id = $0
          if (match(id, /\[ [A-Za-z0-9_-]+ \]/)) id = substr(id, RSTART + 2, RLENGTH - 4); else id = "?"
          print "  " (name == "" ? "?" : name) ": " id ": " substr($0, 1, 400)
        }' "$tmp/vvl-$t.log"
      [ "$rc" -eq 0 ] || grep -E 'panicked|FAILED|failures:' "$tmp/vvl-$t.log" | head -10
    fi
  done
  echo "validation messages: $total in ${#vvl_tests[@]} test executables (${vvl_tests[*]})"
  [ "$nfailed" -eq 0 ]
}
vvl_note() { # LOG RC: the count, and on failure the first message (test: ID) or error
  grep -m1 '^validation messages: ' "$1" | sed 's/ in [0-9]* test executables.*//'
  [ "$2" -eq 0 ] || { grep -m1 -E '^  [^ ]+: [^ ]+: |^the (loader|layer) |not installed' "$1" | cut -c1-120; }
}
run_fuzz() { VKCUDA_FUZZ_OUT="$logs/fuzz" x "$root/scripts/fuzz.sh" --time 10; }

run_configure() {
  x cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DVKCUDA_BUILD_EXAMPLES=ON -DVKCUDA_BUILD_TESTS=ON
}
run_build() { x cmake --build "$build" -j "$jobs"; }
run_ctest() { (cd "$build" && x ctest --output-on-failure -j "$jobs"); }
# The ctest step's skipped checks: the skip lines (scripts/lib/steps.sh) in each
# test's output, which ctest keeps in LastTest.log (it shows only failures), and the
# tests ctest did not run (exit status 77: "Skipped") that printed no such line.
ctest_skipped() { # LOG (the step's)
  local last="$build/Testing/Temporary/LastTest.log"
  [ -f "$last" ] || last=/dev/null
  awk -v marker="$STEPS_MARKER_RE" '
    FILENAME == ARGV[1] && /^[0-9]+\/[0-9]+ Test: / { name = $3; next }
    FILENAME == ARGV[1] && /^"[^"]*" end time: / { name = ""; next }
    FILENAME == ARGV[1] && name != "" && $0 ~ marker {
      line = $0; sub(/^[[:space:]]*/, "", line); gsub(/[[:space:]][[:space:]]+/, " ", line)
      print "ctest " name ": " substr(line, 1, 200); said[name] = 1; next
    }
    FILENAME == ARGV[2] && /^The following tests did not run:/ { list = 1; next }
    FILENAME == ARGV[2] && list && /^[[:space:]]*[0-9]+ - [^ ]+ \(/ {
      n = $3; why = $0; sub(/^[^(]*\(/, "", why); sub(/\).*$/, "", why)
      if (!(n in said)) print "ctest " n ": did not run (" why ")"
    }
  ' "$last" "$1"
}

# vkcuda_info with nothing in the environment (no VK_ICD_FILENAMES / VK_DRIVER_FILES,
# no LD_LIBRARY_PATH): the loader must find a driver by itself.
run_info() {
  local out="$tmp/vkcuda_info.txt"
  echo "+ env -i PATH=... HOME=... $build/c_examples/vkcuda_info"
  env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
    ${VKCUDA_REQUIRE_GPU:+VKCUDA_REQUIRE_GPU=$VKCUDA_REQUIRE_GPU} \
    "$build/c_examples/vkcuda_info" | tee "$out"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || return "$rc"
  if ! grep -Eq '^Vulkan devices: [1-9]' "$out"; then
    echo "no Vulkan device in a clean environment: is mesa-vulkan-drivers (lavapipe) installed?"
    return 1
  fi
  if ! grep -Eq '^Standalone context \(Vulkan (\+ CUDA|only)\): created' "$out"; then
    echo "no standalone context could be created"
    return 1
  fi
}

run_install() { x cmake --install "$build" --prefix "$tmp/prefix"; }
run_consumer() { x "$root/tests/consumer/run.sh" "$tmp/prefix" "$tmp/consumer"; }
# vkcuda.hpp: the GCC/Clang x C++17/20 x exceptions/-fno-exceptions matrix of its unit
# tests, the C++ install-tree and add_subdirectory consumers, Doxygen (tests/cpp/run.sh).
run_cpp() { x "$root/tests/cpp/run.sh" "$build" "$tmp/prefix" "$tmp/cpp"; }

echo "vkcuda test.sh: $root (build: $build, $jobs jobs, CI=${CI:-})"
if [ "${VKCUDA_SKIP_DEPS:-0}" = 1 ]; then
  echo "==> install-deps: skipped (VKCUDA_SKIP_DEPS=1)"
else
  step install-deps "$root/scripts/install-deps.sh"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: see the install-deps output above"
fi
run_bench_smoke() { # the benchmarks' parts that run without a GPU, a few iterations each
  x cargo bench "${locked[@]}" --bench interop -- --quick &&
    x cargo bench "${locked[@]}" --bench calls -- --quick
}

step fmt run_fmt
step clippy run_clippy
step cargo-test run_cargo_test

# The Python package (pyproject.toml at the root, sources in python/), installed
# into a fresh venv the way a user installs it (`pip install .`: setuptools-rust
# builds the stripped cdylib into target/; -v shows cargo's output); pytest and mypy
# from PyPI; mypy on the package; its CPU tests against the installed package: the
# API on Vulkan-only contexts, DLPack with the fake libcuda paired to lavapipe
# (python/tests/conftest.py), the ctypes declarations against vkcuda.h (test_abi),
# the doctor and the packaging (test_package).
run_python() {
  local venv="$tmp/venv"
  x python3 -m venv "$venv" &&
    x "$venv/bin/python" -m pip install -q pytest mypy &&
    x "$venv/bin/python" -m pip install "$root" &&
    x "$venv/bin/python" -m mypy --ignore-missing-imports --cache-dir "$tmp/mypy" "$root/python/vkcuda" &&
    (cd "$root" && x "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests)
}
pytest_skipped() { grep -E '^SKIPPED \[[0-9]+\]' "$1" || true; } # pytest -rs: "SKIPPED [n] file:line: why"
step --needs cargo-test --skips pytest_skipped python run_python

step --needs cargo-test --note vvl_note vvl run_vvl
step fuzz run_fuzz
step bench-smoke run_bench_smoke
# The PTX the examples and GPU tests embed (c_examples/*.ptx, examples/cpp/postfx.ptx,
# tests/gpu/*.ptx) is what nvcc 13.0.88 makes of its .cu (scripts/gen-ptx.sh).
run_ptx() { x "$root/scripts/gen-ptx.sh" --check --install --if-nvcc; }
step ptx run_ptx
# The C ABI against the last release's baseline (abi/): every change named in
# CHANGELOG.md's Unreleased section (scripts/abi-check.sh; abidiff from abigail-tools),
# and the check's own test: unlisted changes in scratch copies fail it.
run_abi() { x "$root/scripts/abi-check.sh" && x "$root/tests/abi/self_test.sh"; }
step --needs cargo-test abi-check run_abi
step cmake-configure run_configure
step --needs cmake-configure cmake-build run_build
step --needs cmake-build --skips ctest_skipped ctest run_ctest
step --needs cmake-build vkcuda_info run_info
step --needs cmake-build cmake-install run_install
step --needs cmake-install consumer run_consumer
step --needs cmake-install cpp run_cpp

steps_summary
