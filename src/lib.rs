//! vkcuda: share GPU memory and semaphores between a Vulkan engine and CUDA, zero-copy.
//!
//! The C API lives in [`ffi`] and is what `include/vkcuda.h` declares. The modules
//! beside it are safe Rust wrappers that own the native objects and know nothing of C.

pub mod buffer;
pub mod context;
pub mod cuda;
pub mod dlpack;
pub mod doctor;
pub mod dynlib;
pub mod error;
pub mod fd;
pub mod ffi;
pub mod format;
pub mod image;
pub mod ipc;
pub mod lost;
pub mod pairing;
pub mod selftest;
pub mod semaphore;
pub mod stats;
pub mod vulkan;

pub use error::{Error, ErrorKind, Result};
