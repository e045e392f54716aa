#!/usr/bin/env bash
# Two semver-incompatible copies of the `vkcuda` crate in one Rust program build,
# link and run. The Rust library exports no C symbol (the C door is the vkcuda-c
# crate), so two versions in one dependency graph do not collide at link time.
#
#   tests/two_copies/run.sh     (CTest: rust_two_copies; uses target/ for the deps)
#
# The second copy is this tree's src/ as version 0.2.99 (semver-incompatible with
# this tree's, 0.4); a program depends on both under two names and calls into each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ ! -d "$HOME/.cargo/bin" ] || PATH="$HOME/.cargo/bin:$PATH"
work="$(mktemp -d "${TMPDIR:-/tmp}/vkcuda-two-copies.XXXXXX")"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/old" "$work/app/src"
cp -r "$root/src" "$work/old/"
# The old copy: the package table alone (no workspace), another version.
python3 - "$root/Cargo.toml" "$work/old/Cargo.toml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"(?ms)^\[workspace\].*?(?=^\[)", "", text)
text = re.sub(r'(?m)^version = "[^"]*"', 'version = "0.2.99"', text, count=1)
open(sys.argv[2], "w").write(text)
PY
new_version="$(sed -n 's/^version = "\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n1)"
cat > "$work/app/Cargo.toml" <<TOML
[package]
name = "two-copies"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
new = { package = "vkcuda", path = "$root" }
old = { package = "vkcuda", path = "$work/old" }
TOML
cat > "$work/app/src/main.rs" <<'RS'
fn main() {
    use new::context::CudaChoice as NewChoice;
    use old::context::CudaChoice as OldChoice;
    // Each copy makes its own Vulkan-only context (lavapipe on CI) or says why not.
    let a = new::Context::standalone(None, NewChoice::None).map(|_| ()).map_err(|e| e.to_string());
    let b = old::Context::standalone(None, OldChoice::None).map(|_| ()).map_err(|e| e.to_string());
    println!("new copy: {a:?}; old copy: {b:?}");
    assert_eq!(a.is_ok(), b.is_ok(), "the two copies disagree");
    assert_eq!(new::live_objects().contexts, 0);
    assert_eq!(old::live_objects().contexts, 0);
    assert_eq!(new::ErrorKind::DeviceLost.code(), old::ErrorKind::DeviceLost.code());
    println!("two copies: PASSED");
}
RS
# The workspace's lock pins the same dependency versions (cargo adds the rest).
cp "$root/Cargo.lock" "$work/app/Cargo.lock"
cd "$work/app"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" cargo run -q
echo "two copies: vkcuda $new_version and 0.2.99 in one program"
