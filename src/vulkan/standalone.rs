//! A Vulkan instance and device created by the library itself, for tools, tests,
//! examples and users without an engine.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard, OnceLock};

use ash::vk;

use super::support::{query, Support};
use super::{VulkanDevice, MIN_API_VERSION};
use crate::error::{Diagnosis, Error, ErrorKind, Result};

/// Serialises the library's own instance and device lifetimes (create and destroy)
/// across threads. Vulkan allows them concurrently, but NVIDIA's driver and the
/// loader do not survive it: the same driver races are reported by kvark/blade
/// #336 and gfx-rs/wgpu #5930 (which took this lock too), and Vulkan-Loader #2018
/// is a use-after-free in concurrent vkCreateDevice and vkDestroyDevice. On the
/// H200, 8 threads making and destroying standalone contexts crashed once without
/// this lock; with it alone they still hung inside the driver's vkDestroyDevice,
/// which `keep_nvidia_instance` avoids (docs/RELIABILITY.md). An engine's own
/// instance and device are its business.
pub fn lifecycle_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The vendor ID of NVIDIA's Vulkan devices.
const NVIDIA: u32 = 0x10de;

/// Keeps one instance (no device) of NVIDIA's driver alive until the process exits,
/// from the first standalone context on an NVIDIA device on. Without one, NVIDIA's
/// driver 580 hung (a thread blocked for good in `vkDestroyDevice` on a driver
/// priority-inheritance mutex) or crashed when a thread that had used the driver
/// exited while other threads made and destroyed instances and devices: in raw
/// Vulkan without this library too (scripts/lab/repro/concurrent_devices.c: hangs or
/// crashes in most runs without a kept instance, none with one; the figures are in
/// docs/RELIABILITY.md). Called under `lifecycle_lock`. A failure here only
/// leaves the workaround out.
fn keep_nvidia_instance(entry: &ash::Entry) {
    static KEPT: OnceLock<Option<(ash::Entry, vk::Instance)>> = OnceLock::new();
    KEPT.get_or_init(|| {
        create_instance(entry)
            .ok()
            .map(|i| (entry.clone(), i.handle()))
    });
}

/// What the standalone context created and destroys.
pub struct Owned {
    pub entry: ash::Entry,
    pub queue_family_index: u32,
    pub queue: vk::Queue,
}

impl Owned {
    pub fn destroy(self, instance: &ash::Instance, device: &ash::Device) {
        // SAFETY: the device and instance were created by `create`; every object made
        // from them holds the context alive, so none is left when this runs.
        unsafe {
            let _ = device.device_wait_idle();
            let _g = lifecycle_lock();
            device.destroy_device(None);
            instance.destroy_instance(None);
            drop(self.entry);
        }
    }
}

/// Loads the system's Vulkan loader.
pub fn load_entry() -> Result<ash::Entry> {
    // SAFETY: loading libvulkan runs its initialisers only.
    unsafe { ash::Entry::load() }.map_err(|e| loader_missing(&e.to_string()).error())
}

/// No `libvulkan.so.1`: what was seen and the fix (the doctor's loader check too).
pub fn loader_missing(why: &str) -> Diagnosis {
    Diagnosis::new(
        ErrorKind::VulkanUnavailable,
        format!("the Vulkan loader libvulkan.so.1 could not be loaded ({why})"),
        "install it (Debian/Ubuntu: apt install libvulkan1, plus a driver such as the NVIDIA driver \
         or mesa-vulkan-drivers)",
    )
}

/// Creates an instance for queries and the standalone device.
pub fn create_instance(entry: &ash::Entry) -> Result<ash::Instance> {
    let version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(|r| Error::vk("vkEnumerateInstanceVersion", r))?
        .unwrap_or(vk::API_VERSION_1_0);
    if version < MIN_API_VERSION {
        return Err(Error::unsupported(format!(
            "the Vulkan loader supports instance version {}.{}, the library needs 1.2",
            vk::api_version_major(version),
            vk::api_version_minor(version)
        )));
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"vkcuda")
        .engine_name(c"vkcuda")
        .api_version(vk::API_VERSION_1_3.min(version));
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    unsafe { entry.create_instance(&info, None) }.map_err(|r| Error::vk("vkCreateInstance", r))
}

/// The physical devices of `instance` with what each supports.
pub fn physical_devices(
    instance: &ash::Instance,
) -> Result<Vec<(vk::PhysicalDevice, Result<Support>)>> {
    let list = unsafe { instance.enumerate_physical_devices() }
        .map_err(|r| Error::vk("vkEnumeratePhysicalDevices", r))?;
    Ok(list.into_iter().map(|p| (p, query(instance, p))).collect())
}

/// Says whether a Vulkan device UUID matches a CUDA device.
pub type UuidMatcher<'a> = &'a dyn Fn(&[u8; 16]) -> bool;

/// How the standalone constructor picks its device.
pub struct Choice<'a> {
    /// Index into vkEnumeratePhysicalDevices, or None for the first acceptable one.
    pub index: Option<usize>,
    /// Says whether a device's UUID matches a CUDA device (None: no CUDA wanted).
    pub cuda_match: Option<UuidMatcher<'a>>,
}

/// Creates an instance and a device with every interop extension the device has,
/// timeline semaphores and (where the device has it) samplerYcbcrConversion
/// enabled, plus one queue with compute and transfer.
pub fn create(choice: &Choice) -> Result<VulkanDevice> {
    let _g = lifecycle_lock();
    let entry = load_entry()?;
    let instance = create_instance(&entry)?;
    match create_device(&instance, choice) {
        Ok((physical, support, device, family)) => {
            if support.props.vendor_id == NVIDIA {
                keep_nvidia_instance(&entry);
            }
            let load = |name: &std::ffi::CStr| unsafe {
                std::mem::transmute::<vk::PFN_vkVoidFunction, *const std::ffi::c_void>(
                    instance.get_device_proc_addr(device.handle(), name.as_ptr()),
                )
            };
            let memory_fd = support
                .external_memory_fd
                .then(|| ash::khr::external_memory_fd::DeviceFn::load(load));
            let semaphore_fd = support
                .external_semaphore_fd
                .then(|| ash::khr::external_semaphore_fd::DeviceFn::load(load));
            let sync2 = if support.synchronization2 {
                super::load_barrier2(load)
            } else {
                None
            };
            let queue = unsafe { device.get_device_queue(family, 0) };
            // Of the features the barriers depend on, only synchronization2 is enabled.
            let features = super::features::EnabledFeatures {
                synchronization2: sync2.is_some(),
                ..Default::default()
            };
            let rules = super::handoff::Rules::new(
                sync2.is_some(),
                &support.props.queue_family_stages,
                features,
            );
            Ok(VulkanDevice {
                get_instance_proc_addr: entry.static_fn().get_instance_proc_addr,
                instance,
                physical,
                device,
                memory_fd,
                semaphore_fd,
                sync2,
                rules,
                props: support.props,
                export_format: std::sync::OnceLock::new(),
                owned: Some(Owned {
                    entry,
                    queue_family_index: family,
                    queue,
                }),
            })
        }
        Err(e) => {
            unsafe { instance.destroy_instance(None) };
            Err(e)
        }
    }
}

fn create_device(
    instance: &ash::Instance,
    choice: &Choice,
) -> Result<(vk::PhysicalDevice, Support, ash::Device, u32)> {
    let devices = physical_devices(instance)?;
    if devices.is_empty() {
        return Err(Error::unsupported(
            "the Vulkan loader reports no physical device",
        ));
    }
    let acceptable = |s: &Support| s.external_memory_fd && s.timeline_semaphore;
    let picked = match choice.index {
        Some(i) => {
            let (p, s) = devices.into_iter().nth(i).ok_or_else(|| {
                Error::invalid(format!("physical device index {i} is out of range"))
            })?;
            (p, s?)
        }
        None => {
            let mut usable: Vec<(vk::PhysicalDevice, Support)> = devices
                .into_iter()
                .filter_map(|(p, s)| s.ok().map(|s| (p, s)))
                .filter(|(_, s)| acceptable(s))
                .collect();
            if usable.is_empty() {
                return Err(Error::new(
                    ErrorKind::ExtensionNotPresent,
                    "no Vulkan device has VK_KHR_external_memory_fd and timeline semaphores",
                ));
            }
            let pos = match choice.cuda_match {
                Some(m) => usable
                    .iter()
                    .position(|(_, s)| m(&s.props.uuid))
                    .unwrap_or(0),
                None => 0,
            };
            usable.swap_remove(pos)
        }
    };
    let (physical, support) = picked;
    if !acceptable(&support) {
        return Err(Error::new(
            ErrorKind::ExtensionNotPresent,
            format!(
                "Vulkan device '{}' lacks VK_KHR_external_memory_fd or timeline semaphores",
                support.props.name
            ),
        ));
    }
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
    let wanted = vk::QueueFlags::COMPUTE;
    let family = families
        .iter()
        .position(|f| f.queue_flags.contains(wanted | vk::QueueFlags::GRAPHICS))
        .or_else(|| families.iter().position(|f| f.queue_flags.contains(wanted)))
        .ok_or_else(|| Error::unsupported("the device has no compute queue"))?
        as u32;
    let mut exts: Vec<*const c_char> = Vec::new();
    if support.external_memory_fd {
        exts.push(ash::khr::external_memory_fd::NAME.as_ptr());
    }
    if support.external_semaphore_fd {
        exts.push(ash::khr::external_semaphore_fd::NAME.as_ptr());
    }
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
    // synchronization2 where the device has it: the handoff barriers use it then.
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default().synchronization2(true);
    // Sampling multi-planar (YCbCr) images through a VkSamplerYcbcrConversion needs
    // the samplerYcbcrConversion feature (core 1.1): enabled where the device has it.
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default()
        .sampler_ycbcr_conversion(support.sampler_ycbcr_conversion);
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .push_next(&mut v12)
        .push_next(&mut v11);
    if support.synchronization2 {
        info = info.push_next(&mut v13);
    }
    let device = unsafe { instance.create_device(physical, &info, None) }
        .map_err(|r| Error::vk("vkCreateDevice", r))?;
    Ok((physical, support, device, family))
}
