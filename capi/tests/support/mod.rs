//! The floor every test suite stands on (and the benchmarks in bench/): the tests
//! call the exported C functions the way a C caller would, and use `ash` and the
//! CUDA driver API only for their own work (staging buffers, copies), loaded from
//! the context's `vkGetInstanceProcAddr` and at run time.
//!
//! The parts that are not about the C door are the Rust library's tests' floor
//! (tests/support/: `checks`, `children`, `cuda`, `stand_in`, `vulkan`, `watchdog`, included
//! here by `#[path]`); `door` adds the C constructors of their types.
//!
//! A suite starts with `mod support; use support::*;` (a directory suite or a
//! benchmark: `#[path = "../support/mod.rs"] mod support;`). By concern:
//!   - `door`: results `ok`, `fails`, `last_error`; `cuda_context_or_skip` (a C
//!     context); `Cuda::of`, `Vk::new` (C contexts), `EngineDevice::create_info`,
//!     `OneDevice`, `TwoDevices`;
//!   - `checks` (tests/support/): skips `gpu_required`; counting `serial` (one
//!     test at a time per file), `fd_count`, `fds_back_to`, `fd_is_open`,
//!     `fd_knows_size`, `live_objects` (`vkcuda::live_objects`), `live_counts`,
//!     `image_counts`; `pattern`, the bytes tests write; `median` of timings;
//!   - `objects`: `vulkan_only_context`, `buffer_create_info`,
//!     `create_buffer`, `buffer_info`, `buffer_import_info`, `image_desc`,
//!     `image_desc_of`, `image_info`, `image_wrap_info`, `bt709`, `texture_info`, `semaphore_create_info`,
//!     `create_semaphore`, `handoff_info`, `record` (a description's bytes);
//!   - `vulkan` (tests/support/): the test's own Vulkan work, `Vk` (`new` for a C
//!     context, `of` for a Rust API `vkcuda::Context`; `run`, `command_buffer`,
//!     `copy`, `image_barrier`, `host_buffer`), `layout_barrier`,
//!     `device_local_type`, `EngineDevice`;
//!   - `children`: this test executable run again (`this_test`, `child_passed`,
//!     `run_child`, `in_child`, `CHILD_ENV`), `library_path_with`, `empty_dir`,
//!     `uuid_hex`, `send_with_fds` (a peer's raw message with fds);
//!   - `stand_in`: `fake_cuda_driver`, the stand-in CUDA driver, and `fake_live`
//!     (what it still holds);
//!   - `cuda` (not re-exported: `use support::cuda::{check, Cuda};`): the test's
//!     own CUDA work, `Cuda` (`of` a C context, `of_context` a Rust one) and `check`;
//!   - `ycbcr` (tests/support/, not re-exported): one pass that samples a
//!     multi-planar image through a YCbCr conversion into RGBA8, for tests/video.rs
//!     and bench/;
//!   - `images` (not re-exported): `d2` descriptions and `create`, for
//!     capi/tests/planes.rs and bench/ (the Rust API's suites' Vulkan work on
//!     images is tests/support/images.rs).
//!
//! # GPU-only tests: skipped is not passed
//! As in the Rust library's suites (the top of tests/support/mod.rs says how): a
//! test that starts with `cuda_context_or_skip` is marked, word for word,
//! `#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]`.
#![allow(dead_code)]

// The parts of the floor the Rust library's suites share (tests/support/).
#[path = "../../../tests/support/checks.rs"]
pub mod checks;
#[path = "../../../tests/support/children.rs"]
pub mod children;
#[path = "../../../tests/support/cuda.rs"]
pub mod cuda;
#[path = "../../../tests/support/stand_in.rs"]
pub mod stand_in;
#[path = "../../../tests/support/vulkan.rs"]
pub mod vulkan;
#[path = "../../../tests/support/watchdog.rs"]
pub mod watchdog;
#[path = "../../../tests/support/ycbcr.rs"]
pub mod ycbcr;
// The C door's own.
pub mod door;
pub mod images;
pub mod objects;

// Not every suite uses every part.
#[allow(unused_imports)]
pub use checks::*;
#[allow(unused_imports)]
pub use children::*;
#[allow(unused_imports)]
pub use door::*;
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
