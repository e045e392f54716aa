//! C API: a shared buffer (or a range of it) as a DLPack tensor.

use std::ffi::c_void;

use super::buffer::vkcuda_buffer;
use super::handle;
use super::image::vkcuda_image;
use super::vkcuda_result;
use super::{arg, boundary, check_flags, out};
use vkcuda::buffer::Buffer;
use vkcuda::dlpack::{self, DType, Spec, MAX_NDIM};
use vkcuda::error::{Error, Result};
use vkcuda::image::Image;

/// Mark the tensor read-only (`DLPACK_FLAG_BITMASK_READ_ONLY` in its `flags`):
/// consumers that honour it refuse to write. Not with `VKCUDA_DLPACK_LEGACY_BIT`.
///
/// @ingroup buffer
pub const VKCUDA_DLPACK_READ_ONLY_BIT: u32 = 0x1;
/// Make a legacy `DLManagedTensor` (DLPack before 1.0: no version, no flags)
/// instead of a `DLManagedTensorVersioned`, for consumers that ask for the old ABI
/// (a Python consumer that passes no `max_version` to `__dlpack__`).
///
/// @ingroup buffer
pub const VKCUDA_DLPACK_LEGACY_BIT: u32 = 0x2;
/// The most dimensions of an exported tensor (the length of
/// `vkcuda_dlpack_info::shape`).
///
/// @ingroup buffer
pub const VKCUDA_DLPACK_MAX_NDIM: u32 = 8;

/// A DLPack data type, laid out as DLPack's `DLDataType`.
///
/// @ingroup buffer
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_dlpack_dtype {
    /// `DLDataTypeCode`: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
    pub code: u8,
    /// Bits of one lane: 8, 16, 32 or 64 (complex: 32, 64, 128; bfloat: 16; bool: 8).
    pub bits: u8,
    /// Lanes per element, at least 1 (1 for scalars).
    pub lanes: u16,
}

/// What to export with `vkcuda_buffer_export_dlpack`. All zero gives the whole
/// buffer as a one-dimensional tensor of bytes (uint8).
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_dlpack_info {
    /// `VKCUDA_DLPACK_*` bits.
    pub flags: u32,
    /// The element type; all zero means uint8.
    pub dtype: vkcuda_dlpack_dtype,
    /// The number of dimensions, 0 to `VKCUDA_DLPACK_MAX_NDIM`. 0 means one
    /// dimension over the rest of the buffer from `offset` (which must be a whole
    /// number of elements).
    pub ndim: u32,
    /// The first `ndim` entries are the shape (each at least 0); the others must be 0.
    pub shape: [i64; 8],
    /// NULL for C-contiguous (row-major) strides; otherwise `ndim` strides in
    /// elements, as in DLPack, each at least 0.
    pub strides: *const i64,
    /// Where the tensor starts in the buffer, in bytes: a multiple of the element
    /// size. The tensor's `data` is the buffer's CUDA pointer plus `offset` and its
    /// `byte_offset` is 0 (PyTorch ignores `byte_offset`).
    pub offset: u64,
}

/// Exports the buffer, or a range of it, as a DLPack tensor on the context's CUDA
/// device (`kDLCUDA`, `device_id` = the paired device's ordinal) without copying:
/// `*tensor` is a `DLManagedTensorVersioned *` (DLPack 1.0; a `DLManagedTensor *`
/// with `VKCUDA_DLPACK_LEGACY_BIT`), whose `data` is the buffer's CUDA view plus
/// `info->offset`. Strides are always written (C-contiguous ones when
/// `info->strides` is NULL); `byte_offset` is 0. This header does not need
/// dlpack.h: cast the pointer to DLPack's type to read it.
///
/// The dtype, shape, strides and offset are checked against the buffer's size and
/// the element size (`VKCUDA_ERROR_INVALID_ARGUMENT`, or `_UNSUPPORTED` for DLPack
/// types not exported), before anything is made. A Vulkan-only context has no
/// device pointer to export: `VKCUDA_ERROR_CUDA_UNAVAILABLE`.
///
/// Ownership: **the caller owns the tensor** and passes it to one consumer (which
/// calls its deleter when done) or calls `tensor->deleter(tensor)` itself,
/// exactly once. The tensor holds a reference to the buffer's memory: it stays
/// valid until the deleter runs, even after `vkcuda_buffer_destroy` and
/// `vkcuda_context_destroy`; the last of the handle and its tensors releases the
/// memory (CUDA view first, then Vulkan's objects). Your `VkDevice` (and your
/// `CUcontext`, if you gave one) must outlive every tensor. For a wrapped buffer
/// the tensor holds the library's CUDA import of your memory, which keeps the
/// allocation alive; your `VkBuffer` and `VkDeviceMemory` stay yours. The deleter
/// may run on any thread. A single-plane image cannot be exported (its CUDA view
/// is an array, not linear memory); each plane of a shared video frame can,
/// with `vkcuda_image_export_plane_dlpack`.
///
/// Synchronisation: the tensor carries none. Before a consumer reads what Vulkan
/// wrote, make its stream wait (`vkcuda_semaphore_cuda_wait`); before Vulkan reads
/// what the consumer wrote, signal from its stream (`vkcuda_semaphore_cuda_signal`).
///
/// Thread-safety: may be called from any thread, like the buffer's getters.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_export_dlpack(
    buffer: *const vkcuda_buffer,
    info: *const vkcuda_dlpack_info,
    tensor: *mut *mut c_void,
) -> vkcuda_result {
    boundary("vkcuda_buffer_export_dlpack", || {
        let made = (|| {
            out(tensor, "tensor")?;
            let b: &Buffer = handle::get(buffer, "buffer")?;
            let info = arg(info, "info")?;
            check_flags(
                info.flags,
                VKCUDA_DLPACK_READ_ONLY_BIT | VKCUDA_DLPACK_LEGACY_BIT,
                "info->flags",
            )?;
            let ndim = info.ndim as usize;
            if ndim > MAX_NDIM {
                return Err(Error::invalid(format!(
                    "info->ndim is {ndim}; at most VKCUDA_DLPACK_MAX_NDIM ({MAX_NDIM})"
                )));
            }
            if let Some(i) = (ndim..MAX_NDIM).find(|&i| info.shape[i] != 0) {
                return Err(Error::invalid(format!(
                    "info->shape[{i}] is {} but info->ndim is {ndim}: entries past ndim must be 0",
                    info.shape[i]
                )));
            }
            let strides = if info.strides.is_null() {
                None
            } else if ndim == 0 {
                return Err(Error::invalid(
                    "info->strides is set but info->ndim is 0 (one dimension over the rest of \
                     the buffer is always contiguous)",
                ));
            } else {
                Some(std::slice::from_raw_parts(info.strides, ndim))
            };
            let spec = Spec {
                dtype: DType {
                    code: info.dtype.code,
                    bits: info.dtype.bits,
                    lanes: info.dtype.lanes,
                },
                shape: &info.shape[..ndim],
                strides,
                offset: info.offset,
                read_only: info.flags & VKCUDA_DLPACK_READ_ONLY_BIT != 0,
                legacy: info.flags & VKCUDA_DLPACK_LEGACY_BIT != 0,
            };
            b.export_dlpack(&spec).map(dlpack::Tensor::into_raw)
        })();
        write_tensor(tensor, made)
    })
}

/// Exports plane `plane` of a shared frame (an image made with
/// `VKCUDA_IMAGE_CREATE_LINEAR_BIT`) as a DLPack tensor on the context's CUDA device
/// without copying: `*tensor` is a `DLManagedTensorVersioned *` (a
/// `DLManagedTensor *` with `VKCUDA_DLPACK_LEGACY_BIT` in `flags`) of unsigned
/// samples — uint8 for 8-bit formats, uint16 for 10/12/16-bit ones (10- and 12-bit
/// samples in the high bits) — shape (height, width) for a plane of one channel
/// (luma, or Cb or Cr of a 3-plane format) and (height, width, 2) for interleaved
/// CbCr; a linear single-plane image is (height, width) for one channel or
/// (height, width, channels) of its channel type (uint; int for SNORM/SINT; float
/// for SFLOAT; uint32 words for a packed 10-bit format); strides in elements from the plane's row pitch (which is padded: the
/// tensor is not contiguous), `data` the plane's CUDA pointer. Ownership and
/// lifetime as for `vkcuda_buffer_export_dlpack`: the caller owns the tensor, which
/// keeps CUDA's mapping of the frame valid until its deleter runs, even after
/// `vkcuda_image_destroy`. `VKCUDA_ERROR_INVALID_ARGUMENT` for an image that is not
/// a shared frame, a plane out of range or unknown flags; `_CUDA_UNAVAILABLE` in a
/// Vulkan-only context. `*tensor` is NULL on failure.
///
/// Synchronisation: none in the tensor; hand the frame over with the semaphores
/// and the handoff calls as for any CUDA access.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_export_plane_dlpack(
    image: *const vkcuda_image,
    plane: u32,
    flags: u32,
    tensor: *mut *mut c_void,
) -> vkcuda_result {
    boundary("vkcuda_image_export_plane_dlpack", || {
        let made = (|| {
            out(tensor, "tensor")?;
            let im: &Image = handle::get(image, "image")?;
            check_flags(
                flags,
                VKCUDA_DLPACK_READ_ONLY_BIT | VKCUDA_DLPACK_LEGACY_BIT,
                "flags",
            )?;
            im.export_plane_dlpack(
                plane as usize,
                flags & VKCUDA_DLPACK_READ_ONLY_BIT != 0,
                flags & VKCUDA_DLPACK_LEGACY_BIT != 0,
            )
            .map(dlpack::Tensor::into_raw)
        })();
        write_tensor(tensor, made)
    })
}

/// Writes the tensor on success and NULL on failure (when `p` is not NULL).
unsafe fn write_tensor(p: *mut *mut c_void, made: Result<*mut c_void>) -> Result<()> {
    match made {
        Ok(t) => {
            *p = t;
            Ok(())
        }
        Err(e) => {
            if !p.is_null() {
                *p = std::ptr::null_mut();
            }
            Err(e)
        }
    }
}
