#!/usr/bin/env bash
# THE test command: scripts/test.sh (from any directory).
#
# Installs what is missing (scripts/install-deps.sh), then runs, in order:
#   cargo fmt --check, cargo clippy --all-targets -- -D warnings, cargo test (all
#   Rust tests, the header staleness test too; on lavapipe, GPU tests skip without a
#   GPU), the Python package's tests (python/tests in a fresh venv), a one-minute fuzz run (scripts/fuzz.sh --time 10: six cargo-fuzz targets,
#   10 s each; the first run also builds them, a few minutes), the CMake build of
#   the library, examples and C tests, ctest, vkcuda_info in an empty environment,
#   cmake --install into a temporary prefix, and the consumer checks against it
#   (tests/consumer/run.sh), then the C++ checks (tests/cpp/run.sh:
#   the vkcuda.hpp compiler matrix, the C++ consumers, Doxygen).
# Every step runs even when an earlier independent one failed; steps that need a
# failed one are skipped. Ends with a summary; exits non-zero on any failure.
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

start_all=$SECONDS
names=()
results=()
times=()
declare -A outcome=()

# step <name> <needs: space-separated step names or ""> <command...>
step() {
  local name="$1" needs="$2"
  shift 2
  local n
  for n in $needs; do
    if [ "${outcome[$n]:-}" != PASS ]; then
      echo
      echo "==> $name: SKIPPED ($n did not pass)"
      names+=("$name"); results+=(SKIP); times+=(0); outcome[$name]=SKIP
      return
    fi
  done
  echo
  echo "==> $name"
  local t0=$SECONDS rc
  "$@" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  local dt=$((SECONDS - t0))
  names+=("$name"); times+=("$dt")
  if [ "$rc" -eq 0 ]; then
    results+=(PASS); outcome[$name]=PASS
    echo "==> $name: passed (${dt}s)"
  else
    results+=(FAIL); outcome[$name]=FAIL
    echo "==> $name: FAILED with status $rc (${dt}s; log: $logs/$name.log)"
  fi
}

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
run_fuzz() { VKCUDA_FUZZ_OUT="$logs/fuzz" x "$root/scripts/fuzz.sh" --time 10; }

run_configure() {
  x cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DVKCUDA_BUILD_EXAMPLES=ON -DVKCUDA_BUILD_TESTS=ON
}
run_build() { x cmake --build "$build" -j "$jobs"; }
run_ctest() { (cd "$build" && x ctest --output-on-failure -j "$jobs"); }

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
  step install-deps "" "$root/scripts/install-deps.sh"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: see the install-deps output above"
fi
run_bench_smoke() { # the benchmark's parts that run without a GPU, a few iterations each
  x cargo bench "${locked[@]}" --bench interop -- --quick
}

step fmt "" run_fmt
step clippy "" run_clippy
step cargo-test "" run_cargo_test

# The Python package (python/), installed into a fresh venv (pytest and mypy from
# PyPI) with the library cargo just built; mypy on the package; its CPU tests: the API on Vulkan-only contexts, and
# DLPack with the fake libcuda paired to lavapipe (python/tests/conftest.py).
run_python() {
  local venv="$tmp/venv"
  x cargo build "${locked[@]}" --lib &&
    x python3 -m venv "$venv" &&
    x "$venv/bin/python" -m pip install -q pytest mypy &&
    VKCUDA_LIBRARY="$root/target/debug/libvkcuda.so" x "$venv/bin/python" -m pip install -q "$root/python" &&
    x "$venv/bin/python" -m mypy --ignore-missing-imports --cache-dir "$tmp/mypy" "$root/python/vkcuda" &&
    (cd "$root" && x "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests)
}
step python "cargo-test" run_python
step fuzz "" run_fuzz
step bench-smoke "" run_bench_smoke
step cmake-configure "" run_configure
step cmake-build "cmake-configure" run_build
step ctest "cmake-build" run_ctest
step vkcuda_info "cmake-build" run_info
step cmake-install "cmake-build" run_install
step consumer "cmake-install" run_consumer
step cpp "cmake-install" run_cpp

total=$((SECONDS - start_all))
failed=()
skipped=()
echo
echo "==> summary"
for i in "${!names[@]}"; do
  printf '  %-5s %-16s %4ss\n' "${results[$i]}" "${names[$i]}" "${times[$i]}"
  case "${results[$i]}" in
    FAIL) failed+=("${names[$i]}") ;;
    SKIP) skipped+=("${names[$i]}") ;;
  esac
done
if [ "${#failed[@]}" -eq 0 ] && [ "${#skipped[@]}" -eq 0 ]; then
  echo "test.sh: PASSED: all ${#names[@]} steps passed in ${total}s"
  exit 0
fi
echo "test.sh: FAILED: ${#failed[@]} of ${#names[@]} steps failed (${failed[*]}), ${#skipped[@]} skipped, in ${total}s; logs in $logs"
exit 1
