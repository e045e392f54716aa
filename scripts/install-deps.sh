#!/usr/bin/env bash
# Installs what building and testing vkcuda needs on Debian 12 / Ubuntu, only what
# is missing, without questions: the Vulkan loader, headers, Mesa's CPU driver
# (lavapipe) and the Khronos validation layer, CMake, pkg-config, GCC, Clang,
# valgrind, glslang, Doxygen, stb (stb_image_write.h, for the examples' PNG output).
# `apt-get update` runs only when a package is missing. With rustup, adds the clippy
# and rustfmt components when they are missing.
#
#   scripts/install-deps.sh [--no-rust]
#
# Exit status: 0 when everything is there; 1 when something could not be installed,
# or cargo is missing (unless --no-rust is given or VKCUDA_PREBUILT_LIBRARY is set:
# then no Rust toolchain is needed, the library is prebuilt).
set -euo pipefail

need_rust=1
for arg in "$@"; do
  case "$arg" in
    --no-rust) need_rust=0 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [ -n "${VKCUDA_PREBUILT_LIBRARY:-}" ]; then
  need_rust=0
fi

packages=(
  mesa-vulkan-drivers # lavapipe: Vulkan on the CPU, for tests without a GPU
  libvulkan1          # the Vulkan loader the library dlopens
  libvulkan-dev       # Vulkan headers (vkcuda.h includes them), vulkan.pc, VulkanHeaders CMake package
  vulkan-tools        # vulkaninfo
  vulkan-validationlayers # VK_LAYER_KHRONOS_validation (scripts/test.sh's vvl step, tests/cpp/run.sh)
  glslang-tools       # glslangValidator, for the examples' shaders
  cmake
  make
  pkg-config
  gcc
  g++
  clang               # the vkcuda.hpp compiler matrix (tests/cpp/run.sh)
  doxygen             # the HTML docs of the headers (scripts/docs.sh)
  libc6-dev
  binutils            # readelf, for the soname check; nm, for scripts/abi-check.sh
  abigail-tools       # abidw/abidiff: the ABI against the last release (scripts/abi-check.sh)
  valgrind
  libstb-dev          # stb_image_write.h (/usr/include/stb): PNG output of the examples
  libffmpeg-nvenc-dev # FFmpeg's nv-codec-headers (header-only): the NVDEC/NVENC programs
  ca-certificates     # cargo downloads crates over HTTPS
  python3             # the Python package (python/) and its tests
  python3-venv        # scripts/test.sh installs it and pytest into a venv
)
# The names without comments.
read -r -a packages <<<"$(printf '%s\n' "${packages[@]}" | sed 's/#.*//' | tr '\n' ' ')"

status=0
log() { echo "install-deps: $*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    log "need root for: $* (not root, and no sudo)"
    return 1
  fi
}

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != "installed" ]; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "apt packages: all ${#packages[@]} installed"
  else
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
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
if ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1; then
  log "lavapipe: $(ls /usr/share/vulkan/icd.d/lvp_icd.*.json | head -n1)"
else
  log "warning: no lavapipe ICD in /usr/share/vulkan/icd.d (mesa-vulkan-drivers)"
fi

# --- Rust -------------------------------------------------------------------------
if [ -d "$HOME/.cargo/bin" ]; then
  PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v rustup >/dev/null 2>&1; then
  installed="$(rustup component list --installed 2>/dev/null || true)"
  for c in clippy rustfmt; do
    if printf '%s\n' "$installed" | grep -q "^$c"; then
      log "rustup component $c: installed"
    elif rustup component add "$c"; then
      log "rustup component $c: added"
    else
      log "FAILED: rustup component add $c"
      [ "$need_rust" -eq 1 ] && status=1
    fi
  done
fi
if command -v cargo >/dev/null 2>&1; then
  log "$(cargo --version)"
  # Cargo.toml's rust-version.
  want="$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$(dirname "$0")/../Cargo.toml" | head -n1)"
  have="$(cargo --version | sed -n 's/^cargo \([0-9]*\.[0-9]*\).*/\1/p')"
  if [ -n "$want" ] && [ -n "$have" ] &&
    [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n1)" != "$want" ]; then
    log "cargo $have is older than rust-version $want: run \`rustup update stable\`"
    [ "$need_rust" -eq 1 ] && status=1
  fi
elif [ "$need_rust" -eq 1 ]; then
  log "cargo is missing. Install the Rust toolchain (1.80 or newer) with rustup:"
  log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt"
  log "  . \"\$HOME/.cargo/env\""
  log "(Debian 12's own rustc is too old.) Or build elsewhere and pass VKCUDA_PREBUILT_LIBRARY."
  status=1
else
  log "cargo: not needed (--no-rust / VKCUDA_PREBUILT_LIBRARY)"
fi

# --- VulkanMemoryAllocator's header (the VMA example and test) ---------------------
# From the vk-mem crate's package, into .dev/vma (scripts/fetch-vma.sh). Optional:
# without it CMake leaves the VMA programs out.
if command -v cargo >/dev/null 2>&1; then
  if "$(dirname "$0")/fetch-vma.sh"; then
    log "VMA header: .dev/vma/include/vk_mem_alloc.h"
  else
    log "warning: scripts/fetch-vma.sh failed: the VMA example and test will be left out"
  fi
fi

exit "$status"
