#!/usr/bin/env bash
# Runs a command with its own X server: starts Xvfb (Debian's xvfb) on a display
# number it picks itself (-displayfd), 24-bit TrueColor, runs COMMAND with DISPLAY
# set, stops Xvfb again and exits with COMMAND's status. Without Xvfb: "SKIPPED" and
# 77 (CTest: skipped), or 1 when VKCUDA_REQUIRE_XVFB=1.
#
#   c_examples/xvfb.sh COMMAND [ARG...]
set -euo pipefail

if ! command -v Xvfb >/dev/null 2>&1; then
  echo "SKIPPED: xvfb: no Xvfb here (apt-get install xvfb; scripts/install-deps.sh installs it)"
  [ "${VKCUDA_REQUIRE_XVFB:-}" = 1 ] && exit 1
  exit 77
fi
tmp=$(mktemp -d)
xvfb_pid=
cleanup() {
  if [ -n "$xvfb_pid" ]; then
    kill "$xvfb_pid" 2>/dev/null || true
    wait "$xvfb_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# -displayfd: Xvfb picks a free display number and writes it to fd 3 once it accepts
# connections, so two tests never race for one display.
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp -noreset 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb_pid=$!
for _ in $(seq 1 200); do
  [ -s "$tmp/display" ] && break
  if ! kill -0 "$xvfb_pid" 2>/dev/null; then
    echo "xvfb: Xvfb exited before it accepted connections:"; cat "$tmp/xvfb.log"; exit 1
  fi
  sleep 0.05
done
[ -s "$tmp/display" ] || { echo "xvfb: Xvfb did not start in 10 s"; cat "$tmp/xvfb.log"; exit 1; }
display=":$(head -n 1 "$tmp/display")"
echo "xvfb: Xvfb (pid $xvfb_pid) on display $display"
status=0
DISPLAY="$display" "$@" || status=$?
exit "$status"
