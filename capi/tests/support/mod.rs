//! The floor every test suite stands on (and the benchmarks in bench/): the tests
//! call the exported C functions the way a C caller would, and use `ash` and the
//! CUDA driver API only for their own work (staging buffers, copies), loaded from
//! the context's `vkGetInstanceProcAddr` and at run time.
//!
//! A suite starts with `mod support; use support::*;` (a directory suite or a
//! benchmark: `#[path = "../support/mod.rs"] mod support;`). By concern:
//!   - `checks`: results `ok`, `fails`, `last_error`; skips `gpu_required`,
//!     `cuda_context_or_skip`; counting `serial` (one test at a time per file),
//!     `fd_count`, `fd_is_open`, `fd_knows_size`, `live_objects`, `live_counts`,
//!     `image_counts`; `pattern`, the bytes tests write; `median` of timings;
//!   - `objects`: `vulkan_only_context`, `device_support`, `buffer_create_info`,
//!     `create_buffer`, `buffer_info`, `buffer_import_info`, `image_desc`,
//!     `image_desc_of`, `image_info`, `image_wrap_info`, `bt709`, `texture_info`, `semaphore_create_info`,
//!     `create_semaphore`, `handoff_info`, `record` (a description's bytes);
//!   - `vulkan`: the test's own Vulkan work, `Vk` (`new` for a C context, `of` for a
//!     Rust API `vkcuda::Context`; `run`, `command_buffer`, `copy`,
//!     `image_barrier`, `host_buffer`), `layout_barrier`, `device_local_type`,
//!     `EngineDevice`;
//!   - `children`: this test executable run again (`this_test`, `child_passed`,
//!     `run_child`, `in_child`, `CHILD_ENV`), `library_path_with`, `empty_dir`,
//!     `uuid_hex`, `send_with_fds` (a peer's raw message with fds);
//!   - `stand_in`: `fake_cuda_driver`, the stand-in CUDA driver;
//!   - `cuda` (not re-exported: `use support::cuda::{check, Cuda};`): the test's
//!     own CUDA work, `Cuda` (`of` a C context, `of_context` a Rust one) and `check`;
//!   - `ycbcr` (not re-exported): one pass that samples a multi-planar image
//!     through a YCbCr conversion into RGBA8, for capi/tests/video.rs and bench/;
//!   - `images` (not re-exported): creation, `Side`, barriers and the pattern
//!     written and read back through Vulkan, for capi/tests/image.rs and capi/tests/planar.rs.
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
//! passed in 0.00 s. tests/conventions.rs checks the mark both ways.
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
//!   `validation_layer_canary` (capi/tests/buffer.rs) records its hazard only when named
//!   on the command line (`--ignored --exact validation_layer_canary`).
//! - libtest refuses `--ignored` together with `--include-ignored`: a command that
//!   selects ignored tests by name keeps `--ignored` alone.
#![allow(dead_code)]

pub mod checks;
pub mod children;
pub mod cuda;
pub mod images;
pub mod objects;
pub mod stand_in;
pub mod vulkan;
pub mod ycbcr;

// Not every suite uses every part.
#[allow(unused_imports)]
pub use checks::*;
#[allow(unused_imports)]
pub use children::*;
#[allow(unused_imports)]
pub use objects::*;
#[allow(unused_imports)]
pub use stand_in::*;
#[allow(unused_imports)]
pub use vkcuda_c::vkcuda_result::*;
#[allow(unused_imports)]
pub use vkcuda_c::*;
#[allow(unused_imports)]
pub use vulkan::*;
