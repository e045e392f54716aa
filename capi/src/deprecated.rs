//! C API: the 0.1 names that 0.2 renamed, kept as deprecated aliases for one minor
//! release (the ABI policy: README "ABI policy", docs/GUIDE.md section 9, and
//! CHANGELOG.md). Each is a real exported function that calls its new name, so a
//! program written against 0.1 still compiles (with a deprecation warning that
//! names the new function) and links. They came back after 0.2.0, so they ship
//! in the next minor (0.3) and are removed in the one after (0.4).
//!
//! The thread's message names the function the caller called: a failure of the new
//! function ("vkcuda_physical_device_query: support must not be NULL") reads
//! "vkcuda_query_physical_device: support must not be NULL (deprecated: use
//! vkcuda_physical_device_query)".
#![allow(deprecated)]

use std::ffi::{c_char, CStr};

use super::types::*;
use super::{
    set_last_error, vkcuda_context, vkcuda_context_get_cuda_info,
    vkcuda_context_get_vulkan_handles, vkcuda_cuda_driver_get_version, vkcuda_cuda_info,
    vkcuda_device_extensions_enumerate, vkcuda_last_error_message, vkcuda_live_objects,
    vkcuda_live_objects_get, vkcuda_physical_device_query, vkcuda_physical_device_support,
    vkcuda_physical_devices_enumerate, vkcuda_result, vkcuda_vulkan_handles,
};

/// Calls the new function `new` for the deprecated `old` and, when it fails, makes
/// the message name `old`, as the caller wrote it.
fn alias(old: &str, new: &str, call: impl FnOnce() -> vkcuda_result) -> vkcuda_result {
    let r = call();
    if r != vkcuda_result::VKCUDA_SUCCESS {
        // SAFETY: the message is this thread's, valid until the next library call.
        let msg = unsafe { CStr::from_ptr(vkcuda_last_error_message()) }
            .to_string_lossy()
            .into_owned();
        let rest = msg
            .strip_prefix(new)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(&msg);
        set_last_error(&format!("{old}: {rest} (deprecated: use {new})"));
    }
    r
}

/// Deprecated: the 0.1 name of `vkcuda_physical_device_query` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_physical_device_query")]
pub unsafe extern "C" fn vkcuda_query_physical_device(
    instance: VkInstance,
    physical_device: VkPhysicalDevice,
    get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    support: *mut vkcuda_physical_device_support,
) -> vkcuda_result {
    alias(
        "vkcuda_query_physical_device",
        "vkcuda_physical_device_query",
        || unsafe {
            vkcuda_physical_device_query(instance, physical_device, get_instance_proc_addr, support)
        },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_physical_devices_enumerate` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_physical_devices_enumerate")]
pub unsafe extern "C" fn vkcuda_enumerate_physical_devices(
    count: *mut u32,
    supports: *mut vkcuda_physical_device_support,
) -> vkcuda_result {
    alias(
        "vkcuda_enumerate_physical_devices",
        "vkcuda_physical_devices_enumerate",
        || unsafe { vkcuda_physical_devices_enumerate(count, supports) },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_device_extensions_enumerate` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_device_extensions_enumerate")]
pub unsafe extern "C" fn vkcuda_enumerate_device_extensions(
    count: *mut u32,
    names: *mut *const c_char,
) -> vkcuda_result {
    alias(
        "vkcuda_enumerate_device_extensions",
        "vkcuda_device_extensions_enumerate",
        || unsafe { vkcuda_device_extensions_enumerate(count, names) },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_context_get_vulkan_handles` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_context_get_vulkan_handles")]
pub unsafe extern "C" fn vkcuda_context_get_vulkan(
    context: *const vkcuda_context,
    handles: *mut vkcuda_vulkan_handles,
) -> vkcuda_result {
    alias(
        "vkcuda_context_get_vulkan",
        "vkcuda_context_get_vulkan_handles",
        || unsafe { vkcuda_context_get_vulkan_handles(context, handles) },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_context_get_cuda_info` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_context_get_cuda_info")]
pub unsafe extern "C" fn vkcuda_context_get_cuda(
    context: *const vkcuda_context,
    cuda_info: *mut vkcuda_cuda_info,
) -> vkcuda_result {
    alias(
        "vkcuda_context_get_cuda",
        "vkcuda_context_get_cuda_info",
        || unsafe { vkcuda_context_get_cuda_info(context, cuda_info) },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_cuda_driver_get_version` (renamed in 0.2).
/// Same arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup context
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_cuda_driver_get_version")]
pub unsafe extern "C" fn vkcuda_cuda_driver_version(version: *mut i32) -> vkcuda_result {
    alias(
        "vkcuda_cuda_driver_version",
        "vkcuda_cuda_driver_get_version",
        || unsafe { vkcuda_cuda_driver_get_version(version) },
    )
}

/// Deprecated: the 0.1 name of `vkcuda_live_objects_get` (renamed in 0.2). Same
/// arguments and behaviour. Kept through 0.3, removed in 0.4.
///
/// @ingroup library
#[no_mangle]
#[must_use]
#[deprecated(note = "use vkcuda_live_objects_get")]
pub unsafe extern "C" fn vkcuda_get_live_objects(
    counts: *mut vkcuda_live_objects,
) -> vkcuda_result {
    alias(
        "vkcuda_get_live_objects",
        "vkcuda_live_objects_get",
        || unsafe { vkcuda_live_objects_get(counts) },
    )
}
