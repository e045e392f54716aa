#!/usr/bin/env bash
# Runs the cross-process demo: ipc_consumer (the Vulkan process) listens on a Unix
# socket in a new private temporary directory, ipc_producer (the CUDA process)
# connects, and they run the frames; each checks what it can and prints a final
# PASS/FAIL/SKIP line. This script prints both, each line prefixed, and ends with
#   ipc_demo: PASS | FAIL, or SKIPPED: ipc_demo: <why>
# Exit status: 0 pass, 1 fail, 77 skipped (no CUDA GPU; 1 with VKCUDA_REQUIRE_GPU=1).
#
#   tests/gpu/ipc_demo.sh [--bin DIR] [--frames N] [--size BYTES] [--vulkan-only]
#
# --bin DIR: where ipc_producer and ipc_consumer are (default: $VKCUDA_BUILD_DIR/tests/gpu,
# then build/tests/gpu, then the first pair found under build/). The other options go to
# the producer (defaults: 1000 frames of 1 MiB; --vulkan-only is the self-test without CUDA).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="${2:?--bin needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -z "$bin" ]; then
  for d in "${VKCUDA_BUILD_DIR:-$root/build}/tests/gpu" "$root/build/tests/gpu"; do
    if [ -x "$d/ipc_producer" ] && [ -x "$d/ipc_consumer" ]; then bin="$d"; break; fi
  done
fi
if [ -z "$bin" ]; then
  found="$(find "$root/build" -type f -name ipc_producer -perm -u+x 2>/dev/null | head -1)"
  [ -n "$found" ] && bin="$(dirname "$found")"
fi
if [ -z "$bin" ] || [ ! -x "$bin/ipc_producer" ] || [ ! -x "$bin/ipc_consumer" ]; then
  echo "ipc_demo: FAIL: ipc_producer and ipc_consumer not found (build the tests, or pass --bin DIR)"
  exit 1
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-ipc-demo.XXXXXX")" || exit 1
chmod 700 "$dir"
sock="$dir/socket"
cleanup() {
  [ -n "${consumer_pid:-}" ] && kill "$consumer_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

echo "ipc_demo: $bin/ipc_consumer $sock &"
echo "ipc_demo: $bin/ipc_producer $sock ${args[*]}"
"$bin/ipc_consumer" "$sock" > >(sed -u 's/^/[consumer] /') 2>&1 &
consumer_pid=$!
"$bin/ipc_producer" "$sock" "${args[@]}" > >(sed -u 's/^/[producer] /') 2>&1
producer_rc=$?
wait "$consumer_pid"
consumer_rc=$?
consumer_pid=""
sleep 0.1 # let the prefixing finish printing
echo "ipc_demo: producer exited with $producer_rc, consumer with $consumer_rc"
if [ "$producer_rc" -eq 0 ] && [ "$consumer_rc" -eq 0 ]; then
  echo "ipc_demo: PASS"
  exit 0
fi
if { [ "$producer_rc" -eq 77 ] || [ "$producer_rc" -eq 0 ]; } && { [ "$consumer_rc" -eq 77 ] || [ "$consumer_rc" -eq 0 ]; }; then
  echo "SKIPPED: ipc_demo: no CUDA GPU here (try --vulkan-only)"
  exit 77
fi
echo "ipc_demo: FAIL"
exit 1
