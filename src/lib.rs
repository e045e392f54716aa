//! vkcuda: share GPU memory and semaphores between a Vulkan engine and CUDA, zero-copy.
//!
//! TOUR-PLACEHOLDER
#![deny(missing_docs)]

/// The `ash` crate the API takes and returns Vulkan types of (`ash::vk::Buffer`,
/// `vk::CommandBuffer`, ...): use this one, or the same version (0.38) of your own.
pub use ash;
/// The CUDA driver API types at the boundary: `cudarc::driver::sys`'s (the
/// `cudarc` crate, version 0.19.10), so a `CUstream` of your own `cudarc` of that
/// version is the same type. The library loads the CUDA driver at run time.
pub mod cuda_sys {
    pub use cudarc::driver::sys::{
        CUaddress_mode, CUarray, CUcontext, CUdevice, CUdeviceptr, CUgraph, CUgraphExec,
        CUgraphNode, CUmipmappedArray, CUstream, CUsurfObject, CUtexObject,
    };
}

pub(crate) mod dynlib;
pub mod error;
// Internal modules, public only for the library's own tests, benchmarks and fuzz
// targets (`tests/`, `bench/`, `fuzz/`): not part of the API, no semver promise.
#[doc(hidden)]
pub mod fd;
// The C ABI (`include/vkcuda.h`): exported from the cdylib/staticlib, and public
// for the tests that call the C functions the way a C caller does. Rust code uses
// the API beside it.
#[doc(hidden)]
pub mod ffi;
#[doc(hidden)]
pub mod format;
#[doc(hidden)]
pub mod lost;
#[doc(hidden)]
pub mod stats;

/// The objects and their rules, over the driver calls only they may make. The
/// files stay where they are (`#[path = "."]`: `src/buffer.rs`, `src/vulkan/`, ...).
///
/// The layers are held by the compiler: `vulkan` and `cuda` are private to this
/// module, so [`ffi`] (and anything else outside it) cannot name them and reaches
/// the GPU only through the objects' public API.
#[path = "."]
mod objects {
    pub mod buffer;
    pub mod context;
    pub mod dlpack;
    pub mod doctor;
    pub mod handoff;
    pub mod image;
    pub mod ipc;
    pub mod pairing;
    pub mod selftest;
    pub mod semaphore;

    mod cuda;
    mod vulkan;
}

pub use error::{Error, ErrorKind, Result};
pub(crate) use objects::selftest;
pub use objects::{buffer, context, dlpack, doctor, handoff, image, ipc, pairing, semaphore};

pub use buffer::Buffer;
pub use context::Context;
pub use image::Image;
pub use semaphore::Semaphore;
