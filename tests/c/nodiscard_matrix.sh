#!/usr/bin/env bash
# tests/c/nodiscard.c with every C and C++ compiler found (gcc, clang; g++,
# clang++) as C99, C11, C23 and C++17, -Wall -Wextra -Wpedantic -Werror:
#   1. (void)vkcuda_...() compiles without a warning;
#   2. a result dropped without the cast warns where VKCUDA_NODISCARD is an
#      attribute (C++17, C23, Clang's older C) and not under GCC's older C, whose
#      warn_unused_result no cast could silence (VKCUDA_NODISCARD is empty there).
#   tests/c/nodiscard_matrix.sh INCLUDE_DIR VULKAN_INCLUDE_DIR
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
inc=$1
vkinc=$2
src=$here/nodiscard.c
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0 ran=0
flags=(-Wall -Wextra -Wpedantic -Werror -I"$inc" -I"$vkinc" -fsyntax-only)
one() { # COMPILER LANG STD EXPECT_WARNING
  local cc=$1 lang=$2 std=$3 expect=$4 out
  command -v "$cc" >/dev/null 2>&1 || { echo "SKIPPED: $cc is not installed ($lang $std)"; return; }
  ran=$((ran + 1))
  if out=$("$cc" -x "$lang" -std="$std" "${flags[@]}" "$src" 2>&1); then
    echo "ok   $cc -std=$std: (void) cast compiles without a warning"; pass=$((pass + 1))
  else
    echo "FAIL $cc -std=$std: (void) cast does not compile cleanly:"; echo "$out"; fail=$((fail + 1))
  fi
  out=$("$cc" -x "$lang" -std="$std" "${flags[@]}" -DVKCUDA_DROP_RESULT "$src" 2>&1)
  local warned=0
  grep -q 'unused-result\|nodiscard\|warn_unused_result' <<<"$out" && warned=1
  if [ "$warned" = "$expect" ]; then
    echo "ok   $cc -std=$std: a dropped result $( [ "$expect" = 1 ] && echo warns || echo 'does not warn (no attribute there)')"
    pass=$((pass + 1))
  else
    echo "FAIL $cc -std=$std: a dropped result warned=$warned, expected $expect:"; echo "$out"; fail=$((fail + 1))
  fi
}
one gcc c c99 0
one gcc c c11 0
one gcc c c2x 1
one clang c c99 1
one clang c c11 1
one clang c c2x 1
one g++ c++ c++17 1
one clang++ c++ c++17 1
echo "nodiscard matrix: $pass passed, $fail failed ($ran compilers x standards)"
[ "$fail" -eq 0 ] && [ "$ran" -gt 0 ]
