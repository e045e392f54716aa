//! Child processes with the stand-in CUDA driver of tests/fake_cuda/libcuda.c and
//! environment variables set or removed (the doctor's simulated machines,
//! several fake devices). Built on `fake_cuda_driver`, `this_test` and
//! `child_passed` of the common module.

use std::path::{Path, PathBuf};

/// The fake driver (see `fake_cuda_driver`: built once per process, in a directory
/// of its build content, never rewritten while a child may load it).
pub fn build(name: &str, extra: &[&str]) -> PathBuf {
    super::fake_cuda_driver(name, extra)
}

/// An empty directory: LD_LIBRARY_PATH for "no libcuda at all" (where the machine
/// has none of its own).
pub fn empty_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Set in the child processes of [`run_child`].
pub const CHILD_ENV: &str = "VKCUDA_TEST_CHILD";

/// False (after saying so) when a child test runs on its own, e.g. under
/// `--include-ignored`: it needs the environment its parent test sets up.
pub fn in_child(test: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    println!("{test}: not started by its parent test (no {CHILD_ENV}): nothing to do");
    false
}

/// Runs the ignored test `case` of this executable in a child process with only
/// `lib_dir` on LD_LIBRARY_PATH and `env` set (a value of None removes the
/// variable); fails unless it ran and passed. Returns its output.
pub fn run_child(case: &str, lib_dir: &Path, env: &[(&str, Option<&str>)]) -> String {
    let mut cmd = super::this_test(case, true);
    cmd.env("LD_LIBRARY_PATH", lib_dir)
        .env(CHILD_ENV, "1")
        .env_remove(vkcuda::cuda::DISABLE_ENV);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    super::child_passed(case, &out)
}

/// 32 hex digits, as FAKE_CUDA_UUIDS takes them.
pub fn uuid_hex(u: &[u8; 16]) -> String {
    u.iter().map(|b| format!("{b:02x}")).collect()
}
