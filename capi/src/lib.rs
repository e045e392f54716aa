//! The C boundary: argument checks, handle casts, the panic boundary, result codes
//! and the thread-local last-error message. Nothing below this module knows C.
//!
//! Names here are the C names (`vkcuda_*`), so cbindgen emits them as they are.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]
// The doc comments here are the C header's (cbindgen copies them into
// include/vkcuda.h), written for C readers: `name[0]` is C, not a rustdoc link.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::private_intra_doc_links)]

// cbindgen emits the header's functions module by module in the order of these
// declarations, which rustfmt keeps alphabetical; the header's documentation groups
// (`@ingroup` in each doc comment, defined in cbindgen.toml) gather each object's
// declarations, not this order.
pub mod batch;
pub mod buffer;
pub mod context;
pub mod deprecated;
pub mod dlpack;
pub mod doctor;
mod fd;
pub(crate) mod handle;
pub mod handoff;
pub mod host_buffer;
pub mod image;
pub mod ipc;
pub mod library;
pub mod present;
pub mod semaphore;
pub mod types;

pub use batch::*;
pub use buffer::*;
pub use context::*;
pub use deprecated::*;
pub use dlpack::*;
pub use doctor::*;
pub use handoff::*;
pub use host_buffer::*;
pub use image::*;
pub use ipc::*;
pub use library::*;
pub use present::*;
pub use semaphore::*;
pub use types::*;

use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

use vkcuda::error::{Error, ErrorKind, Result};

/// Result codes. Every fallible function returns one; 0 is success, each failure
/// class has its own negative value. `vkcuda_last_error_message` says more.
///
/// @ingroup library
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_result {
    /// The call succeeded.
    VKCUDA_SUCCESS = 0,
    /// An argument is out of range, inconsistent or unknown (sizes, offsets, flags, enums).
    VKCUDA_ERROR_INVALID_ARGUMENT = -1,
    /// A required pointer argument is NULL.
    VKCUDA_ERROR_NULL_POINTER = -2,
    /// Host or device memory ran out (VK_ERROR_OUT_OF_*_MEMORY, CUDA_ERROR_OUT_OF_MEMORY).
    VKCUDA_ERROR_OUT_OF_MEMORY = -3,
    /// The CUDA driver (libcuda.so.1) is missing, too old, or has no device.
    VKCUDA_ERROR_CUDA_UNAVAILABLE = -4,
    /// The Vulkan loader (libvulkan.so.1) is missing (standalone context and queries only).
    VKCUDA_ERROR_VULKAN_UNAVAILABLE = -5,
    /// A Vulkan call failed; the message names the call and the VkResult.
    VKCUDA_ERROR_VULKAN = -6,
    /// A CUDA driver call failed; the message names the call and the CUresult.
    VKCUDA_ERROR_CUDA = -7,
    /// A device extension the operation needs is not enabled on the VkDevice, or
    /// the device does not support it at all (the message says which).
    VKCUDA_ERROR_EXTENSION_NOT_PRESENT = -8,
    /// The Vulkan and CUDA sides are different devices (UUIDs differ), or a CUDA
    /// stream/context belongs to another context.
    VKCUDA_ERROR_DEVICE_MISMATCH = -9,
    /// The device or the library does not support what was asked (format, handle type, usage).
    VKCUDA_ERROR_UNSUPPORTED = -10,
    /// A wait did not complete within its timeout.
    VKCUDA_ERROR_TIMEOUT = -11,
    /// An internal error was caught at the C boundary; the library stays usable.
    VKCUDA_ERROR_PANIC = -12,
    /// The call is not valid in the object's current state (a binary semaphore
    /// waited twice, a timeline chain too far ahead), or a socket's peer closed
    /// or reset the connection.
    VKCUDA_ERROR_INVALID_STATE = -13,
    /// The peer on a socket is not allowed: another user than this process's, or
    /// refused by the caller's peer check (`vkcuda_share_options::peer_check`).
    VKCUDA_ERROR_PERMISSION_DENIED = -14,
    /// The context's CUDA context hit a sticky error (a kernel or copy faulted:
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`, `CUDA_ERROR_LAUNCH_FAILED`, ...) or its
    /// `VkDevice` returned `VK_ERROR_DEVICE_LOST`. The message names the original
    /// error and the call that first saw it. Every later call on the context and on
    /// its buffers, images and semaphores returns this code; destroy still releases
    /// what it can (every release call is made, so the fds the CUDA driver holds
    /// for imports are closed; a sticky error a destroy meets is recorded, naming
    /// the release call that saw it). A new context on a lost `VkDevice` is refused
    /// with this code while any object of that device lives; once every object of
    /// it is destroyed, a context on the same handle value (an engine's recreated
    /// device) starts clean. A sticky CUDA error is for the rest of the process (for
    /// the device's primary context, the default, that includes PyTorch/CuPy in this
    /// process): destroy the objects and restart the process.
    VKCUDA_ERROR_DEVICE_LOST = -15,
    /// Keeps the enum 32 bits wide; never returned.
    VKCUDA_RESULT_MAX_ENUM = 0x7FFF_FFFF,
}

use vkcuda_result::*;

impl From<ErrorKind> for vkcuda_result {
    fn from(k: ErrorKind) -> Self {
        match k {
            ErrorKind::InvalidArgument => VKCUDA_ERROR_INVALID_ARGUMENT,
            ErrorKind::NullPointer => VKCUDA_ERROR_NULL_POINTER,
            ErrorKind::OutOfMemory => VKCUDA_ERROR_OUT_OF_MEMORY,
            ErrorKind::CudaUnavailable => VKCUDA_ERROR_CUDA_UNAVAILABLE,
            ErrorKind::VulkanUnavailable => VKCUDA_ERROR_VULKAN_UNAVAILABLE,
            ErrorKind::Vulkan => VKCUDA_ERROR_VULKAN,
            ErrorKind::Cuda => VKCUDA_ERROR_CUDA,
            ErrorKind::ExtensionNotPresent => VKCUDA_ERROR_EXTENSION_NOT_PRESENT,
            ErrorKind::DeviceMismatch => VKCUDA_ERROR_DEVICE_MISMATCH,
            ErrorKind::Unsupported => VKCUDA_ERROR_UNSUPPORTED,
            ErrorKind::Timeout => VKCUDA_ERROR_TIMEOUT,
            ErrorKind::InvalidState => VKCUDA_ERROR_INVALID_STATE,
            ErrorKind::PermissionDenied => VKCUDA_ERROR_PERMISSION_DENIED,
            ErrorKind::DeviceLost => VKCUDA_ERROR_DEVICE_LOST,
            // `ErrorKind` is non-exhaustive; the two crates are released together,
            // and `error_kinds_have_the_c_codes` fails when a kind is missing here.
            _ => VKCUDA_ERROR_PANIC,
        }
    }
}

thread_local! {
    /// The thread's message; None is the empty message (a successful call clears
    /// it without allocating, which keeps per-frame calls cheap).
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = Some(c));
}

fn clear_last_error() {
    LAST_ERROR.with(|l| {
        if let Ok(mut m) = l.try_borrow_mut() {
            if m.is_some() {
                *m = None;
            }
        }
    });
}

/// Runs `f` behind the panic boundary: an `Err` becomes its result code and the
/// thread's last-error message ("name: what went wrong"); a panic becomes
/// `VKCUDA_ERROR_PANIC`. Success clears the message.
pub(crate) fn boundary(name: &str, f: impl FnOnce() -> Result<()>) -> vkcuda_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            clear_last_error();
            VKCUDA_SUCCESS
        }
        Ok(Err(e)) => {
            set_last_error(&format!("{name}: {}", e.message));
            e.kind.into()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!(
                "{name}: internal error caught at the C boundary: {what}"
            ));
            VKCUDA_ERROR_PANIC
        }
    }
}

/// Runs a function that cannot fail (getters, destroy) behind the panic boundary.
pub(crate) fn quiet<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// A required input pointer.
pub(crate) unsafe fn arg<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    p.as_ref().ok_or_else(|| Error::null(what))
}

/// A required output pointer.
pub(crate) fn out<T>(p: *mut T, what: &str) -> Result<*mut T> {
    if p.is_null() {
        Err(Error::null(what))
    } else {
        Ok(p)
    }
}

/// Writes a new handle to `*p` on success and NULL on failure (when `p` is not NULL).
pub(crate) unsafe fn write_handle<T>(p: *mut *mut T, made: Result<Box<T>>) -> Result<()> {
    match made {
        Ok(b) => {
            *p = Box::into_raw(b);
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

/// Writes a native handle (a CUDA array, a graph node: not a box of ours) to `*p`
/// on success and NULL on failure (when `p` is not NULL), as every handle output.
pub(crate) unsafe fn write_native<T>(p: *mut *mut T, made: Result<*mut T>) -> Result<()> {
    match made {
        Ok(h) => {
            *p = h;
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

/// Imports through the caller's fd, which the Rust import borrows (the drivers get
/// duplicates): on success the caller's fd is closed (the library has taken it); on
/// failure it is left as it was, its file offset too (the Rust import puts it back).
pub(crate) unsafe fn import_taking<T>(
    fd: i32,
    import: impl FnOnce(std::os::fd::BorrowedFd<'_>) -> Result<T>,
) -> Result<T> {
    let made = import(fd::borrow_open(fd, "fd")?)?;
    libc::close(fd);
    Ok(made)
}

/// Checks a `flags` field: no bits outside `known`.
pub(crate) fn check_flags(flags: u32, known: u32, what: &str) -> Result<()> {
    if flags & !known != 0 {
        return Err(Error::invalid(format!(
            "{what} has unknown bits {:#x} (known: {known:#x})",
            flags & !known
        )));
    }
    Ok(())
}

/// A `VkBool32` from C: only 0 and 1 are valid.
pub(crate) fn check_bool(v: u32, what: &str) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::invalid(format!(
            "{what} is {v}; a VkBool32 must be VK_FALSE or VK_TRUE"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_catches_panics_and_sets_messages() {
        let r = boundary("vkcuda_test", || panic!("boom"));
        assert_eq!(r, VKCUDA_ERROR_PANIC);
        let msg = unsafe { std::ffi::CStr::from_ptr(vkcuda_last_error_message()) };
        assert!(msg.to_str().unwrap().contains("boom"));
        let r = boundary("vkcuda_test", || Err(Error::invalid("bad size")));
        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT);
        let msg = unsafe { std::ffi::CStr::from_ptr(vkcuda_last_error_message()) };
        assert_eq!(msg.to_str().unwrap(), "vkcuda_test: bad size");
        assert_eq!(boundary("vkcuda_test", || Ok(())), VKCUDA_SUCCESS);
        let msg = unsafe { std::ffi::CStr::from_ptr(vkcuda_last_error_message()) };
        assert_eq!(msg.to_str().unwrap(), "");
    }

    /// The Rust library owns its codes (`ErrorKind::code`); they are this enum's,
    /// but for the panic code, which is the C door's own (`boundary`).
    #[test]
    fn error_kinds_have_the_c_codes() {
        use vkcuda::ErrorKind::*;
        let kinds = [
            InvalidArgument,
            NullPointer,
            OutOfMemory,
            CudaUnavailable,
            VulkanUnavailable,
            Vulkan,
            Cuda,
            ExtensionNotPresent,
            DeviceMismatch,
            Unsupported,
            Timeout,
            InvalidState,
            PermissionDenied,
            DeviceLost,
        ];
        for k in kinds {
            assert_eq!(k.code(), vkcuda_result::from(k) as i32, "{k:?}");
        }
        // Every code but success and the panic code has its kind: -1 ..= -15 but
        // -12, each once.
        let mut codes: Vec<i32> = kinds.iter().map(|k| k.code()).collect();
        codes.sort_unstable();
        let panic = VKCUDA_ERROR_PANIC as i32;
        assert_eq!(panic, -12);
        let want: Vec<i32> = (-15..=-1).filter(|&c| c != panic).collect();
        assert_eq!(codes, want);
    }

    #[test]
    fn every_code_has_a_name() {
        for code in -15..=0 {
            let s = unsafe {
                std::ffi::CStr::from_ptr(vkcuda_result_to_string(types::vkcuda_result_raw(code)))
            };
            assert!(s.to_str().unwrap().starts_with("VKCUDA_"));
            assert_ne!(s.to_str().unwrap(), "VKCUDA_UNKNOWN_RESULT");
        }
        let s = unsafe {
            std::ffi::CStr::from_ptr(vkcuda_result_to_string(types::vkcuda_result_raw(-99)))
        };
        assert_eq!(s.to_str().unwrap(), "VKCUDA_UNKNOWN_RESULT");
    }
}
