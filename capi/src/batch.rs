//! C API: batches (N images or buffers of one shape in one allocation, one CUDA
//! mapping, one handoff, one DLPack tensor).

use std::ffi::c_void;
use std::os::fd::IntoRawFd;

use ash::vk;

use super::buffer::vkcuda_buffer;
use super::context::{ctx_arg, vkcuda_context};
use super::dlpack::{VKCUDA_DLPACK_LEGACY_BIT, VKCUDA_DLPACK_READ_ONLY_BIT};
use super::handle::{self, handle_kind, Tagged};
use super::image::{VkFormat, VkImage, VkImageLayout, VkImageUsageFlags};
use super::semaphore::vkcuda_semaphore;
use super::types::*;
use super::{arg, boundary, check_flags, out, quiet, vkcuda_result, write_handle};
use vkcuda::batch::{Batch, Contents, Description, Path, TensorSpec, Usage};
use vkcuda::error::{Error, Result};
use vkcuda::semaphore::Semaphore;

/// N images (or N buffers) of one shape in ONE exportable allocation, imported
/// into CUDA once and mapped once: one handoff for all of them, one DLPack
/// tensor `(N, H, W, C)`. Released by `vkcuda_batch_destroy`.
///
/// Thread-safety: the getters, `export_fd` and `export_dlpack` may be called from
/// any thread at once; destroy must not overlap any other use.
///
/// @ingroup batch
pub struct vkcuda_batch {
    h: Tagged<Batch>,
}
handle_kind!(vkcuda_batch, Batch, handle::BATCH, |b| Some(b.context()));

/// `vkcuda_batch_create_info::flags`: OPTIMAL images and the copy path even where
/// LINEAR images would share the allocation (image batches).
///
/// @ingroup batch
pub const VKCUDA_BATCH_CREATE_FORCE_COPY_BIT: u32 = 0x1;

/// `vkcuda_batch_create_info::kind`: images (the default, 0).
///
/// @ingroup batch
pub const VKCUDA_BATCH_KIND_IMAGES: u32 = 0;
/// `vkcuda_batch_create_info::kind`: buffers.
///
/// @ingroup batch
pub const VKCUDA_BATCH_KIND_BUFFERS: u32 = 1;

/// `vkcuda_batch_info::path`: LINEAR images whose memory is the tensor (zero copies).
///
/// @ingroup batch
pub const VKCUDA_BATCH_PATH_ZERO_COPY: u32 = 0;
/// `vkcuda_batch_info::path`: OPTIMAL images and a readout region in the same
/// allocation, filled by the copy the release records (and read back by the
/// acquire).
///
/// @ingroup batch
pub const VKCUDA_BATCH_PATH_COPY: u32 = 1;
/// `vkcuda_batch_info::path`: a buffer batch.
///
/// @ingroup batch
pub const VKCUDA_BATCH_PATH_BUFFERS: u32 = 2;

/// `vkcuda_batch_dlpack_info::flags`: the tensor of element `index` only
/// (`(H, W, C)`, `(H, W)` or `(size)`), not the whole batch.
///
/// @ingroup batch
pub const VKCUDA_BATCH_DLPACK_ELEMENT_BIT: u32 = 0x4;

/// `vkcuda_batch_get_buffer`'s index for the buffer over all elements (buffer
/// batches) or over the readout region (copy-path image batches).
///
/// @ingroup batch
pub const VKCUDA_BATCH_WHOLE: u32 = u32::MAX;

/// How to make a batch. All zero except `count` and the shape (`format`,
/// `width`, `height`; or `kind` = `VKCUDA_BATCH_KIND_BUFFERS` and `size`) gives
/// colour-attachment images (depth formats: depth-attachment) usable for
/// transfers, or storage buffers usable for transfers, zero-copy where the
/// device allows.
///
/// @ingroup batch
#[repr(C)]
pub struct vkcuda_batch_create_info {
    /// `VKCUDA_BATCH_CREATE_*` bits.
    pub flags: u32,
    /// `VKCUDA_BATCH_KIND_IMAGES` (0) or `VKCUDA_BATCH_KIND_BUFFERS`.
    pub kind: u32,
    /// N, from 1 to 65,536.
    pub count: u32,
    /// Images: the format: `VK_FORMAT_R8G8B8A8_UNORM`/`_SRGB`,
    /// `VK_FORMAT_B8G8R8A8_UNORM`/`_SRGB`, `VK_FORMAT_R8_UNORM`,
    /// `VK_FORMAT_R16_SFLOAT`, `VK_FORMAT_R16G16B16A16_SFLOAT`,
    /// `VK_FORMAT_R32_SFLOAT`, `VK_FORMAT_R32_UINT`, `VK_FORMAT_R32G32_SFLOAT`,
    /// `VK_FORMAT_R32G32B32A32_SFLOAT`, `VK_FORMAT_D32_SFLOAT`, `VK_FORMAT_D16_UNORM`.
    pub format: VkFormat,
    /// Images: texels per row, at least 1.
    pub width: u32,
    /// Images: rows, at least 1.
    pub height: u32,
    /// Images: `VkImageUsageFlags`; 0 means COLOR_ATTACHMENT (depth formats:
    /// DEPTH_STENCIL_ATTACHMENT) | TRANSFER_SRC | TRANSFER_DST. Transfer source
    /// and destination are always added. Transfer, sampled, storage, colour,
    /// depth and input attachment usages are accepted.
    pub image_usage: VkImageUsageFlags,
    /// Buffers: `VkBufferUsageFlags` as for `vkcuda_buffer_create_info::usage`
    /// (0: TRANSFER_SRC | TRANSFER_DST | STORAGE_BUFFER).
    pub buffer_usage: VkBufferUsageFlags,
    /// Buffers: bytes per buffer, at least 1.
    pub size: u64,
}

/// Everything about a batch. The tensor's element `i`, row `y`, texel `x`,
/// channel `c` is at `cuda_pointer + i * element_stride + y * row_pitch + (x *
/// channels + c) * dtype.bits / 8`.
///
/// @ingroup batch
#[repr(C)]
pub struct vkcuda_batch_info {
    /// N.
    pub count: u32,
    /// `VKCUDA_BATCH_PATH_*`.
    pub path: u32,
    /// The format (`VK_FORMAT_UNDEFINED` for buffers).
    pub format: VkFormat,
    /// Texels per row (buffers: the size, capped at UINT32_MAX).
    pub width: u32,
    /// Rows (buffers: 1).
    pub height: u32,
    /// Channels per texel, the tensor's last dimension (1: none).
    pub channels: u32,
    /// The tensor's element type: uint8, uint16, float16, float32 or uint32.
    pub dtype: super::dlpack::vkcuda_dlpack_dtype,
    /// The usage the images or buffers were made with.
    pub usage: u32,
    /// The one allocation every element is bound into (owned by the batch).
    pub memory: VkDeviceMemory,
    /// The readout buffer (copy path) or the buffer over all elements (buffer
    /// batches); VK_NULL_HANDLE for zero-copy image batches. Owned by the batch.
    pub whole_buffer: VkBuffer,
    /// The allocation's size.
    pub allocation_size: u64,
    /// Where the tensor starts in the allocation.
    pub tensor_offset: u64,
    /// Bytes from one element of the tensor to the next (a multiple of 256).
    pub element_stride: u64,
    /// Bytes from one row to the next (buffers: the size).
    pub row_pitch: u64,
    /// Bytes of one element's data (`width * height * texel`; buffers: the size).
    pub element_size: u64,
    /// Bytes the CUDA mapping covers from `tensor_offset`.
    pub mapped_size: u64,
    /// Images: from one image to the next in the allocation.
    pub image_stride: u64,
    /// The copy path: where the readout region starts (else 0).
    pub readout_offset: u64,
    /// The copy path: the readout region's size (else 0).
    pub readout_size: u64,
    /// The tensor's first byte in CUDA, or 0 in a Vulkan-only context.
    pub cuda_pointer: u64,
}

/// One element of a batch.
///
/// @ingroup batch
#[repr(C)]
pub struct vkcuda_batch_element {
    /// Image batches: the element's image (owned by the batch); else VK_NULL_HANDLE.
    pub image: VkImage,
    /// Buffer batches: the element's buffer (owned by the batch); else VK_NULL_HANDLE.
    pub buffer: VkBuffer,
    /// Where the image or buffer is bound in the allocation.
    pub memory_offset: u64,
    /// Where the element's tensor data starts in the allocation.
    pub data_offset: u64,
    /// The element's tensor data in CUDA, or 0 in a Vulkan-only context.
    pub cuda_pointer: u64,
}

/// What `vkcuda_batch_export_dlpack` makes. All zero (or a NULL info) gives the
/// whole batch as a writable, versioned tensor, with no wait.
///
/// @ingroup batch
#[repr(C)]
pub struct vkcuda_batch_dlpack_info {
    /// `VKCUDA_DLPACK_READ_ONLY_BIT`, `VKCUDA_DLPACK_LEGACY_BIT`,
    /// `VKCUDA_BATCH_DLPACK_ELEMENT_BIT`.
    pub flags: u32,
    /// With `VKCUDA_BATCH_DLPACK_ELEMENT_BIT`: the element (0 to count - 1).
    pub index: u32,
    /// When not NULL: a timeline semaphore of the batch's device; the tensor is
    /// made after `stream` is made to wait for `wait_value` of it (the value the
    /// engine's submit that recorded the release signals), so the consumer's work
    /// on `stream` reads what Vulkan wrote, with no host wait.
    pub wait_semaphore: *const vkcuda_semaphore,
    /// The value to wait for.
    pub wait_value: u64,
    /// The consumer's stream (NULL: the legacy default stream).
    pub stream: *mut CUstream_st,
}

unsafe fn batch_arg<'a>(batch: *const vkcuda_batch) -> Result<&'a Batch> {
    handle::get(batch, "batch")
}

fn description(info: &vkcuda_batch_create_info) -> Result<Description> {
    check_flags(
        info.flags,
        VKCUDA_BATCH_CREATE_FORCE_COPY_BIT,
        "info->flags",
    )?;
    let contents = match info.kind {
        VKCUDA_BATCH_KIND_IMAGES => Contents::Images {
            format: vk::Format::from_raw(info.format),
            width: info.width,
            height: info.height,
            usage: vk::ImageUsageFlags::from_raw(info.image_usage),
        },
        VKCUDA_BATCH_KIND_BUFFERS => Contents::Buffers {
            size: info.size,
            usage: vk::BufferUsageFlags::from_raw(info.buffer_usage),
        },
        k => {
            return Err(Error::invalid(format!(
                "info->kind is {k}; it must be VKCUDA_BATCH_KIND_IMAGES (0) or VKCUDA_BATCH_KIND_BUFFERS (1)"
            )))
        }
    };
    Ok(Description {
        count: info.count,
        contents,
        force_copy: info.flags & VKCUDA_BATCH_CREATE_FORCE_COPY_BIT != 0,
    })
}

/// Creates a batch: `info->count` images (or buffers) of one shape bound at
/// aligned offsets of one exportable allocation, and (unless the context is
/// Vulkan-only) one CUDA import of it with one mapping of the tensor's range.
/// Image batches are LINEAR images whose memory is the tensor where the format
/// supports the usage with linear tiling and the driver lets exportable LINEAR
/// images share an allocation (`VKCUDA_BATCH_PATH_ZERO_COPY`); otherwise OPTIMAL
/// images plus a readout region (`VKCUDA_BATCH_PATH_COPY`).
///
/// Refused before any allocation: count 0 or past 65,536, count times the
/// element overflowing 64 bits, a batch past the device's largest memory heap,
/// a zero extent or size (`VKCUDA_ERROR_INVALID_ARGUMENT`); a format the batch
/// cannot hold or a usage the device cannot give these images on either tiling
/// (`VKCUDA_ERROR_UNSUPPORTED`, the message says which and why). `*batch` is
/// written on success, set to NULL on failure; nothing is left allocated on
/// failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_create(
    context: *const vkcuda_context,
    info: *const vkcuda_batch_create_info,
    batch: *mut *mut vkcuda_batch,
) -> vkcuda_result {
    boundary("vkcuda_batch_create", || {
        let made = (|| {
            out(batch, "batch")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            let desc = description(info)?;
            Ok(handle::boxed::<vkcuda_batch>(Batch::create(ctx, &desc)?))
        })();
        write_handle(batch, made)
    })
}

/// Fills `*info`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_get_info(
    batch: *const vkcuda_batch,
    info: *mut vkcuda_batch_info,
) -> vkcuda_result {
    boundary("vkcuda_batch_get_info", || {
        let b = batch_arg(batch)?;
        let info = out(info, "info")?;
        let i = b.info();
        *info = vkcuda_batch_info {
            count: i.count,
            path: match i.path {
                Path::ZeroCopy => VKCUDA_BATCH_PATH_ZERO_COPY,
                Path::Copy => VKCUDA_BATCH_PATH_COPY,
                Path::Buffers => VKCUDA_BATCH_PATH_BUFFERS,
            },
            format: i.format.as_raw(),
            width: i.width,
            height: i.height,
            channels: i.channels,
            dtype: super::dlpack::vkcuda_dlpack_dtype {
                code: i.dtype.code,
                bits: i.dtype.bits,
                lanes: i.dtype.lanes,
            },
            usage: match i.usage {
                Usage::Images(u) => u.as_raw(),
                Usage::Buffers(u) => u.as_raw(),
            },
            memory: b.vk_memory(),
            whole_buffer: b.vk_whole_buffer(),
            allocation_size: i.allocation_size,
            tensor_offset: i.tensor_offset,
            element_stride: i.element_stride,
            row_pitch: i.row_pitch,
            element_size: i.element_size,
            mapped_size: i.mapped_size,
            image_stride: i.image_stride,
            readout_offset: i.readout_offset,
            readout_size: i.readout_size,
            cuda_pointer: b.cuda_ptr().unwrap_or(0),
        };
        Ok(())
    })
}

/// Fills `*element` with element `index` (0 to count - 1; past it:
/// `VKCUDA_ERROR_INVALID_ARGUMENT`).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_get_element(
    batch: *const vkcuda_batch,
    index: u32,
    element: *mut vkcuda_batch_element,
) -> vkcuda_result {
    boundary("vkcuda_batch_get_element", || {
        let b = batch_arg(batch)?;
        let element = out(element, "element")?;
        let e = b.element(index)?;
        *element = vkcuda_batch_element {
            image: e.image,
            buffer: e.buffer,
            memory_offset: e.memory_offset,
            data_offset: e.data_offset,
            cuda_pointer: e.cuda_pointer,
        };
        Ok(())
    })
}

/// A `vkcuda_buffer` over element `index` of a buffer batch, or (index
/// `VKCUDA_BATCH_WHOLE`) over all of a buffer batch or the readout region of a
/// copy-path image batch: the batch's `VkBuffer` and its one CUDA mapping (no
/// new import), for the buffer functions (DLPack views, handoffs of one
/// element). It keeps the batch's memory alive; destroy it with
/// `vkcuda_buffer_destroy` (the Vulkan objects stay the batch's).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_get_buffer(
    batch: *const vkcuda_batch,
    index: u32,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_batch_get_buffer", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let b = batch_arg(batch)?;
            let which = (index != VKCUDA_BATCH_WHOLE).then_some(index);
            Ok(handle::boxed::<vkcuda_buffer>(b.buffer(which)?))
        })();
        write_handle(buffer, made)
    })
}

/// Exports the batch's one allocation as a new POSIX fd (OPAQUE_FD); the caller
/// owns it.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_export_fd(
    batch: *const vkcuda_batch,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_batch_export_fd", || {
        let b = batch_arg(batch)?;
        let fd = out(fd, "fd")?;
        *fd = b.export_fd()?.into_raw_fd();
        Ok(())
    })
}

/// Records into the engine's command buffer the release of EVERY element to CUDA
/// in one call. Buffer batches and zero-copy image batches: one pipeline barrier
/// (images from `old_layout` to `VK_IMAGE_LAYOUT_GENERAL`; `old_layout` is
/// ignored for buffers). Copy path: one barrier moving the images from
/// `old_layout` to `VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL`, one
/// `vkCmdCopyImageToBuffer` per image into the readout region, one barrier
/// releasing the readout region to CUDA; the images stay the engine's, in
/// TRANSFER_SRC_OPTIMAL. Layouts are checked as for images
/// (`vkcuda_image_cmd_release_to_cuda`; depth batches take depth layouts);
/// nothing is recorded on failure. Submit it before the semaphore signal CUDA
/// waits on.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_cmd_release_to_cuda(
    batch: *const vkcuda_batch,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    old_layout: VkImageLayout,
) -> vkcuda_result {
    boundary("vkcuda_batch_cmd_release_to_cuda", || {
        let b = batch_arg(batch)?;
        let cmd = command_buffer_arg(command_buffer)?;
        b.cmd_release_to_cuda(
            cmd,
            &scope_arg(info)?,
            vk::ImageLayout::from_raw(old_layout),
        )
    })
}

/// Records the acquire of every element back from CUDA in one call: one barrier
/// (images from GENERAL to `new_layout`), or on the copy path a barrier acquiring
/// the readout region, one `vkCmdCopyBufferToImage` per image and a barrier to
/// `new_layout` (the images' previous contents are replaced by what CUDA wrote;
/// where CUDA only reads, `vkcuda_batch_cmd_acquire_readout_from_cuda` takes the
/// readout region back without a copy). Submit it after
/// waiting on the semaphore CUDA signalled.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_cmd_acquire_from_cuda(
    batch: *const vkcuda_batch,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    new_layout: VkImageLayout,
) -> vkcuda_result {
    boundary("vkcuda_batch_cmd_acquire_from_cuda", || {
        let b = batch_arg(batch)?;
        let cmd = command_buffer_arg(command_buffer)?;
        b.cmd_acquire_from_cuda(
            cmd,
            &scope_arg(info)?,
            vk::ImageLayout::from_raw(new_layout),
        )
    })
}

/// Records the acquire of the copy path's readout region alone, back from CUDA
/// (one barrier), leaving the images as they are: the camera loop, where CUDA
/// only reads. Each release on the copy path writes the readout region, which
/// must be the engine's again first: record this (after waiting for CUDA's last
/// read) before every release but the first. Other paths:
/// `VKCUDA_ERROR_INVALID_ARGUMENT` (their acquire,
/// `vkcuda_batch_cmd_acquire_from_cuda`, moves no data).
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_cmd_acquire_readout_from_cuda(
    batch: *const vkcuda_batch,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
) -> vkcuda_result {
    boundary("vkcuda_batch_cmd_acquire_readout_from_cuda", || {
        let b = batch_arg(batch)?;
        let cmd = command_buffer_arg(command_buffer)?;
        b.cmd_acquire_readout_from_cuda(cmd, &scope_arg(info)?)
    })
}

/// Exports the whole batch (or one element) as a DLPack tensor on the context's
/// CUDA device, zero-copy: `(N, H, W, C)` (`(N, H, W)` for one channel, `(N,
/// size)` uint8 for buffers) with strides from `element_stride` and `row_pitch`
/// (in elements), dtype from the format. `*tensor` is a
/// `DLManagedTensorVersioned *` (a `DLManagedTensor *` with
/// `VKCUDA_DLPACK_LEGACY_BIT`) that **the caller owns** (pass it to one consumer
/// or call its deleter once); it keeps the batch's memory alive after
/// `vkcuda_batch_destroy`. With `info->wait_semaphore`, `info->stream` first
/// waits on the GPU for `info->wait_value` (nothing is enqueued when an argument
/// is refused). A Vulkan-only context: `VKCUDA_ERROR_CUDA_UNAVAILABLE`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup batch
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_batch_export_dlpack(
    batch: *const vkcuda_batch,
    info: *const vkcuda_batch_dlpack_info,
    tensor: *mut *mut c_void,
) -> vkcuda_result {
    boundary("vkcuda_batch_export_dlpack", || {
        let made = (|| {
            out(tensor, "tensor")?;
            let b = batch_arg(batch)?;
            let Some(info) = info.as_ref() else {
                return b.export_dlpack(&TensorSpec::default());
            };
            check_flags(
                info.flags,
                VKCUDA_DLPACK_READ_ONLY_BIT
                    | VKCUDA_DLPACK_LEGACY_BIT
                    | VKCUDA_BATCH_DLPACK_ELEMENT_BIT,
                "info->flags",
            )?;
            let spec = TensorSpec {
                index: (info.flags & VKCUDA_BATCH_DLPACK_ELEMENT_BIT != 0).then_some(info.index),
                read_only: info.flags & VKCUDA_DLPACK_READ_ONLY_BIT != 0,
                legacy: info.flags & VKCUDA_DLPACK_LEGACY_BIT != 0,
            };
            if info.wait_semaphore.is_null() {
                return b.export_dlpack(&spec);
            }
            let sem: &Semaphore = handle::get(info.wait_semaphore, "info->wait_semaphore")?;
            b.export_dlpack_after(&spec, sem, info.wait_value, info.stream.cast())
        })();
        match made {
            Ok(t) => {
                *tensor = t.into_raw();
                Ok(())
            }
            Err(e) => {
                if !tensor.is_null() {
                    *tensor = std::ptr::null_mut();
                }
                Err(e)
            }
        }
    })
}

/// Destroys the batch: the CUDA view first (mapping, then the import), then the
/// images or buffers and the memory. The caller guarantees no GPU work still
/// uses it. Tensors and buffers made from it hold their own reference: while
/// one exists, destroy releases only the handle. NULL does nothing.
///
/// Thread-safety: must not overlap any other use of the batch.
///
/// @ingroup batch
#[no_mangle]
pub unsafe extern "C" fn vkcuda_batch_destroy(batch: *mut vkcuda_batch) {
    quiet((), || handle::destroy(batch, "vkcuda_batch_destroy"))
}
