#!/usr/bin/env bash
# Builds and runs the C++ consumer (tests/consumer_cpp) both ways a project gets
# vkcuda:
#   tests/consumer_cpp/run.sh <install-prefix> [vkcuda-build-dir] [work-dir]
#   1. installed: include/vkcuda.hpp is in the install tree, and the project finds
#      it with find_package(vkcuda CONFIG REQUIRED) and CMAKE_PREFIX_PATH=<prefix>
#      alone (the source and build trees are not on any path it is given);
#   2. add_subdirectory(<this source tree>): cargo runs inside the consumer's build;
#      with [vkcuda-build-dir] its cargo target directory is reused
#      (VKCUDA_CARGO_TARGET_DIR), so nothing is compiled twice.
# Each builds consumer_cpp17, consumer_cpp20 and consumer_cpp17_noexcept and runs
# them. Prints one line per check and a summary; exits 1 if any failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src_root="$(cd "$here/../.." && pwd)"
prefix="${1:?usage: $0 <install-prefix> [vkcuda-build-dir] [work-dir]}"
prefix="$(cd "$prefix" && pwd)" || exit 2
vkbuild="${2:-}"
work="${3:-$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-consumer-cpp.XXXXXX")}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok    $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() { # check <description> <command...>
  local what="$1"; shift
  if "$@" >"$work/last.log" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/        /' "$work/last.log" | tail -40; fi
}
run_all() { # run_all <build dir> <label>
  local exe
  for exe in consumer_cpp17 consumer_cpp20 consumer_cpp17_noexcept; do
    if [ -x "$1/$exe" ]; then
      check "$2: run $exe" "$1/$exe"
      sed 's/^/        /' "$work/last.log"
    else
      fail "$2: $exe was not built"
    fi
  done
}

echo "consumer_cpp: vkcuda.hpp from the install tree $prefix and from add_subdirectory($src_root); work dir $work"

# --- 1. the install tree ------------------------------------------------------------
check "installed: include/vkcuda.hpp is in the install tree" test -f "$prefix/include/vkcuda.hpp"
check "installed: it is the source tree's vkcuda.hpp" cmp "$prefix/include/vkcuda.hpp" "$src_root/include/vkcuda.hpp"
check "installed: configure (find_package(vkcuda CONFIG REQUIRED), CMAKE_PREFIX_PATH only)" \
  cmake -S "$here" -B "$work/installed" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
cp "$work/last.log" "$work/installed-configure.log"
check "installed: vkcuda::vkcuda came from $prefix/lib*/cmake/vkcuda" \
  grep -qE "vkcuda::vkcuda from find_package: $prefix/lib[^ ]*/cmake/vkcuda" "$work/installed-configure.log"
check "installed: build (C++17, C++20, C++17 -fno-exceptions)" cmake --build "$work/installed" -j "$jobs"
case "$prefix/" in
  "$src_root"/*) ;;
  *) check "installed: no include path into the source tree" \
       bash -c "! grep -rF -- '-I$src_root' '$work/installed' --include=flags.make" ;;
esac
run_all "$work/installed" installed

# --- 2. add_subdirectory on the source tree ---------------------------------------------
sub_args=(-DVKCUDA_CONSUMER_SOURCE_DIR="$src_root" -DCMAKE_BUILD_TYPE=Release)
if [ -n "$vkbuild" ] && [ -d "$vkbuild/cargo" ]; then
  sub_args+=(-DVKCUDA_CARGO_TARGET_DIR="$(cd "$vkbuild/cargo" && pwd)")
fi
check "add_subdirectory: configure" cmake -S "$here" -B "$work/subdir" "${sub_args[@]}"
check "add_subdirectory: vkcuda's examples and tests are off in a subproject" \
  bash -c "grep -q '^VKCUDA_BUILD_EXAMPLES:BOOL=OFF' '$work/subdir/CMakeCache.txt' && grep -q '^VKCUDA_BUILD_TESTS:BOOL=OFF' '$work/subdir/CMakeCache.txt'"
check "add_subdirectory: build (cargo, then C++17, C++20, C++17 -fno-exceptions)" \
  cmake --build "$work/subdir" -j "$jobs"
run_all "$work/subdir" add_subdirectory

echo "consumer_cpp checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
