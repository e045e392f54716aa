//! The Vulkan calls of shared semaphores: exportable and importable `VkSemaphore`s
//! (OPAQUE_FD), their payload fds, and the counter of timelines.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use ash::vk;

use super::VulkanDevice;
use crate::error::{Error, Result};
use crate::fd;
use crate::stats;

const HANDLE_TYPE: vk::ExternalSemaphoreHandleTypeFlags =
    vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;

fn type_name(ty: vk::SemaphoreType) -> &'static str {
    if ty == vk::SemaphoreType::TIMELINE {
        "timeline"
    } else {
        "binary"
    }
}

/// What the device can do with OPAQUE_FD semaphores of `ty`
/// (`vkGetPhysicalDeviceExternalSemaphoreProperties` with `VkSemaphoreTypeCreateInfo`).
pub fn external_features(
    dev: &VulkanDevice,
    ty: vk::SemaphoreType,
) -> vk::ExternalSemaphoreFeatureFlags {
    external_features_of(&dev.instance, dev.physical, ty)
}

/// The same for a physical device before any `VkDevice` exists.
pub fn external_features_of(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    ty: vk::SemaphoreType,
) -> vk::ExternalSemaphoreFeatureFlags {
    let mut type_info = vk::SemaphoreTypeCreateInfo::default().semaphore_type(ty);
    let info = vk::PhysicalDeviceExternalSemaphoreInfo::default()
        .handle_type(HANDLE_TYPE)
        .push_next(&mut type_info);
    let mut out = vk::ExternalSemaphoreProperties::default();
    // SAFETY: valid instance and physical device; structs owned here.
    unsafe {
        instance.get_physical_device_external_semaphore_properties(physical, &info, &mut out)
    };
    out.external_semaphore_features
}

fn create(
    dev: &VulkanDevice,
    ty: vk::SemaphoreType,
    initial: u64,
    exportable: bool,
) -> Result<vk::Semaphore> {
    let mut export = vk::ExportSemaphoreCreateInfo::default().handle_types(HANDLE_TYPE);
    let mut type_info = vk::SemaphoreTypeCreateInfo::default()
        .semaphore_type(ty)
        .initial_value(initial);
    let mut info = vk::SemaphoreCreateInfo::default().push_next(&mut type_info);
    if exportable {
        info = info.push_next(&mut export);
    }
    let sem = unsafe { dev.device.create_semaphore(&info, None) }
        .map_err(|r| dev.error("vkCreateSemaphore", r))?;
    stats::VK_SEMAPHORES.add();
    Ok(sem)
}

/// A new exportable semaphore of `ty` starting at `initial`.
pub fn create_exportable(
    dev: &VulkanDevice,
    ty: vk::SemaphoreType,
    initial: u64,
) -> Result<vk::Semaphore> {
    dev.semaphore_fd()?;
    if !external_features(dev, ty).contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE) {
        return Err(Error::unsupported(format!(
            "the device cannot export {} semaphores as OPAQUE_FD",
            type_name(ty)
        )));
    }
    create(dev, ty, initial, true)
}

/// A new semaphore of `ty` to import a payload into (exportable too where the
/// device allows it, so that it can be passed on).
pub fn create_importable(dev: &VulkanDevice, ty: vk::SemaphoreType) -> Result<vk::Semaphore> {
    dev.semaphore_fd()?;
    let features = external_features(dev, ty);
    if !features.contains(vk::ExternalSemaphoreFeatureFlags::IMPORTABLE) {
        return Err(Error::unsupported(format!(
            "the device cannot import {} semaphores as OPAQUE_FD",
            type_name(ty)
        )));
    }
    create(
        dev,
        ty,
        0,
        features.contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE),
    )
}

/// Replaces `sem`'s payload for good with the one `handle` carries
/// (`vkImportSemaphoreFdKHR` on a duplicate: `handle` stays the caller's).
pub fn import_fd(dev: &VulkanDevice, sem: vk::Semaphore, handle: BorrowedFd<'_>) -> Result<()> {
    let f = dev.semaphore_fd()?;
    let dup = fd::Handoff::new(fd::dup_borrowed(handle.as_raw_fd())?);
    let import = vk::ImportSemaphoreFdInfoKHR::default()
        .semaphore(sem)
        .handle_type(HANDLE_TYPE)
        .fd(dup.raw());
    dev.check("vkImportSemaphoreFdKHR", unsafe {
        (f.import_semaphore_fd_khr)(dev.device.handle(), &import)
    })?;
    // Vulkan owns the descriptor from the successful import on.
    dup.taken();
    Ok(())
}

/// A new fd for `sem`'s payload; the caller owns it.
pub fn export_fd(dev: &VulkanDevice, sem: vk::Semaphore) -> Result<OwnedFd> {
    let f = dev.semaphore_fd()?;
    let info = vk::SemaphoreGetFdInfoKHR::default()
        .semaphore(sem)
        .handle_type(HANDLE_TYPE);
    let mut raw = -1;
    dev.check("vkGetSemaphoreFdKHR", unsafe {
        (f.get_semaphore_fd_khr)(dev.device.handle(), &info, &mut raw)
    })?;
    // SAFETY: each call creates a new descriptor owned by the caller.
    Ok(unsafe { fd::adopt(raw) })
}

/// A timeline's current value (`vkGetSemaphoreCounterValue`).
pub fn counter_value(dev: &VulkanDevice, sem: vk::Semaphore) -> Result<u64> {
    unsafe { dev.device.get_semaphore_counter_value(sem) }
        .map_err(|r| dev.error("vkGetSemaphoreCounterValue", r))
}

/// Signals a timeline from the host (`vkSignalSemaphore`).
pub fn host_signal(dev: &VulkanDevice, sem: vk::Semaphore, value: u64) -> Result<()> {
    let info = vk::SemaphoreSignalInfo::default()
        .semaphore(sem)
        .value(value);
    unsafe { dev.device.signal_semaphore(&info) }.map_err(|r| dev.error("vkSignalSemaphore", r))
}

/// Destroys a semaphore made by this module.
pub fn destroy(dev: &VulkanDevice, sem: vk::Semaphore) {
    unsafe { dev.device.destroy_semaphore(sem, None) };
    stats::VK_SEMAPHORES.sub();
}

/// A new timeline semaphore starting at `initial`, not exportable (a Vulkan-only
/// context's: nothing outside Vulkan signals it).
pub fn create_plain_timeline(dev: &VulkanDevice, initial: u64) -> Result<vk::Semaphore> {
    create(dev, vk::SemaphoreType::TIMELINE, initial, false)
}
