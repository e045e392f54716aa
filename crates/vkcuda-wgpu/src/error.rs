//! The bridge's error: what vkcuda refused, or what the bridge found wrong with the
//! wgpu objects it was given.

use std::fmt;

use crate::{VkcudaError, VkcudaErrorKind};

/// Why a call of the bridge failed. Nothing in the bridge panics on bad input:
/// a wgpu object of another backend or device, a texture vkcuda cannot share or a
/// handoff out of turn comes back as one of these.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// vkcuda failed or refused; its message names the native call and result.
    /// [`Error::cuda_unavailable`] tells "no CUDA driver here" apart.
    Vkcuda(VkcudaError),
    /// A wgpu object of another backend than Vulkan (only Vulkan shares memory
    /// with CUDA). `what` names the object.
    NotVulkan {
        /// The object: "adapter", "device", "queue", ...
        what: &'static str,
    },
    /// A wgpu object or a shared resource that belongs to another `VkDevice` than
    /// the bridge's.
    OtherDevice {
        /// What was given, in words.
        what: String,
    },
    /// The adapter cannot carry vkcuda (a missing extension, Vulkan older than
    /// 1.2, no timeline semaphores), or wgpu refused to open the device.
    Unsupported(String),
    /// A descriptor the bridge cannot share (a mappable buffer, a multisampled
    /// texture, ...), named in the message.
    InvalidArgument(String),
    /// A handoff out of turn: acquiring what CUDA does not hold, releasing what it
    /// already holds, or a timeline value that does not move forward.
    InvalidState(String),
}

impl Error {
    /// Whether this is vkcuda's CUDA_UNAVAILABLE: no CUDA driver (or a Vulkan-only
    /// bridge). Programs skip their CUDA half on it.
    pub fn cuda_unavailable(&self) -> bool {
        matches!(self, Error::Vkcuda(e) if e.kind == VkcudaErrorKind::CudaUnavailable)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Vkcuda(e) => write!(f, "vkcuda: {e}"),
            Error::NotVulkan { what } => write!(
                f,
                "the wgpu {what} is not on the Vulkan backend: only Vulkan devices share memory \
                 with CUDA (create the wgpu instance with Backends::VULKAN)"
            ),
            Error::OtherDevice { what } => write!(f, "{what} belongs to another VkDevice"),
            Error::Unsupported(m) | Error::InvalidArgument(m) | Error::InvalidState(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<VkcudaError> for Error {
    fn from(e: VkcudaError) -> Self {
        Error::Vkcuda(e)
    }
}

/// The bridge's result.
pub type Result<T> = std::result::Result<T, Error>;
