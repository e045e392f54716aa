#!/usr/bin/env bash
# Checks an installed vkcuda tree the way a consumer sees it:
#   tests/consumer/run.sh <prefix> [work-dir]
# <prefix> is what `cmake --install <build> --prefix <prefix>` wrote. It checks the
# installed files and soname links, the soname (readelf -d or objdump -p), builds
# this directory's CMake project (find_package(vkcuda CONFIG REQUIRED), C and C++17)
# and a C file with `pkg-config --cflags --libs vkcuda`, and runs the programs.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src_root="$(cd "$here/../.." && pwd)"
prefix="${1:?usage: $0 <install-prefix> [work-dir]}"
prefix="$(cd "$prefix" && pwd)" || exit 2
work="${2:-$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-consumer.XXXXXX")}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok    $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() { # check <description> <command...>
  local what="$1"; shift
  if "$@" >"$work/last.log" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/        /' "$work/last.log"; fi
}

# The library directory: lib, or lib64 / lib/<multiarch> when GNUInstallDirs chose so.
libdir=""
for d in lib lib64 lib/*-linux-gnu*; do
  if [ -e "$prefix/$d/libvkcuda.so" ]; then libdir="$prefix/$d"; break; fi
done
if [ -z "$libdir" ]; then
  echo "consumer: no libvkcuda.so under $prefix/lib*"
  echo "consumer checks: 0 passed, 1 failed"
  exit 1
fi
echo "consumer: checking the vkcuda installed in $prefix (libdir $libdir), work dir $work"

# The soname carries the ABI version: 0.MINOR while the version is 0.x, else MAJOR.
version="$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p' "$src_root/Cargo.toml" | head -n1)"
case "$version" in
  0.*) abi_soname="libvkcuda.so.0.$(echo "$version" | cut -d. -f2)" ;;
  *) abi_soname="libvkcuda.so.$(echo "$version" | cut -d. -f1)" ;;
esac
real="libvkcuda.so.$version"
check "lib: $real is a regular file" test -f "$libdir/$real" -a ! -L "$libdir/$real"
check "lib: $abi_soname -> $real" test "$(readlink "$libdir/$abi_soname")" = "$real"
check "lib: libvkcuda.so -> $abi_soname" test "$(readlink "$libdir/libvkcuda.so")" = "$abi_soname"
check "include/vkcuda.h" test -f "$prefix/include/vkcuda.h"
check "cmake: vkcudaConfig.cmake" test -f "$libdir/cmake/vkcuda/vkcudaConfig.cmake"
check "cmake: vkcudaConfigVersion.cmake" test -f "$libdir/cmake/vkcuda/vkcudaConfigVersion.cmake"
check "pkgconfig/vkcuda.pc" test -f "$libdir/pkgconfig/vkcuda.pc"
# The doctor is installed with the library and finds it through its rpath (exit 1
# without a CUDA GPU is fine here: the JSON must come out either way).
check "bin/vkcuda_doctor --json runs from the prefix" \
  bash -c "env -u LD_LIBRARY_PATH '$prefix/bin/vkcuda_doctor' --json | grep -q '\"ready\": '"
case "$prefix/" in
  "$src_root"/*) ;; # a prefix inside the source tree: its own path is in the files
  *) check "installed config and .pc name no source or build paths" \
       bash -c "! grep -l -F '$src_root' '$libdir/cmake/vkcuda/'*.cmake '$libdir/pkgconfig/vkcuda.pc'" ;;
esac

soname_of() {
  if command -v readelf >/dev/null; then
    readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'
  else
    objdump -p "$1" | awk '$1 == "SONAME" { print $2 }'
  fi
}
soname="$(soname_of "$libdir/$real")"
echo "  soname of $real: ${soname:-(none)}"
check "soname is $abi_soname" test "$soname" = "$abi_soname"

# --- find_package(vkcuda CONFIG REQUIRED) ---------------------------------------
check "cmake: configure tests/consumer against the prefix" \
  cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
check "cmake: build consumer_c (C99) and consumer_cxx (C++17)" \
  cmake --build "$work/cmake-build" -j 2
for exe in consumer_c consumer_cxx; do
  if [ -x "$work/cmake-build/$exe" ]; then
    check "run $exe" "$work/cmake-build/$exe"
    sed 's/^/        /' "$work/last.log"
    check "$exe needs $abi_soname" \
      bash -c "readelf -d '$work/cmake-build/$exe' | grep -F 'Shared library: [$abi_soname]'"
  else
    fail "$exe was not built"
  fi
done

# Only the Vulkan headers: with FindVulkan and VulkanHeadersConfig switched off, the
# config falls back to find_path(vulkan/vulkan_core.h).
check "cmake: find_package(vkcuda) with only the Vulkan headers (no FindVulkan, no VulkanHeaders)" \
  cmake -S "$here" -B "$work/cmake-build-headers-only" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON -DCMAKE_DISABLE_FIND_PACKAGE_VulkanHeaders=ON
check "cmake: build it" cmake --build "$work/cmake-build-headers-only" -j 2 --target consumer_c

# --- pkg-config --cflags --libs vkcuda ----------------------------------------------
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if pc_flags="$(pkg-config --cflags --libs vkcuda 2>"$work/pc.err")"; then
  pass "pkg-config --cflags --libs vkcuda: $pc_flags"
  case " $pc_flags " in
    *" -lvulkan "*) fail "pkg-config --libs adds -lvulkan (vkcuda does not link the loader)" ;;
    *) pass "pkg-config --libs has no -lvulkan" ;;
  esac
  # shellcheck disable=SC2086  # the flags are words
  check "cc -std=c99 -Wall -Wextra -Wpedantic -Werror consumer.c \$(pkg-config ...)" \
    "${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror "$here/consumer.c" -o "$work/consumer_pc" $pc_flags
  if [ -x "$work/consumer_pc" ]; then
    check "run consumer_pc (LD_LIBRARY_PATH=$libdir)" env LD_LIBRARY_PATH="$libdir" "$work/consumer_pc"
    sed 's/^/        /' "$work/last.log"
  fi
else
  fail "pkg-config --cflags --libs vkcuda"
  sed 's/^/        /' "$work/pc.err"
fi

echo "consumer checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
