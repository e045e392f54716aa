#!/usr/bin/env bash
# The vkcuda.hpp compiler matrix (CTest: cpp_matrix), after the CMake build:
#   tests/cpp/run.sh <build-dir> [work-dir]
#
#   1. matrix: the vkcuda.hpp unit tests (tests/cpp/*.cpp + c_examples/vk_util.c)
#      compiled, linked against <build-dir>/lib/libvkcuda.so and the Vulkan loader,
#      and run with every compiler found (g++/gcc, clang++/clang) x C++17/C++20 x exceptions /
#      -fno-exceptions, all with -Wall -Wextra -Wpedantic -Werror; a compiler that is
#      missing is a failure (scripts/install-deps.sh installs both);
#   2. strict: vkcuda.hpp alone under an engine's stricter warnings (-Wshadow
#      -Wconversion -Wsign-conversion -Wold-style-cast -Wzero-as-null-pointer-constant
#      ...), each compiler x standard x mode.
# The C++ consumers (consumer_cpp), Doxygen (docs) and the engine under the
# validation layer (gpu_engine_postfx_vulkan_only_vvl) are CTest tests of their own.
# Prints one line per check and a summary; exits 1 if any failed. A check that
# cannot run here prints a line starting with "SKIPPED:".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: $0 <build-dir> [work-dir]}"
build="$(cd "$build" && pwd)" || exit 2
work="${2:-$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-cpp.XXXXXX")}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
lib="$build/lib"

# shellcheck source-path=SCRIPTDIR source=../checks.sh
. "$here/../checks.sh"

echo "cpp: build $build, work dir $work"
if [ ! -e "$lib/libvkcuda.so" ]; then
  echo "cpp: no $lib/libvkcuda.so: build first (cmake --build $build)"
  fail "libvkcuda.so built"
  summary cpp
  exit 1
fi

warn=(-Wall -Wextra -Wpedantic -Werror)
strict=(-Wshadow -Wconversion -Wsign-conversion -Wold-style-cast -Wnon-virtual-dtor -Wcast-qual -Wundef
  -Wzero-as-null-pointer-constant -Wdouble-promotion)
compilers=()
for pair in g++:gcc clang++:clang; do
  cxx=${pair%%:*} cc=${pair##*:}
  if command -v "$cxx" >/dev/null 2>&1 && command -v "$cc" >/dev/null 2>&1; then
    compilers+=("$pair")
    echo "cpp: $cxx: $("$cxx" --version | head -n1)"
  else
    fail "$cxx / $cc not found (scripts/install-deps.sh installs g++ and clang)"
  fi
done

# --- 1. the unit tests, every compiler x standard x error mode --------------------
build_and_run() { # build_and_run <cxx> <cc> <std> <mode flags> <out>
  local cxx=$1 cc=$2 std=$3 mode=$4 out=$5 f objs=()
  mkdir -p "$out"
  "$cc" -std=c99 -D_POSIX_C_SOURCE=200809L "${warn[@]}" -I"$root/include" -I"$root/c_examples" \
    -c "$root/c_examples/vk_util.c" -o "$out/vk_util.o" || return 1
  for f in wrapper_test second_tu no_exceptions_tu; do
    # shellcheck disable=SC2086 # $mode is zero or one word
    "$cxx" -std="c++$std" $mode -D_POSIX_C_SOURCE=200809L "${warn[@]}" -I"$root/include" -I"$root/c_examples" \
      -c "$here/$f.cpp" -o "$out/$f.o" || return 1
    objs+=("$out/$f.o")
  done
  # shellcheck disable=SC2086
  "$cxx" $mode "${objs[@]}" "$out/vk_util.o" -L"$lib" -lvkcuda -lvulkan -Wl,-rpath,"$lib" -o "$out/wrapper_test" || return 1
  "$out/wrapper_test" > "$out/run.log" 2>&1
  local rc=$?
  tail -n 1 "$out/run.log"
  if [ "$rc" -eq 77 ]; then echo "SKIPPED: wrapper_test ($cxx -std=c++$std${mode:+ $mode}): no Vulkan device"; return 0; fi
  [ "$rc" -eq 0 ] && grep -q '^vkcuda.hpp tests: PASS' "$out/run.log"
}
for pair in "${compilers[@]}"; do
  cxx=${pair%%:*} cc=${pair##*:}
  for std in 17 20; do
    for mode in "" -fno-exceptions; do
      label="$cxx -std=c++$std ${mode:-(exceptions)}"
      check "matrix: $label: unit tests build (-Wall -Wextra -Wpedantic -Werror) and pass" \
        build_and_run "$cxx" "$cc" "$std" "$mode" "$work/matrix/$cxx-$std${mode:+-noexcept}"
      sed 's/^/        /' "$work/last.log" | tail -n 2
    done
  done
done

# --- 2. the header alone under stricter warnings ----------------------------------------
cat > "$work/strict.cpp" <<'EOF'
#include <vkcuda.hpp>
// Every template of the header instantiated, so all of it is compiled.
template class vkcuda::Result<int>;
template class vkcuda::Result<vkcuda::Buffer>;
template class vkcuda::UniqueHandle<vkcuda_image, vkcuda::detail::ImageTraits>;
#if defined(VKCUDA_SHARE_DESCRIPTION_SIZE)
template class vkcuda::Result<vkcuda::ShareMessage>;
#endif
int strict_tu();
int strict_tu() { return vkcuda::version() != 0 ? 0 : 1; }
EOF
for pair in "${compilers[@]}"; do
  cxx=${pair%%:*}
  extra=()
  [ "$cxx" = g++ ] && extra=(-Wuseless-cast)
  for std in 17 20; do
    for mode in "" -fno-exceptions; do
      # shellcheck disable=SC2086
      check "strict: $cxx -std=c++$std ${mode:-(exceptions)}: vkcuda.hpp with ${strict[*]} ${extra[*]}" \
        "$cxx" -std="c++$std" $mode "${warn[@]}" "${strict[@]}" "${extra[@]}" -I"$root/include" \
          -c "$work/strict.cpp" -o "$work/strict.o"
    done
  done
done

summary cpp
