#!/usr/bin/env bash
# Fuzzes the C ABI's argument checks, the semaphore value book-keeping and the
# cross-process description format with cargo-fuzz (libFuzzer, AddressSanitizer, debug
# assertions on) on a Vulkan-only context (lavapipe is enough), one target at a time.
#
#   scripts/fuzz.sh [--time SECONDS] [--merge] [TARGET...]   default: 10 s, every target
#   scripts/fuzz.sh --cmin [TARGET...]    no fuzzing: minimize the local corpus
#
# The seeds (fuzz/seeds/TARGET, in git) are copied into the git-ignored corpus
# fuzz/corpus/TARGET first (fuzz/README.md); a run reads it and writes what it finds
# to a temporary directory, with --merge into the corpus. A finding stops its target
# and is saved under $VKCUDA_FUZZ_OUT/artifacts/TARGET/ (default target/fuzz-out): exit
# 1. cargo-fuzz is pinned and installed on first use into target/tools/ (VKCUDA_TOOLS_DIR).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz" || exit 1
[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
export RUSTC_BOOTSTRAP=1 # stable takes cargo-fuzz's nightly flags

time_s=10 merge=0 cmin=0 targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --time) time_s=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --cmin) cmin=1; shift ;;
    -h|--help) sed -n '2,13p' "$root/scripts/fuzz.sh"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
mapfile -t all < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' Cargo.toml | grep -v '^vkcuda-fuzz$')
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
fuzz() { "$cargo_fuzz" fuzz "$1" -O --debug-assertions "${@:2}"; } # UB becomes a finding
out=${VKCUDA_FUZZ_OUT:-$root/target/fuzz-out}
mkdir -p "$out" && out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-fuzz.XXXXXX")" || exit 1
trap 'rm -rf "$work"' EXIT

echo "== cargo-fuzz $cargo_fuzz_version: build -O --debug-assertions (targets: ${targets[*]})"
fuzz build || { echo "fuzz.sh: build failed" >&2; exit 1; }
if [ "$cmin" = 1 ]; then
  rc=0
  for t in "${targets[@]}"; do
    before=$(find "corpus/$t" -type f | wc -l)
    fuzz cmin "$t" "corpus/$t" -- -set_cover_merge=1 > "$work/cmin.log" 2>&1 || { tail -5 "$work/cmin.log"; rc=1; }
    echo "$t: $before -> $(find "corpus/$t" -type f | wc -l) inputs; $(grep -m1 'MERGE-OUTER: .* new coverage' "$work/cmin.log")"
  done
  exit $rc
fi

failed=0 total=0
printf '| %-22s | %12s | %7s | %s\n' target executions seconds result
for t in "${targets[@]}"; do
  start=$SECONDS new="$work/new/$t"
  [ "$merge" = 0 ] || new="corpus/$t"
  mkdir -p "$new" "$out/artifacts/$t"
  # The first corpus directory is where libFuzzer writes; the others are read.
  fuzz run "$t" "$new" "corpus/$t" -- -max_total_time="$time_s" -print_final_stats=1 -rss_limit_mb=4096 \
    -timeout=30 -artifact_prefix="$out/artifacts/$t/" > "$out/$t.log" 2>&1
  rc=$? result="no finding"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
  if [ "$rc" -ne 0 ]; then
    result="FINDING (exit $rc): $(grep -m1 -E 'panicked at|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)' "$out/$t.log" | cut -c1-100)"
    failed=$((failed + 1))
    grep -E 'panicked at|assertion|ERROR:|SUMMARY|Test unit written' "$out/$t.log" | head -20 | sed 's/^/    /'
  fi
  total=$((total + ${execs:-0}))
  printf '| %-22s | %12s | %7s | %s\n' "$t" "${execs:-0}" "$((SECONDS - start))" "$result"
done
[ "$failed" -eq 0 ] || { echo "fuzz.sh: FAILED: $failed target(s) with a finding; artifacts in $out/artifacts"; exit 1; }
echo "fuzz.sh: PASSED: ${#targets[@]} target(s), ${time_s}s each, $total executions, no finding (logs in $out)"
