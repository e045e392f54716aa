//! The project's scripts, run against stand-ins: scripts/install-deps.sh in its two
//! modes, with `apt-get`, `dpkg-query`, `cargo`, `rustup` and the helper scripts it
//! calls replaced by stubs that only record their arguments. The demo
//! (`scripts/demo.sh` runs `install-deps.sh --demo`) must install what building the
//! library and the examples needs and nothing only the tests use (issue 39 item 15:
//! on a fresh machine the demo spent 309 s of 6 min building cargo-semver-checks).
//! Also: the examples' build files reach nothing under tests/. CPU only; needs bash.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A stub that appends "NAME ARGS" to $STUB_LOG, then runs `body`.
fn stub(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho \"{name} $*\" >> \"$STUB_LOG\"\n{body}\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs a copy of scripts/install-deps.sh with `args` among stubs; returns the
/// calls the stubs recorded and the script's output.
fn install_deps(tag: &str, args: &[&str]) -> (Vec<String>, String) {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("install-deps-{tag}"));
    let _ = std::fs::remove_dir_all(&work);
    let scripts = work.join("scripts");
    let bin = work.join("bin");
    let home = work.join("home");
    for d in [&scripts, &bin, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::copy(
        root().join("scripts/install-deps.sh"),
        scripts.join("install-deps.sh"),
    )
    .unwrap();
    stub(&scripts, "fetch-vma.sh", "exit 0");
    stub(&scripts, "gen-ptx.sh", "exit 0");
    // Every package is missing; apt-get and sudo succeed; cargo is there without
    // cargo-semver-checks.
    stub(&bin, "dpkg-query", "exit 1");
    stub(&bin, "apt-get", "exit 0");
    stub(&bin, "sudo", "exec \"$@\"");
    stub(&bin, "rustup", "exit 0");
    stub(
        &bin,
        "cargo",
        "case \"$1\" in --version) echo 'cargo 1.80.0';; semver-checks) exit 1;; esac; exit 0",
    );
    let log = work.join("calls.log");
    std::fs::write(&log, "").unwrap();
    let out = Command::new("bash")
        .arg(scripts.join("install-deps.sh"))
        .args(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", &home)
        .env("STUB_LOG", &log)
        .env_remove("VKCUDA_PREBUILT_LIBRARY")
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("---- install-deps.sh {args:?} ----\n{text}");
    assert!(
        out.status.success(),
        "install-deps.sh {args:?}: {}\n{text}",
        out.status
    );
    let calls = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (calls, text)
}

/// The packages the `apt-get install` call was given.
fn installed(calls: &[String]) -> Vec<String> {
    let line = calls
        .iter()
        .find(|c| c.starts_with("apt-get ") && c.contains(" install "))
        .unwrap_or_else(|| panic!("no apt-get install among {calls:?}"));
    line.split_whitespace()
        .skip_while(|w| !w.ends_with("--force-confold"))
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// What only the tests use: never installed for the demo.
const TEST_ONLY: &[&str] = &[
    "vulkan-tools",
    "vulkan-validationlayers",
    "glslang-tools",
    "clang",
    "doxygen",
    "abigail-tools",
    "valgrind",
];

#[test]
fn the_demo_installs_only_what_the_demo_needs() {
    let (calls, _) = install_deps("demo", &["--demo"]);
    let apt = installed(&calls);
    for p in [
        "cmake",
        "g++",
        "libvulkan-dev",
        "libstb-dev",
        "python3-venv",
    ] {
        assert!(apt.iter().any(|a| a == p), "the demo needs {p}: {apt:?}");
    }
    for p in TEST_ONLY {
        assert!(
            !apt.iter().any(|a| a == p),
            "{p} is for the tests only: {apt:?}"
        );
    }
    assert!(
        !calls.iter().any(|c| c.starts_with("cargo install")),
        "the demo built a tool: {calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("rustup component")),
        "the demo installed clippy/rustfmt: {calls:?}"
    );
    assert!(
        calls.iter().any(|c| c == "gen-ptx.sh --install-headers"),
        "cuda.h only (no nvcc) for the demo: {calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.starts_with("fetch-vma.sh")),
        "{calls:?}"
    );
    let demo = std::fs::read_to_string(root().join("scripts/demo.sh")).unwrap();
    assert!(
        demo.contains("scripts/install-deps.sh\" --demo"),
        "scripts/demo.sh must run install-deps.sh --demo"
    );
}

#[test]
fn the_test_command_installs_everything() {
    let (calls, _) = install_deps("tests", &[]);
    let apt = installed(&calls);
    let (demo_calls, _) = install_deps("demo-subset", &["--demo"]);
    for p in installed(&demo_calls) {
        assert!(
            apt.contains(&p),
            "{p} is the demo's but not the tests': {apt:?}"
        );
    }
    for p in TEST_ONLY {
        assert!(apt.iter().any(|a| a == p), "the tests need {p}: {apt:?}");
    }
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("cargo install --locked --version")
                && c.ends_with("cargo-semver-checks")),
        "{calls:?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c == "rustup component add clippy rustfmt"),
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c == "gen-ptx.sh --install-only"),
        "{calls:?}"
    );
    let test = std::fs::read_to_string(root().join("scripts/test.sh")).unwrap();
    assert!(
        test.contains("scripts/install-deps.sh\" ||"),
        "scripts/test.sh runs install-deps.sh without --demo"
    );
}

/// The examples' build files (examples/, c_examples/) use nothing under tests/: an
/// example is built and read on its own (issue 35 item 4: the SPIR-V header script
/// moved from tests/gpu/ to cmake/). Comments may name test files.
#[test]
fn examples_build_without_reaching_into_tests() {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("examples"), root().join("c_examples")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                dirs.push(p);
            } else if name == "CMakeLists.txt" || name.ends_with(".cmake") {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 4, "found {files:?}");
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or("");
            if code.contains("tests/") || code.contains("/tests\"") {
                bad.push(format!(
                    "{}:{}: {}",
                    f.strip_prefix(root()).unwrap().display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "example build files reach into tests/:\n{}",
        bad.join("\n")
    );
}
