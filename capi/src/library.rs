//! C API: the library itself: its version, result names, the last-error message
//! and the live-object counters.

use std::ffi::c_char;

use super::types;
use super::{boundary, out, vkcuda_result, LAST_ERROR};

/// The loaded library's version packed as `(major << 22) | (minor << 12) | patch`:
/// `VKCUDA_VERSION` of the header of the same release (compare the two to see
/// whether the program runs with the library it was built against).
///
/// @ingroup library
#[no_mangle]
pub extern "C" fn vkcuda_version() -> u32 {
    pack_version(
        env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or(0),
        env!("CARGO_PKG_VERSION_MINOR").parse().unwrap_or(0),
        env!("CARGO_PKG_VERSION_PATCH").parse().unwrap_or(0),
    )
}

pub const fn pack_version(major: u32, minor: u32, patch: u32) -> u32 {
    (major << 22) | (minor << 12) | patch
}

/// The loaded library's version as a string, "MAJOR.MINOR.PATCH" in decimal (the
/// numbers `vkcuda_version` packs; for the library of this header's release,
/// `VKCUDA_VERSION_MAJOR`, `_MINOR` and `_PATCH`); static, never freed.
///
/// @ingroup library
#[no_mangle]
pub extern "C" fn vkcuda_version_string() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The name of a result code ("VKCUDA_ERROR_TIMEOUT"), or "VKCUDA_UNKNOWN_RESULT"
/// for a value that is not one. Static, never freed.
///
/// @ingroup library
#[no_mangle]
pub extern "C" fn vkcuda_result_to_string(result: types::vkcuda_result_raw) -> *const c_char {
    let s: &'static str = match result.0 {
        0 => "VKCUDA_SUCCESS\0",
        -1 => "VKCUDA_ERROR_INVALID_ARGUMENT\0",
        -2 => "VKCUDA_ERROR_NULL_POINTER\0",
        -3 => "VKCUDA_ERROR_OUT_OF_MEMORY\0",
        -4 => "VKCUDA_ERROR_CUDA_UNAVAILABLE\0",
        -5 => "VKCUDA_ERROR_VULKAN_UNAVAILABLE\0",
        -6 => "VKCUDA_ERROR_VULKAN\0",
        -7 => "VKCUDA_ERROR_CUDA\0",
        -8 => "VKCUDA_ERROR_EXTENSION_NOT_PRESENT\0",
        -9 => "VKCUDA_ERROR_DEVICE_MISMATCH\0",
        -10 => "VKCUDA_ERROR_UNSUPPORTED\0",
        -11 => "VKCUDA_ERROR_TIMEOUT\0",
        -12 => "VKCUDA_ERROR_PANIC\0",
        -13 => "VKCUDA_ERROR_INVALID_STATE\0",
        -14 => "VKCUDA_ERROR_PERMISSION_DENIED\0",
        -15 => "VKCUDA_ERROR_DEVICE_LOST\0",
        _ => "VKCUDA_UNKNOWN_RESULT\0",
    };
    s.as_ptr().cast()
}

/// What the last failed call on this thread said, naming the function, the native
/// call and its VkResult/CUresult; "" after a successful call. The string belongs to
/// the library and stays valid until the next vkcuda call on the same thread.
///
/// Thread-safety: each thread has its own message.
///
/// @ingroup library
#[no_mangle]
pub extern "C" fn vkcuda_last_error_message() -> *const c_char {
    LAST_ERROR.with(|l| match &*l.borrow() {
        Some(m) => m.as_ptr(),
        None => c"".as_ptr(),
    })
}

/// How many native objects the library holds right now, in the whole process (for
/// leak checks: after destroying everything, all are 0).
///
/// @ingroup library
#[repr(C)]
pub struct vkcuda_live_objects {
    /// Contexts (kept alive by their objects too).
    pub contexts: i64,
    /// `VkBuffer`s the library created.
    pub vk_buffers: i64,
    /// `VkDeviceMemory` objects the library allocated or imported.
    pub vk_memories: i64,
    /// `VkImage`s the library created.
    pub vk_images: i64,
    /// `VkSemaphore`s the library created.
    pub vk_semaphores: i64,
    /// `cuMemCreate` allocations (and imported ones).
    pub cuda_allocations: i64,
    /// `cuImportExternalMemory` imports.
    pub cuda_external_memories: i64,
    /// `cuImportExternalSemaphore` imports.
    pub cuda_external_semaphores: i64,
}

/// Fills `*counts` with the number of native objects the library holds now.
///
/// Thread-safety: may be called from any thread; counts from other threads'
/// concurrent calls may or may not be included.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_live_objects_get(
    counts: *mut vkcuda_live_objects,
) -> vkcuda_result {
    boundary("vkcuda_live_objects_get", || {
        let live = vkcuda::live_objects();
        let counts = out(counts, "counts")?;
        *counts = vkcuda_live_objects {
            contexts: live.contexts,
            vk_buffers: live.vk_buffers,
            vk_memories: live.vk_memories,
            vk_images: live.vk_images,
            vk_semaphores: live.vk_semaphores,
            cuda_allocations: live.cuda_allocations,
            cuda_external_memories: live.cuda_external_memories,
            cuda_external_semaphores: live.cuda_external_semaphores,
        };
        Ok(())
    })
}
