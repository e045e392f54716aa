//! vkcuda: share GPU memory and semaphores between a Vulkan engine and CUDA, zero-copy.
//!
//! The C API lives in [`ffi`] and is what `include/vkcuda.h` declares. The modules
//! beside it are safe Rust wrappers that own the native objects and know nothing of C.
//!
//! The layers are held by the compiler: the objects and the driver calls beneath
//! them live in one private module, `objects`, whose `vulkan` and `cuda` modules
//! are private to it. The objects are re-exported here; the drivers are not, so
//! [`ffi`] (and anything else outside `objects`) cannot name them and reaches
//! the GPU only through the objects' public API.

pub mod dynlib;
pub mod error;
pub mod fd;
pub mod ffi;
pub mod format;
pub mod lost;
pub mod stats;

/// The objects and their rules, over the driver calls only they may make. The
/// files stay where they are (`#[path = "."]`: `src/buffer.rs`, `src/vulkan/`, ...).
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
pub use objects::{
    buffer, context, dlpack, doctor, handoff, image, ipc, pairing, selftest, semaphore,
};
