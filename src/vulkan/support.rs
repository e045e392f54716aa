//! What a physical device offers for interop, read before or after the engine
//! creates its `VkDevice`.

use std::ffi::CStr;

use ash::vk;

use crate::error::{Error, Result};

/// Properties the library reads once per device.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeviceProps {
    /// `VkPhysicalDeviceIDProperties::deviceUUID`: the CUDA twin has the same UUID.
    pub uuid: [u8; 16],
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub name: String,
    /// `VkPhysicalDeviceProperties::vendorID` (0x10de: NVIDIA).
    pub vendor_id: u32,
    /// `VkPhysicalDeviceProperties::deviceType` (CPU for lavapipe).
    pub device_type: vk::PhysicalDeviceType,
    /// `VkPhysicalDeviceProperties::driverVersion`, as the driver encodes it.
    pub driver_version: u32,
    /// `VkPhysicalDeviceProperties::apiVersion`.
    pub api_version: u32,
    /// `VkPhysicalDeviceMaintenance3Properties::maxMemoryAllocationSize`: advice
    /// for buffers (see `vulkan::memory::check_size`), a limit for images.
    pub max_allocation_size: u64,
    /// `VkPhysicalDeviceMaintenance4Properties::maxBufferSize` on a Vulkan 1.3
    /// device; 0 when the device does not say (1.2 without maintenance4).
    pub max_buffer_size: u64,
    /// `maxTimelineSemaphoreValueDifference` (0: no limit reported).
    pub max_timeline_difference: u64,
    /// The device's memory heaps and types.
    pub memory: vk::PhysicalDeviceMemoryProperties,
    /// The device's limits.
    pub limits: vk::PhysicalDeviceLimits,
    /// Per queue family, the pipeline stages its queues can run (from its
    /// `queueFlags`, see [`super::handoff::stages_of_queue`]): the handoff
    /// barriers refuse a family index past the end and stages the family cannot
    /// run (read once here, not per call).
    pub(crate) queue_family_stages: Box<[u32]>,
}

/// What a physical device offers for interop.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Support {
    /// Its properties.
    pub props: DeviceProps,
    /// It has `VK_KHR_external_memory_fd` (buffers and images).
    pub external_memory_fd: bool,
    /// It has `VK_KHR_external_semaphore_fd` (semaphores).
    pub external_semaphore_fd: bool,
    /// It supports the `timelineSemaphore` feature.
    pub timeline_semaphore: bool,
    /// The Vulkan 1.3 feature `synchronization2` (`vkCmdPipelineBarrier2`).
    pub synchronization2: bool,
    /// The samplerYcbcrConversion feature (sampling multi-planar images in Vulkan).
    pub sampler_ycbcr_conversion: bool,
}

pub fn device_props(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<DeviceProps> {
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut timeline = vk::PhysicalDeviceTimelineSemaphoreProperties::default();
    let mut maint4 = vk::PhysicalDeviceMaintenance4Properties::default();
    // The device's version decides which structs may be chained (1.3 for maintenance4).
    // SAFETY: valid handles from the caller.
    let version = unsafe { instance.get_physical_device_properties(physical) }.api_version;
    let mut p2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut id)
        .push_next(&mut maint3)
        .push_next(&mut timeline);
    if version >= vk::API_VERSION_1_3 {
        p2 = p2.push_next(&mut maint4);
    }
    // SAFETY: valid handles from the caller, structs owned here.
    unsafe { instance.get_physical_device_properties2(physical, &mut p2) };
    let props = p2.properties;
    if props.api_version < super::MIN_API_VERSION {
        return Err(Error::unsupported(format!(
            "the device supports Vulkan {}.{}, the library needs 1.2 or later",
            vk::api_version_major(props.api_version),
            vk::api_version_minor(props.api_version)
        )));
    }
    let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
    let queue_family_stages =
        unsafe { instance.get_physical_device_queue_family_properties(physical) }
            .iter()
            .map(|f| super::handoff::stages_of_queue(f.queue_flags))
            .collect();
    // SAFETY: the driver writes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(props.device_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(DeviceProps {
        uuid: id.device_uuid,
        name,
        vendor_id: props.vendor_id,
        device_type: props.device_type,
        driver_version: props.driver_version,
        api_version: props.api_version,
        max_allocation_size: maint3.max_memory_allocation_size,
        max_buffer_size: if version >= vk::API_VERSION_1_3 {
            maint4.max_buffer_size
        } else {
            0
        },
        max_timeline_difference: timeline.max_timeline_semaphore_value_difference,
        memory,
        limits: props.limits,
        queue_family_stages,
    })
}

/// Whether the device lists `name` among its extensions (None: the list could not be read).
pub fn has_extension(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    name: &CStr,
) -> Option<bool> {
    let exts = unsafe { instance.enumerate_device_extension_properties(physical) }.ok()?;
    Some(exts.iter().any(|e| {
        e.extension_name_as_c_str()
            .map(|n| n == name)
            .unwrap_or(false)
    }))
}

pub fn query(instance: &ash::Instance, physical: vk::PhysicalDevice) -> Result<Support> {
    if physical == vk::PhysicalDevice::null() {
        return Err(Error::null("physical_device"));
    }
    let props = device_props(instance, physical)?;
    let exts = unsafe { instance.enumerate_device_extension_properties(physical) }
        .map_err(|r| Error::vk("vkEnumerateDeviceExtensionProperties", r))?;
    let has = |want: &CStr| {
        exts.iter().any(|e| {
            e.extension_name_as_c_str()
                .map(|n| n == want)
                .unwrap_or(false)
        })
    };
    let mut tl = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut ycbcr = vk::PhysicalDeviceSamplerYcbcrConversionFeatures::default();
    let is13 = props.api_version >= vk::API_VERSION_1_3;
    let mut f2 = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut tl)
        .push_next(&mut ycbcr);
    if is13 {
        f2 = f2.push_next(&mut v13);
    }
    unsafe { instance.get_physical_device_features2(physical, &mut f2) };
    Ok(Support {
        props,
        external_memory_fd: has(ash::khr::external_memory_fd::NAME),
        external_semaphore_fd: has(ash::khr::external_semaphore_fd::NAME),
        timeline_semaphore: tl.timeline_semaphore == vk::TRUE,
        synchronization2: is13 && v13.synchronization2 == vk::TRUE,
        sampler_ycbcr_conversion: ycbcr.sampler_ycbcr_conversion == vk::TRUE,
    })
}

/// The first memory type in `type_bits` with all of `required`, preferring the ones
/// that also have `preferred`.
pub fn find_memory_type(
    memory: &vk::PhysicalDeviceMemoryProperties,
    type_bits: u32,
    required: vk::MemoryPropertyFlags,
    preferred: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let candidates = || {
        (0..memory.memory_type_count).filter(move |&i| {
            type_bits & (1 << i) != 0
                && memory.memory_types[i as usize]
                    .property_flags
                    .contains(required)
        })
    };
    candidates()
        .find(|&i| {
            memory.memory_types[i as usize]
                .property_flags
                .contains(preferred)
        })
        .or_else(|| candidates().next())
}
