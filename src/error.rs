//! The library's error type: a failure class ([`ErrorKind`], which is the C
//! result code) and a message in words that names the failing native call and
//! its result.
//!
//! ```
//! use vkcuda::{Context, ErrorKind};
//! use vkcuda::context::CudaChoice;
//!
//! // A device index no machine has: refused, with the reason in words.
//! let e = Context::standalone(Some(1 << 20), CudaChoice::None).unwrap_err();
//! assert_eq!(e.kind(), ErrorKind::InvalidArgument);
//! assert_eq!(e.code(), -1); // VKCUDA_ERROR_INVALID_ARGUMENT in C
//! assert!(e.message().contains("out of range"), "{e}");
//! println!("{e}"); // the message, as vkcuda_last_error_message() says it in C
//! ```

use std::fmt;

use ash::vk;
use cudarc::driver::sys::CUresult;

/// The failure classes: each is one result code of the C API
/// ([`code`](Self::code)). New classes may be added in a minor release. A panic is
/// not one of them: the Rust API lets a panic unwind to the caller; the C door
/// catches it and returns its own code (`VKCUDA_ERROR_PANIC`, -12), which no
/// kind has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument is out of range, inconsistent or unknown (sizes, offsets,
    /// flags, a file descriptor that is not a GPU handle).
    InvalidArgument,
    /// A required handle or pointer is null (in Rust: a null Vulkan handle).
    NullPointer,
    /// Host or device memory ran out (`VK_ERROR_OUT_OF_*_MEMORY`,
    /// `CUDA_ERROR_OUT_OF_MEMORY`), or the process ran out of file descriptors.
    OutOfMemory,
    /// The CUDA driver (`libcuda.so.1`) is missing, too old or has no device, or
    /// the context was made without a CUDA side ([`CudaChoice::None`](crate::context::CudaChoice::None)).
    CudaUnavailable,
    /// The Vulkan loader (`libvulkan.so.1`) is missing (standalone contexts and
    /// device queries only).
    VulkanUnavailable,
    /// A Vulkan call failed; the message names the call and the `VkResult`.
    Vulkan,
    /// A CUDA driver call failed; the message names the call and the `CUresult`.
    Cuda,
    /// A device extension the operation needs is not enabled on the `VkDevice`, or
    /// the device does not have it at all.
    ExtensionNotPresent,
    /// The Vulkan and CUDA sides are different devices (their UUIDs differ), or a
    /// CUDA stream, context or shared object belongs to another device.
    DeviceMismatch,
    /// The device or the library does not support what was asked (a format, a
    /// usage, a handle type).
    Unsupported,
    /// A wait did not complete within its timeout.
    Timeout,
    /// The call is not valid in the object's current state (a binary semaphore
    /// waited on twice, a timeline chain too far ahead), or a socket's peer closed
    /// the connection.
    InvalidState,
    /// The peer on a socket is not allowed ([`ipc::PeerPolicy`](crate::ipc::PeerPolicy)).
    PermissionDenied,
    /// The context's CUDA context hit a sticky error (a faulting kernel) or its
    /// `VkDevice` returned `VK_ERROR_DEVICE_LOST`: the message names the original
    /// error. A sticky CUDA error lasts for the rest of the process.
    DeviceLost,
}

impl ErrorKind {
    /// The C API's result code of this class (`VKCUDA_ERROR_*`, always
    /// negative; -12 is the C door's panic code, no kind's).
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => -1,
            ErrorKind::NullPointer => -2,
            ErrorKind::OutOfMemory => -3,
            ErrorKind::CudaUnavailable => -4,
            ErrorKind::VulkanUnavailable => -5,
            ErrorKind::Vulkan => -6,
            ErrorKind::Cuda => -7,
            ErrorKind::ExtensionNotPresent => -8,
            ErrorKind::DeviceMismatch => -9,
            ErrorKind::Unsupported => -10,
            ErrorKind::Timeout => -11,
            ErrorKind::InvalidState => -13,
            ErrorKind::PermissionDenied => -14,
            ErrorKind::DeviceLost => -15,
        }
    }
}

/// An error: its class and a message in words. The message names the failing
/// native call and its result where there is one (`"vkAllocateMemory failed with
/// VK_ERROR_OUT_OF_DEVICE_MEMORY"`) and, for problems of the machine (no CUDA
/// driver, no CUDA device with the Vulkan device's UUID), the fix; the C API
/// returns the same text from `vkcuda_last_error_message`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Error {
    /// The failure class.
    pub kind: ErrorKind,
    /// What went wrong, in words.
    pub message: String,
}

/// `std::result::Result` with the library's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message` (for code that wraps the library and
    /// reports its own failures the same way).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// The failure class.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, in words.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The C API's result code ([`ErrorKind::code`]).
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// An [`ErrorKind::InvalidArgument`] error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// An [`ErrorKind::Unsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// An [`ErrorKind::NullPointer`] error: "`what` must not be NULL".
    pub fn null(what: &str) -> Self {
        Self::new(ErrorKind::NullPointer, format!("{what} must not be NULL"))
    }

    /// A failed Vulkan call: `call` is the function name, `r` its `VkResult`.
    pub(crate) fn vk(call: &str, r: vk::Result) -> Self {
        let kind = match r {
            vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
                ErrorKind::OutOfMemory
            }
            vk::Result::ERROR_EXTENSION_NOT_PRESENT => ErrorKind::ExtensionNotPresent,
            vk::Result::ERROR_INVALID_EXTERNAL_HANDLE => ErrorKind::InvalidArgument,
            vk::Result::ERROR_FORMAT_NOT_SUPPORTED => ErrorKind::Unsupported,
            vk::Result::TIMEOUT => ErrorKind::Timeout,
            // Recorded on the device by `VulkanDevice::error`, which knows it.
            vk::Result::ERROR_DEVICE_LOST => ErrorKind::DeviceLost,
            _ => ErrorKind::Vulkan,
        };
        Self::new(kind, format!("{call} failed with {}", vk_result_name(r)))
    }

    /// A failed CUDA driver call: `call` is the function name, `r` its `CUresult`.
    /// Sticky results (a lost context) are the CUDA layer's to record first:
    /// `crate::cuda::error` and `cu_check` there.
    pub(crate) fn cuda(call: &str, r: CUresult) -> Self {
        let kind = match r {
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            CUresult::CUDA_ERROR_NO_DEVICE | CUresult::CUDA_ERROR_STUB_LIBRARY => {
                ErrorKind::CudaUnavailable
            }
            CUresult::CUDA_ERROR_NOT_SUPPORTED => ErrorKind::Unsupported,
            CUresult::CUDA_ERROR_INVALID_HANDLE | CUresult::CUDA_ERROR_INVALID_CONTEXT => {
                ErrorKind::InvalidArgument
            }
            _ => ErrorKind::Cuda,
        };
        Self::new(kind, format!("{call} failed with {r:?}"))
    }

    /// Prefixes the message with more context ("creating a buffer: ...").
    pub fn context(mut self, what: &str) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

/// A problem in words, in two parts: what was seen, and the fix in one sentence.
/// The library's errors for environmental problems (no CUDA driver, a driver too
/// old, no CUDA twin, an extension missing) are made from these, and the doctor
/// (`crate::doctor`) reports the same ones as checks, so a failing call and the
/// doctor never disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Diagnosis {
    pub kind: ErrorKind,
    pub seen: String,
    pub fix: String,
}

impl Diagnosis {
    pub(crate) fn new(kind: ErrorKind, seen: impl Into<String>, fix: impl Into<String>) -> Self {
        Diagnosis {
            kind,
            seen: seen.into(),
            fix: fix.into(),
        }
    }

    /// The error a call returns: "what was seen: the fix".
    pub(crate) fn error(&self) -> Error {
        Error::new(self.kind, format!("{}: {}", self.seen, self.fix))
    }
}

impl From<Diagnosis> for Error {
    fn from(d: Diagnosis) -> Error {
        d.error()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The `VkResult` spelled as in the Vulkan headers (`VK_ERROR_OUT_OF_DEVICE_MEMORY`).
pub(crate) fn vk_result_name(r: vk::Result) -> String {
    let debug = format!("{r:?}");
    if debug
        .chars()
        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    {
        format!("VK_{debug}")
    } else {
        format!("VkResult({})", r.as_raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_spelled_like_the_headers() {
        assert_eq!(
            vk_result_name(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY),
            "VK_ERROR_OUT_OF_DEVICE_MEMORY"
        );
        let e = Error::cuda("cuMemCreate", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(e.kind, ErrorKind::OutOfMemory);
        assert_eq!(
            e.message,
            "cuMemCreate failed with CUDA_ERROR_OUT_OF_MEMORY"
        );
    }
}
