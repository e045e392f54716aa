//! Shared linear memory: one allocation with a `VkBuffer` view and a CUDA pointer view.
//!
//! The allocation and its two views live behind an `Arc`: the [`Buffer`] holds one
//! reference and every DLPack tensor made from it ([`Buffer::export_dlpack`])
//! holds another, so the memory stays valid until the last of them goes, whatever
//! the order. The last reference releases the CUDA view first, then the Vulkan
//! objects.
//!
//! ```
//! use vkcuda::ash::vk;
//! use vkcuda::buffer::{Allocator, Buffer};
//! use vkcuda::context::{Context, CudaChoice};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! // 1 MiB of exportable Vulkan memory; with CUDA, also mapped into CUDA.
//! let buf = Buffer::create(&ctx, 1 << 20, vk::BufferUsageFlags::empty(), Allocator::Vulkan)?;
//! assert_ne!(buf.vk_buffer(), vk::Buffer::null());
//! assert_eq!(buf.layout().size, 1 << 20);
//! // Another process (or context) imports it from an fd and the layout.
//! let fd = buf.export_fd()?;
//! use std::os::fd::AsFd;
//! let same = Buffer::import_fd(&ctx, fd.as_fd(), buf.layout(), vk::BufferUsageFlags::empty())?;
//! assert_eq!(same.layout().size, buf.layout().size);
//! # Ok(())
//! # }
//! ```

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use ash::vk;

use super::cuda::external::ExternalMemory;
use super::cuda::vmm::VmmAllocation;
use super::vulkan::handoff::BufferRange;
use super::vulkan::memory::{self, BufferMemory};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::fd;

pub use crate::vulkan::memory::check_export_types;

/// Which side allocates a buffer's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Allocator {
    /// Exportable `VkDeviceMemory`, imported into CUDA.
    Vulkan,
    /// `cuMemCreate`, imported into Vulkan.
    Cuda,
}

/// Buffer usages the library accepts: those that need no extra memory allocate
/// flags or features (transfer, uniform/storage (texel), index, vertex, indirect).
pub const ALLOWED_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::UNIFORM_TEXEL_BUFFER.as_raw()
        | vk::BufferUsageFlags::STORAGE_TEXEL_BUFFER.as_raw()
        | vk::BufferUsageFlags::UNIFORM_BUFFER.as_raw()
        | vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::INDEX_BUFFER.as_raw()
        | vk::BufferUsageFlags::VERTEX_BUFFER.as_raw()
        | vk::BufferUsageFlags::INDIRECT_BUFFER.as_raw(),
);

/// The usage when the caller passes an empty one: transfer source and
/// destination, storage.
pub const DEFAULT_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::STORAGE_BUFFER.as_raw(),
);

pub(crate) fn check_usage(usage: vk::BufferUsageFlags) -> Result<vk::BufferUsageFlags> {
    if usage.is_empty() {
        return Ok(DEFAULT_USAGE);
    }
    let unknown = usage & !ALLOWED_USAGE;
    if unknown == vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS {
        return Err(Error::unsupported(
            "VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT is not supported for shared buffers yet \
             (it needs VkMemoryAllocateFlagsInfo on the shared allocation)",
        ));
    }
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "usage {:#x} has bits {:#x} that are not buffer usages the library accepts \
             (transfer, uniform/storage (texel), index, vertex, indirect)",
            usage.as_raw(),
            unknown.as_raw()
        )));
    }
    Ok(usage)
}

enum VulkanView {
    /// Created or imported by the library; destroyed with the buffer.
    Owned(BufferMemory),
    /// The engine's buffer and memory; never destroyed here.
    Borrowed {
        buffer: vk::Buffer,
        memory: vk::DeviceMemory,
    },
}

/// The CUDA side; held for its `Drop`, which releases it before the Vulkan side.
#[allow(dead_code)]
enum CudaView {
    None,
    Imported(ExternalMemory),
    Vmm(VmmAllocation),
    /// A view of a batch's memory: the batch's one mapping, kept alive.
    Batch(Keep),
}

/// What a view or a tensor keeps alive: the memory its data points into (a batch's
/// one mapping, for example).
pub(crate) type Keep = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// Where a buffer lies in its memory: what a receiver needs, with the exported
/// fd, to import it ([`Buffer::import_fd`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Which side allocated the memory.
    pub allocator: Allocator,
    /// The size of the whole allocation (`VkDeviceMemory`, or the CUDA
    /// allocation rounded up to its granularity).
    pub allocation_size: u64,
    /// Where the buffer starts in the allocation.
    pub offset: u64,
    /// The buffer's size in bytes.
    pub size: u64,
    /// The allocation is dedicated to the buffer (CUDA imports it with
    /// `CUDA_EXTERNAL_MEMORY_DEDICATED`).
    pub dedicated: bool,
}

/// The engine's buffer for [`Buffer::wrap`].
#[derive(Clone, Copy, Debug)]
pub struct Wrap {
    /// The engine's `VkBuffer`.
    pub buffer: vk::Buffer,
    /// The memory it is bound to, allocated exportable
    /// (`VkExportMemoryAllocateInfo` with `OPAQUE_FD`).
    pub memory: vk::DeviceMemory,
    /// The whole `VkDeviceMemory`'s size.
    pub allocation_size: u64,
    /// Where the buffer is bound in `memory`.
    pub offset: u64,
    /// The buffer's size in bytes.
    pub size: u64,
    /// `memory` is a dedicated allocation (`VkMemoryDedicatedAllocateInfo`
    /// naming the buffer).
    pub dedicated: bool,
    /// `VkExportMemoryAllocateInfo::handleTypes` of `memory`, as the engine states
    /// it (must include `OPAQUE_FD`).
    pub export_handle_types: vk::ExternalMemoryHandleTypeFlags,
}

/// The allocation and its two views, shared by the buffer's handle and the DLPack
/// tensors made from it; released when the last of them drops. It holds the
/// context, so the context outlives the memory.
pub(crate) struct Allocation {
    ctx: Arc<Context>,
    vulkan: VulkanView,
    cuda: CudaView,
    cuda_ptr: u64,
    layout: Layout,
    usage: vk::BufferUsageFlags,
}

impl Allocation {
    /// The CUDA device pointer of the buffer's first byte, or CUDA_UNAVAILABLE in a
    /// Vulkan-only context.
    #[inline]
    pub fn cuda_ptr(&self) -> Result<u64> {
        if self.cuda_ptr == 0 {
            self.ctx.cuda()?;
        }
        Ok(self.cuda_ptr)
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

/// A shared buffer: one allocation with a `VkBuffer` view and a CUDA device
/// pointer view. It holds its context; dropping it releases the CUDA view, then
/// the Vulkan objects (once the DLPack tensors made from it are gone too).
///
/// The caller guarantees that no GPU work still uses the buffer when it is
/// dropped (wait for the semaphore value or fence of the last use first).
///
/// Thread-safety: `Send` and `Sync`; every method may be called from any number
/// of threads at once.
pub struct Buffer {
    alloc: Arc<Allocation>,
}

impl From<Allocation> for Buffer {
    fn from(a: Allocation) -> Self {
        Buffer { alloc: Arc::new(a) }
    }
}

fn check_size(size: u64) -> Result<()> {
    if size == 0 {
        return Err(Error::invalid("size must not be 0"));
    }
    if size > i64::MAX as u64 {
        return Err(Error::invalid(format!(
            "size {size} is absurd (more than 2^63)"
        )));
    }
    Ok(())
}

impl Buffer {
    /// Allocates `size` bytes on the `allocator` side and makes the other side's
    /// view: Vulkan allocates exportable memory (dedicated where the driver
    /// requires or prefers it) that CUDA imports, or CUDA allocates with
    /// `cuMemCreate` (granularity-rounded) and Vulkan imports. `usage` empty means
    /// [`DEFAULT_USAGE`]; bits outside [`ALLOWED_USAGE`] are refused. In a
    /// Vulkan-only context only the Vulkan side exists ([`Allocator::Cuda`] is
    /// [`ErrorKind::CudaUnavailable`](crate::ErrorKind::CudaUnavailable)).
    pub fn create(
        ctx: &Arc<Context>,
        size: u64,
        usage: vk::BufferUsageFlags,
        allocator: Allocator,
    ) -> Result<Buffer> {
        check_size(size)?;
        let usage = check_usage(usage)?;
        match allocator {
            Allocator::Vulkan => Self::create_vulkan(ctx, size, usage),
            Allocator::Cuda => Self::create_cuda(ctx, size, usage),
        }
    }

    fn create_vulkan(ctx: &Arc<Context>, size: u64, usage: vk::BufferUsageFlags) -> Result<Buffer> {
        let bm = memory::create_exportable_buffer(&ctx.vk, size, usage)?;
        let mut buf = Allocation {
            ctx: ctx.clone(),
            vulkan: VulkanView::Owned(bm),
            cuda: CudaView::None,
            cuda_ptr: 0,
            layout: Layout {
                allocator: Allocator::Vulkan,
                allocation_size: bm.allocation_size,
                offset: 0,
                size,
                dedicated: bm.dedicated,
            },
            usage,
        };
        // On error `buf` drops and releases what was made so far.
        if let Some(cuda) = &ctx.cuda {
            let handle = memory::export_memory_fd(&ctx.vk, bm.memory)?;
            let mut ext = ExternalMemory::import_opaque_fd(
                cuda.clone(),
                handle,
                bm.allocation_size,
                bm.dedicated,
            )?;
            let ptr = ext.map_buffer(0, size);
            buf.cuda = CudaView::Imported(ext);
            buf.cuda_ptr = ptr?;
        }
        Ok(buf.into())
    }

    fn create_cuda(ctx: &Arc<Context>, size: u64, usage: vk::BufferUsageFlags) -> Result<Buffer> {
        let cuda = ctx.cuda()?;
        // Fail on the Vulkan side's missing extension before allocating.
        ctx.vk.memory_fd()?;
        let vmm = VmmAllocation::new(cuda.clone(), size)?;
        let handle = vmm.export_fd()?;
        let bm = memory::import_buffer(&ctx.vk, handle, size, 0, vmm.size(), usage, false)?;
        Ok(Allocation {
            ctx: ctx.clone(),
            vulkan: VulkanView::Owned(bm),
            cuda_ptr: vmm.ptr(),
            layout: Layout {
                allocator: Allocator::Cuda,
                allocation_size: vmm.size(),
                offset: 0,
                size,
                dedicated: bm.dedicated,
            },
            cuda: CudaView::Vmm(vmm),
            usage,
        }
        .into())
    }

    /// A buffer over part of a batch's allocation (`crate::batch::Batch::buffer`):
    /// the batch's Vulkan objects (never destroyed here) and its CUDA mapping
    /// (`cuda_ptr`, 0 without CUDA), kept alive by `keep`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn batch_view(
        ctx: &Arc<Context>,
        buffer: vk::Buffer,
        memory: vk::DeviceMemory,
        allocation_size: u64,
        offset: u64,
        size: u64,
        cuda_ptr: u64,
        keep: Keep,
    ) -> Buffer {
        Allocation {
            ctx: ctx.clone(),
            vulkan: VulkanView::Borrowed { buffer, memory },
            cuda: CudaView::Batch(keep),
            cuda_ptr,
            layout: Layout {
                allocator: Allocator::Vulkan,
                allocation_size,
                offset,
                size,
                dedicated: false,
            },
            usage: vk::BufferUsageFlags::empty(),
        }
        .into()
    }

    /// Makes a CUDA view of a buffer the engine allocated exportable itself (a
    /// VMA pool with export info, say); in a Vulkan-only context only the checks
    /// run. The engine keeps owning `w.buffer` and `w.memory`.
    /// `w.export_handle_types` is what the engine allocated the memory with; it
    /// must include `OPAQUE_FD` (checked before any driver call). The offset,
    /// size and alignment are checked against the buffer's memory requirements.
    ///
    /// # Safety
    /// `w.buffer` is a live `VkBuffer` of the context's device bound to `w.memory`
    /// at `w.offset`; `w.memory` was allocated `w.allocation_size` bytes with
    /// `w.export_handle_types` (and dedicated to the buffer when `w.dedicated`).
    /// Both outlive the returned buffer.
    pub unsafe fn wrap(ctx: &Arc<Context>, w: &Wrap) -> Result<Buffer> {
        let Wrap {
            buffer,
            memory,
            allocation_size,
            offset,
            size,
            dedicated,
            export_handle_types,
        } = *w;
        if buffer == vk::Buffer::null() {
            return Err(Error::null("buffer"));
        }
        if memory == vk::DeviceMemory::null() {
            return Err(Error::null("memory"));
        }
        memory::check_export_types(export_handle_types, "export_handle_types")?;
        check_size(size)?;
        if allocation_size == 0 {
            return Err(Error::invalid("allocation_size must not be 0"));
        }
        let end = offset
            .checked_add(size)
            .ok_or_else(|| Error::invalid("offset + size overflows"))?;
        if end > allocation_size {
            return Err(Error::invalid(format!(
                "offset {offset} + size {size} = {end} is past the end of the allocation ({allocation_size} bytes)"
            )));
        }
        let req = unsafe { ctx.vk.device.get_buffer_memory_requirements(buffer) };
        if req.alignment > 1 && offset % req.alignment != 0 {
            return Err(Error::invalid(format!(
                "offset {offset} is not a multiple of the buffer's required alignment {}",
                req.alignment
            )));
        }
        if size > req.size {
            return Err(Error::invalid(format!(
                "size {size} is larger than the VkBuffer's memory requirement ({} bytes)",
                req.size
            )));
        }
        let handle = memory::export_memory_fd(&ctx.vk, memory).map_err(|e| {
            e.context(
                "the wrapped memory must be allocated with VkExportMemoryAllocateInfo (OPAQUE_FD)",
            )
        })?;
        if let Some(real) = memory::real_size(&ctx.vk, handle.as_fd()) {
            if allocation_size > real {
                return Err(Error::invalid(format!(
                    "allocation_size {allocation_size} is larger than the memory object's real size {real}"
                )));
            }
        }
        // Everything that can be checked without CUDA is checked; now the CUDA view
        // (none in a Vulkan-only context).
        let (cuda_view, cuda_ptr) = match &ctx.cuda {
            Some(cuda) => {
                let mut ext = ExternalMemory::import_opaque_fd(
                    cuda.clone(),
                    handle,
                    allocation_size,
                    dedicated,
                )?;
                let ptr = ext.map_buffer(offset, size)?;
                (CudaView::Imported(ext), ptr)
            }
            None => (CudaView::None, 0),
        };
        Ok(Allocation {
            ctx: ctx.clone(),
            vulkan: VulkanView::Borrowed { buffer, memory },
            cuda: cuda_view,
            cuda_ptr,
            layout: Layout {
                allocator: Allocator::Vulkan,
                allocation_size,
                offset,
                size,
                dedicated,
            },
            usage: vk::BufferUsageFlags::empty(),
        }
        .into())
    }

    /// Imports an fd exported by [`export_fd`](Self::export_fd) (here or in another
    /// process) with the exporter's [`Layout`], as both views. `handle` stays the
    /// caller's: the drivers get duplicates (close it when you like). An fd that
    /// is not a memory handle of the device's driver, or whose size is smaller
    /// than the layout says, is refused before the import. Its file offset is left
    /// where it was (a driver may read through the duplicates, which share it).
    pub fn import_fd(
        ctx: &Arc<Context>,
        handle: BorrowedFd<'_>,
        layout: Layout,
        usage: vk::BufferUsageFlags,
    ) -> Result<Buffer> {
        let _offset = fd::OffsetGuard::new(handle.as_raw_fd());
        check_size(layout.size)?;
        let usage = check_usage(usage)?;
        let end = layout
            .offset
            .checked_add(layout.size)
            .ok_or_else(|| Error::invalid("offset + size overflows"))?;
        if end > layout.allocation_size {
            return Err(Error::invalid(format!(
                "offset {} + size {} is past the end of the allocation ({} bytes)",
                layout.offset, layout.size, layout.allocation_size
            )));
        }
        if let Some(real) = memory::real_size(&ctx.vk, handle) {
            if layout.allocation_size > real {
                return Err(Error::invalid(format!(
                    "allocation_size {} is larger than the memory object's real size {real}",
                    layout.allocation_size
                )));
            }
        }
        if layout.allocator == Allocator::Vulkan {
            memory::check_importable(&ctx.vk, handle, layout.allocation_size)?;
        }
        let raw = handle.as_raw_fd();
        let bm = memory::import_buffer(
            &ctx.vk,
            fd::dup_borrowed(raw)?,
            layout.size,
            layout.offset,
            layout.allocation_size,
            usage,
            layout.dedicated,
        )?;
        let mut buf = Allocation {
            ctx: ctx.clone(),
            vulkan: VulkanView::Owned(bm),
            cuda: CudaView::None,
            cuda_ptr: 0,
            layout,
            usage,
        };
        if let Some(cuda) = &ctx.cuda {
            match layout.allocator {
                Allocator::Vulkan => {
                    let dup = fd::dup_borrowed(raw)?;
                    let mut ext = ExternalMemory::import_opaque_fd(
                        cuda.clone(),
                        dup,
                        layout.allocation_size,
                        layout.dedicated,
                    )?;
                    let ptr = ext.map_buffer(layout.offset, layout.size);
                    buf.cuda = CudaView::Imported(ext);
                    buf.cuda_ptr = ptr?;
                }
                Allocator::Cuda => {
                    let vmm =
                        VmmAllocation::import_fd(cuda.clone(), handle, layout.allocation_size)?;
                    buf.cuda_ptr = vmm.ptr() + layout.offset;
                    buf.cuda = CudaView::Vmm(vmm);
                }
            }
        }
        Ok(buf.into())
    }

    /// A new fd for the memory (`OPAQUE_FD`): the caller owns it. It hands over
    /// the whole allocation: whoever holds it can map, read and write the memory.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        match (&self.alloc.cuda, &self.alloc.vulkan) {
            (CudaView::Vmm(v), _) => v.export_fd(),
            (_, VulkanView::Owned(bm)) => memory::export_memory_fd(&self.alloc.ctx.vk, bm.memory),
            (_, VulkanView::Borrowed { memory, .. }) => {
                memory::export_memory_fd(&self.alloc.ctx.vk, *memory)
            }
        }
    }

    /// The `VkBuffer` (the library's, or the engine's for a wrapped buffer).
    pub fn vk_buffer(&self) -> vk::Buffer {
        match &self.alloc.vulkan {
            VulkanView::Owned(bm) => bm.buffer,
            VulkanView::Borrowed { buffer, .. } => *buffer,
        }
    }

    /// The `VkDeviceMemory` the buffer is bound to (at [`Layout::offset`]).
    pub fn vk_memory(&self) -> vk::DeviceMemory {
        match &self.alloc.vulkan {
            VulkanView::Owned(bm) => bm.memory,
            VulkanView::Borrowed { memory, .. } => *memory,
        }
    }

    /// The CUDA device pointer (`CUdeviceptr`) of the buffer's first byte, or
    /// [`ErrorKind::CudaUnavailable`](crate::ErrorKind::CudaUnavailable) in a
    /// Vulkan-only context. Valid for CUDA's driver and runtime APIs, PyTorch and
    /// CuPy in the context's CUDA context (by default the primary context).
    #[inline]
    pub fn cuda_ptr(&self) -> Result<u64> {
        self.alloc.cuda_ptr()
    }

    /// The whole buffer, for the handoff barriers.
    pub(super) fn handoff_range(&self) -> BufferRange {
        BufferRange {
            buffer: self.vk_buffer(),
            offset: 0,
            size: self.alloc.layout.size,
        }
    }

    /// Where the buffer lies in its memory.
    pub fn layout(&self) -> Layout {
        self.alloc.layout
    }

    /// The buffer's usage (empty for a wrapped buffer: the engine's).
    pub fn usage(&self) -> vk::BufferUsageFlags {
        self.alloc.usage
    }

    /// Whether the Vulkan objects are the engine's ([`Buffer::wrap`]).
    pub fn is_wrapped(&self) -> bool {
        matches!(self.alloc.vulkan, VulkanView::Borrowed { .. })
    }

    /// The context the buffer was made from.
    #[inline]
    pub fn context(&self) -> &Arc<Context> {
        &self.alloc.ctx
    }

    /// Another reference to the allocation (what a DLPack tensor holds).
    pub(crate) fn allocation(&self) -> &Arc<Allocation> {
        &self.alloc
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("vk_buffer", &self.vk_buffer())
            .field("cuda_ptr", &format_args!("{:#x}", self.alloc.cuda_ptr))
            .field("layout", &self.alloc.layout)
            .finish()
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // The last reference (the handle or a DLPack tensor) is gone.
        // CUDA's view first (mapping, then the import or allocation), then Vulkan's.
        self.cuda = CudaView::None;
        if let VulkanView::Owned(bm) = &self.vulkan {
            bm.destroy(&self.ctx.vk);
        }
    }
}
