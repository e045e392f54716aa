#!/usr/bin/env bash
# The C++ checks of scripts/test.sh (its "cpp" step), after the CMake build and the
# install:
#   tests/cpp/run.sh <build-dir> <install-prefix> [work-dir]
#
#   1. matrix: the vkcuda.hpp unit tests (tests/cpp/*.cpp + c_examples/vk_loader.c)
#      compiled, linked against <build-dir>/lib/libvkcuda.so and run with every
#      compiler found (g++/gcc, clang++/clang) x C++17/C++20 x exceptions /
#      -fno-exceptions, all with -Wall -Wextra -Wpedantic -Werror; a compiler that is
#      missing is a failure (scripts/install-deps.sh installs both);
#   2. strict: vkcuda.hpp alone under an engine's stricter warnings (-Wshadow
#      -Wconversion -Wsign-conversion -Wold-style-cast -Wzero-as-null-pointer-constant
#      ...), each compiler x standard x mode;
#   3. consumers: tests/consumer_cpp/run.sh (the install tree with find_package, and
#      add_subdirectory on this source tree);
#   4. docs: scripts/docs.sh (Doxygen, any warning fails);
#   5. tests/gpu's engine_postfx_test --vulkan-only (the engine of
#      examples/cpp/engine_postfx.cpp) under VK_LAYER_KHRONOS_validation, when the layer is
#      installed: any validation message fails.
# Prints one line per check and a summary; exits 1 if any failed. A check that
# cannot run here prints a line starting with "SKIPPED:" (scripts/test.sh counts them).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:?usage: $0 <build-dir> <install-prefix> [work-dir]}"
build="$(cd "$build" && pwd)" || exit 2
prefix="${2:?usage: $0 <build-dir> <install-prefix> [work-dir]}"
work="${3:-$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-cpp.XXXXXX")}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
lib="$build/lib"

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok    $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() { # check <description> <command...>
  local what="$1"; shift
  if "$@" >"$work/last.log" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/        /' "$work/last.log" | tail -40; fi
}

echo "cpp: build $build, install prefix $prefix, work dir $work"
if [ ! -e "$lib/libvkcuda.so" ]; then
  echo "cpp: no $lib/libvkcuda.so: build first (cmake --build $build)"
  echo "cpp checks: 0 passed, 1 failed"
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
    -c "$root/c_examples/vk_loader.c" -o "$out/vk_loader.o" || return 1
  for f in wrapper_test second_tu no_exceptions_tu; do
    # shellcheck disable=SC2086 # $mode is zero or one word
    "$cxx" -std="c++$std" $mode -D_POSIX_C_SOURCE=200809L "${warn[@]}" -I"$root/include" -I"$root/c_examples" \
      -c "$here/$f.cpp" -o "$out/$f.o" || return 1
    objs+=("$out/$f.o")
  done
  # shellcheck disable=SC2086
  "$cxx" $mode "${objs[@]}" "$out/vk_loader.o" -L"$lib" -lvkcuda -Wl,-rpath,"$lib" -o "$out/wrapper_test" || return 1
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

# --- 3. the C++ consumers ------------------------------------------------------------------
check "consumers: tests/consumer_cpp/run.sh (install tree, add_subdirectory)" \
  "$root/tests/consumer_cpp/run.sh" "$prefix" "$build" "$work/consumer_cpp"
grep -E '^  (ok|FAIL) ' "$work/last.log" | sed 's/^/      /'

# --- 4. Doxygen ------------------------------------------------------------------------------
check "docs: scripts/docs.sh (Doxygen HTML, no warnings)" "$root/scripts/docs.sh" "$work/docs"
grep '^docs.sh:' "$work/last.log" | sed 's/^/        /'

# --- 5. the engine example under the validation layer ------------------------------------------
example="$build/tests/gpu/engine_postfx_test"
layer_json=""
for d in ${VK_LAYER_PATH:-} /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d; do
  [ -f "$d/VkLayer_khronos_validation.json" ] && { layer_json="$d/VkLayer_khronos_validation.json"; break; }
done
if [ ! -x "$example" ]; then
  fail "validation: $example was not built"
elif [ -z "$layer_json" ]; then
  echo "  SKIPPED: validation: VK_LAYER_KHRONOS_validation is not installed (apt-get install vulkan-validationlayers)"
else
  vvl_run() {
    VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation "$example" --vulkan-only --frames 30 --size 96x64 \
      --out "$work/engine_postfx_vvl.png" > "$work/vvl.log" 2>&1
    local rc=$? n
    n=$(grep -cE 'VUID|Validation Error|Validation Warning' "$work/vvl.log")
    grep -E 'VUID|Validation' "$work/vvl.log" | head -20
    tail -n 1 "$work/vvl.log"
    echo "$n validation messages"
    [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]
  }
  check "validation: engine_postfx_test --vulkan-only under VK_LAYER_KHRONOS_validation: no messages" vvl_run
  tail -n 1 "$work/last.log" | sed 's/^/        /'
fi

echo "cpp checks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
