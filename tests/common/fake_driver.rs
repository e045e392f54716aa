//! The stand-in CUDA driver of tests/fake_cuda/libcuda.c: built once per variant
//! into its own directory, and child processes of the test executable that load
//! it (a process loads the driver once, so each case is a child).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fake libcuda.so into `<target tmp>/<name>/` with extra compiler
/// arguments (`-DOMIT_MEM_CREATE`); returns the directory. One directory per test:
/// tests run in parallel and must not rebuild a library another test's child is
/// loading.
pub fn build(name: &str, extra: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_cuda/libcuda.c");
    let status = Command::new("cc")
        .args([
            "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-o",
        ])
        .arg(dir.join("libcuda.so"))
        .arg(&src)
        .args(extra)
        .status()
        .expect("a C compiler (cc) to build the fake libcuda");
    assert!(status.success());
    dir
}

/// An empty directory: LD_LIBRARY_PATH for "no libcuda at all" (where the machine
/// has none of its own).
pub fn empty_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the ignored test `case` of this executable in a child process with
/// `lib_dir` first on LD_LIBRARY_PATH and `env` set (a value of None removes the
/// variable); fails unless it ran and passed. Returns its output.
pub fn run_child(case: &str, lib_dir: &Path, env: &[(&str, Option<&str>)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        case,
        "--nocapture",
        "--test-threads=1",
    ])
    .env("LD_LIBRARY_PATH", lib_dir)
    .env(CHILD_ENV, "1")
    .env_remove(vkcuda::cuda::DISABLE_ENV);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "child {case} failed");
    assert!(
        text.contains("1 passed"),
        "child {case} ran its test: {text}"
    );
    text
}

/// Set in the child processes of [`run_child`].
pub const CHILD_ENV: &str = "VKCUDA_TEST_CHILD";

/// False (after saying so) when a child test runs on its own, e.g. under
/// `--include-ignored`: it needs the environment its parent test sets up.
pub fn in_child(test: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    eprintln!(
        "{test}: runs only as the child process of its parent test; nothing to do on its own"
    );
    false
}

/// 32 hex digits, as FAKE_CUDA_UUIDS takes them.
pub fn uuid_hex(u: &[u8; 16]) -> String {
    u.iter().map(|b| format!("{b:02x}")).collect()
}
