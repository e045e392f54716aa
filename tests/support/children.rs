//! Child processes: this test executable run again for one test, with the
//! environment a case needs (a stand-in driver first on LD_LIBRARY_PATH,
//! variables set or removed), and what the parent checks of its output; and what a
//! peer process puts on a socket, byte for byte (`send_with_fds`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// LD_LIBRARY_PATH with `dir` first; what was there stays (a validation layer or a
/// loader found through the path stays found).
pub fn library_path_with(dir: &Path) -> OsString {
    let mut p = dir.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        p.push(":");
        p.push(old);
    }
    p
}

/// This test executable again, running only the test `name` (an `#[ignore]`d one
/// when `ignored`), output not captured.
pub fn this_test(name: &str, ignored: bool) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    if ignored {
        c.arg("--ignored");
    }
    c.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    c
}

/// The output of a `this_test` child, printed; asserts it exited 0 and ran its one
/// test. Returns stdout and stderr together.
#[track_caller]
pub fn child_passed(name: &str, out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("---- child {name} ----\n{text}---- end of child {name} ----");
    assert!(out.status.success(), "child {name} failed: {}", out.status);
    assert!(
        text.contains("1 passed"),
        "child {name} ran its test: {text}"
    );
    text
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
    let mut cmd = this_test(case, true);
    cmd.env("LD_LIBRARY_PATH", lib_dir)
        .env(CHILD_ENV, "1")
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    child_passed(case, &out)
}

/// 32 hex digits, as FAKE_CUDA_UUIDS takes them.
pub fn uuid_hex(u: &[u8; 16]) -> String {
    u.iter().map(|b| format!("{b:02x}")).collect()
}

/// sendmsg of `bytes` with `fds` attached (SCM_RIGHTS, at most 16), on the stack
/// only: safe to call in a forked child. Returns sendmsg's result.
pub fn send_with_fds(sock: i32, bytes: &[u8], fds: &[i32]) -> isize {
    assert!(fds.len() <= 16);
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut std::ffi::c_void,
        iov_len: bytes.len(),
    };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let payload = std::mem::size_of_val(fds) as u32;
        msg.msg_control = control.as_mut_ptr().cast();
        unsafe {
            msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(payload) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(c),
                payload as usize,
            );
        }
    }
    unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) }
}
