# The ok/FAIL lines of the shell test scripts (tests/consumers/run.sh, tests/cpp/run.sh),
# sourced after they set $work (a directory for the last command's log):
#   check <description> <command...>   runs it: "  ok    <description>", or
#                                      "  FAIL  <description>" and the last 40 lines it printed
#   pass / fail <description>          a line and the tally, without a command
#   summary <name>                     "<name> checks: N passed, M failed"; fails when any did
# shellcheck shell=bash
: "${work:?set work (a directory) before sourcing tests/checks.sh}"
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok    $*"; }
fail() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() {
  local what="$1"; shift
  if "$@" >"$work/last.log" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/        /' "$work/last.log" | tail -40; fi
}
summary() {
  echo "$1 checks: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
