#!/usr/bin/env bash
# Installs what building and testing vkcuda needs on Debian 12 / Ubuntu, only what
# is missing, without questions (the apt packages below; `apt-get update` only when
# one is missing), VMA's header (scripts/fetch-vma.sh) and CUDA's headers from PyPI;
# for the tests also rustup's clippy and rustfmt, the pinned cargo-semver-checks
# (cargo install --locked, minutes the first time) and nvcc from PyPI
# (scripts/gen-ptx.sh --install-only).
#
#   scripts/install-deps.sh [--demo] [--no-rust]
#
#   (default)  everything scripts/test.sh needs (it runs this)
#   --demo     only what scripts/demo.sh needs (it runs this with --demo): building the
#              library and the examples and running them: the apt packages marked
#              `demo` below, VMA's header and cuda.h (PyPI's 2 MB nvidia-cuda-runtime
#              wheel); no validation layer, clang, doxygen, abigail-tools, valgrind,
#              glslang (the committed SPIR-V is used), clippy, rustfmt,
#              cargo-semver-checks or nvcc
#
# Exit status 1 when something could not be installed, or cargo is missing (unless
# --no-rust or VKCUDA_PREBUILT_LIBRARY: the library is prebuilt, no Rust needed).
set -euo pipefail

need_rust=1
demo=0
for arg in "$@"; do
  case "$arg" in
    --demo) demo=1 ;;
    --no-rust) need_rust=0 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[ -z "${VKCUDA_PREBUILT_LIBRARY:-}" ] || need_rust=0

# Each package with `demo` when scripts/demo.sh needs it too; the rest are the tests'.
packages=(
  mesa-vulkan-drivers # demo: lavapipe: Vulkan on the CPU, for tests without a GPU
  libvulkan1          # demo: the Vulkan loader the library dlopens
  libvulkan-dev       # demo: Vulkan headers (vkcuda.h includes them), vulkan.pc, VulkanHeaders CMake package
  vulkan-tools        # vulkaninfo
  vulkan-validationlayers # VK_LAYER_KHRONOS_validation (the _vvl CTest tests)
  glslang-tools       # glslangValidator: the shaders compiled again, checked against the committed SPIR-V
  cmake               # demo
  make                # demo
  pkg-config          # demo
  gcc                 # demo
  g++                 # demo
  clang               # the vkcuda.hpp compiler matrix (tests/cpp/run.sh)
  doxygen             # the HTML docs of the headers (scripts/docs.sh)
  libc6-dev           # demo
  binutils            # demo: readelf, for the soname check; nm, for scripts/abi-check.sh
  abigail-tools       # abidw/abidiff: the ABI against the last release (scripts/abi-check.sh)
  valgrind
  libx11-dev          # Xlib: the windowed example (c_examples/present_window.c)
  xvfb                # an X server of its own for the windowed example's CI test (c_examples/xvfb.sh)
  libavutil-dev       # FFmpeg's libraries: the FFmpeg bridge (bridges/ffmpeg) and its tests;
  libavcodec-dev      #   without them the bridge is skipped (CMake says so)
  libavformat-dev     #   the raw demuxers of the bridge's GPU test
  libstb-dev          # demo: stb_image_write.h (/usr/include/stb): PNG output of the examples
  libffmpeg-nvenc-dev # demo: FFmpeg's nv-codec-headers (header-only): the NVDEC/NVENC programs
  ca-certificates     # demo: cargo downloads crates over HTTPS
  python3             # demo: the venv of CUDA's headers; the Python package (python/) and its tests
  python3-venv        # demo: that venv; CTest's python test installs the package and pytest into one
)
if [ "$demo" -eq 1 ]; then # the lines marked demo above
  mapfile -t packages < <(sed -n '/^packages=(/,/^)/s/^  \([^ ]*\) *# demo\b.*/\1/p' "$0")
fi

status=0
log() { echo "install-deps: $*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    log "need root for: $* (not root, and no sudo)"; return 1
  fi
}

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "apt packages: all ${#packages[@]} installed"
  else
    log "installing: ${missing[*]}"
    if as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"; then
      log "installed ${#missing[@]} package(s)"
    else
      log "FAILED to install: ${missing[*]}"
      status=1
    fi
  fi
else
  log "not a Debian/Ubuntu system (no apt-get/dpkg-query): install these yourself:"
  log "  ${packages[*]}"
  status=1
fi

# Lavapipe's ICD file: the loader finds it without VK_ICD_FILENAMES / VK_DRIVER_FILES.
ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 ||
  log "warning: no lavapipe ICD in /usr/share/vulkan/icd.d (mesa-vulkan-drivers)"

# --- Rust -------------------------------------------------------------------------
[ ! -d "$HOME/.cargo/bin" ] || PATH="$HOME/.cargo/bin:$PATH"
if [ "$demo" -eq 0 ] && command -v rustup >/dev/null 2>&1 && ! rustup component add clippy rustfmt; then # (a no-op when there)
  log "FAILED: rustup component add clippy rustfmt"
  [ "$need_rust" -eq 0 ] || status=1
fi
if command -v cargo >/dev/null 2>&1; then
  log "$(cargo --version) (cargo itself refuses one older than Cargo.toml's rust-version)"
elif [ "$need_rust" -eq 1 ]; then
  log "cargo is missing (Debian 12's rustc is too old): install Rust 1.80 or newer with rustup:"
  log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt"
  log "  . \"\$HOME/.cargo/env\"    (or build elsewhere and pass VKCUDA_PREBUILT_LIBRARY)"
  status=1
else
  log "cargo: not needed (--no-rust / VKCUDA_PREBUILT_LIBRARY)"
fi

# cargo-semver-checks, pinned: the Rust API against the last release
# (scripts/semver-check.sh, CTest's semver_check). Built from source with the
# versions its lock file pins, without its release profile's LTO and single codegen
# unit (5 minutes on 2 cores instead of 10), once per machine.
semver_checks_version=0.51.0
if [ "$demo" -eq 1 ]; then
  log "cargo-semver-checks, clippy, rustfmt, nvcc: not for the demo (scripts/test.sh installs them)"
elif command -v cargo >/dev/null 2>&1; then
  if [ "$(cargo semver-checks --version 2>/dev/null)" = "cargo-semver-checks $semver_checks_version" ]; then
    log "cargo-semver-checks $semver_checks_version: installed"
  else
    log "installing cargo-semver-checks $semver_checks_version (cargo install --locked; minutes)"
    t0=$SECONDS
    if CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      cargo install --locked --version "$semver_checks_version" cargo-semver-checks; then
      log "cargo-semver-checks $semver_checks_version: installed in $((SECONDS - t0)) s"
    else
      log "FAILED: cargo install --locked --version $semver_checks_version cargo-semver-checks"
      [ "$need_rust" -eq 1 ] && status=1
    fi
  fi
fi

# VMA's header (optional: without it CMake leaves the VMA example and test out).
if command -v cargo >/dev/null 2>&1 && ! "$(dirname "$0")/fetch-vma.sh"; then
  log "warning: scripts/fetch-vma.sh failed: the VMA example and test will be left out"
fi

# CUDA's headers (and for the tests nvcc) from PyPI, pinned (scripts/gen-ptx.sh; no GPU
# needed): cuda.h for the examples and GPU test programs where no CUDA toolkit is
# installed, nvcc for the check of the committed PTX.
if [ "$demo" -eq 1 ]; then
  cuda_step=--install-headers
else
  cuda_step=--install-only
fi
if ! "$(dirname "$0")/gen-ptx.sh" "$cuda_step"; then
  log "warning: installing CUDA's headers from PyPI failed: no cuda.h, so CMake leaves the examples out"
fi

exit "$status"
