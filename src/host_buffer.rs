//! Host-visible staging buffers: what an engine or a tool without a memory
//! allocator of its own uploads from and downloads into with Vulkan copies.

use std::sync::Arc;

use ash::vk;

use crate::context::Context;
use crate::error::Result;
use crate::vulkan::staging;

/// A `VkBuffer` with `TRANSFER_SRC | TRANSFER_DST` usage in host-visible,
/// host-coherent memory (host-cached where the device has such a type), mapped
/// for its whole life: the host reads and writes its bytes
/// ([`HostBuffer::bytes`], [`HostBuffer::bytes_mut`], [`HostBuffer::as_ptr`])
/// and the caller's command buffers copy between it and a [`Buffer`](crate::Buffer)
/// or an [`Image`](crate::Image) (`vkCmdCopyBuffer`, `vkCmdCopyBufferToImage`,
/// ...). It is not shared with CUDA. The memory is coherent: what the host wrote
/// is seen by a submit made afterwards, and what a submit wrote is seen by the
/// host once the host waited for it (fence or semaphore value).
///
/// It holds its context; dropping it destroys the buffer and frees its memory
/// (counted in [`live_objects`](crate::live_objects) as one `VkBuffer` and one
/// `VkDeviceMemory` while it lives). The caller guarantees that no GPU work still
/// uses it when it is dropped, and that no submit writes it while the host reads
/// or writes its bytes.
///
/// Thread-safety: `Send` and `Sync`; `&self` methods may be called from any
/// number of threads at once.
///
/// ```
/// use vkcuda::context::CudaChoice;
/// use vkcuda::{Context, HostBuffer};
///
/// # fn main() -> vkcuda::Result<()> {
/// let ctx = Context::standalone(None, CudaChoice::None)?; // runs on lavapipe
/// let mut staging = HostBuffer::new(&ctx, 4096)?;
/// staging.bytes_mut()[..5].copy_from_slice(b"hello");
/// assert_eq!(&staging.bytes()[..5], b"hello");
/// // ... record vkCmdCopyBuffer(cmd, staging.vk_buffer(), dst, ...) and submit.
///
/// let e = HostBuffer::new(&ctx, 0).unwrap_err();
/// assert_eq!(e.kind(), vkcuda::ErrorKind::InvalidArgument);
/// # Ok(())
/// # }
/// ```
pub struct HostBuffer {
    ctx: Arc<Context>,
    /// Always `Some` but in `Drop`.
    inner: Option<staging::HostBuffer>,
}

// SAFETY: the mapping is plain host memory owned by this object; shared access
// (`&self`) only reads it, and writing needs `&mut self`. The Vulkan objects are
// destroyed once, in `Drop`.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// Creates a mapped buffer of `size` bytes on the context's device. A `size`
    /// of 0, or one past the address space, the device's `maxBufferSize` or its
    /// largest host-visible memory heap is
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) (before
    /// any driver call); a device without host-visible coherent memory is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported); a failed
    /// driver call names the call. Works in every context, Vulkan-only included.
    pub fn new(ctx: &Arc<Context>, size: u64) -> Result<HostBuffer> {
        ctx.check_lost()?;
        let inner = staging::HostBuffer::create(&ctx.vk, size)?;
        Ok(HostBuffer {
            ctx: ctx.clone(),
            inner: Some(inner),
        })
    }

    fn inner(&self) -> &staging::HostBuffer {
        self.inner.as_ref().expect("set until drop")
    }

    /// The `VkBuffer`, to record copies with (owned by this object).
    pub fn vk_buffer(&self) -> vk::Buffer {
        self.inner().buffer()
    }

    /// The size in bytes, as created.
    pub fn size(&self) -> u64 {
        self.inner().size() as u64
    }

    /// The mapped bytes (all [`size`](Self::size) of them).
    pub fn bytes(&self) -> &[u8] {
        self.inner().bytes()
    }

    /// The mapped bytes, to write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.inner.as_mut().expect("set until drop").bytes_mut()
    }

    /// The start of the mapping, valid for [`size`](Self::size) bytes while this
    /// object lives (for code that hands the bytes to C, or to a decoder that
    /// writes them).
    pub fn as_ptr(&self) -> *mut u8 {
        self.inner().ptr()
    }

    /// The context it was made in.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("vk_buffer", &self.vk_buffer())
            .field("size", &self.size())
            .finish()
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // SAFETY: made on the context's device; the caller guarantees that no
            // GPU work still uses it (the type's rule).
            unsafe { inner.destroy(&self.ctx.vk) };
        }
    }
}
