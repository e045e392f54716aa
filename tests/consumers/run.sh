#!/usr/bin/env bash
# Checks an installed vkcuda tree the way a consumer project sees it:
#   tests/consumers/run.sh c   <install-prefix> [work-dir]
#   tests/consumers/run.sh cpp <install-prefix> [work-dir] [vkcuda-build-dir]
# <install-prefix> is what `cmake --install <build> --prefix <prefix>` wrote.
#
# c    (CTest: consumer) the installed files and soname links, the soname (readelf -d
#      or objdump -p), the doctor; builds c/ (find_package(vkcuda CONFIG REQUIRED),
#      C99 and C++17), once more with only the Vulkan headers, and c/consumer.c with
#      `pkg-config --cflags --libs vkcuda`; runs the programs. The FFmpeg bridge
#      (VKCUDA_CONSUMER_FFMPEG=1: it was built and installed; 0: it was skipped, so
#      nothing of it may be installed): its library, header, CMake file and .pc, and
#      ffmpeg/ built with find_package(vkcuda COMPONENTS ffmpeg) and with
#      `pkg-config --cflags --libs vkcuda-ffmpeg`, and run.
# cpp  (CTest: consumer_cpp) builds cpp/ (consumer_cpp17, consumer_cpp20,
#      consumer_cpp17_noexcept) both ways a project gets vkcuda.hpp and runs them:
#      1. installed: find_package(vkcuda CONFIG REQUIRED) with CMAKE_PREFIX_PATH=<prefix>
#         alone (the source and build trees are not on any path it is given);
#      2. add_subdirectory(<this source tree>): cargo runs inside the consumer's build;
#         with [vkcuda-build-dir] its cargo target directory is reused
#         (VKCUDA_CARGO_TARGET_DIR), so nothing is compiled twice.
# Prints one line per check and a summary; exits 1 if any failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src_root="$(cd "$here/../.." && pwd)"
usage="usage: $0 c|cpp <install-prefix> [work-dir] [vkcuda-build-dir]"
variant="${1:?$usage}"
prefix="${2:?$usage}"
prefix="$(cd "$prefix" && pwd)" || exit 2
work="${3:-$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-consumer-$variant.XXXXXX")}"
vkbuild="${4:-}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"
# shellcheck source-path=SCRIPTDIR source=../checks.sh
. "$here/../checks.sh"

# A program built here: run it and show what it printed.
run_shown() { # run_shown <description> <program...>
  check "$@"
  sed 's/^/        /' "$work/last.log"
}

# --- c: the install tree, find_package and pkg-config ------------------------------------
consumer_c() {
  local libdir="" d version abi_soname real soname exe pc_flags
  # The library directory: lib, or lib64 / lib/<multiarch> when GNUInstallDirs chose so.
  for d in lib lib64 lib/*-linux-gnu*; do
    if [ -e "$prefix/$d/libvkcuda.so" ]; then libdir="$prefix/$d"; break; fi
  done
  if [ -z "$libdir" ]; then
    echo "consumer: no libvkcuda.so under $prefix/lib*"
    fail "libvkcuda.so installed"
    return
  fi
  echo "consumer: checking the vkcuda installed in $prefix (libdir $libdir), work dir $work"

  # The soname carries the ABI version: 0.MINOR while the version is 0.x, else MAJOR.
  version="$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p' "$src_root/capi/Cargo.toml" | head -n1)"
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

  if command -v readelf >/dev/null; then
    soname="$(readelf -d "$libdir/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  else
    soname="$(objdump -p "$libdir/$real" | awk '$1 == "SONAME" { print $2 }')"
  fi
  echo "  soname of $real: ${soname:-(none)}"
  check "soname is $abi_soname" test "$soname" = "$abi_soname"

  # find_package(vkcuda CONFIG REQUIRED)
  check "cmake: configure tests/consumers/c against the prefix" \
    cmake -S "$here/c" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
  check "cmake: build consumer_c (C99) and consumer_cxx (C++17)" cmake --build "$work/cmake-build" -j 2
  for exe in consumer_c consumer_cxx; do
    if [ -x "$work/cmake-build/$exe" ]; then
      run_shown "run $exe" "$work/cmake-build/$exe"
      check "$exe needs $abi_soname" \
        bash -c "readelf -d '$work/cmake-build/$exe' | grep -F 'Shared library: [$abi_soname]'"
    else
      fail "$exe was not built"
    fi
  done

  # Only the Vulkan headers: with FindVulkan and VulkanHeadersConfig switched off, the
  # config falls back to find_path(vulkan/vulkan_core.h).
  check "cmake: find_package(vkcuda) with only the Vulkan headers (no FindVulkan, no VulkanHeaders)" \
    cmake -S "$here/c" -B "$work/cmake-build-headers-only" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON -DCMAKE_DISABLE_FIND_PACKAGE_VulkanHeaders=ON
  check "cmake: build it" cmake --build "$work/cmake-build-headers-only" -j 2 --target consumer_c

  # pkg-config --cflags --libs vkcuda
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  if pc_flags="$(pkg-config --cflags --libs vkcuda 2>"$work/pc.err")"; then
    pass "pkg-config --cflags --libs vkcuda: $pc_flags"
    case " $pc_flags " in
      *" -lvulkan "*) fail "pkg-config --libs adds -lvulkan (vkcuda does not link the loader)" ;;
      *) pass "pkg-config --libs has no -lvulkan" ;;
    esac
    # shellcheck disable=SC2086  # the flags are words
    check "cc -std=c99 -Wall -Wextra -Wpedantic -Werror consumer.c \$(pkg-config ...)" \
      "${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror "$here/c/consumer.c" -o "$work/consumer_pc" $pc_flags
    if [ -x "$work/consumer_pc" ]; then
      run_shown "run consumer_pc (LD_LIBRARY_PATH=$libdir)" env LD_LIBRARY_PATH="$libdir" "$work/consumer_pc"
    fi
  else
    fail "pkg-config --cflags --libs vkcuda"
    sed 's/^/        /' "$work/pc.err"
  fi
  consumer_ffmpeg "$libdir" "$abi_soname"
}

# --- the FFmpeg bridge, where it was installed ---------------------------------------------
consumer_ffmpeg() {
  local libdir="$1" abi_soname="$2" flags
  local so="libvkcuda_ffmpeg.so.${abi_soname#libvkcuda.so.}"
  case "${VKCUDA_CONSUMER_FFMPEG:-}" in
    0)
      echo "consumer: the FFmpeg bridge was skipped (no FFmpeg where vkcuda was built)"
      check "ffmpeg: nothing of the skipped bridge is installed" \
        bash -c "! ls '$libdir'/libvkcuda_ffmpeg.so* '$prefix/include/vkcuda_ffmpeg.h' '$libdir/pkgconfig/vkcuda-ffmpeg.pc' 2>/dev/null | grep -q ."
      return ;;
    1) ;;
    *) echo "consumer: VKCUDA_CONSUMER_FFMPEG unset: the FFmpeg bridge is not checked"; return ;;
  esac
  check "ffmpeg: lib: $so -> the real file" test -f "$libdir/$so"
  check "ffmpeg: lib: libvkcuda_ffmpeg.so -> $so" test "$(readlink "$libdir/libvkcuda_ffmpeg.so")" = "$so"
  check "ffmpeg: include/vkcuda_ffmpeg.h" test -f "$prefix/include/vkcuda_ffmpeg.h"
  check "ffmpeg: cmake: vkcudaFfmpeg.cmake" test -f "$libdir/cmake/vkcuda/vkcudaFfmpeg.cmake"
  check "ffmpeg: pkgconfig/vkcuda-ffmpeg.pc" test -f "$libdir/pkgconfig/vkcuda-ffmpeg.pc"
  check "ffmpeg: libvkcuda.so does not link FFmpeg" \
    bash -c "! readelf -d '$libdir/libvkcuda.so' | grep -E 'Shared library: \[lib(av|sw)'"
  check "ffmpeg: cmake: configure tests/consumers/ffmpeg (COMPONENTS ffmpeg)" \
    cmake -S "$here/ffmpeg" -B "$work/cmake-build-ffmpeg" -DCMAKE_PREFIX_PATH="$prefix"
  check "ffmpeg: cmake: build consumer_ffmpeg" cmake --build "$work/cmake-build-ffmpeg"
  if [ -x "$work/cmake-build-ffmpeg/consumer_ffmpeg" ]; then
    run_shown "ffmpeg: run consumer_ffmpeg" env LD_LIBRARY_PATH="$libdir" "$work/cmake-build-ffmpeg/consumer_ffmpeg"
  fi
  if flags="$(PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs vkcuda-ffmpeg 2>"$work/pc-ffmpeg.err")"; then
    pass "pkg-config --cflags --libs vkcuda-ffmpeg: $flags"
    # shellcheck disable=SC2086  # the flags are words
    check "ffmpeg: cc -std=c99 ... consumer_ffmpeg.c \$(pkg-config ... vkcuda-ffmpeg)" \
      "${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror "$here/ffmpeg/consumer_ffmpeg.c" -o "$work/consumer_ffmpeg_pc" $flags
    [ -x "$work/consumer_ffmpeg_pc" ] && run_shown "ffmpeg: run consumer_ffmpeg_pc" \
      env LD_LIBRARY_PATH="$libdir" "$work/consumer_ffmpeg_pc"
  else
    fail "pkg-config --cflags --libs vkcuda-ffmpeg"
    sed 's/^/        /' "$work/pc-ffmpeg.err"
  fi
}

# --- cpp: vkcuda.hpp installed and through add_subdirectory --------------------------------
run_cpp_programs() { # run_cpp_programs <build dir> <label>
  local exe
  for exe in consumer_cpp17 consumer_cpp20 consumer_cpp17_noexcept; do
    if [ -x "$1/$exe" ]; then
      run_shown "$2: run $exe" "$1/$exe"
    else
      fail "$2: $exe was not built"
    fi
  done
}

consumer_cpp() {
  local sub_args
  echo "consumer_cpp: vkcuda.hpp from the install tree $prefix and from add_subdirectory($src_root); work dir $work"
  # 1. the install tree
  check "installed: include/vkcuda.hpp is in the install tree" test -f "$prefix/include/vkcuda.hpp"
  check "installed: it is the source tree's vkcuda.hpp" cmp "$prefix/include/vkcuda.hpp" "$src_root/include/vkcuda.hpp"
  check "installed: configure (find_package(vkcuda CONFIG REQUIRED), CMAKE_PREFIX_PATH only)" \
    cmake -S "$here/cpp" -B "$work/installed" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
  cp "$work/last.log" "$work/installed-configure.log"
  check "installed: vkcuda::vkcuda came from $prefix/lib*/cmake/vkcuda" \
    grep -qE "vkcuda::vkcuda from find_package: $prefix/lib[^ ]*/cmake/vkcuda" "$work/installed-configure.log"
  check "installed: build (C++17, C++20, C++17 -fno-exceptions)" cmake --build "$work/installed" -j "$jobs"
  case "$prefix/" in
    "$src_root"/*) ;;
    *) check "installed: no include path into the source tree" \
         bash -c "! grep -rF -- '-I$src_root' '$work/installed' --include=flags.make" ;;
  esac
  run_cpp_programs "$work/installed" installed

  # 2. add_subdirectory on the source tree
  sub_args=(-DVKCUDA_CONSUMER_SOURCE_DIR="$src_root" -DCMAKE_BUILD_TYPE=Release)
  if [ -n "$vkbuild" ] && [ -d "$vkbuild/cargo" ]; then
    sub_args+=(-DVKCUDA_CARGO_TARGET_DIR="$(cd "$vkbuild/cargo" && pwd)")
  fi
  check "add_subdirectory: configure" cmake -S "$here/cpp" -B "$work/subdir" "${sub_args[@]}"
  check "add_subdirectory: vkcuda's examples and tests are off in a subproject" \
    bash -c "grep -q '^VKCUDA_BUILD_EXAMPLES:BOOL=OFF' '$work/subdir/CMakeCache.txt' && grep -q '^VKCUDA_BUILD_TESTS:BOOL=OFF' '$work/subdir/CMakeCache.txt'"
  check "add_subdirectory: build (cargo, then C++17, C++20, C++17 -fno-exceptions)" \
    cmake --build "$work/subdir" -j "$jobs"
  run_cpp_programs "$work/subdir" add_subdirectory
}

case "$variant" in
  c) consumer_c; summary consumer ;;
  cpp) consumer_cpp; summary consumer_cpp ;;
  *) echo "$usage"; exit 2 ;;
esac
