//! vkcuda: share GPU memory and semaphores between a Vulkan engine and CUDA, zero-copy.
//!
//! The same objects serve two APIs: this safe Rust API, and the C API of
//! `include/vkcuda.h` (`libvkcuda.so`, built by the `vkcuda-c` crate), a thin
//! layer over it. A Rust engine (on
//! `ash`, or wgpu through its HAL) uses this one.
//!
//! # A five-minute tour
//!
//! **1. Pair a Vulkan device with CUDA.** A [`Context`] is one `VkDevice` paired
//! with the CUDA device of the same UUID. An engine creates its device with the
//! extensions of [`pairing::DEVICE_EXTENSIONS`] and the `timelineSemaphore`
//! feature, then wraps it ([`Context::from_engine`], `unsafe`: the crate cannot
//! check the engine's handles). Tools and tests let the library make its own
//! instance, device and queue ([`Context::standalone`]). [`CudaChoice::None`]
//! makes a Vulkan-only context, which runs anywhere (Mesa's lavapipe, CI): it
//! creates, exports and imports, and every CUDA call returns
//! [`ErrorKind::CudaUnavailable`].
//!
//! **2. Share memory.** A [`Buffer`] is one allocation with a `VkBuffer` view
//! ([`Buffer::vk_buffer`]) and a CUDA device pointer view ([`Buffer::cuda_ptr`]).
//! An [`Image`] is a `VkImage` whose CUDA view is a mipmapped array per plane
//! (surfaces, textures), or, for a shared video frame (a LINEAR multi-planar
//! image, [`image::Description::linear`]), pitched device memory per plane
//! ([`Image::plane_pointer`]) with its colour description
//! ([`Image::set_video_color`], [`Image::ycbcr_conversion`]).
//!
//! ```
//! use std::os::fd::AsFd;
//! use vkcuda::ash::vk;
//! use vkcuda::buffer::Allocator;
//! use vkcuda::context::CudaChoice;
//! use vkcuda::{Buffer, Context};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?; // Vulkan only: runs on lavapipe
//! let buf = Buffer::create(&ctx, 1 << 20, vk::BufferUsageFlags::empty(), Allocator::Vulkan)?;
//! println!("VkBuffer {:?}, {} bytes", buf.vk_buffer(), buf.layout().size);
//!
//! // What travels to another process: an fd and the layout (see `ipc` for the
//! // socket that carries both). Importing gives the same memory, new views.
//! let fd = buf.export_fd()?;
//! let twin = Buffer::import_fd(&ctx, fd.as_fd(), buf.layout(), vk::BufferUsageFlags::empty())?;
//! assert_eq!(twin.layout(), buf.layout());
//!
//! // Errors say what went wrong in words; the kind is the C API's result code.
//! let e = Buffer::create(&ctx, 0, vk::BufferUsageFlags::empty(), Allocator::Vulkan).unwrap_err();
//! assert_eq!(e.kind(), vkcuda::ErrorKind::InvalidArgument);
//! assert_eq!(e.message(), "size must not be 0");
//! # Ok(())
//! # }
//! ```
//!
//! A [`Batch`] is N images (or buffers) of one shape in ONE allocation, mapped
//! into CUDA once: one handoff call for all N ([`Batch::cmd_release_to_cuda`]) and
//! one `(N, H, W, C)` DLPack tensor ([`Batch::export_dlpack`]; zero-copy LINEAR
//! images where the device allows, else a readout region the release fills).
//!
//! **3. Synchronise with a timeline semaphore.** A [`Semaphore`] is an
//! exportable timeline `VkSemaphore` imported into CUDA. The engine waits and
//! signals in its own submits ([`Semaphore::vk_semaphore`]); CUDA on a stream
//! ([`Semaphore::cuda_wait`], [`Semaphore::cuda_signal`]); values must strictly
//! increase, and [`Semaphore::next_stage`] hands out the chain of a frame.
//!
//! **4. Hand the memory over.** Between Vulkan's use and CUDA's, the memory
//! changes queue family (`VK_QUEUE_FAMILY_EXTERNAL`; images also go to
//! `GENERAL`): [`Buffer::cmd_release_to_cuda`] and
//! [`Buffer::cmd_acquire_from_cuda`] (and the same on [`Image`]) record that
//! barrier into the engine's command buffer; [`handoff::batch`] records any
//! number of them in one barrier. One frame, engine then CUDA then engine:
//!
//! ```no_run
//! use vkcuda::ash::vk;
//! use vkcuda::buffer::Allocator;
//! use vkcuda::context::CudaChoice;
//! use vkcuda::handoff::Scope;
//! use vkcuda::semaphore::Kind;
//! use vkcuda::{Buffer, Context, Semaphore};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::Primary)?; // needs an NVIDIA GPU
//! let buf = Buffer::create(&ctx, 64 << 20, vk::BufferUsageFlags::empty(), Allocator::Vulkan)?;
//! let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None)?;
//! let (family, _queue) = ctx.vulkan_handles().queue.expect("a standalone context has one");
//! let stream = std::ptr::null_mut(); // CUDA's default stream, or one of your own
//! # let (render, next_frame) = (vk::CommandBuffer::null(), vk::CommandBuffer::null());
//!
//! let vulkan = sem.next_stage()?; // the engine's part of the frame
//! let cuda = sem.next_stage()?; // CUDA's, after it
//! // SAFETY: `render` is the engine's command buffer, recording, of this device.
//! unsafe { buf.cmd_release_to_cuda(render, &Scope::new(family))? };
//! // ... the engine submits `render` signalling `vulkan.signal` on sem.vk_semaphore()
//! sem.cuda_wait(cuda.wait, stream)?;
//! // ... CUDA work on buf.cuda_ptr()? in `stream`
//! sem.cuda_signal(cuda.signal, stream)?;
//! // SAFETY: as above; this submit waits for `cuda.signal`.
//! unsafe { buf.cmd_acquire_from_cuda(next_frame, &Scope::new(family))? };
//! # let _ = vulkan;
//! # Ok(())
//! # }
//! ```
//!
//! **5. Beyond one process and one API.** [`ipc`] sends a buffer, semaphore or
//! image (a description and its fds) over a Unix socket to another process's
//! context, after checking who the peer is. [`Buffer::export_dlpack`] and
//! [`Image::export_plane_dlpack`] make DLPack tensors (PyTorch, CuPy, JAX) of
//! the CUDA view, zero-copy. [`present::Ring`] carries what CUDA draws onto an
//! engine's swapchain (a ring of shared images, one blit per frame). [`doctor::run`]
//! says whether interop will work on this machine, and why not. A [`HostBuffer`]
//! is a mapped, host-visible staging buffer for the caller's own Vulkan copies
//! (uploads and downloads without an allocator of one's own).
//!
//! # Rules
//! - **Ownership.** Objects are RAII: dropping one releases its CUDA view, then
//!   its Vulkan objects. Each holds its [`Context`] (an `Arc`), so the context
//!   lives as long as anything made from it; DLPack tensors hold the memory they
//!   point into. The caller guarantees that no GPU work still uses an object when
//!   it is dropped (wait for its semaphore value or fence first). Handles the
//!   engine lends ([`Context::from_engine`], [`Buffer::wrap`], [`Image::wrap`])
//!   must outlive what is made from them.
//! - **Threads.** [`Context`], [`Buffer`], [`Image`], [`Batch`], [`Semaphore`],
//!   [`HostBuffer`] and [`dlpack::Tensor`] are `Send` and `Sync`: every method may be called from
//!   any number of threads at once. A `VkCommandBuffer` passed to a `cmd_*` call
//!   is externally synchronised, as in Vulkan.
//! - **Safety.** Functions that take a raw handle the crate cannot check (an
//!   engine's `VkDevice`, `VkBuffer`, a `VkCommandBuffer`, a `CUgraph`, a device
//!   pointer) are `unsafe fn` with a `# Safety` section. CUDA streams are checked
//!   (they must be the context's, or a default stream). File descriptors are
//!   [`OwnedFd`](std::os::fd::OwnedFd) when the caller receives one and
//!   [`BorrowedFd`](std::os::fd::BorrowedFd) when the library only reads one (the
//!   drivers get duplicates).
//! - **Types at the boundary** are `ash`'s (re-exported as [`ash`]): handles,
//!   formats, layouts and masks (`vk::BufferUsageFlags`, `vk::PipelineStageFlags`,
//!   `vk::ExternalMemoryHandleTypeFlags`, never a raw `u32`); and the CUDA driver
//!   API's ([`cuda_sys`]).
//! - **Errors** are an [`Error`]: an [`ErrorKind`] (the C API's result code,
//!   [`Error::code`]) and a message that names the failing native call and
//!   result, or, for problems of the machine, the fix.
//! - **Versions.** This API follows semver (checked by `cargo-semver-checks`
//!   against the last release) with this crate's version; the C ABI follows its
//!   own policy (README.md "ABI policy") with its own version. The C ABI is the
//!   `vkcuda-c` crate (`capi/`), a thin door over this API: Rust programs that
//!   depend on this crate link no C symbols.
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

mod dynlib;
pub mod error;
mod fd;
pub mod format;
mod host_buffer;
mod lost;
mod stats;

// The objects and their rules, over the driver calls only they may make. The
// layers are held by the compiler: `vulkan` and `cuda` are private to the crate,
// so the C door (the `vkcuda-c` crate) and every other user reach the GPU only
// through the objects' public API.
pub mod batch;
pub mod buffer;
pub mod context;
pub mod dlpack;
pub mod doctor;
pub mod handoff;
pub mod image;
pub mod ipc;
pub mod pairing;
pub mod present;
pub mod semaphore;

mod cuda;
mod vulkan;

pub use error::{Error, ErrorKind, Result};
pub use stats::{live_objects, LiveObjects};

/// Hooks for tests of a program's own handling of device loss (the
/// `fault-injection` feature, off by default): no driver loses a device on demand.
#[cfg(feature = "fault-injection")]
pub mod fault_injection {
    /// Records `device` as lost, as the library does when a Vulkan call on it
    /// returns `VK_ERROR_DEVICE_LOST`; `call` is named in the messages as the call
    /// that saw it. Every later call on a context of that device and its objects
    /// returns [`ErrorKind::DeviceLost`](crate::ErrorKind::DeviceLost).
    pub fn device_lost(device: ash::vk::Device, call: &str) {
        let _ = crate::lost::vulkan(device, call);
    }
}

pub use batch::Batch;
pub use buffer::Buffer;
pub use context::Context;
#[doc(no_inline)]
pub use context::CudaChoice;
pub use host_buffer::HostBuffer;
pub use image::Image;
pub use semaphore::Semaphore;
