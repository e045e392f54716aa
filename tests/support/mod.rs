//! The floor the Rust library's test suites stand on: the tests call the safe
//! Rust API (`vkcuda::…`) the way a Rust program does, and use `ash` and the CUDA
//! driver API only for their own work (staging buffers, copies), loaded from the
//! context's `vkGetInstanceProcAddr` and at run time. The C door's suites
//! (capi/tests/) stand on the same files, with their C parts beside them
//! (capi/tests/support/mod.rs includes `checks`, `children`, `cuda`, `stand_in`, `watchdog` and
//! `vulkan` from here).
//!
//! A suite starts with `mod support; use support::*;` (a directory suite:
//! `#[path = "../support/mod.rs"] mod support;`). By concern:
//!   - here: `cuda_context_or_skip` (a standalone `vkcuda::Context` paired with
//!     CUDA, or a skip), `vulkan_only_context`;
//!   - `checks`: skips `gpu_required`; counting `serial` (one test at a time per
//!     file), `fd_count`, `fds_back_to`, `fd_is_open`, `fd_knows_size`,
//!     `live_objects`, `live_counts`, `image_counts`; `pattern`, the bytes tests
//!     write; `median` of timings;
//!   - `vulkan`: the test's own Vulkan work, `Vk` (`of` a `vkcuda::Context`; `run`,
//!     `command_buffer`, `copy`, `image_barrier`, `host_buffer`), `layout_barrier`,
//!     `device_local_type`, `EngineDevice`;
//!   - `children`: this test executable run again (`this_test`, `child_passed`,
//!     `run_child`, `in_child`, `CHILD_ENV`), `library_path_with`, `empty_dir`,
//!     `uuid_hex`, `send_with_fds` (a peer's raw message with fds);
//!   - `stand_in`: `fake_cuda_driver`, the stand-in CUDA driver, and `fake_live`
//!     (what it still holds);
//!   - `watchdog` (not re-exported): `arm`, which `cuda_context_or_skip` calls:
//!     with `VKCUDA_TEST_WATCHDOG_S` a hung GPU test prints where its threads are,
//!     after the step it last named with `note` (the misuse matrix: its case);
//!   - `cuda` (not re-exported: `use support::cuda::{check, Cuda};`): the test's
//!     own CUDA work, `Cuda` (`of_context` a `vkcuda::Context`) and `check`.
//!
//! # GPU-only tests: skipped is not passed
//! A test that needs a CUDA GPU from its first statement (it starts with
//! `cuda_context_or_skip`) is marked, word for word,
//!
//! ```text
//! #[test]
//! #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
//! ```
//!
//! so that `cargo test` on a machine without a GPU reports it as ignored, not as
//! passed in 0.00 s. tests/conventions.rs checks the mark both ways, in tests/ and
//! capi/tests/.
//! - To run them: `VKCUDA_REQUIRE_GPU=1 cargo test -- --include-ignored` (or a
//!   bundled test executable with `--include-ignored`). With VKCUDA_REQUIRE_GPU=1
//!   a machine without a CUDA device paired to a Vulkan device fails them; without
//!   it they print `SKIPPED: <test>: <why>` on stderr and return.
//! - Tests that run on lavapipe and only skip a part (no GPU, not root, no external
//!   semaphores on the device) are not ignored: they say on stderr what they left
//!   out.
//! - Tests ignored for another reason must stay harmless under `--include-ignored`
//!   (the GPU scripts run whole files that way, also under the validation layer):
//!   the `child_*` tests, started by their parent test as `--ignored --exact NAME`
//!   (`this_test`), return at once without their parent's environment variable;
//!   `validation_layer_canary` (buffer.rs) records its hazard only when named
//!   on the command line (`--ignored --exact validation_layer_canary`).
//! - libtest refuses `--ignored` together with `--include-ignored`: a command that
//!   selects ignored tests by name keeps `--ignored` alone.
#![allow(dead_code)]

pub mod checks;
pub mod children;
pub mod cuda;
pub mod device;
pub mod images;
pub mod stand_in;
pub mod vulkan;
pub mod watchdog;
pub mod ycbcr;

use std::sync::Arc;

// Not every suite uses every part.
#[allow(unused_imports)]
pub use checks::*;
#[allow(unused_imports)]
pub use children::*;
#[allow(unused_imports)]
pub use stand_in::*;
#[allow(unused_imports)]
pub use vulkan::*;

/// A standalone context paired with CUDA (its primary context), or None (after
/// printing why) when this machine has no CUDA GPU. With VKCUDA_REQUIRE_GPU=1 a
/// missing GPU fails the test.
pub fn cuda_context_or_skip(test: &str) -> Option<Arc<vkcuda::Context>> {
    watchdog::arm();
    match vkcuda::Context::standalone(None, vkcuda::CudaChoice::Primary) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            let kind = e.kind();
            if gpu_required() {
                panic!("{test}: VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device: {kind:?}: {e}");
            }
            eprintln!("SKIPPED: {test}: no CUDA GPU here ({kind:?}: {e}); set VKCUDA_REQUIRE_GPU=1 to make this a failure");
            None
        }
    }
}

/// Returns at once from a `child_*` test that runs without its parent (`in_child`).
#[allow(unused_macros)]
macro_rules! child_only {
    ($name:expr) => {
        if !$crate::support::in_child($name) {
            return;
        }
    };
}
#[allow(unused_imports)]
pub(crate) use child_only;

/// Asserts that `text` contains every one of `parts`.
#[track_caller]
pub fn has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "lacks {p:?}: {text}");
    }
}

/// A standalone Vulkan-only context (no CUDA) on the first device with the
/// interop extensions: lavapipe here.
pub fn vulkan_only_context() -> Arc<vkcuda::Context> {
    vkcuda::Context::standalone(None, vkcuda::CudaChoice::None).expect("a Vulkan-only context")
}

/// Asserts `r` failed with `want` and a message; returns the message.
#[track_caller]
pub fn fails<T: std::fmt::Debug>(r: vkcuda::Result<T>, want: vkcuda::ErrorKind) -> String {
    let e = r.expect_err("a refusal");
    assert_eq!(e.kind(), want, "message: {e}");
    let msg = e.to_string();
    assert!(!msg.is_empty(), "no message for {want:?}");
    msg
}

/// `n` bytes of `pattern(i, seed)`.
pub fn bytes(n: usize, seed: u32) -> Vec<u8> {
    (0..n).map(|i| pattern(i, seed)).collect()
}

/// `r` failed with `want`; returns the message.
#[track_caller]
pub fn fails_with<T: std::fmt::Debug>(r: vkcuda::Result<T>, want: vkcuda::ErrorKind) -> String {
    let e = r.expect_err("the call must fail");
    assert_eq!(e.kind(), want, "{e}");
    e.to_string()
}

/// Asserts `r` failed with `want` and that its message says `words`; returns the error.
#[track_caller]
pub fn refused<T: std::fmt::Debug>(
    r: vkcuda::Result<T>,
    want: vkcuda::ErrorKind,
    words: &str,
) -> vkcuda::Error {
    let e = r.expect_err("the call must fail");
    assert_eq!(e.kind(), want, "{e}");
    assert!(
        e.message().contains(words),
        "the message says {words:?}: {e}"
    );
    e
}

/// The UUID of a context's Vulkan device, as `vkcuda::pairing` reports it.
pub fn ctx_uuid(ctx: &vkcuda::Context) -> [u8; 16] {
    let h = ctx.vulkan_handles();
    // SAFETY: the context's own live instance and physical device.
    unsafe { vkcuda::pairing::report(h.get_instance_proc_addr, h.instance, h.physical_device) }
        .unwrap()
        .support
        .props
        .uuid
}

/// A pipe's two ends, close-on-exec (an fd that is no GPU handle).
pub fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    }
}
