//! C API: host-visible staging buffers (`vkcuda::HostBuffer`).

use std::ffi::c_void;

use super::context::{ctx_arg, vkcuda_context};
use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{boundary, out, quiet, vkcuda_result, write_handle};
use vkcuda::HostBuffer;

/// A host-visible staging buffer: a `VkBuffer` with TRANSFER_SRC | TRANSFER_DST
/// usage in host-visible, host-coherent memory (host-cached where the device has
/// such a type), mapped while it lives. Not shared with CUDA: the engine's (or a
/// tool's) own command buffers copy between it and shared buffers or images to
/// upload and download bytes. Counted in `vkcuda_live_objects` (one VkBuffer,
/// one VkDeviceMemory). Released by `vkcuda_host_buffer_destroy`.
///
/// Thread-safety: every function but destroy may be called from any thread at
/// once; destroy must not overlap any other use. The caller orders host reads and
/// writes of the mapped bytes against its own submits that use the buffer.
///
/// @ingroup buffer
pub struct vkcuda_host_buffer {
    h: Tagged<HostBuffer>,
}
handle_kind!(vkcuda_host_buffer, HostBuffer, handle::HOST_BUFFER, |b| {
    Some(b.context())
});

/// What `vkcuda_host_buffer_get_info` says about a staging buffer.
///
/// @ingroup buffer
#[repr(C)]
pub struct vkcuda_host_buffer_info {
    /// The `VkBuffer`, for the caller's copies. Owned by the vkcuda host buffer.
    pub buffer: VkBuffer,
    /// The size in bytes, as created.
    pub size: u64,
    /// The mapped bytes (`size` of them), valid until the host buffer is destroyed.
    /// Host-coherent: what the host writes is seen by a submit made afterwards;
    /// what a submit wrote is seen once the host waited for it.
    pub data: *mut c_void,
}

/// Creates a staging buffer of `size` bytes on the context's device, mapped.
/// Works in every context (a Vulkan-only one too). `size` 0, more than the address
/// space, the device's `maxBufferSize` or its largest host-visible memory heap:
/// `VKCUDA_ERROR_INVALID_ARGUMENT`, before any driver call. A device without
/// host-visible coherent memory: `VKCUDA_ERROR_UNSUPPORTED`. `*host_buffer` is
/// written on success, set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_host_buffer_create(
    context: *const vkcuda_context,
    size: u64,
    host_buffer: *mut *mut vkcuda_host_buffer,
) -> vkcuda_result {
    boundary("vkcuda_host_buffer_create", || {
        let made = (|| {
            out(host_buffer, "host_buffer")?;
            let ctx = ctx_arg(context)?;
            let inner = HostBuffer::new(ctx, size)?;
            Ok(handle::boxed::<vkcuda_host_buffer>(inner))
        })();
        write_handle(host_buffer, made)
    })
}

/// Fills `*info` with the staging buffer's `VkBuffer`, size and mapped pointer.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup buffer
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_host_buffer_get_info(
    host_buffer: *const vkcuda_host_buffer,
    info: *mut vkcuda_host_buffer_info,
) -> vkcuda_result {
    boundary("vkcuda_host_buffer_get_info", || {
        let b: &HostBuffer = handle::get(host_buffer, "host_buffer")?;
        let info = out(info, "info")?;
        *info = vkcuda_host_buffer_info {
            buffer: b.vk_buffer(),
            size: b.size(),
            data: b.as_ptr().cast(),
        };
        Ok(())
    })
}

/// Destroys the staging buffer and frees its memory (the mapping ends). The caller
/// guarantees no GPU work still uses it. NULL does nothing.
///
/// Thread-safety: must not overlap any other use of the host buffer.
///
/// @ingroup buffer
#[no_mangle]
pub unsafe extern "C" fn vkcuda_host_buffer_destroy(host_buffer: *mut vkcuda_host_buffer) {
    quiet((), || {
        handle::destroy(host_buffer, "vkcuda_host_buffer_destroy")
    })
}
