#!/usr/bin/env bash
# THE demo command: scripts/demo.sh (from any directory).
#
# Installs what is missing for it (scripts/install-deps.sh --demo: no test-only tools),
# builds the library (cargo, through CMake) and the
# examples, runs vkcuda_info, and, when a CUDA GPU is paired with a Vulkan device,
# runs every GPU example (c_examples/, examples/: the CTest tests labelled gpu and
# example, without their validation-layer twins); their PNGs go to <build>/demo.
# The exhaustive GPU checks are scripts/gpu-test.sh's.
#
# Environment:
#   VKCUDA_BUILD_DIR         the CMake build directory (default: <repo>/build)
#   VKCUDA_PREBUILT_LIBRARY  an already built libvkcuda.so: no cargo, no Rust toolchain
#   VKCUDA_SKIP_DEPS=1       do not run scripts/install-deps.sh --demo
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${VKCUDA_BUILD_DIR:-$root/build}"
[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
if [ "${VKCUDA_SKIP_DEPS:-0}" != 1 ] && ! "$root/scripts/install-deps.sh" --demo; then
  echo "==> install-deps did not finish; carrying on (the build says what is missing)"
fi
configure=(-DCMAKE_BUILD_TYPE=Release -DVKCUDA_BUILD_EXAMPLES=ON -DVKCUDA_TEST_OUTPUT_DIR="$build/demo")
[ -z "${VKCUDA_PREBUILT_LIBRARY:-}" ] ||
  configure+=("-DVKCUDA_PREBUILT_LIBRARY=$(realpath "$VKCUDA_PREBUILT_LIBRARY")")
echo "==> cmake -S $root -B $build ${configure[*]}"
cmake -S "$root" -B "$build" "${configure[@]}" && cmake --build "$build" -j "$(nproc)" || exit 1
echo "==> vkcuda_info"
"$build/c_examples/vkcuda_info" || exit 1
if ! VKCUDA_REQUIRE_GPU=1 "$build/c_examples/vkcuda_info" > /dev/null 2>&1; then
  echo "demo: OK (vkcuda_info ran; the GPU examples need a CUDA GPU paired with a Vulkan device)"
  exit 0
fi
ctest --test-dir "$build" --output-on-failure -L '^gpu$' -L '^example$' -LE '^vvl$' || exit 1
echo "demo: OK (vkcuda_info and the GPU examples ran; pictures in $build/demo)"
