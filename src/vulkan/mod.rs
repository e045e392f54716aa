//! The Vulkan side, through `ash` function tables loaded from the caller's
//! `vkGetInstanceProcAddr` (the library never links `libvulkan` for this path).

pub mod batch;
pub mod features;
pub mod handoff;
pub mod image;
pub mod memory;
pub mod semaphore;
pub mod staging;
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
    /// What the handoff barriers may name (stages, accesses per queue family),
    /// from the barrier call and the features the context knows are enabled.
    pub rules: handoff::Rules,
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

/// The engine's handles for [`Context::from_engine`](crate::Context::from_engine)
/// (and the doctor's engine checks). With `ash`: `instance.handle()`,
/// `device.handle()` and `entry.static_fn().get_instance_proc_addr`.
#[derive(Clone, Copy, Debug)]
pub struct EngineHandles {
    /// The engine's instance, made with `VkApplicationInfo::apiVersion` 1.2 or later.
    pub instance: vk::Instance,
    /// The physical device the engine's device was created on.
    pub physical: vk::PhysicalDevice,
    /// The engine's device, created with the extensions of
    /// [`pairing::DEVICE_EXTENSIONS`](crate::pairing::DEVICE_EXTENSIONS) that the
    /// device supports and the `timelineSemaphore` feature.
    pub device: vk::Device,
    /// The engine's `vkGetInstanceProcAddr`: every entry point is loaded from it.
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// The engine's `vkGetDeviceProcAddr`, or `None` to load it from the instance.
    pub get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    /// The engine enabled the `synchronization2` feature on its device: the
    /// handoff barriers are then recorded with `vkCmdPipelineBarrier2` (as they are
    /// when [`EnabledFeatures::synchronization2`](features::EnabledFeatures::synchronization2)
    /// says so, for [`Context::from_engine_with_features`](crate::Context::from_engine_with_features)).
    pub synchronization2: bool,
}

/// Every instance-level command the library calls through `ash::Instance`, with
/// the Vulkan version it is core in. ash resolves a table of every command and
/// puts a stub that panics ("Unable to load ...") where the loader returned
/// NULL; that panic would abort the process inside an `extern "C"` call, so each
/// command here is checked to resolve before the table is used. The unit test
/// `every_ash_call_is_checked_at_create` keeps this list and the code in step.
pub const INSTANCE_COMMANDS: [(&CStr, u32); 14] = [
    (c"vkGetPhysicalDeviceProperties2", vk::API_VERSION_1_1),
    (c"vkGetPhysicalDeviceFeatures2", vk::API_VERSION_1_1),
    (
        c"vkGetPhysicalDeviceExternalBufferProperties",
        vk::API_VERSION_1_1,
    ),
    (
        c"vkGetPhysicalDeviceExternalSemaphoreProperties",
        vk::API_VERSION_1_1,
    ),
    (
        c"vkGetPhysicalDeviceImageFormatProperties2",
        vk::API_VERSION_1_1,
    ),
    (c"vkGetPhysicalDeviceProperties", vk::API_VERSION_1_0),
    (c"vkGetPhysicalDeviceMemoryProperties", vk::API_VERSION_1_0),
    (c"vkGetPhysicalDeviceFormatProperties", vk::API_VERSION_1_0),
    (
        c"vkGetPhysicalDeviceQueueFamilyProperties",
        vk::API_VERSION_1_0,
    ),
    (c"vkEnumerateDeviceExtensionProperties", vk::API_VERSION_1_0),
    (c"vkEnumeratePhysicalDevices", vk::API_VERSION_1_0),
    (c"vkGetDeviceProcAddr", vk::API_VERSION_1_0),
    (c"vkCreateDevice", vk::API_VERSION_1_0),
    (c"vkDestroyInstance", vk::API_VERSION_1_0),
];

/// Every device-level command the library calls through `ash::Device`, with the
/// Vulkan version it is core in (see [`INSTANCE_COMMANDS`]). A device of an
/// instance created with an older `apiVersion` resolves the newer ones to NULL
/// (the instance's extensions do not bring them back under their core names).
pub const DEVICE_COMMANDS: [(&CStr, u32); 25] = [
    (c"vkCreateBuffer", vk::API_VERSION_1_0),
    (c"vkDestroyBuffer", vk::API_VERSION_1_0),
    (c"vkCreateImage", vk::API_VERSION_1_0),
    (c"vkDestroyImage", vk::API_VERSION_1_0),
    (c"vkAllocateMemory", vk::API_VERSION_1_0),
    (c"vkFreeMemory", vk::API_VERSION_1_0),
    (c"vkBindBufferMemory", vk::API_VERSION_1_0),
    (c"vkBindImageMemory", vk::API_VERSION_1_0),
    (c"vkGetBufferMemoryRequirements", vk::API_VERSION_1_0),
    (c"vkGetImageSubresourceLayout", vk::API_VERSION_1_0),
    (c"vkCreateSemaphore", vk::API_VERSION_1_0),
    (c"vkDestroySemaphore", vk::API_VERSION_1_0),
    (c"vkCmdPipelineBarrier", vk::API_VERSION_1_0),
    (c"vkCmdBlitImage", vk::API_VERSION_1_0),
    (c"vkCmdCopyBufferToImage", vk::API_VERSION_1_0),
    (c"vkCmdCopyImageToBuffer", vk::API_VERSION_1_0),
    (c"vkGetDeviceQueue", vk::API_VERSION_1_0),
    (c"vkDeviceWaitIdle", vk::API_VERSION_1_0),
    (c"vkDestroyDevice", vk::API_VERSION_1_0),
    (c"vkGetBufferMemoryRequirements2", vk::API_VERSION_1_1),
    (c"vkGetImageMemoryRequirements2", vk::API_VERSION_1_1),
    (c"vkBindImageMemory2", vk::API_VERSION_1_1),
    (c"vkBindBufferMemory2", vk::API_VERSION_1_1),
    (c"vkGetSemaphoreCounterValue", vk::API_VERSION_1_2),
    (c"vkSignalSemaphore", vk::API_VERSION_1_2),
];

fn version_name(v: u32) -> String {
    format!("{}.{}", vk::api_version_major(v), vk::api_version_minor(v))
}

/// The first command of `commands` that `resolve` returns NULL for, as an error
/// that names the `apiVersion` the instance was evidently created with (the
/// version below the one the command is core in). `how` names the resolver.
fn check_commands(
    commands: &[(&CStr, u32)],
    resolve: impl Fn(&CStr) -> bool,
    how: &str,
) -> Result<()> {
    // Oldest first, so the message names the lowest version that is missing.
    let missing = commands
        .iter()
        .filter(|(name, _)| !resolve(name))
        .min_by_key(|(_, v)| *v);
    let Some(&(name, core_in)) = missing else {
        return Ok(());
    };
    let name = name.to_string_lossy();
    let msg = if core_in > vk::API_VERSION_1_0 {
        let seen = vk::make_api_version(0, 1, vk::api_version_minor(core_in) - 1, 0);
        format!(
            "{how} returns NULL for {name}, core in Vulkan {}: the VkInstance was created with \
             VkApplicationInfo::apiVersion {} (its {}+ commands do not resolve, whatever extensions \
             an older engine enables for them), and vkcuda needs apiVersion VK_API_VERSION_1_2 or later",
            version_name(core_in),
            version_name(seen),
            version_name(core_in),
        )
    } else {
        format!(
            "{how} returns NULL for {name}, a Vulkan 1.0 command: the handles are not a valid \
             VkInstance and VkDevice of this vkGetInstanceProcAddr"
        )
    };
    Err(Error::new(ErrorKind::InvalidArgument, msg))
}

/// Loads the instance table from the caller's `vkGetInstanceProcAddr`, after
/// checking that every command of [`INSTANCE_COMMANDS`] resolves (nothing is
/// called before).
pub fn load_instance(
    gipa: vk::PFN_vkGetInstanceProcAddr,
    instance: vk::Instance,
) -> Result<ash::Instance> {
    // SAFETY: gipa is the caller's loader entry point and instance its instance.
    check_commands(
        &INSTANCE_COMMANDS,
        |name| unsafe { gipa(instance, name.as_ptr()) }.is_some(),
        "vkGetInstanceProcAddr",
    )?;
    let static_fn = ash::StaticFn {
        get_instance_proc_addr: gipa,
    };
    // SAFETY: as above.
    Ok(unsafe { ash::Instance::load(&static_fn, instance) })
}

impl VulkanDevice {
    /// Wraps the engine's device, on which the engine enabled `features` (the
    /// handoff barriers' rules follow them). Functions of extensions the engine did
    /// not enable resolve to NULL and leave the matching `Option` empty.
    pub fn from_engine(h: &EngineHandles, features: &features::EnabledFeatures) -> Result<Self> {
        if h.physical == vk::PhysicalDevice::null() {
            return Err(Error::null("physical_device"));
        }
        if h.device == vk::Device::null() {
            return Err(Error::null("device"));
        }
        let instance = load_instance(h.get_instance_proc_addr, h.instance)?;
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
        // Before any command of Vulkan 1.1 is called: an instance of apiVersion 1.0
        // is refused here, not by a panic in the first buffer_create.
        if let Err(e) = check_commands(
            &DEVICE_COMMANDS,
            |name| !load(name).is_null(),
            "vkGetDeviceProcAddr",
        ) {
            // The device's own version (a Vulkan 1.0 query): when the device is the
            // older one, that is the cause to name.
            // SAFETY: valid handles from the caller; checked to resolve above.
            let own = unsafe { instance.get_physical_device_properties(h.physical) }.api_version;
            if own < MIN_API_VERSION {
                return Err(Error::unsupported(format!(
                    "the device supports Vulkan {}, the library needs 1.2 or later",
                    version_name(own)
                )));
            }
            let mut e = e;
            e.message = format!(
                "{} (the device itself supports Vulkan {})",
                e.message,
                version_name(own)
            );
            return Err(e);
        }
        let props = support::device_props(&instance, h.physical)?;
        let device = unsafe { ash::Device::load_with(load, h.device) };
        let memory_fd = (!load(c"vkGetMemoryFdKHR").is_null())
            .then(|| ash::khr::external_memory_fd::DeviceFn::load(load));
        let semaphore_fd = (!load(c"vkGetSemaphoreFdKHR").is_null()
            && !load(c"vkImportSemaphoreFdKHR").is_null())
        .then(|| ash::khr::external_semaphore_fd::DeviceFn::load(load));
        let sync2 = if h.synchronization2 || features.synchronization2 {
            let why = match h.synchronization2 {
                true => "VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT is set",
                false => "the device's create info enables synchronization2",
            };
            Some(load_barrier2(load).ok_or_else(|| {
                Error::new(
                    ErrorKind::ExtensionNotPresent,
                    format!(
                        "{why}, but vkCmdPipelineBarrier2 and vkCmdPipelineBarrier2KHR resolve to NULL \
                         on the VkDevice: create it with Vulkan 1.3 or VK_KHR_synchronization2 and the \
                         synchronization2 feature, or leave the flag out"
                    ),
                )
            })?)
        } else {
            None
        };
        let mut features = *features;
        features.synchronization2 = sync2.is_some();
        let rules = handoff::Rules::new(sync2.is_some(), &props.queue_family_stages, features);
        Ok(VulkanDevice {
            get_instance_proc_addr: h.get_instance_proc_addr,
            instance,
            physical: h.physical,
            device,
            memory_fd,
            semaphore_fd,
            sync2,
            props,
            rules,
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
    pub(crate) fn missing_extension_diagnosis(&self, name: &CStr, what: &str) -> Diagnosis {
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

/// [`DEVICE_EXTENSIONS`] as pointers to their static names.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `get_buffer_memory_requirements2` -> `vkGetBufferMemoryRequirements2`.
    fn vk_name(method: &str) -> String {
        let mut s = String::from("vk");
        for part in method.split('_') {
            let mut c = part.chars();
            if let Some(f) = c.next() {
                s.push(f.to_ascii_uppercase());
                s.extend(c);
            }
        }
        s
    }

    /// The `ash::Device` / `ash::Instance` methods the crate calls
    /// (`….device.NAME(` and `instance.NAME(`, whitespace removed).
    fn ash_calls(dir: &std::path::Path, found: &mut std::collections::BTreeSet<(String, bool)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                ash_calls(&p, found);
                continue;
            }
            if p.extension().and_then(|x| x.to_str()) != Some("rs") {
                continue;
            }
            // Comment lines are not the crate's calls (the doc examples make their own).
            let text: String = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .flat_map(str::chars)
                .filter(|c| !c.is_whitespace())
                .collect();
            for (recv, is_device) in [("device.", true), ("instance.", false)] {
                for (at, _) in text.match_indices(recv) {
                    let before = text[..at].chars().next_back().unwrap_or(' ');
                    if before == '_' || before.is_ascii_alphanumeric() {
                        continue; // physical_device., owned_instance., ...
                    }
                    let rest = &text[at + recv.len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    if !name.is_empty() && rest[name.len()..].starts_with('(') {
                        found.insert((name, is_device));
                    }
                }
            }
        }
    }

    #[test]
    fn every_ash_call_is_checked_at_create() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Default::default();
        ash_calls(&src, &mut found);
        // Not commands: the handle, the raw tables, a handle's raw value.
        let not_commands = ["handle", "fp_v1_0", "as_raw"];
        let mut missing = Vec::new();
        for (method, is_device) in &found {
            if not_commands.contains(&method.as_str()) {
                continue;
            }
            let name = vk_name(method);
            let list: &[(&CStr, u32)] = if *is_device {
                &DEVICE_COMMANDS
            } else {
                &INSTANCE_COMMANDS
            };
            if !list.iter().any(|(n, _)| n.to_str() == Ok(name.as_str())) {
                missing.push(name);
            }
        }
        assert!(found.len() > 20, "found {found:?}");
        assert!(
            missing.is_empty(),
            "ash calls not checked to resolve at context creation (add them to \
             INSTANCE_COMMANDS / DEVICE_COMMANDS): {missing:?}"
        );
    }

    #[test]
    fn a_missing_command_names_the_instance_version() {
        let only_1_0 = |name: &CStr| {
            DEVICE_COMMANDS
                .iter()
                .any(|(n, v)| *n == name && *v == vk::API_VERSION_1_0)
        };
        let e = check_commands(&DEVICE_COMMANDS, only_1_0, "vkGetDeviceProcAddr").unwrap_err();
        assert!(
            e.message
                .contains("vkGetBufferMemoryRequirements2, core in Vulkan 1.1")
                && e.message.contains("apiVersion 1.0"),
            "{}",
            e.message
        );
        let not_1_2 = |name: &CStr| {
            DEVICE_COMMANDS
                .iter()
                .any(|(n, v)| *n == name && *v < vk::API_VERSION_1_2)
        };
        let e = check_commands(&DEVICE_COMMANDS, not_1_2, "vkGetDeviceProcAddr").unwrap_err();
        assert!(e.message.contains("apiVersion 1.1"), "{}", e.message);
        assert!(check_commands(&DEVICE_COMMANDS, |_| true, "x").is_ok());
    }
}
