#!/usr/bin/env bash
# The Rust API (the crate's public items) against the last release, with
# cargo-semver-checks: a change that semver calls breaking must come with the
# version that says so (0.x: a new minor), an addition with at least a new patch.
# CTest's semver_check runs it (label cpu).
#
#   scripts/semver-check.sh [--baseline-rev REV]
#
# The baseline is REV, else the last tag v<X.Y.Z> reachable from HEAD, else the
# commit recorded in abi/rust-api.baseline (a clone without tags). The pinned
# cargo-semver-checks is installed by scripts/install-deps.sh (cargo install
# --locked); it builds the rustdoc JSON of both versions under target/semver-checks.
# The version checked is the Rust crate's (the root Cargo.toml), not the C
# library's (capi/Cargo.toml, the crate vkcuda-c), which has its own check
# (scripts/abi-check.sh). Exit status: 0 the version fits the changes, 1 it does
# not, 2 the check could not run.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2
[ ! -d "$HOME/.cargo/bin" ] || PATH="$HOME/.cargo/bin:$PATH"
die() { echo "semver-check: $*" >&2; exit 2; }

rev=""
while [ $# -gt 0 ]; do
  case "$1" in
    --baseline-rev) rev="$2"; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done

want="$(sed -n 's/^semver_checks_version=\([0-9.]*\).*/\1/p' scripts/install-deps.sh)"
have="$(cargo semver-checks --version 2>/dev/null | awk '{ print $2 }')"
[ -n "$have" ] || die "cargo-semver-checks is not installed: scripts/install-deps.sh installs it (cargo install --locked --version $want cargo-semver-checks)"
[ "$have" = "$want" ] || echo "semver-check: warning: cargo-semver-checks $have, scripts/install-deps.sh pins $want"

how=""
if [ -n "$rev" ]; then
  how="--baseline-rev"
elif rev="$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null)" && [ -n "$rev" ]; then
  how="the last tag"
else
  line="$(grep -v '^#' abi/rust-api.baseline 2>/dev/null | awk 'NF == 2' | tail -n1)"
  [ -n "$line" ] || die "no tag v* reachable from HEAD and no baseline in abi/rust-api.baseline"
  rev="${line#* }"
  how="abi/rust-api.baseline (release ${line%% *}; no tag in this clone)"
fi
git cat-file -e "$rev^{commit}" 2>/dev/null ||
  die "the baseline $rev is not a commit of this clone (a shallow clone? git fetch --unshallow)"
version="$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n1)"
echo "semver-check: vkcuda $version against $rev ($how, commit $(git rev-parse --short "$rev^{commit}")), cargo-semver-checks $have"
cargo semver-checks check-release --manifest-path "$root/Cargo.toml" --package vkcuda --baseline-rev "$rev"
rc=$?
case $rc in
  0) echo "semver-check: PASSED: version $version fits the changes since $rev" ;;
  *) echo "semver-check: FAILED (cargo-semver-checks exit status $rc): a breaking change needs a new" \
       "major version (0.x: minor) in the root Cargo.toml (the Rust crate's own; capi/Cargo.toml" \
       "versions the C library), listed in CHANGELOG.md; or undo it"; exit 1 ;;
esac
