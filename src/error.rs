//! The library's error type: a failure class (which becomes the C result code)
//! and a message in words that names the failing native call and its result.

use std::fmt;

use ash::vk;
use cudarc::driver::sys::CUresult;

/// The failure classes; each maps to one `vkcuda_result` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
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
    Panic,
    InvalidState,
    PermissionDenied,
    /// A sticky CUDA error or `VK_ERROR_DEVICE_LOST` (see `crate::lost`).
    DeviceLost,
}

/// An error with its class and a message for the thread-local last-error string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    pub fn null(what: &str) -> Self {
        Self::new(ErrorKind::NullPointer, format!("{what} must not be NULL"))
    }

    /// A failed Vulkan call: `call` is the function name, `r` its `VkResult`.
    pub fn vk(call: &str, r: vk::Result) -> Self {
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
    pub fn cuda(call: &str, r: CUresult) -> Self {
        if crate::lost::is_sticky(r) {
            return crate::lost::cuda(call, r);
        }
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
pub struct Diagnosis {
    pub kind: ErrorKind,
    pub seen: String,
    pub fix: String,
}

impl Diagnosis {
    pub fn new(kind: ErrorKind, seen: impl Into<String>, fix: impl Into<String>) -> Self {
        Diagnosis {
            kind,
            seen: seen.into(),
            fix: fix.into(),
        }
    }

    /// The error a call returns: "what was seen: the fix".
    pub fn error(&self) -> Error {
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
pub fn vk_result_name(r: vk::Result) -> String {
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

/// Turns a `CUresult` into `Ok` or an [`Error`] naming the call.
pub fn cu_check(call: &str, r: CUresult) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::cuda(call, r))
    }
}

/// Turns a `VkResult` into `Ok` or an [`Error`] naming the call.
pub fn vk_check(call: &str, r: vk::Result) -> Result<()> {
    if r == vk::Result::SUCCESS {
        Ok(())
    } else {
        Err(Error::vk(call, r))
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
