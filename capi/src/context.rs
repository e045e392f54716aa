//! C API: device pairing and the context object.

use std::ffi::c_char;
use std::sync::Arc;

use ash::vk;

use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{arg, boundary, check_flags, out, quiet, vkcuda_result, write_handle};
use vkcuda::context::{BorrowedCudaContext, Context, CudaChoice, EnabledFeatures, EngineHandles};
use vkcuda::error::{Error, Result};
use vkcuda::pairing::{self, DeviceReport};

/// A Vulkan device paired with a CUDA device. Made by `vkcuda_context_create` or
/// `vkcuda_context_create_standalone`, released by `vkcuda_context_destroy`.
///
/// Thread-safety: a context may be used from any number of threads at once.
///
/// @ingroup context
pub struct vkcuda_context {
    h: Tagged<Arc<Context>>,
}
handle_kind!(vkcuda_context, Arc<Context>, handle::CONTEXT, |c| Some(c));

/// Create without a CUDA side: only the Vulkan half works (export/import of fds),
/// and every CUDA call returns `VKCUDA_ERROR_CUDA_UNAVAILABLE`.
///
/// @ingroup context
pub const VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT: u32 = 0x1;
/// Engine contexts: the engine enabled the `synchronization2` feature (Vulkan 1.3
/// or `VK_KHR_synchronization2`) on its device, so the handoff barriers are recorded
/// with `vkCmdPipelineBarrier2`; without it they use `vkCmdPipelineBarrier`.
/// Standalone contexts enable the feature themselves where the device has it.
///
/// @ingroup context
pub const VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT: u32 = 0x4;
/// Standalone only: use `physical_device_index` instead of picking a device.
///
/// @ingroup context
pub const VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT: u32 = 0x2;

/// What a physical device offers for interop.
///
/// @ingroup context
#[repr(C)]
pub struct vkcuda_physical_device_support {
    /// `VkPhysicalDeviceProperties::apiVersion`.
    pub api_version: u32,
    /// The device has `VK_KHR_external_memory_fd` (buffers and images).
    pub external_memory_fd: VkBool32,
    /// The device has `VK_KHR_external_semaphore_fd` (semaphores).
    pub external_semaphore_fd: VkBool32,
    /// The device supports the `timelineSemaphore` feature.
    pub timeline_semaphore: VkBool32,
    /// The CUDA driver loaded and initialised.
    pub cuda_available: VkBool32,
    /// A CUDA device has this device's UUID.
    pub cuda_device_found: VkBool32,
    /// That CUDA device's ordinal, or -1.
    pub cuda_device_ordinal: i32,
    /// Everything above is there: buffers, images and semaphores all work.
    pub supported: VkBool32,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`.
    pub device_uuid: [u8; 16],
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub device_name: [c_char; 256],
}

/// The engine's handles for `vkcuda_context_create`.
///
/// @ingroup context
#[repr(C)]
pub struct vkcuda_context_create_info {
    /// `VKCUDA_CONTEXT_CREATE_*` bits; 0 for the defaults.
    pub flags: u32,
    /// The engine's instance, created with `VkApplicationInfo::apiVersion` 1.2 or
    /// later. The library cannot read an instance's apiVersion: where the driver
    /// hides the Vulkan 1.1 and 1.2 commands from an older instance's devices
    /// (Mesa), it is refused with `VKCUDA_ERROR_INVALID_ARGUMENT` naming the
    /// version; NVIDIA's driver resolves them for a 1.0 instance too, and the
    /// library then works, but the validation layer may still report the version.
    pub instance: VkInstance,
    /// The physical device the engine's device was created on.
    pub physical_device: VkPhysicalDevice,
    /// The engine's device, created with the extensions from
    /// `vkcuda_device_extensions_enumerate` that the device supports and the
    /// `timelineSemaphore` feature.
    pub device: VkDevice,
    /// The engine's `vkGetInstanceProcAddr`; every entry point is loaded from it.
    pub get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    /// Optional: the engine's `vkGetDeviceProcAddr` (NULL: loaded from the instance).
    pub get_device_proc_addr: PFN_vkGetDeviceProcAddr,
    /// Optional: a CUDA context on the matching device to use instead of the device's
    /// primary context. The caller keeps it alive longer than the vkcuda context.
    pub cuda_context: *mut CUctx_st,
}

/// Options of `vkcuda_context_create_standalone`; all zero (or a NULL pointer) for
/// the defaults.
///
/// @ingroup context
#[repr(C)]
pub struct vkcuda_standalone_create_info {
    /// `VKCUDA_CONTEXT_CREATE_*` bits.
    pub flags: u32,
    /// With `VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT`: the index into
    /// vkEnumeratePhysicalDevices. Otherwise the first device that matches a CUDA
    /// device (or, Vulkan-only, the first with the needed extensions) is used.
    pub physical_device_index: u32,
}

/// The Vulkan handles of a context.
///
/// @ingroup context
#[repr(C)]
pub struct vkcuda_vulkan_handles {
    /// The instance: the engine's (borrowed), or the standalone context's own.
    pub instance: VkInstance,
    /// The physical device the context is paired on.
    pub physical_device: VkPhysicalDevice,
    /// The device every object of the context is made on; owned like `instance`.
    pub device: VkDevice,
    /// The entry point the context loaded its functions from.
    pub get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    /// Standalone contexts: the family of `queue` (compute and transfer, graphics
    /// when there is one). Engine contexts: UINT32_MAX.
    pub queue_family_index: u32,
    /// Standalone contexts: the device's queue; externally synchronised like any
    /// VkQueue. Engine contexts: NULL.
    pub queue: VkQueue,
}

/// The CUDA side of a context.
///
/// @ingroup context
#[repr(C)]
pub struct vkcuda_cuda_info {
    /// The CUcontext the library works in (by default the device's primary
    /// context, so runtime-API code, PyTorch and CuPy see the same pointers).
    pub cuda_context: *mut CUctx_st,
    /// The CUdevice handle.
    pub cuda_device: i32,
    /// The device ordinal.
    pub device_ordinal: i32,
    /// VK_TRUE when `cuda_context` is the primary context.
    pub primary: VkBool32,
    /// The CUDA device's UUID (equal to the Vulkan device's).
    pub device_uuid: [u8; 16],
}

fn report_to_c(r: &DeviceReport) -> vkcuda_physical_device_support {
    let s = &r.support;
    let mut name = [0 as c_char; 256];
    for (d, b) in name.iter_mut().zip(s.props.name.bytes().take(255)) {
        *d = b as c_char;
    }
    vkcuda_physical_device_support {
        api_version: s.props.api_version,
        external_memory_fd: s.external_memory_fd as u32,
        external_semaphore_fd: s.external_semaphore_fd as u32,
        timeline_semaphore: s.timeline_semaphore as u32,
        cuda_available: r.cuda_available as u32,
        cuda_device_found: r.cuda_ordinal.is_some() as u32,
        cuda_device_ordinal: r.cuda_ordinal.unwrap_or(-1),
        supported: r.supported() as u32,
        device_uuid: s.props.uuid,
        device_name: name,
    }
}

/// Lists the device extensions the library uses, Vulkan-style: with `names` NULL,
/// writes the count to `*count`; otherwise writes up to `*count` names (static
/// strings) and sets `*count` to how many were written. Enable each one the device
/// supports (see `vkcuda_physical_device_query`): `VK_KHR_external_memory_fd` for
/// buffers and images, `VK_KHR_external_semaphore_fd` for semaphores. Also enable
/// the Vulkan 1.2 feature `timelineSemaphore`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_device_extensions_enumerate(
    count: *mut u32,
    names: *mut *const c_char,
) -> vkcuda_result {
    boundary("vkcuda_device_extensions_enumerate", || {
        let count = out(count, "count")?;
        let all = pairing::device_extension_names();
        if names.is_null() {
            *count = all.len() as u32;
            return Ok(());
        }
        let n = (*count as usize).min(all.len());
        for (i, p) in all.iter().take(n).enumerate() {
            *names.add(i) = *p;
        }
        *count = n as u32;
        if n < all.len() {
            return Err(Error::invalid(format!(
                "*count {n} is less than the {} extensions; the first {n} were written",
                all.len()
            )));
        }
        Ok(())
    })
}

/// Says what `physical_device` supports for interop, before the engine creates its
/// `VkDevice`: the memory and semaphore fd extensions, timeline semaphores, and
/// whether a CUDA device has the same UUID. Works without a CUDA driver
/// (`cuda_available` is then VK_FALSE).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_physical_device_query(
    instance: VkInstance,
    physical_device: VkPhysicalDevice,
    get_instance_proc_addr: PFN_vkGetInstanceProcAddr,
    support: *mut vkcuda_physical_device_support,
) -> vkcuda_result {
    boundary("vkcuda_physical_device_query", || {
        let support = out(support, "support")?;
        let gipa = get_instance_proc_addr.ok_or_else(|| Error::null("get_instance_proc_addr"))?;
        if instance == vk::Instance::null() {
            return Err(Error::null("instance"));
        }
        // SAFETY: the handles are the caller's, as the C contract says.
        *support = report_to_c(&pairing::report(gipa, instance, physical_device)?);
        Ok(())
    })
}

/// Lists the physical devices the system's Vulkan loader reports, with what each
/// supports, Vulkan-style (`supports` NULL: writes the count). Loads libvulkan.so.1
/// itself (`VKCUDA_ERROR_VULKAN_UNAVAILABLE` if missing); for tools and examples.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_physical_devices_enumerate(
    count: *mut u32,
    supports: *mut vkcuda_physical_device_support,
) -> vkcuda_result {
    boundary("vkcuda_physical_devices_enumerate", || {
        let count = out(count, "count")?;
        let list = pairing::enumerate()?;
        if supports.is_null() {
            *count = list.len() as u32;
            return Ok(());
        }
        let n = (*count as usize).min(list.len());
        for (i, r) in list.iter().take(n).enumerate() {
            *supports.add(i) = report_to_c(r.as_ref().map_err(|e| e.clone())?);
        }
        *count = n as u32;
        Ok(())
    })
}

/// # Safety
/// A non-null `cuda_context` is a live CUDA context the caller keeps alive longer
/// than the vkcuda context (the documented contract of `cuda_context`).
unsafe fn cuda_choice(flags: u32, cuda_context: *mut CUctx_st) -> Result<CudaChoice> {
    let vulkan_only = flags & VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT != 0;
    match (vulkan_only, cuda_context.is_null()) {
        (true, false) => Err(Error::invalid(
            "cuda_context is set but VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT asks for no CUDA side",
        )),
        (true, true) => Ok(CudaChoice::None),
        (false, true) => Ok(CudaChoice::Primary),
        (false, false) => Ok(CudaChoice::Borrowed(BorrowedCudaContext::from_raw(
            cuda_context.cast(),
        ))),
    }
}

/// Pairs the engine's `VkDevice` with the CUDA device of the same UUID (its primary
/// context unless `cuda_context` is given). Errors: `VKCUDA_ERROR_CUDA_UNAVAILABLE`
/// without a CUDA driver, `VKCUDA_ERROR_DEVICE_MISMATCH` when no CUDA device has
/// the Vulkan device's UUID (the message names both),
/// `VKCUDA_ERROR_INVALID_ARGUMENT` when a command the library calls does not
/// resolve (an instance of apiVersion 1.0 or 1.1: the message names the version),
/// `VKCUDA_ERROR_DEVICE_LOST` when the `VkDevice` is lost (a call of the library
/// saw `VK_ERROR_DEVICE_LOST`) and objects made on it are still alive (the message
/// names the first error; once they are all destroyed, a context on the same
/// handle value is a new device), and `VKCUDA_ERROR_EXTENSION_NOT_PRESENT` later,
/// from the first call that needs an extension the device was created without.
///
/// The library cannot ask the device which optional features and extensions the
/// engine enabled, so the context's handoff barriers accept only the pipeline
/// stages and accesses every device has (not the geometry or tessellation shader
/// stages, nor any extension's stage or access); an engine that names more in a
/// `vkcuda_handoff_info` tells the context with
/// `vkcuda_context_create_with_device_info`.
///
/// The engine's handles are borrowed: they must outlive the context and every
/// object made from it. `*context` is written on success, set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_context_create(
    info: *const vkcuda_context_create_info,
    context: *mut *mut vkcuda_context,
) -> vkcuda_result {
    boundary("vkcuda_context_create", || {
        let made = (|| {
            out(context, "context")?;
            engine_context(info, &EnabledFeatures::default())
        })();
        write_handle(context, made)
    })
}

/// `vkcuda_context_create` for an engine that also says what it enabled on its
/// device: `device_create_info` is the `VkDeviceCreateInfo` the engine created
/// `info->device` with (or one with the same extensions and features; it is read
/// during the call only). The context reads its extension names, its
/// `pEnabledFeatures` or `VkPhysicalDeviceFeatures2`, and the feature structures of
/// its `pNext` chain that decide which pipeline stages and accesses a barrier may
/// name (`geometryShader`, `tessellationShader`, `VkPhysicalDeviceVulkan13Features`
/// and `VkPhysicalDeviceSynchronization2Features` (`synchronization2`),
/// `VkPhysicalDeviceTransformFeedbackFeaturesEXT`,
/// `VkPhysicalDeviceConditionalRenderingFeaturesEXT`,
/// `VkPhysicalDeviceFragmentDensityMapFeaturesEXT`,
/// `VkPhysicalDeviceFragmentShadingRateFeaturesKHR`,
/// `VkPhysicalDeviceShadingRateImageFeaturesNV`,
/// `VkPhysicalDeviceMeshShaderFeaturesEXT`/`NV`,
/// `VkPhysicalDeviceRayTracingPipelineFeaturesKHR`,
/// `VkPhysicalDeviceAccelerationStructureFeaturesKHR`,
/// `VkPhysicalDeviceRayQueryFeaturesKHR`; a feature counts where the extension that
/// brings it is enabled too); other structures are skipped. The handoff barriers
/// then accept the stages and accesses those features and extensions bring, and
/// a `synchronization2` feature there records them with `vkCmdPipelineBarrier2`, as
/// `VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT` does. `device_create_info` NULL is
/// `vkcuda_context_create`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_context_create_with_device_info(
    info: *const vkcuda_context_create_info,
    device_create_info: *const VkDeviceCreateInfo,
    context: *mut *mut vkcuda_context,
) -> vkcuda_result {
    boundary("vkcuda_context_create_with_device_info", || {
        let made = (|| {
            out(context, "context")?;
            let features = match device_create_info.as_ref() {
                Some(d) => {
                    if d.s_type != vk::StructureType::DEVICE_CREATE_INFO {
                        return Err(Error::invalid(format!(
                            "device_create_info->sType is {}, not VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO",
                            d.s_type.as_raw()
                        )));
                    }
                    if d.enabled_extension_count != 0 && d.pp_enabled_extension_names.is_null() {
                        return Err(Error::null("device_create_info->ppEnabledExtensionNames"));
                    }
                    // SAFETY: the caller's VkDeviceCreateInfo, valid as its contract says.
                    EnabledFeatures::from_device_create_info(d)
                }
                None => EnabledFeatures::default(),
            };
            engine_context(info, &features)
        })();
        write_handle(context, made)
    })
}

/// The engine's context of `vkcuda_context_create*`.
unsafe fn engine_context(
    info: *const vkcuda_context_create_info,
    features: &EnabledFeatures,
) -> Result<Box<vkcuda_context>> {
    let info = arg(info, "info")?;
    check_flags(
        info.flags,
        VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT | VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT,
        "info->flags",
    )?;
    if info.instance == vk::Instance::null() {
        return Err(Error::null("info->instance"));
    }
    let handles = EngineHandles {
        instance: info.instance,
        physical: info.physical_device,
        device: info.device,
        get_instance_proc_addr: info
            .get_instance_proc_addr
            .ok_or_else(|| Error::null("info->get_instance_proc_addr"))?,
        get_device_proc_addr: info.get_device_proc_addr,
        synchronization2: info.flags & VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT != 0,
    };
    let choice = cuda_choice(info.flags, info.cuda_context)?;
    let inner = Context::from_engine_with_features(&handles, features, choice)?;
    Ok(handle::boxed::<vkcuda_context>(inner))
}

/// Creates a Vulkan instance and device of the library's own, with every interop
/// extension the device has and timeline semaphores enabled, on the device that
/// matches a CUDA device, and pairs it with CUDA. `info` may be NULL (defaults).
/// `vkcuda_context_get_vulkan_handles` returns the handles, including a queue. Loads
/// libvulkan.so.1 (`VKCUDA_ERROR_VULKAN_UNAVAILABLE` if missing).
///
/// Thread-safety: may be called from any thread. The library serialises the
/// creation and destruction of the instances and devices it makes itself (NVIDIA's
/// driver crashed when 8 threads did them at once), so concurrent calls wait for
/// each other. On an NVIDIA device the first call also keeps one Vulkan instance
/// (without a device) alive until the process exits: without one, NVIDIA's driver
/// 580 hung in `vkDestroyDevice` when a thread that had used it exited meanwhile.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_context_create_standalone(
    info: *const vkcuda_standalone_create_info,
    context: *mut *mut vkcuda_context,
) -> vkcuda_result {
    boundary("vkcuda_context_create_standalone", || {
        let made = (|| {
            out(context, "context")?;
            let (flags, index) = match info.as_ref() {
                Some(i) => (i.flags, i.physical_device_index),
                None => (0, 0),
            };
            check_flags(
                flags,
                VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT
                    | VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT,
                "info->flags",
            )?;
            let index = (flags & VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT != 0)
                .then_some(index as usize);
            let inner = Context::standalone(index, cuda_choice(flags, std::ptr::null_mut())?)?;
            Ok(handle::boxed::<vkcuda_context>(inner))
        })();
        write_handle(context, made)
    })
}

pub(crate) unsafe fn ctx_arg<'a>(context: *const vkcuda_context) -> Result<&'a Arc<Context>> {
    handle::get(context, "context")
}

/// The context's Vulkan handles.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_context_get_vulkan_handles(
    context: *const vkcuda_context,
    handles: *mut vkcuda_vulkan_handles,
) -> vkcuda_result {
    boundary("vkcuda_context_get_vulkan_handles", || {
        let ctx = ctx_arg(context)?;
        let handles = out(handles, "handles")?;
        let v = ctx.vulkan_handles();
        let (family, queue) = v.queue.unwrap_or((u32::MAX, vk::Queue::null()));
        *handles = vkcuda_vulkan_handles {
            instance: v.instance,
            physical_device: v.physical_device,
            device: v.device,
            get_instance_proc_addr: Some(v.get_instance_proc_addr),
            queue_family_index: family,
            queue,
        };
        Ok(())
    })
}

/// The context's CUDA side. `VKCUDA_ERROR_CUDA_UNAVAILABLE` for a Vulkan-only context.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_context_get_cuda_info(
    context: *const vkcuda_context,
    cuda_info: *mut vkcuda_cuda_info,
) -> vkcuda_result {
    boundary("vkcuda_context_get_cuda_info", || {
        let ctx = ctx_arg(context)?;
        let cuda_info = out(cuda_info, "cuda_info")?;
        let c = ctx.cuda_info()?;
        *cuda_info = vkcuda_cuda_info {
            cuda_context: c.context.cast(),
            cuda_device: c.device,
            device_ordinal: c.ordinal,
            primary: c.primary as u32,
            device_uuid: c.uuid,
        };
        Ok(())
    })
}

/// The CUDA driver's version (`major * 1000 + minor * 10`), or
/// `VKCUDA_ERROR_CUDA_UNAVAILABLE` with the reason when there is no usable driver.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup context
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_cuda_driver_get_version(version: *mut i32) -> vkcuda_result {
    boundary("vkcuda_cuda_driver_get_version", || {
        let version = out(version, "version")?;
        *version = pairing::cuda_driver_version()?;
        Ok(())
    })
}

/// Releases the context. Objects made from it keep it alive until they are
/// destroyed too, so the order of destruction does not matter; a standalone context
/// destroys its device and instance when the last of them goes. NULL does nothing.
///
/// Thread-safety: the context must not be in use by another thread during this call.
///
/// @ingroup context
#[no_mangle]
pub unsafe extern "C" fn vkcuda_context_destroy(context: *mut vkcuda_context) {
    quiet((), || handle::destroy(context, "vkcuda_context_destroy"))
}
