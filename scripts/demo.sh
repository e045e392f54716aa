#!/usr/bin/env bash
# THE demo command: scripts/demo.sh (from any directory).
#
# Installs what is missing, builds the library (cargo, through CMake) and the
# examples, runs vkcuda_info, and, when a CUDA GPU is paired with a Vulkan device,
# runs every GPU example (c_examples/ and examples/cpp/, listed by CMake in
# <build>/c_examples/gpu_examples.txt) in <build>/demo, where their PNGs are written.
# The exhaustive GPU checks are the tests/gpu programs that scripts/gpu-test.sh runs.
#
# Environment:
#   VKCUDA_BUILD_DIR         the CMake build directory (default: <repo>/build)
#   VKCUDA_PREBUILT_LIBRARY  an already built libvkcuda.so: no cargo, no Rust toolchain
#   VKCUDA_SKIP_DEPS=1       do not run scripts/install-deps.sh
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
build="${VKCUDA_BUILD_DIR:-$root/build}"
if [ -d "$HOME/.cargo/bin" ]; then
  PATH="$HOME/.cargo/bin:$PATH"
fi
jobs="$(nproc 2>/dev/null || echo 2)"

echo "==> vkcuda demo ($root, build: $build)"
if [ "${VKCUDA_SKIP_DEPS:-0}" != 1 ]; then
  if ! "$root/scripts/install-deps.sh"; then
    echo "==> install-deps did not finish; carrying on (the build says what is missing)"
  fi
fi

configure=(-DCMAKE_BUILD_TYPE=Release -DVKCUDA_BUILD_EXAMPLES=ON)
if [ -n "${VKCUDA_PREBUILT_LIBRARY:-}" ]; then
  configure+=("-DVKCUDA_PREBUILT_LIBRARY=$(realpath "$VKCUDA_PREBUILT_LIBRARY")")
fi
echo "==> cmake -S . -B $build ${configure[*]}"
cmake -S "$root" -B "$build" "${configure[@]}" || exit 1
echo "==> cmake --build $build"
cmake --build "$build" -j "$jobs" || exit 1

echo "==> vkcuda_info"
"$build/c_examples/vkcuda_info" || exit 1

list="$build/c_examples/gpu_examples.txt"
examples=()
if [ -f "$list" ]; then
  while IFS= read -r line; do
    [ -n "$line" ] && examples+=("$line")
  done <"$list"
fi
if [ "${#examples[@]}" -eq 0 ]; then
  echo "==> no GPU examples are built yet"
  echo "demo: OK (vkcuda_info ran)"
  exit 0
fi
if ! VKCUDA_REQUIRE_GPU=1 "$build/c_examples/vkcuda_info" >/dev/null 2>&1; then
  echo "==> no CUDA GPU paired with a Vulkan device: not running the ${#examples[@]} GPU example(s)"
  echo "demo: OK (vkcuda_info ran; GPU examples need a CUDA GPU)"
  exit 0
fi

failed=()
mkdir -p "$build/demo"
for exe in "${examples[@]}"; do
  echo "==> $(basename "$exe")"
  (cd "$build/demo" && VKCUDA_REQUIRE_GPU=1 "$exe")
  rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "    (skipped itself)"
  elif [ "$rc" -ne 0 ]; then
    echo "    FAILED with status $rc"
    failed+=("$(basename "$exe")")
  fi
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "demo: FAILED: ${failed[*]}"
  exit 1
fi
echo "demo: OK (vkcuda_info and ${#examples[@]} GPU example(s) ran; pictures in $build/demo)"
