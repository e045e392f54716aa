#!/usr/bin/env bash
# Fuzzes the C ABI's argument checks, the semaphore value book-keeping and the
# cross-process description format with cargo-fuzz (libFuzzer, AddressSanitizer,
# debug assertions on), on a Vulkan-only context (lavapipe is enough; no GPU).
# CTest's fuzz_smoke runs it with --time 10.
#
#   scripts/fuzz.sh [--time SECONDS] [--merge] [--jobs N] [TARGET...]
#   scripts/fuzz.sh --cmin [TARGET...]
#
#   --time S   seconds per target (default 10)
#   --merge    afterwards, merge what the run found into fuzz/corpus/TARGET
#   --jobs N   run N targets at once (default 1)
#   --cmin     no fuzzing: minimize the local corpus (libFuzzer -set_cover_merge=1)
#              and print each target's inputs and cov/ft before and after
#   TARGET     default: every target in fuzz/Cargo.toml
#
# Git holds a few curated seeds per target (fuzz/seeds/TARGET; fuzz/README.md); the
# corpus, fuzz/corpus/TARGET, is git-ignored: every run first copies the seeds into
# it, keeping what is there. (The full corpus of commit 2a7d443: `git archive 2a7d443
# fuzz/corpus | tar -x`.) The corpus is read, never written but by --merge / --cmin.
# A finding stops its target, is saved under $VKCUDA_FUZZ_OUT/artifacts/TARGET/
# (default target/fuzz-out) with libFuzzer's report, and makes the script exit 1.
# cargo-fuzz is pinned (cargo_fuzz_version) and installed on first use into
# target/tools/ (VKCUDA_TOOLS_DIR); RUSTC_BOOTSTRAP=1 lets stable take its nightly flags.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz" || exit 1
[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
export RUSTC_BOOTSTRAP=1

time_s=10 merge=0 jobs=1 cmin=0 targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --time) time_s=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --cmin) cmin=1; shift ;;
    -h|--help) sed -n '2,25p' "$root/scripts/fuzz.sh"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=($(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' Cargo.toml | grep -v '^vkcuda-fuzz$'))
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do # each known; the seeds into the corpus, keeping what is there
  printf '%s\n' "${all[@]}" | grep -qx "$t" || { echo "fuzz.sh: no target $t (targets: ${all[*]})" >&2; exit 2; }
  mkdir -p "corpus/$t" || exit 1
  for f in seeds/"$t"/*; do [ ! -f "$f" ] || [ -e "corpus/$t/${f##*/}" ] || cp "$f" "corpus/$t/" || exit 1; done
done

cargo_fuzz_version=0.13.2
tools=${VKCUDA_TOOLS_DIR:-$root/target/tools}
cargo_fuzz=$tools/bin/cargo-fuzz
if [ "$("$cargo_fuzz" --version 2>/dev/null)" != "cargo-fuzz $cargo_fuzz_version" ]; then
  echo "== cargo install --locked --version $cargo_fuzz_version cargo-fuzz --root $tools"
  cargo install --locked --version "$cargo_fuzz_version" cargo-fuzz --root "$tools" ||
    { echo "fuzz.sh: could not install cargo-fuzz $cargo_fuzz_version into $tools" >&2; exit 1; }
fi
echo "== cargo-fuzz $cargo_fuzz_version: $cargo_fuzz"
fuzz() { "$cargo_fuzz" fuzz "$@"; }

out=${VKCUDA_FUZZ_OUT:-$root/target/fuzz-out}
mkdir -p "$out" && out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-fuzz.XXXXXX")" || exit 1
trap 'rm -rf "$work"' EXIT

flags=(-O --debug-assertions) # Rust's own precondition checks turn UB into a finding
echo "== cargo fuzz build ${flags[*]} (targets: ${targets[*]}; ${time_s}s each)"
t0=$SECONDS
fuzz build "${flags[@]}" || { echo "fuzz.sh: build failed" >&2; exit 1; }
echo "built in $((SECONDS - t0))s"

cov_of() { # TARGET DIR: "cov: N ft: M" over DIR (-runs=0: nothing written)
  fuzz run "${flags[@]}" "$1" "$2" -- -runs=0 -rss_limit_mb=4096 2>&1 |
    sed -n 's/.*INITED \(cov: [0-9]* ft: [0-9]*\).*/\1/p' | tail -1
}
if [ "$cmin" = 1 ]; then
  echo "== cargo fuzz cmin ${flags[*]} (corpus: fuzz/corpus/TARGET)"
  printf '| %-22s | %7s | %-20s | %7s | %-20s\n' target inputs "before" inputs "after"
  rc=0
  for t in "${targets[@]}"; do # (cov/ft of libFuzzer's INITED line over the corpus)
    before=$(find "corpus/$t" -type f | wc -l) cov_before=$(cov_of "$t" "corpus/$t")
    if ! fuzz cmin "${flags[@]}" "$t" "corpus/$t" -- -set_cover_merge=1 > "$work/$t.cmin.log" 2>&1; then
      echo "cmin of $t failed:"; tail -5 "$work/$t.cmin.log"; rc=1; continue
    fi
    after=$(find "corpus/$t" -type f | wc -l) cov_after=$(cov_of "$t" "corpus/$t")
    printf '| %-22s | %7s | %-20s | %7s | %-20s\n' "$t" "$before" "$cov_before" "$after" "$cov_after"
  done
  exit $rc
fi

run_one() { # TARGET: writes $work/TARGET.log and $work/TARGET.result
  local t=$1 rc execs start=$SECONDS
  mkdir -p "$work/new/$t" "$out/artifacts/$t" "corpus/$t"
  # The first corpus directory is where libFuzzer writes; the local corpus is read.
  fuzz run "${flags[@]}" "$t" "$work/new/$t" "corpus/$t" -- \
    -max_total_time="$time_s" -print_final_stats=1 -rss_limit_mb=4096 -timeout=30 \
    -artifact_prefix="$out/artifacts/$t/" > "$work/$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  echo "$t ${execs:-0} $((SECONDS - start)) $rc" > "$work/$t.result"
  cp "$work/$t.log" "$out/$t.log"
}

running=0
for t in "${targets[@]}"; do
  echo "== $t (${time_s}s)"
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0 total_execs=0
echo
echo "== fuzz summary (logs in $out)"
printf '| %-22s | %12s | %7s | %s\n' target executions seconds result
for t in "${targets[@]}"; do
  read -r _ execs secs rc < "$work/$t.result"
  result="no finding"
  if [ "$rc" -ne 0 ]; then
    result="FINDING (exit $rc): $(grep -m1 -E 'panicked at|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)' "$work/$t.log" | cut -c1-100)"
    failed=$((failed + 1))
    grep -E 'panicked at|assertion|ERROR:|SUMMARY|Test unit written' "$work/$t.log" | head -20 | sed 's/^/    /'
  fi
  total_execs=$((total_execs + execs))
  printf '| %-22s | %12s | %7s | %s\n' "$t" "$execs" "$secs" "$result"
done
echo "total: $total_execs executions"

if [ "$merge" = 1 ] && [ "$failed" -eq 0 ]; then
  for t in "${targets[@]}"; do
    before=$(ls "corpus/$t" | wc -l)
    fuzz run "${flags[@]}" "$t" "corpus/$t" "$work/new/$t" -- -merge=1 > "$work/$t.merge.log" 2>&1 ||
      { echo "merge of $t failed: see $work/$t.merge.log"; tail -5 "$work/$t.merge.log"; failed=$((failed + 1)); }
    echo "corpus/$t: $before -> $(ls "corpus/$t" | wc -l) inputs"
  done
fi

[ "$failed" -eq 0 ] || { echo "fuzz.sh: FAILED: $failed target(s) with a finding; artifacts in $out/artifacts"; exit 1; }
echo "fuzz.sh: PASSED: ${#targets[@]} target(s), ${time_s}s each, $total_execs executions, no finding"
