#!/usr/bin/env bash
# THE test command: scripts/test.sh (from any directory).
#
# Installs what is missing (scripts/install-deps.sh), runs cargo fmt --check and
# clippy, configures and builds with CMake, and runs every test that needs no GPU:
# `ctest -L cpu` (the registry: tests/CMakeLists.txt). CTest's summary ends the run,
# then the reason of every skip: the "SKIPPED:" lines of the tests' output (CTest
# keeps it in LastTest.log) and the count of the tests cargo ignored (the GPU tests:
# `ctest -L gpu` runs them). Exits non-zero on any failure.
#
#   scripts/test.sh [CTEST ARG...]   e.g. -R rust_ (only the cargo suites)
#   scripts/test.sh python           the Python package's tests (CTest's test python)
#
# Environment:
#   VKCUDA_BUILD_DIR    the CMake build directory (default: <repo>/build)
#   VKCUDA_SKIP_DEPS=1  do not run scripts/install-deps.sh
#   VKCUDA_REQUIRE_GPU=1  passed through: GPU tests then fail instead of skipping
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-test.XXXXXX")" || exit 1
trap 'rm -rf "$tmp"' EXIT
[ ! -d "$HOME/.cargo/bin" ] || PATH="$HOME/.cargo/bin:$PATH"
jobs="$(nproc 2>/dev/null || echo 2)"
locked=()
[ -f Cargo.lock ] && locked=(--locked)

x() { # prints a command, then runs it
  echo "+ $*"
  "$@"
}

# The Python package (pyproject.toml at the root, sources in python/), installed
# into a fresh venv the way a user installs it (`pip install .`: setuptools-rust
# builds the stripped cdylib into target/); pytest and mypy from PyPI; mypy on the
# package; its CPU tests against the installed package (python/tests/conftest.py).
run_python() {
  local venv="$tmp/venv"
  x python3 -m venv "$venv" &&
    x "$venv/bin/python" -m pip install -q pytest mypy &&
    x "$venv/bin/python" -m pip install "$root" &&
    x "$venv/bin/python" -m mypy --ignore-missing-imports --cache-dir "$tmp/mypy" "$root/python/vkcuda" &&
    (cd "$root" && x "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests)
}
if [ "${1:-}" = python ]; then
  run_python
  exit
fi

build="${VKCUDA_BUILD_DIR:-$root/build}"
failed=()
if [ "${VKCUDA_SKIP_DEPS:-0}" != 1 ]; then
  x "$root/scripts/install-deps.sh" || failed+=(install-deps)
fi
x cargo fmt --all --check || failed+=(fmt)
x cargo clippy "${locked[@]}" --workspace --all-targets -- -D warnings || failed+=(clippy)
# The consumers' install prefix lies outside the source tree, so their check that no
# installed file names a source path means something.
x cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVKCUDA_BUILD_EXAMPLES=ON \
  -DVKCUDA_BUILD_TESTS=ON -DVKCUDA_TEST_PREFIX="$tmp/prefix" &&
  x cmake --build "$build" -j "$jobs" || { echo "test.sh: FAILED: the CMake build"; exit 1; }
(cd "$build" && x ctest --output-on-failure -j "$jobs" -L cpu "$@") || failed+=(ctest)

log="$build/Testing/Temporary/LastTest.log"
echo
echo "Skip reasons (the SKIPPED: lines in $log):"
awk '/^[0-9]+\/[0-9]+ Test: / { t = $3 }
  /SKIPPED[: ]/ && !/^Command: / { l = $0; sub(/^[ \t]*/, "", l); print "  " t ": " substr(l, 1, 220) }' "$log" | sort -u
echo "  cargo: $(grep -c ' \.\.\. ignored' "$log") tests #[ignore]d here (the GPU tests: ctest -L gpu runs them)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: PASSED"
