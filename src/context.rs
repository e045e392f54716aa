//! The context: one `VkDevice` paired with one CUDA device, matched by UUID.
//!
//! Every object is made from a context and holds it (an [`Arc`]), so a context
//! lives until the last buffer, image, semaphore and DLPack tensor made from it
//! is gone, whatever the order they are dropped in. A context is made either
//! over the engine's own device ([`Context::from_engine`]: the engine creates its
//! `VkDevice` with the extensions of [`pairing::DEVICE_EXTENSIONS`](crate::pairing::DEVICE_EXTENSIONS)
//! and the `timelineSemaphore` feature) or standalone, with an instance, device
//! and queue of its own ([`Context::standalone`]: tools, tests, examples).
//!
//! ```
//! use vkcuda::context::CudaChoice;
//! use vkcuda::Context;
//!
//! # fn main() -> vkcuda::Result<()> {
//! // Vulkan only: runs without a GPU (lavapipe), every CUDA call reports
//! // ErrorKind::CudaUnavailable. CudaChoice::Primary pairs with the CUDA device
//! // of the same UUID.
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! let vk = ctx.vulkan_handles();
//! let (family, _queue) = vk.queue.expect("a standalone context has a queue");
//! println!("queue family {family} of {:?}", vk.device);
//! assert!(ctx.cuda_info().is_err());
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use cudarc::driver::sys;

use super::cuda::{self, CudaContext};
use super::vulkan::{standalone, VulkanDevice};
use crate::error::{Error, ErrorKind, Result};
use crate::lost;
use crate::pairing::{match_device, mismatch};

/// How the CUDA side of a context is chosen.
#[derive(Clone, Copy, Debug)]
pub enum CudaChoice {
    /// The primary context of the CUDA device whose UUID equals the Vulkan
    /// device's (the default: the CUDA runtime API, PyTorch and CuPy use it too,
    /// so pointers are valid in their code as they are).
    Primary,
    /// A context the caller created, checked to be on the matching device.
    Borrowed(BorrowedCudaContext),
    /// No CUDA at all: only the Vulkan half works (creating, exporting and
    /// importing); CUDA calls return [`ErrorKind::CudaUnavailable`].
    None,
}

/// A `CUcontext` the caller created and keeps alive for longer than the
/// [`Context`] made with it ([`CudaChoice::Borrowed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BorrowedCudaContext(sys::CUcontext);

impl BorrowedCudaContext {
    /// Wraps a raw `CUcontext`.
    ///
    /// # Safety
    /// `context` is a live CUDA context (made by `cuCtxCreate`, or a primary
    /// context retained by the caller) that stays alive until every object made
    /// with a context from it is dropped.
    pub unsafe fn from_raw(context: sys::CUcontext) -> Self {
        BorrowedCudaContext(context)
    }

    /// The raw `CUcontext`.
    pub fn as_raw(self) -> sys::CUcontext {
        self.0
    }
}

// SAFETY: a CUcontext is a driver handle that may be used from any thread.
unsafe impl Send for BorrowedCudaContext {}
unsafe impl Sync for BorrowedCudaContext {}

pub use super::vulkan::features::EnabledFeatures;
pub use super::vulkan::EngineHandles;

/// Whether any context of this process has recorded a loss (a sticky CUDA error
/// or `VK_ERROR_DEVICE_LOST`): one relaxed atomic load, for callers that check
/// before every call on many objects ([`Context::check_lost`] says which).
#[inline]
pub fn any_lost() -> bool {
    lost::any()
}

/// A Vulkan device paired with the CUDA device of the same UUID: what every
/// buffer, image and semaphore is made from.
///
/// Made as an `Arc<Context>` ([`from_engine`](Self::from_engine),
/// [`standalone`](Self::standalone)); each object keeps a reference, so the
/// context (and a standalone context's device) lives until the last of them
/// is dropped.
///
/// Thread-safety: `Send` and `Sync`; every method may be called from any
/// number of threads at once.
pub struct Context {
    pub(super) vk: VulkanDevice,
    pub(super) cuda: Option<Arc<CudaContext>>,
}

/// A context's Vulkan handles: the engine's, or those a standalone context made
/// (owned by the context: valid while it lives).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct VulkanHandles {
    /// The instance.
    pub instance: ash::vk::Instance,
    /// The physical device the context is paired on.
    pub physical_device: ash::vk::PhysicalDevice,
    /// The device every object of the context is made on.
    pub device: ash::vk::Device,
    /// The entry point the context loaded its functions from (load an
    /// `ash::Instance` and `ash::Device` with it to record your own work).
    pub get_instance_proc_addr: ash::vk::PFN_vkGetInstanceProcAddr,
    /// A standalone context's queue family (compute and transfer, graphics where
    /// there is one) and queue, externally synchronised like any `VkQueue`; `None`
    /// on the engine's device.
    pub queue: Option<(u32, ash::vk::Queue)>,
}

/// A context's CUDA side.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct CudaInfo {
    /// The `CUcontext` the library works in (by default the device's primary
    /// context). Owned by the library (primary: retained) or by the caller
    /// (borrowed); valid while the context lives.
    pub context: sys::CUcontext,
    /// The `CUdevice`.
    pub device: sys::CUdevice,
    /// The device's ordinal.
    pub ordinal: i32,
    /// The device's primary context (not one the caller passed in).
    pub primary: bool,
    /// The CUDA device's UUID (equal to the Vulkan device's).
    pub uuid: [u8; 16],
}

impl Drop for Context {
    fn drop(&mut self) {
        // The CUDA side goes first; `vk` (a standalone device) drops after this.
        self.cuda = None;
        lost::close_device(ash::vk::Handle::as_raw(self.vk.device.handle()));
        crate::stats::CONTEXTS.sub();
    }
}

fn made(vk: VulkanDevice, cuda: Option<Arc<CudaContext>>) -> Result<Arc<Context>> {
    // A device handle with no live context is a new device (its old loss is
    // forgotten); one with live contexts is the same device, lost or not
    // (`lost::open_device`). Balanced in `Drop`.
    lost::open_device(ash::vk::Handle::as_raw(vk.device.handle()))?;
    crate::stats::CONTEXTS.add();
    Ok(Arc::new(Context { vk, cuda }))
}

impl Context {
    /// Pairs the engine's `VkDevice` with the CUDA device of the same UUID (as
    /// `choice` says). Every entry point is loaded through
    /// `handles.get_instance_proc_addr`; the library never links `libvulkan`.
    ///
    /// Errors: [`ErrorKind::CudaUnavailable`] without a CUDA driver,
    /// [`ErrorKind::DeviceMismatch`] when no CUDA device has the Vulkan device's
    /// UUID (the message names both), [`ErrorKind::InvalidArgument`] when a command
    /// the library calls does not resolve (an instance made for Vulkan 1.0 or 1.1),
    /// [`ErrorKind::DeviceLost`] when the device is lost and objects of a context
    /// on it are still alive (once they are all dropped, a context on the same
    /// handle value is a new device and starts clean),
    /// and [`ErrorKind::ExtensionNotPresent`] later, from the first call that needs
    /// an extension the device was created without.
    ///
    /// The context cannot ask the device which optional features and extensions
    /// the engine enabled, so its handoff barriers accept only the pipeline stages
    /// and accesses that every device has (no geometry or tessellation shader
    /// stage, no extension's stage or access); tell it more with
    /// [`from_engine_with_features`](Self::from_engine_with_features).
    ///
    /// # Safety
    /// The handles are the engine's live `VkInstance`, the `VkPhysicalDevice` its
    /// `VkDevice` was created on, that device, and the instance's
    /// `vkGetInstanceProcAddr` (and `vkGetDeviceProcAddr`); the instance is made for
    /// Vulkan 1.2 or later. They are borrowed: they must outlive the returned
    /// context and every object made from it. A [`CudaChoice::Borrowed`] context
    /// must be on the same device.
    pub unsafe fn from_engine(handles: &EngineHandles, choice: CudaChoice) -> Result<Arc<Context>> {
        Self::from_engine_with_features(handles, &EnabledFeatures::default(), choice)
    }

    /// [`from_engine`](Self::from_engine) for a device on which the engine enabled
    /// `features` (read them from its `VkDeviceCreateInfo` with
    /// [`EnabledFeatures::from_device_create_info`]): the handoff barriers then also
    /// accept the stages and accesses those features and extensions bring, and are
    /// recorded with `vkCmdPipelineBarrier2` when `features.synchronization2` is set
    /// (as with `handles.synchronization2`).
    ///
    /// # Safety
    /// As for [`from_engine`](Self::from_engine); and `features` says no more than
    /// the engine enabled on the device.
    pub unsafe fn from_engine_with_features(
        handles: &EngineHandles,
        features: &EnabledFeatures,
        choice: CudaChoice,
    ) -> Result<Arc<Context>> {
        let vk = VulkanDevice::from_engine(handles, features)?;
        let cuda = pair(&vk, choice)?;
        made(vk, cuda)
    }

    /// What the context knows is enabled on its device, of the features and
    /// extensions the handoff barriers depend on: what the engine said
    /// ([`from_engine_with_features`](Self::from_engine_with_features)), nothing
    /// for [`from_engine`](Self::from_engine), and what a standalone context
    /// enabled itself (synchronization2 where the device has it).
    pub fn enabled_features(&self) -> EnabledFeatures {
        *self.vk.rules.features()
    }

    /// Creates a Vulkan instance and device of the library's own (every interop
    /// extension the device has, timeline semaphores, synchronization2 where the
    /// device has it, one queue) and pairs them with CUDA. `index` picks a device
    /// of `vkEnumeratePhysicalDevices`; `None` takes the first that matches a CUDA
    /// device (or, with [`CudaChoice::None`], the first with the extensions).
    /// Loads `libvulkan.so.1` ([`ErrorKind::VulkanUnavailable`] if missing).
    ///
    /// The library serialises the creation and destruction of the instances and
    /// devices it makes itself (NVIDIA's driver crashed when 8 threads did them at
    /// once), so concurrent calls wait for each other.
    pub fn standalone(index: Option<usize>, choice: CudaChoice) -> Result<Arc<Context>> {
        // Find the CUDA devices first so the Vulkan device can be picked to match.
        let cuda_devices = match choice {
            CudaChoice::None => None,
            _ => Some(cuda::devices()?),
        };
        let matcher = |uuid: &[u8; 16]| {
            cuda_devices
                .as_ref()
                .map(|list| list.iter().any(|d| &d.uuid == uuid))
                .unwrap_or(false)
        };
        let pick = standalone::Choice {
            index,
            cuda_match: cuda_devices
                .as_ref()
                .map(|_| &matcher as &dyn Fn(&[u8; 16]) -> bool),
        };
        let vk = standalone::create(&pick)?;
        let cuda = pair(&vk, choice)?;
        made(vk, cuda)
    }

    /// [`ErrorKind::DeviceLost`] when this context's CUDA context hit a sticky
    /// error or its `VkDevice` was lost, naming the first error. One atomic load
    /// while nothing in the process is lost. (The C API makes this check before
    /// every call on an object of the context; in Rust, a call that reaches the
    /// lost driver returns its error, and this is the check to make first.)
    #[inline]
    pub fn check_lost(&self) -> Result<()> {
        if !lost::any() {
            return Ok(());
        }
        self.lost_slow()
    }

    #[cold]
    fn lost_slow(&self) -> Result<()> {
        let vk = lost::Key::Vulkan(ash::vk::Handle::as_raw(self.vk.device.handle()));
        match &self.cuda {
            Some(c) => lost::check(&[lost::Key::Cuda(c.raw() as usize), vk]),
            None => lost::check(&[vk]),
        }
    }

    /// The context's Vulkan handles.
    pub fn vulkan_handles(&self) -> VulkanHandles {
        let v = &self.vk;
        VulkanHandles {
            instance: v.instance.handle(),
            physical_device: v.physical,
            device: v.device.handle(),
            get_instance_proc_addr: v.get_instance_proc_addr,
            queue: v.owned.as_ref().map(|o| (o.queue_family_index, o.queue)),
        }
    }

    /// The CUDA side, or [`ErrorKind::CudaUnavailable`] for a Vulkan-only context.
    pub fn cuda_info(&self) -> Result<CudaInfo> {
        let c = self.cuda()?;
        Ok(CudaInfo {
            context: c.raw(),
            device: c.device().device,
            ordinal: c.device().ordinal,
            primary: c.is_primary(),
            uuid: c.device().uuid,
        })
    }

    /// Checks that `stream` is a stream of this context's CUDA context (the check
    /// every call that enqueues work on a caller's stream makes): a stream of
    /// another device is refused naming both devices
    /// ([`ErrorKind::DeviceMismatch`]), a handle the driver does not know as a
    /// stream with [`ErrorKind::Cuda`]. The default streams (null,
    /// `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`) always are.
    // A CUstream is an opaque driver handle, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn check_stream(&self, stream: sys::CUstream) -> Result<()> {
        let c = self.cuda()?;
        let _current = c.enter()?;
        c.check_stream(stream)
    }

    /// The CUDA context, or CUDA_UNAVAILABLE for a Vulkan-only context.
    pub(super) fn cuda(&self) -> Result<&Arc<CudaContext>> {
        self.cuda.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::CudaUnavailable,
                "this context was created with VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT and has no CUDA side",
            )
        })
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.vk.device.handle())
            .field("name", &self.vk.props.name)
            .field("standalone", &self.vk.owned.is_some())
            .field(
                "cuda_ordinal",
                &self.cuda.as_ref().map(|c| c.device().ordinal),
            )
            .finish()
    }
}

fn pair(vk: &VulkanDevice, choice: CudaChoice) -> Result<Option<Arc<CudaContext>>> {
    let uuid = vk.props.uuid;
    match choice {
        CudaChoice::None => Ok(None),
        CudaChoice::Primary => {
            let info = match_device(&vk.props.name, &uuid, &cuda::devices()?)?;
            Ok(Some(Arc::new(CudaContext::primary(info)?)))
        }
        CudaChoice::Borrowed(ctx) => {
            let c = CudaContext::borrowed(ctx.as_raw())?;
            if c.device().uuid != uuid {
                return Err(
                    mismatch(&vk.props.name, &uuid, std::slice::from_ref(c.device()))
                        .context("the CUcontext passed in belongs to another device"),
                );
            }
            Ok(Some(Arc::new(c)))
        }
    }
}
