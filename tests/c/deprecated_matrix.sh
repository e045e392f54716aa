#!/usr/bin/env bash
# tests/c/deprecated.c with every C and C++ compiler found (gcc, clang; g++,
# clang++) as C99, C11, C23, C++14 and C++17, -Wall -Wextra -Wpedantic -Werror:
#   1. with the new names only it compiles without a warning;
#   2. with the 0.1 names (-DVKCUDA_OLD_NAMES) and -Wno-error=deprecated-declarations
#      it compiles, and each of the six old names it uses warns, with the
#      VKCUDA_DEPRECATED message naming the new function.
#   tests/c/deprecated_matrix.sh INCLUDE_DIR VULKAN_INCLUDE_DIR
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
inc=$1
vkinc=$2
src=$here/deprecated.c
pass=0 fail=0 ran=0
flags=(-Wall -Wextra -Wpedantic -Werror -I"$inc" -I"$vkinc" -fsyntax-only)
# old name -> the new name its warning must name
pairs=(
  vkcuda_get_live_objects:vkcuda_live_objects_get
  vkcuda_enumerate_device_extensions:vkcuda_device_extensions_enumerate
  vkcuda_cuda_driver_version:vkcuda_cuda_driver_get_version
  vkcuda_query_physical_device:vkcuda_physical_device_query
  vkcuda_enumerate_physical_devices:vkcuda_physical_devices_enumerate
  vkcuda_context_get_vulkan:vkcuda_context_get_vulkan_handles
  vkcuda_context_get_cuda:vkcuda_context_get_cuda_info
)
one() { # COMPILER LANG STD
  local cc=$1 lang=$2 std=$3 out p old new missing=""
  command -v "$cc" >/dev/null 2>&1 || { echo "SKIPPED: $cc is not installed ($lang $std)"; return; }
  ran=$((ran + 1))
  if out=$("$cc" -x "$lang" -std="$std" "${flags[@]}" "$src" 2>&1) && [ -z "$out" ]; then
    echo "ok   $cc -std=$std: the new names compile without a warning"; pass=$((pass + 1))
  else
    echo "FAIL $cc -std=$std: the new names do not compile cleanly:"; echo "$out"; fail=$((fail + 1))
  fi
  if ! out=$("$cc" -x "$lang" -std="$std" "${flags[@]}" -Wno-error=deprecated-declarations \
    -DVKCUDA_OLD_NAMES "$src" 2>&1); then
    echo "FAIL $cc -std=$std: the old names do not compile with -Wno-error=deprecated-declarations:"
    echo "$out"; fail=$((fail + 1)); return
  fi
  for p in "${pairs[@]}"; do
    old=${p%%:*} new=${p##*:}
    # The warning names the old function and carries the message "use <new>".
    grep -q "$old.*deprecated.*use $new\|deprecated.*$old.*use $new" <<<"$out" || missing+=" $old"
  done
  if [ -z "$missing" ]; then
    echo "ok   $cc -std=$std: each old name compiles with a deprecation warning naming its replacement"
    pass=$((pass + 1))
  else
    echo "FAIL $cc -std=$std: no deprecation warning (naming the new function) for:$missing"
    echo "$out"; fail=$((fail + 1))
  fi
}
one gcc c c99
one gcc c c11
one gcc c c2x
one clang c c99
one clang c c11
one clang c c2x
one g++ c++ c++14
one g++ c++ c++17
one clang++ c++ c++14
one clang++ c++ c++17
echo "deprecated matrix: $pass passed, $fail failed ($ran compilers x standards)"
[ "$fail" -eq 0 ] && [ "$ran" -gt 0 ]
