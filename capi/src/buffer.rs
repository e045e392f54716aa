//! C API: shared buffers and the handoff barriers.

use std::os::fd::IntoRawFd;

use ash::vk;

use super::context::{ctx_arg, vkcuda_context};
use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{
    arg, boundary, check_bool, check_flags, import_taking, out, quiet, vkcuda_result, write_handle,
};
use vkcuda::buffer::{check_export_types, Buffer, Layout};
use vkcuda::error::Result;

/// One allocation seen as a `VkBuffer` (with its `VkDeviceMemory`) by Vulkan and as
/// a device pointer by CUDA. Released by `vkcuda_buffer_destroy`.
///
/// Thread-safety: the getters and `export_fd` may be called from any thread at
/// once; destroy must not overlap any other use (like a Vulkan object).
///
/// @ingroup buffer
pub struct vkcuda_buffer {
    h: Tagged<Buffer>,
}
handle_kind!(vkcuda_buffer, Buffer, handle::BUFFER, |b| Some(b.context()));

/// How to make a shared buffer. All zero except `size` gives a Vulkan-allocated
/// buffer usable as a storage buffer and for transfers.
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_buffer_create_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// Which side allocates (default `VKCUDA_ALLOCATOR_VULKAN`).
    pub allocator: vkcuda_allocator_raw,
    /// Size in bytes, at least 1. CUDA allocations are rounded up to the allocation
    /// granularity (`allocation_size` in `vkcuda_buffer_info`); the views are `size` long.
    /// Up to the device's `maxBufferSize` and its largest memory heap (larger sizes:
    /// `VKCUDA_ERROR_INVALID_ARGUMENT`). Sizes past `maxMemoryAllocationSize` are
    /// passed to the driver, not refused: the Vulkan spec makes that limit advice
    /// (NVIDIA's driver shares 48 GiB buffers; the validation layer reports such an
    /// allocation as `UNASSIGNED-vkAllocateMemory-maxMemoryAllocationSize`, a
    /// message without a VUID); when the driver refuses one, the message says the
    /// size exceeds the advertised `maxMemoryAllocationSize`.
    pub size: u64,
    /// `VkBufferUsageFlags` of the `VkBuffer`; 0 means TRANSFER_SRC | TRANSFER_DST |
    /// STORAGE_BUFFER. Transfer, uniform/storage (texel), index, vertex and indirect
    /// usages are accepted.
    pub usage: VkBufferUsageFlags,
}

/// Memory the engine allocated itself (for example from a VMA pool created with
/// `VkExportMemoryAllocateInfo`), for `vkcuda_buffer_wrap`.
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_buffer_wrap_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// The engine's buffer, bound to `memory` at `offset`. Stays the engine's.
    pub buffer: VkBuffer,
    /// The engine's memory, allocated with `VkExportMemoryAllocateInfo` for
    /// `VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`. Stays the engine's.
    pub memory: VkDeviceMemory,
    /// `VkMemoryAllocateInfo::allocationSize` of `memory` (the whole allocation).
    pub allocation_size: u64,
    /// Where the buffer's range starts in `memory`.
    pub offset: u64,
    /// How many bytes CUDA sees, from `offset`.
    pub size: u64,
    /// VK_TRUE when `memory` is a dedicated allocation (`VkMemoryDedicatedAllocateInfo`).
    pub dedicated: VkBool32,
    /// The `VkExternalMemoryHandleTypeFlags` `memory` was allocated with
    /// (`VkExportMemoryAllocateInfo::handleTypes`); must include
    /// `VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`. The library cannot see how
    /// memory was allocated and exporting memory allocated without it is undefined
    /// behaviour, so 0 or a value without OPAQUE_FD is refused
    /// (`VKCUDA_ERROR_INVALID_ARGUMENT`) before any driver call. With VMA: the
    /// `handleTypes` of the `VkExportMemoryAllocateInfo` in the pool's
    /// `pMemoryAllocateNext`.
    pub export_handle_types: u32,
}

/// What the importer of an exported buffer fd needs to know (the exporter's
/// `vkcuda_buffer_info` holds each value).
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_buffer_import_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// Which API allocated the memory (`vkcuda_buffer_info::allocator`).
    pub allocator: vkcuda_allocator_raw,
    /// The whole allocation's size.
    pub allocation_size: u64,
    /// Where the buffer starts in the allocation.
    pub offset: u64,
    /// The buffer's size.
    pub size: u64,
    /// VK_TRUE when the allocation is dedicated.
    pub dedicated: VkBool32,
    /// `VkBufferUsageFlags` for the new `VkBuffer` (0: the default of create).
    pub usage: VkBufferUsageFlags,
}

/// Everything about a shared buffer.
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_buffer_info {
    /// The Vulkan view. Owned by the vkcuda buffer, except for wrapped buffers.
    pub buffer: VkBuffer,
    /// The memory `buffer` is bound to. Owned like `buffer`.
    pub memory: VkDeviceMemory,
    /// Where `buffer` starts in `memory`.
    pub offset: u64,
    /// The size of both views in bytes.
    pub size: u64,
    /// The whole allocation's size (at least `offset + size`).
    pub allocation_size: u64,
    /// The CUDA view (`CUdeviceptr`, usable in the context's CUcontext), or 0 in a
    /// Vulkan-only context.
    pub cuda_pointer: u64,
    /// Which API allocated the memory.
    pub allocator: vkcuda_allocator,
    /// VK_TRUE when the allocation is dedicated.
    pub dedicated: VkBool32,
    /// VK_TRUE when `buffer` and `memory` are the engine's (`vkcuda_buffer_wrap`).
    pub wrapped: VkBool32,
}

unsafe fn buf_arg<'a>(buffer: *const vkcuda_buffer) -> Result<&'a Buffer> {
    handle::get(buffer, "buffer")
}

/// Creates a shared buffer: one allocation, made by `info->allocator`, with a
/// `VkBuffer` view and a CUDA pointer view. Vulkan allocations are dedicated when
/// the driver requires or prefers it and are imported into CUDA whole, with the
/// dedicated flag when dedicated. `*buffer` is written on success, set to NULL on
/// failure; nothing is left allocated on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_create(
    context: *const vkcuda_context,
    info: *const vkcuda_buffer_create_info,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_create", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(info.flags, 0, "info->flags")?;
            let allocator = info.allocator.get("info->allocator")?;
            let inner = Buffer::create(
                ctx,
                info.size,
                vk::BufferUsageFlags::from_raw(info.usage),
                allocator,
            )?;
            Ok(handle::boxed::<vkcuda_buffer>(inner))
        })();
        write_handle(buffer, made)
    })
}

/// Makes the CUDA view of memory the engine allocated exportable itself: a
/// dedicated allocation, or a buffer at `offset` in a block shared with other
/// resources (a VMA pool whose blocks carry `VkExportMemoryAllocateInfo`; CUDA then
/// imports the whole block and maps the buffer's range). The engine keeps owning
/// `info->buffer` and `info->memory` and must destroy them after
/// `vkcuda_buffer_destroy`. The library checks `export_handle_types` first (memory
/// allocated without export info is refused before any driver call), then
/// `offset + size` against `allocation_size`, the offset against the buffer's
/// alignment and `size` against its memory requirements; where the memory's fd
/// tells its real size (not NVIDIA's opaque fds; for memfd-based drivers such as
/// lavapipe the size the driver's header describes, less the header: the
/// allocation's own size, to the byte) it checks `allocation_size` too. In a Vulkan-only context the checks run and no CUDA view
/// is made.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_wrap(
    context: *const vkcuda_context,
    info: *const vkcuda_buffer_wrap_info,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_wrap", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(info.flags, 0, "info->flags")?;
            let dedicated = check_bool(info.dedicated, "info->dedicated")?;
            let export_handle_types =
                vk::ExternalMemoryHandleTypeFlags::from_raw(info.export_handle_types);
            check_export_types(export_handle_types, "info->export_handle_types")?;
            let inner = Buffer::wrap(
                ctx,
                &vkcuda::buffer::Wrap {
                    buffer: info.buffer,
                    memory: info.memory,
                    allocation_size: info.allocation_size,
                    offset: info.offset,
                    size: info.size,
                    dedicated,
                    export_handle_types,
                },
            )?;
            Ok(handle::boxed::<vkcuda_buffer>(inner))
        })();
        write_handle(buffer, made)
    })
}

/// Imports a buffer fd from `vkcuda_buffer_export_fd` (this process or another)
/// into `context`: a new `VkBuffer` on imported memory and, unless the context is
/// Vulkan-only, a CUDA view. On success the library has taken `fd` (it is closed
/// or owned by the drivers; do not use or close it); on failure `fd` is untouched
/// and still the caller's. NVIDIA's driver: after a failed import that fd's open
/// file description may not import again (the drivers get duplicates, which share
/// it): close it and export a new fd to retry.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_import_fd(
    context: *const vkcuda_context,
    info: *const vkcuda_buffer_import_info,
    fd: i32,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_import_fd", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(info.flags, 0, "info->flags")?;
            let layout = Layout {
                allocator: info.allocator.get("info->allocator")?,
                allocation_size: info.allocation_size,
                offset: info.offset,
                size: info.size,
                dedicated: check_bool(info.dedicated, "info->dedicated")?,
            };
            let usage = vk::BufferUsageFlags::from_raw(info.usage);
            let inner = import_taking(fd, |probe| Buffer::import_fd(ctx, probe, layout, usage))?;
            Ok(handle::boxed::<vkcuda_buffer>(inner))
        })();
        write_handle(buffer, made)
    })
}

/// Fills `*info` with the buffer's views and sizes.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_get_info(
    buffer: *const vkcuda_buffer,
    info: *mut vkcuda_buffer_info,
) -> vkcuda_result {
    boundary("vkcuda_buffer_get_info", || {
        let b = buf_arg(buffer)?;
        let info = out(info, "info")?;
        let l = b.layout();
        *info = vkcuda_buffer_info {
            buffer: b.vk_buffer(),
            memory: b.vk_memory(),
            offset: l.offset,
            size: l.size,
            allocation_size: l.allocation_size,
            cuda_pointer: b.cuda_ptr().unwrap_or(0),
            allocator: l.allocator.into(),
            dedicated: l.dedicated as u32,
            wrapped: b.is_wrapped() as u32,
        };
        Ok(())
    })
}

/// The CUDA device pointer (a `CUdeviceptr`) of the buffer;
/// `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a Vulkan-only context.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_get_cuda_pointer(
    buffer: *const vkcuda_buffer,
    pointer: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_buffer_get_cuda_pointer", || {
        let b = buf_arg(buffer)?;
        let pointer = out(pointer, "pointer")?;
        *pointer = b.cuda_ptr()?;
        Ok(())
    })
}

/// The buffer's `VkBuffer` (owned by the vkcuda buffer, except for wrapped buffers).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_get_vk_buffer(
    buffer: *const vkcuda_buffer,
    vk_buffer: *mut VkBuffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_get_vk_buffer", || {
        let b = buf_arg(buffer)?;
        let vk_buffer = out(vk_buffer, "vk_buffer")?;
        *vk_buffer = b.vk_buffer();
        Ok(())
    })
}

/// Exports the memory as a new POSIX fd (OPAQUE_FD: for CUDA allocations the
/// cuMemExportToShareableHandle handle, otherwise vkGetMemoryFdKHR's). Each call
/// makes a new fd and **the caller owns it**: close it, or pass it to
/// `vkcuda_buffer_import_fd` (which takes it on success). Import it with the
/// values of `vkcuda_buffer_get_info`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_export_fd(
    buffer: *const vkcuda_buffer,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_buffer_export_fd", || {
        let b = buf_arg(buffer)?;
        let fd = out(fd, "fd")?;
        *fd = b.export_fd()?.into_raw_fd();
        Ok(())
    })
}

/// Records into the engine's command buffer the barrier that releases the buffer
/// from `info->queue_family_index` to `VK_QUEUE_FAMILY_EXTERNAL` (CUDA), making
/// the engine's writes available. Submit it before the semaphore signal CUDA waits on.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_cmd_release_to_cuda(
    buffer: *const vkcuda_buffer,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
) -> vkcuda_result {
    boundary("vkcuda_buffer_cmd_release_to_cuda", || {
        let b = buf_arg(buffer)?;
        b.cmd_release_to_cuda(command_buffer_arg(command_buffer)?, &scope_arg(info)?)
    })
}

/// Records the barrier that acquires the buffer back from `VK_QUEUE_FAMILY_EXTERNAL`
/// into `info->queue_family_index`, making CUDA's writes visible to the accesses
/// in `info`. Submit it after waiting on the semaphore CUDA signalled.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_cmd_acquire_from_cuda(
    buffer: *const vkcuda_buffer,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
) -> vkcuda_result {
    boundary("vkcuda_buffer_cmd_acquire_from_cuda", || {
        let b = buf_arg(buffer)?;
        b.cmd_acquire_from_cuda(command_buffer_arg(command_buffer)?, &scope_arg(info)?)
    })
}

/// Destroys the buffer: the CUDA view first (mapping, then the import or the
/// cuMem allocation), then the `VkBuffer` and `VkDeviceMemory` (not for wrapped
/// buffers, whose Vulkan objects stay the engine's). The caller guarantees no GPU
/// work still uses it. DLPack tensors made from it (`vkcuda_buffer_export_dlpack`)
/// hold their own reference: while one exists, destroy releases only the handle,
/// and the tensor's deleter releases the rest. NULL does nothing.
///
/// Thread-safety: must not overlap any other use of the buffer.
///
/// @ingroup buffer
#[no_mangle]
pub unsafe extern "C" fn vkcuda_buffer_destroy(buffer: *mut vkcuda_buffer) {
    quiet((), || handle::destroy(buffer, "vkcuda_buffer_destroy"))
}
