//! The Vulkan side, through `ash` function tables loaded from the caller's
//! `vkGetInstanceProcAddr` (the library never links `libvulkan` for this path).

pub mod handoff;
pub mod image;
pub mod memory;
pub mod semaphore;
pub mod standalone;
pub mod support;

use std::ffi::{c_char, c_void, CStr};

use ash::vk;

use crate::error::{Diagnosis, Error, ErrorKind, Result};

pub use support::{DeviceProps, Support};

/// The device extensions the library uses, in the order it reports them.
pub const DEVICE_EXTENSIONS: [&CStr; 2] = [
    ash::khr::external_memory_fd::NAME,
    ash::khr::external_semaphore_fd::NAME,
];

/// The lowest Vulkan version the library works with (timeline semaphores are core).
pub const MIN_API_VERSION: u32 = vk::API_VERSION_1_2;

/// A `VkDevice` with the function tables the library needs. Borrowed from the
/// engine (`owned` is `None`) or created by the standalone constructor.
pub struct VulkanDevice {
    /// The entry point every function was loaded from.
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub instance: ash::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub memory_fd: Option<ash::khr::external_memory_fd::DeviceFn>,
    pub semaphore_fd: Option<ash::khr::external_semaphore_fd::DeviceFn>,
    /// `vkCmdPipelineBarrier2` (or its KHR alias) where the device has the
    /// `synchronization2` feature enabled: the handoff barriers use it then.
    pub sync2: Option<vk::PFN_vkCmdPipelineBarrier2>,
    pub props: DeviceProps,
    /// For a standalone context: the queue it created, and the entry to keep the
    /// loader loaded. Its device and instance are destroyed with this value.
    pub owned: Option<standalone::Owned>,
    /// What kind of file this device's exported memory fds are (learned once).
    pub export_format: std::sync::OnceLock<Option<memory::ExportFormat>>,
}

impl VulkanDevice {
    /// The error for a failed Vulkan call on this device; `VK_ERROR_DEVICE_LOST`
    /// also records the device as lost (`crate::lost`), so every later call on it
    /// is refused with the same message.
    pub fn error(&self, call: &str, r: vk::Result) -> crate::error::Error {
        if r == vk::Result::ERROR_DEVICE_LOST {
            crate::lost::vulkan(self.device.handle(), call)
        } else {
            crate::error::Error::vk(call, r)
        }
    }

    /// `Ok` for `SUCCESS`, else [`Self::error`].
    pub fn check(&self, call: &str, r: vk::Result) -> crate::error::Result<()> {
        if r == vk::Result::SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, r))
        }
    }
}

// SAFETY: Vulkan handles and function pointers may be used from any thread; the
// objects that need external synchronisation say so in the C header.
unsafe impl Send for VulkanDevice {}
unsafe impl Sync for VulkanDevice {}

/// The caller's entry points.
#[derive(Clone, Copy)]
pub struct EngineHandles {
    pub instance: vk::Instance,
    pub physical: vk::PhysicalDevice,
    pub device: vk::Device,
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    /// The engine enabled the `synchronization2` feature on its device.
    pub synchronization2: bool,
}

/// Loads the instance table from the caller's `vkGetInstanceProcAddr`.
pub fn load_instance(
    gipa: vk::PFN_vkGetInstanceProcAddr,
    instance: vk::Instance,
) -> Result<ash::Instance> {
    let name = c"vkGetPhysicalDeviceProperties2";
    // SAFETY: gipa is the caller's loader entry point and instance its instance.
    let probe = unsafe { gipa(instance, name.as_ptr()) };
    if probe.is_none() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "vkGetInstanceProcAddr returned NULL for vkGetPhysicalDeviceProperties2: the instance \
             must be a valid VkInstance created with apiVersion VK_API_VERSION_1_2 or later",
        ));
    }
    let static_fn = ash::StaticFn {
        get_instance_proc_addr: gipa,
    };
    // SAFETY: as above.
    Ok(unsafe { ash::Instance::load(&static_fn, instance) })
}

impl VulkanDevice {
    /// Wraps the engine's device. Functions of extensions the engine did not enable
    /// resolve to NULL and leave the matching `Option` empty.
    pub fn from_engine(h: &EngineHandles) -> Result<Self> {
        if h.physical == vk::PhysicalDevice::null() {
            return Err(Error::null("physical_device"));
        }
        if h.device == vk::Device::null() {
            return Err(Error::null("device"));
        }
        let instance = load_instance(h.get_instance_proc_addr, h.instance)?;
        let props = support::device_props(&instance, h.physical)?;
        let gdpa: vk::PFN_vkGetDeviceProcAddr = match h.get_device_proc_addr {
            Some(f) => f,
            None => instance.fp_v1_0().get_device_proc_addr,
        };
        // SAFETY: the loader closures only resolve names on the caller's device.
        let load = |name: &CStr| -> *const c_void {
            unsafe {
                std::mem::transmute::<vk::PFN_vkVoidFunction, *const c_void>(gdpa(
                    h.device,
                    name.as_ptr(),
                ))
            }
        };
        if load(c"vkCreateBuffer").is_null() {
            return Err(Error::invalid(
                "vkGetDeviceProcAddr returned NULL for vkCreateBuffer: the device is not a valid VkDevice \
                 of this instance",
            ));
        }
        let device = unsafe { ash::Device::load_with(load, h.device) };
        let memory_fd = (!load(c"vkGetMemoryFdKHR").is_null())
            .then(|| ash::khr::external_memory_fd::DeviceFn::load(load));
        let semaphore_fd = (!load(c"vkGetSemaphoreFdKHR").is_null())
            .then(|| ash::khr::external_semaphore_fd::DeviceFn::load(load));
        let sync2 = if h.synchronization2 {
            Some(load_barrier2(load).ok_or_else(|| {
                Error::new(
                    ErrorKind::ExtensionNotPresent,
                    "VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT is set, but vkCmdPipelineBarrier2 and \
                     vkCmdPipelineBarrier2KHR resolve to NULL on the VkDevice: create it with Vulkan 1.3 \
                     or VK_KHR_synchronization2 and the synchronization2 feature, or leave the flag out",
                )
            })?)
        } else {
            None
        };
        Ok(VulkanDevice {
            get_instance_proc_addr: h.get_instance_proc_addr,
            instance,
            physical: h.physical,
            device,
            memory_fd,
            semaphore_fd,
            sync2,
            props,
            owned: None,
            export_format: std::sync::OnceLock::new(),
        })
    }

    pub fn memory_fd(&self) -> Result<&ash::khr::external_memory_fd::DeviceFn> {
        self.memory_fd.as_ref().ok_or_else(|| {
            self.missing_extension(ash::khr::external_memory_fd::NAME, "buffers and images")
        })
    }

    /// The error for an extension whose functions resolved to NULL: the device does
    /// not support it at all, or the engine did not enable it.
    fn missing_extension(&self, name: &CStr, what: &str) -> Error {
        self.missing_extension_diagnosis(name, what).error()
    }

    /// [`missing_extension`](Self::missing_extension) as what was seen and the fix:
    /// the doctor reports an engine's device with these same words.
    pub fn missing_extension_diagnosis(&self, name: &CStr, what: &str) -> Diagnosis {
        let ext = name.to_string_lossy();
        match support::has_extension(&self.instance, self.physical, name) {
            Some(false) => Diagnosis::new(
                ErrorKind::ExtensionNotPresent,
                format!(
                    "the device '{}' does not support {ext} (vkEnumerateDeviceExtensionProperties does not list it), \
                     so {what} cannot be shared with CUDA on it",
                    self.props.name
                ),
                "use a device that has it; vkcuda_physical_device_query tells this before a device is created",
            ),
            _ => Diagnosis::new(
                ErrorKind::ExtensionNotPresent,
                format!("{ext} is not enabled on the VkDevice (its functions resolve to NULL)"),
                "add it to VkDeviceCreateInfo::ppEnabledExtensionNames (vkcuda_device_extensions_enumerate lists \
                 what to enable; vkcuda_physical_device_query says whether the device has it)",
            ),
        }
    }

    pub fn semaphore_fd(&self) -> Result<&ash::khr::external_semaphore_fd::DeviceFn> {
        self.semaphore_fd.as_ref().ok_or_else(|| {
            self.missing_extension(ash::khr::external_semaphore_fd::NAME, "semaphores")
        })
    }
}

/// `vkCmdPipelineBarrier2`, or the KHR alias, from a device loader.
pub fn load_barrier2(
    load: impl Fn(&CStr) -> *const c_void,
) -> Option<vk::PFN_vkCmdPipelineBarrier2> {
    [c"vkCmdPipelineBarrier2", c"vkCmdPipelineBarrier2KHR"]
        .into_iter()
        .map(&load)
        .find(|p| !p.is_null())
        // SAFETY: a non-NULL pointer returned for this name is that command.
        .map(|p| unsafe { std::mem::transmute::<*const c_void, vk::PFN_vkCmdPipelineBarrier2>(p) })
}

/// A static C string list for the C API (names live for the whole program).
pub fn extension_name_ptrs() -> [*const c_char; 2] {
    DEVICE_EXTENSIONS.map(|n| n.as_ptr())
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        if let Some(owned) = self.owned.take() {
            owned.destroy(&self.instance, &self.device);
        }
    }
}
