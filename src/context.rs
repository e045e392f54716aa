//! The context: one `VkDevice` paired with one CUDA device, matched by UUID.

use std::sync::Arc;

use cudarc::driver::sys;

use super::cuda::{self, CudaContext};
use super::vulkan::{standalone, VulkanDevice};
use crate::error::{Error, ErrorKind, Result};
use crate::lost;
use crate::pairing::{match_device, mismatch};

/// How the CUDA side of a context is chosen.
pub enum CudaChoice {
    /// The primary context of the CUDA device whose UUID equals the Vulkan device's.
    Primary,
    /// A context the caller created (checked to be on the matching device).
    Borrowed(sys::CUcontext),
    /// No CUDA at all: only the Vulkan half works; CUDA calls report CUDA_UNAVAILABLE.
    None,
}

pub use super::vulkan::EngineHandles;

pub struct Context {
    pub(super) vk: VulkanDevice,
    pub(super) cuda: Option<Arc<CudaContext>>,
}

/// A context's Vulkan handles: the engine's, or those a standalone context made.
#[derive(Clone, Copy, Debug)]
pub struct VulkanHandles {
    pub instance: ash::vk::Instance,
    pub physical_device: ash::vk::PhysicalDevice,
    pub device: ash::vk::Device,
    pub get_instance_proc_addr: ash::vk::PFN_vkGetInstanceProcAddr,
    /// A standalone context's queue family and queue; None on the engine's device.
    pub queue: Option<(u32, ash::vk::Queue)>,
}

/// A context's CUDA side.
#[derive(Clone, Copy, Debug)]
pub struct CudaInfo {
    pub context: sys::CUcontext,
    pub device: sys::CUdevice,
    pub ordinal: i32,
    /// The device's primary context (not one the caller passed in).
    pub primary: bool,
    pub uuid: [u8; 16],
}

impl Drop for Context {
    fn drop(&mut self) {
        // The CUDA side goes first; `vk` (a standalone device) drops after this.
        self.cuda = None;
        crate::stats::CONTEXTS.sub();
    }
}

fn made(vk: VulkanDevice, cuda: Option<Arc<CudaContext>>) -> Arc<Context> {
    // A context made from a device handle: that handle names a live device now.
    lost::forget(lost::Key::Vulkan(ash::vk::Handle::as_raw(
        vk.device.handle(),
    )));
    crate::stats::CONTEXTS.add();
    Arc::new(Context { vk, cuda })
}

impl Context {
    /// Pairs the engine's device with CUDA.
    pub fn from_engine(handles: &EngineHandles, choice: CudaChoice) -> Result<Arc<Context>> {
        let vk = VulkanDevice::from_engine(handles)?;
        let cuda = pair(&vk, choice)?;
        Ok(made(vk, cuda))
    }

    /// Creates a Vulkan instance and device, then pairs them with CUDA.
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
        Ok(made(vk, cuda))
    }

    /// `DeviceLost` when this context's CUDA context hit a sticky error or its
    /// `VkDevice` was lost (`crate::lost`), naming the first error. One atomic load
    /// while nothing in the process is lost.
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

    /// The CUDA side, or CUDA_UNAVAILABLE for a Vulkan-only context.
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
    /// another device is refused naming both devices. The default streams (0,
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

fn pair(vk: &VulkanDevice, choice: CudaChoice) -> Result<Option<Arc<CudaContext>>> {
    let uuid = vk.props.uuid;
    match choice {
        CudaChoice::None => Ok(None),
        CudaChoice::Primary => {
            let info = match_device(&vk.props.name, &uuid, &cuda::devices()?)?;
            Ok(Some(Arc::new(CudaContext::primary(info)?)))
        }
        CudaChoice::Borrowed(ctx) => {
            let c = CudaContext::borrowed(ctx)?;
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
