//! Which Vulkan device pairs with which CUDA device (the one with the same UUID),
//! and what a physical device supports for interop: what an engine asks before it
//! creates its `VkDevice` (the reports behind `vkcuda_physical_device_query` and
//! `vkcuda_physical_devices_enumerate` in C).
//!
//! ```
//! use vkcuda::pairing;
//!
//! // Enable these device extensions (those the device has) and the Vulkan 1.2
//! // feature timelineSemaphore on the engine's VkDevice.
//! for name in pairing::DEVICE_EXTENSIONS {
//!     println!("enable {}", name.to_str().unwrap());
//! }
//! // Every device the system's loader lists, with its CUDA twin (none here
//! // without an NVIDIA GPU).
//! for report in pairing::enumerate().unwrap_or_default() {
//!     let Ok(r) = report else { continue };
//!     println!("{}: supported {}, CUDA ordinal {:?}",
//!         r.support.props.name, r.supported(), r.cuda_ordinal);
//! }
//! ```

use ash::vk;

use super::cuda::{self, DeviceInfo};
use super::vulkan::{load_instance, standalone, support};
use crate::error::{Diagnosis, Error, ErrorKind, Result};

/// A physical device, what it supports, and its CUDA twin.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeviceReport {
    /// What the device offers for interop.
    pub support: Support,
    /// The CUDA driver loaded and initialised.
    pub cuda_available: bool,
    /// The ordinal of the CUDA device with this device's UUID.
    pub cuda_ordinal: Option<i32>,
}

impl DeviceReport {
    fn new(support: Support) -> DeviceReport {
        let (cuda_available, cuda_ordinal) = match cuda::devices() {
            Ok(list) => (
                true,
                list.iter()
                    .find(|d| d.uuid == support.props.uuid)
                    .map(|d| d.ordinal),
            ),
            Err(_) => (false, None),
        };
        DeviceReport {
            support,
            cuda_available,
            cuda_ordinal,
        }
    }

    /// Buffers, images and semaphores all work: both fd extensions, timeline
    /// semaphores and a CUDA twin.
    pub fn supported(&self) -> bool {
        let s = &self.support;
        s.external_memory_fd
            && s.external_semaphore_fd
            && s.timeline_semaphore
            && self.cuda_ordinal.is_some()
    }
}

pub use super::cuda::DISABLE_ENV as CUDA_DISABLE_ENV;
pub use super::cuda::{driver_version as cuda_driver_version, format_uuid};
/// [`DEVICE_EXTENSIONS`] as C string pointers (static: valid for the whole program),
/// for `VkDeviceCreateInfo::ppEnabledExtensionNames`.
pub use super::vulkan::extension_name_ptrs as device_extension_names;
pub use super::vulkan::{DeviceProps, Support, DEVICE_EXTENSIONS};

/// The report of one of the engine's physical devices, through the engine's
/// instance and loader, before the engine creates its `VkDevice`. Works without
/// a CUDA driver (`cuda_available` is then false).
///
/// # Safety
/// `instance` is a live `VkInstance` whose `vkGetInstanceProcAddr` is
/// `get_instance_proc_addr`, and `physical` one of its physical devices.
pub unsafe fn report(
    get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    instance: vk::Instance,
    physical: vk::PhysicalDevice,
) -> Result<DeviceReport> {
    let instance = load_instance(get_instance_proc_addr, instance)?;
    Ok(DeviceReport::new(support::query(&instance, physical)?))
}

/// The report of every physical device the system's Vulkan loader lists, through a
/// short-lived instance of the library's own. A device that could not be queried
/// is listed with its error.
pub fn enumerate() -> Result<Vec<Result<DeviceReport>>> {
    enumerate_with(|_, _, r| r)
}

/// [`enumerate`], handing each device's report to `f` while the instance is alive
/// (the doctor asks each device more with it).
pub(crate) fn enumerate_with<T>(
    f: impl Fn(&ash::Instance, vk::PhysicalDevice, Result<DeviceReport>) -> T,
) -> Result<Vec<T>> {
    let _g = standalone::lifecycle_lock();
    let entry = standalone::load_entry()?;
    let instance = standalone::create_instance(&entry)?;
    let listed = standalone::physical_devices(&instance).map(|list| {
        list.into_iter()
            .map(|(p, s)| f(&instance, p, s.map(DeviceReport::new)))
            .collect()
    });
    // SAFETY: nothing made from the instance outlives this call.
    unsafe { instance.destroy_instance(None) };
    listed
}

/// The CUDA device with the Vulkan device's UUID, or DEVICE_MISMATCH naming both sides.
pub(crate) fn match_device(
    vk_name: &str,
    uuid: &[u8; 16],
    devices: &[DeviceInfo],
) -> Result<DeviceInfo> {
    devices
        .iter()
        .find(|d| &d.uuid == uuid)
        .cloned()
        .ok_or_else(|| mismatch(vk_name, uuid, devices))
}

pub(crate) fn mismatch(vk_name: &str, uuid: &[u8; 16], devices: &[DeviceInfo]) -> Error {
    mismatch_diagnosis(vk_name, uuid, devices).error()
}

/// No CUDA device has the Vulkan device's UUID: what was seen (both sides' UUIDs)
/// and the fix. The doctor's pairing checks report this same text.
pub(crate) fn mismatch_diagnosis(
    vk_name: &str,
    uuid: &[u8; 16],
    devices: &[DeviceInfo],
) -> Diagnosis {
    let list: Vec<String> = devices
        .iter()
        .map(|d| format!("{} '{}' {}", d.ordinal, d.name, cuda::format_uuid(&d.uuid)))
        .collect();
    let seen = if list.is_empty() {
        "no CUDA devices".to_string()
    } else {
        format!("CUDA devices: {}", list.join(", "))
    };
    Diagnosis::new(
        ErrorKind::DeviceMismatch,
        format!(
            "no CUDA device has the UUID {} of Vulkan device '{vk_name}' ({seen})",
            cuda::format_uuid(uuid)
        ),
        "pick the VkPhysicalDevice whose deviceUUID matches a CUDA device \
         (vkcuda_physical_device_query reports it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatch_names_both_uuids() {
        let lavapipe = *b"mesa22.3.6\0\0\0\0\0\0";
        let h200 = DeviceInfo {
            ordinal: 0,
            device: 0,
            uuid: [0xab; 16],
            name: "NVIDIA H200".into(),
        };
        let e = match_device("llvmpipe", &lavapipe, std::slice::from_ref(&h200)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::DeviceMismatch);
        assert!(
            e.message.contains("6d657361-3232-2e33-2e36-000000000000"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("abababab-abab-abab-abab-abababababab"),
            "{}",
            e.message
        );
        let ok = match_device("H200", &[0xab; 16], std::slice::from_ref(&h200)).unwrap();
        assert_eq!(ok.ordinal, 0);
    }
}
