//! The CUDA driver and its devices, each Vulkan device's interop support, the
//! pairing of the two by UUID, and the engine's own `VkDevice`.

use ash::vk;

use super::loader::manifest::{Manifest, Problem};
use super::loader::with_gap;
use super::types::{device_type_name, env, Pair, Report, Status};
use crate::cuda::{self, DeviceInfo};
use crate::pairing::{self, DeviceReport};
use crate::vulkan::{image, memory, semaphore, EngineHandles, VulkanDevice};

pub(crate) fn check_cuda(r: &mut Report) -> Option<Vec<DeviceInfo>> {
    let info = match cuda::driver_status() {
        Ok(i) => i,
        Err(d) => {
            // The same words as VKCUDA_ERROR_CUDA_UNAVAILABLE.
            r.add("cuda.driver", Status::Fail, d.seen, &d.fix);
            return None;
        }
    };
    r.pass(
        "cuda.driver",
        format!(
            "{}: CUDA {} ({}); timeline semaphore import needs {} or newer",
            info.path.as_deref().unwrap_or("libcuda.so.1"),
            cuda::version_text(info.version),
            info.version,
            cuda::version_text(cuda::MIN_DRIVER_VERSION)
        ),
    );
    match cuda::devices() {
        Ok(list) if list.is_empty() => {
            let (seen, fix) = match std::env::var_os("CUDA_VISIBLE_DEVICES") {
                Some(v) => (
                    format!(
                        "the CUDA driver lists no device, and CUDA_VISIBLE_DEVICES=\"{}\" is set",
                        v.to_string_lossy()
                    ),
                    "unset CUDA_VISIBLE_DEVICES or set it to GPUs this machine has (nvidia-smi -L lists them; \
                     nvidia-smi itself ignores CUDA_VISIBLE_DEVICES)",
                ),
                None => (
                    "the CUDA driver lists no device".to_string(),
                    "check the driver with nvidia-smi; in a container: NVIDIA_VISIBLE_DEVICES",
                ),
            };
            r.add("cuda.devices", Status::Fail, seen, fix);
            Some(list)
        }
        Ok(list) => {
            let names: Vec<String> = list
                .iter()
                .map(|d| format!("{} '{}' {}", d.ordinal, d.name, cuda::format_uuid(&d.uuid)))
                .collect();
            let visible = env("CUDA_VISIBLE_DEVICES")
                .map(|v| format!(" (CUDA_VISIBLE_DEVICES={v})"))
                .unwrap_or_default();
            r.pass(
                "cuda.devices",
                format!("{} device(s){visible}: {}", list.len(), names.join(", ")),
            );
            Some(list)
        }
        Err(e) => {
            r.add(
                "cuda.devices",
                Status::Fail,
                e.message,
                "check the driver installation with nvidia-smi",
            );
            None
        }
    }
}

/// What the doctor asks each Vulkan device beyond its report.
struct DeviceFacts {
    report: crate::Result<DeviceReport>,
    timeline_export: vk::ExternalSemaphoreFeatureFlags,
    buffer_export: vk::ExternalMemoryFeatureFlags,
    image_export: std::result::Result<vk::ExternalMemoryFeatureFlags, String>,
}

/// The usage the doctor asks about for buffers (what `vkcuda_buffer_create` gives).
const PROBE_BUFFER_USAGE: vk::BufferUsageFlags = crate::buffer::DEFAULT_USAGE;

fn probe_image() -> image::ImageParams {
    image::ImageParams {
        image_type: vk::ImageType::TYPE_2D,
        tiling: vk::ImageTiling::OPTIMAL,
        format: vk::Format::R8G8B8A8_UNORM,
        extent: vk::Extent3D {
            width: 256,
            height: 256,
            depth: 1,
        },
        mip_levels: 1,
        array_layers: 1,
        flags: vk::ImageCreateFlags::empty(),
        usage: vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::STORAGE,
    }
}

fn facts(
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    report: crate::Result<DeviceReport>,
) -> DeviceFacts {
    DeviceFacts {
        timeline_export: semaphore::external_features_of(
            instance,
            physical,
            vk::SemaphoreType::TIMELINE,
        ),
        buffer_export: memory::external_buffer_properties_of(
            instance,
            physical,
            PROBE_BUFFER_USAGE,
        )
        .external_memory_features,
        image_export: image::external_image_properties_of(instance, physical, &probe_image())
            .map(|(_, e)| e.external_memory_features)
            .map_err(|e| e.message),
        report,
    }
}

/// What the loader's error means when a manifest is not JSON: the loader (1.3.239
/// here, for one) fails `vkCreateInstance` with `VK_ERROR_OUT_OF_HOST_MEMORY` while
/// a manifest it reads does not parse; memory is not short.
fn explain_loader_error(message: &str, manifests: &[Manifest]) -> Option<(String, String)> {
    if !message.contains("VK_ERROR_OUT_OF_HOST_MEMORY") {
        return None;
    }
    let broken: Vec<String> = manifests
        .iter()
        .filter(|m| matches!(m.problem, Some(Problem::NotJson { .. })))
        .map(|m| m.path.display().to_string())
        .collect();
    if broken.is_empty() {
        return Some((
            format!(
                "{message} (the Vulkan loader also returns this when a manifest it reads is not JSON; every \
                 manifest the doctor read parses, so memory may really be short)"
            ),
            "check the memory limit of this process (ulimit -v, the container's memory limit)".to_string(),
        ));
    }
    Some((
        format!(
            "{message}: the Vulkan loader returns this when a manifest it reads is not valid JSON, not for lack \
             of memory; not JSON here: {}",
            broken.join(", ")
        ),
        format!(
            "correct or remove {} (see {})",
            broken.join(", "),
            broken
                .iter()
                .map(|b| format!("vulkan.icd[{b}]"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

pub(crate) fn check_devices(
    r: &mut Report,
    cuda_devices: Option<&[DeviceInfo]>,
    manifests: &[Manifest],
    gap: Option<&str>,
) {
    let listed = match pairing::enumerate_with(facts) {
        Ok(l) => l,
        Err(e) => {
            let (seen, fix) = explain_loader_error(&e.message, manifests).unwrap_or_else(|| {
                with_gap(
                    e.message,
                    "check that a Vulkan driver is installed (vulkan.icd checks) and loads",
                    gap,
                )
            });
            r.add("vulkan.devices", Status::Fail, seen, &fix);
            return;
        }
    };
    if listed.is_empty() {
        let (seen, fix) = with_gap(
            "vkEnumeratePhysicalDevices lists no device".to_string(),
            "install the NVIDIA driver's Vulkan part (see vulkan.nvidia_icd)",
            gap,
        );
        r.add("vulkan.devices", Status::Fail, seen, &fix);
        return;
    }
    let names: Vec<String> = listed
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.report {
            Ok(d) => format!(
                "{i} '{}' ({})",
                d.support.props.name,
                device_type_name(d.support.props.device_type)
            ),
            Err(e) => format!("{i} (not queried: {})", e.message),
        })
        .collect();
    r.pass(
        "vulkan.devices",
        format!("{} device(s): {}", listed.len(), names.join(", ")),
    );
    let cuda_list = cuda_devices.unwrap_or(&[]);
    let mut any_ready = false;
    for (i, f) in listed.iter().enumerate() {
        let ready = check_device(r, i, f, cuda_devices);
        any_ready |= ready;
        let pair = match &f.report {
            Ok(d) => {
                let twin = d
                    .cuda_ordinal
                    .and_then(|o| cuda_list.iter().find(|c| c.ordinal == o));
                Pair {
                    vulkan_index: Some(i as u32),
                    vulkan_name: d.support.props.name.clone(),
                    vulkan_uuid: Some(d.support.props.uuid),
                    vulkan_type: Some(d.support.props.device_type),
                    cuda_ordinal: twin.map(|t| t.ordinal),
                    cuda_name: twin.map(|t| t.name.clone()).unwrap_or_default(),
                    cuda_uuid: twin.map(|t| t.uuid),
                    ready,
                }
            }
            Err(_) => Pair {
                vulkan_index: Some(i as u32),
                vulkan_name: String::new(),
                vulkan_uuid: None,
                vulkan_type: None,
                cuda_ordinal: None,
                cuda_name: String::new(),
                cuda_uuid: None,
                ready: false,
            },
        };
        r.pairs.push(pair);
    }
    // CUDA devices that no Vulkan device has the UUID of.
    for c in cuda_list {
        if r.pairs.iter().any(|p| p.cuda_ordinal == Some(c.ordinal)) {
            continue;
        }
        r.add(
            format!("cuda_device[{}].pairing", c.ordinal),
            Status::Warn,
            format!(
                "CUDA device {} '{}' {} has no Vulkan device with its UUID",
                c.ordinal,
                c.name,
                cuda::format_uuid(&c.uuid)
            ),
            "if Vulkan should see this GPU: check that the loader reads NVIDIA's ICD (vulkan.nvidia_icd) and \
             that nothing hides the GPU from Vulkan (in a container: NVIDIA_VISIBLE_DEVICES)",
        );
        r.pairs.push(Pair {
            vulkan_index: None,
            vulkan_name: String::new(),
            vulkan_uuid: None,
            vulkan_type: None,
            cuda_ordinal: Some(c.ordinal),
            cuda_name: c.name.clone(),
            cuda_uuid: Some(c.uuid),
            ready: false,
        });
    }
    if any_ready {
        let ready: Vec<String> = r
            .pairs
            .iter()
            .filter(|p| p.ready)
            .map(|p| {
                format!(
                    "Vulkan {} '{}' = CUDA {}",
                    p.vulkan_index.unwrap_or(0),
                    p.vulkan_name,
                    p.cuda_ordinal.unwrap_or(-1)
                )
            })
            .collect();
        r.pass(
            "pairing",
            format!("ready for interop: {}", ready.join(", ")),
        );
    } else {
        let fix = if cuda_devices.is_none() {
            "fix cuda.driver first: without a CUDA driver no Vulkan device can be paired"
        } else {
            "use an NVIDIA GPU that both the Vulkan driver and CUDA see (the vulkan_device checks say what each \
             device lacks)"
        };
        r.add(
            "pairing",
            Status::Fail,
            "no Vulkan device has both a CUDA twin (same UUID) and everything interop needs",
            fix,
        );
    }
}

fn flags<T: std::fmt::Debug + Default + PartialEq>(f: T) -> String {
    if f == T::default() {
        "none".into()
    } else {
        format!("{f:?}")
    }
}

/// The checks of Vulkan device `i`; returns whether it is ready for interop.
fn check_device(r: &mut Report, i: usize, f: &DeviceFacts, cuda: Option<&[DeviceInfo]>) -> bool {
    let prefix = format!("vulkan_device[{i}]");
    let d = match &f.report {
        Ok(d) => d,
        Err(e) => {
            r.add(
                format!("{prefix}.query"),
                Status::Warn,
                format!("device {i} could not be queried: {}", e.message),
                "update the device's Vulkan driver (the library needs Vulkan 1.2)",
            );
            return false;
        }
    };
    let s = &d.support;
    let name = &s.props.name;
    // A device without a CUDA twin is never used for interop: what it lacks is
    // only worth a warning. The twin must have everything.
    let paired = d.cuda_ordinal.is_some();
    let lack = if paired { Status::Fail } else { Status::Warn };
    match (d.cuda_ordinal, cuda) {
        (Some(o), _) => r.pass(
            format!("{prefix}.pairing"),
            format!(
                "'{name}' {} = CUDA device {o}",
                cuda::format_uuid(&s.props.uuid)
            ),
        ),
        (None, Some(list)) => {
            let dg = pairing::mismatch_diagnosis(name, &s.props.uuid, list);
            let kind = match s.props.device_type {
                vk::PhysicalDeviceType::CPU => {
                    " It is a software (CPU) device, such as lavapipe: it never has a CUDA twin."
                }
                vk::PhysicalDeviceType::INTEGRATED_GPU => {
                    " It is an integrated GPU: CUDA does not drive it, so it has no twin."
                }
                _ => "",
            };
            r.add(
                format!("{prefix}.pairing"),
                Status::Warn,
                format!("{}.{kind}", dg.seen),
                &dg.fix,
            );
        }
        (None, None) => r.add(
            format!("{prefix}.pairing"),
            Status::Warn,
            format!(
                "'{name}' {} ({}): not paired, the CUDA driver is unavailable",
                cuda::format_uuid(&s.props.uuid),
                device_type_name(s.props.device_type)
            ),
            "fix cuda.driver first",
        ),
    }
    let driver_fix = if s.props.vendor_id == 0x10de {
        "update the NVIDIA driver (R525 or newer has it)"
    } else {
        "this device's driver lacks it: use the NVIDIA GPU's Vulkan device for interop"
    };
    let mut ok = paired;
    let mut flag = |r: &mut Report, what: &str, have: bool, seen_yes: String, seen_no: String| {
        if have {
            r.pass(format!("{prefix}.{what}"), seen_yes);
        } else {
            ok = false;
            r.add(format!("{prefix}.{what}"), lack, seen_no, driver_fix);
        }
    };
    flag(
        r,
        "external_memory_fd",
        s.external_memory_fd,
        format!("'{name}' has VK_KHR_external_memory_fd"),
        format!("'{name}' lacks VK_KHR_external_memory_fd: no buffer or image can be shared"),
    );
    flag(
        r,
        "external_semaphore_fd",
        s.external_semaphore_fd,
        format!("'{name}' has VK_KHR_external_semaphore_fd"),
        format!("'{name}' lacks VK_KHR_external_semaphore_fd: no semaphore can be shared"),
    );
    flag(
        r,
        "timeline_semaphore",
        s.timeline_semaphore,
        format!("'{name}' supports timelineSemaphore"),
        format!("'{name}' does not support the timelineSemaphore feature"),
    );
    let need = vk::ExternalSemaphoreFeatureFlags::EXPORTABLE
        | vk::ExternalSemaphoreFeatureFlags::IMPORTABLE;
    flag(
        r,
        "timeline_export",
        f.timeline_export.contains(need),
        format!("'{name}' exports and imports timeline semaphores as OPAQUE_FD"),
        format!(
            "vkGetPhysicalDeviceExternalSemaphoreProperties (OPAQUE_FD, VkSemaphoreTypeCreateInfo TIMELINE) on \
             '{name}' gives features {}: timeline semaphores cannot be exported",
            flags(f.timeline_export)
        ),
    );
    let mem_need =
        vk::ExternalMemoryFeatureFlags::EXPORTABLE | vk::ExternalMemoryFeatureFlags::IMPORTABLE;
    flag(
        r,
        "buffer_export",
        f.buffer_export.contains(mem_need),
        format!("'{name}' exports and imports buffers as OPAQUE_FD"),
        format!(
            "vkGetPhysicalDeviceExternalBufferProperties (OPAQUE_FD, storage and transfer usage) on '{name}' \
             gives features {}",
            flags(f.buffer_export)
        ),
    );
    let image_ok =
        matches!(&f.image_export, Ok(x) if x.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE));
    flag(
        r,
        "image_export",
        image_ok,
        format!("'{name}' exports R8G8B8A8_UNORM storage images as OPAQUE_FD"),
        match &f.image_export {
            Ok(x) => format!(
                "vkGetPhysicalDeviceImageFormatProperties2 (R8G8B8A8_UNORM, storage, OPAQUE_FD) on '{name}' \
                 gives features {}",
                flags(*x)
            ),
            Err(e) => e.clone(),
        },
    );
    ok
}

/// The engine's own `VkDevice`: what a context made on it would lack. Each failure
/// is the error that context's first call would return, word for word.
pub(crate) fn check_engine(r: &mut Report, h: &EngineHandles, cuda_devices: Option<&[DeviceInfo]>) {
    let dev = match VulkanDevice::from_engine(h, &Default::default()) {
        Ok(d) => d,
        Err(e) => {
            r.add(
                "engine.device",
                Status::Fail,
                e.message,
                "pass the handles you pass to vkcuda_context_create: a VkInstance of Vulkan 1.2 or later, its \
                 VkPhysicalDevice and the VkDevice made on it",
            );
            return;
        }
    };
    let name = dev.props.name.clone();
    let uuid = dev.props.uuid;
    r.pass(
        "engine.device",
        format!(
            "the engine's VkDevice on '{name}' {}",
            cuda::format_uuid(&uuid)
        ),
    );
    for (check, enabled, ext, what) in [
        (
            "engine.external_memory_fd",
            dev.memory_fd.is_some(),
            ash::khr::external_memory_fd::NAME,
            "buffers and images",
        ),
        (
            "engine.external_semaphore_fd",
            dev.semaphore_fd.is_some(),
            ash::khr::external_semaphore_fd::NAME,
            "semaphores",
        ),
    ] {
        if enabled {
            r.pass(
                check,
                format!("{} is enabled on the VkDevice", ext.to_string_lossy()),
            );
        } else {
            // The words of VKCUDA_ERROR_EXTENSION_NOT_PRESENT.
            let d = dev.missing_extension_diagnosis(ext, what);
            r.add(check, Status::Fail, d.seen, &d.fix);
        }
    }
    match cuda_devices {
        Some(list) => match pairing::match_device(&name, &uuid, list) {
            Ok(twin) => r.pass(
                "engine.pairing",
                format!("'{name}' = CUDA device {} '{}'", twin.ordinal, twin.name),
            ),
            Err(_) => {
                // The words of VKCUDA_ERROR_DEVICE_MISMATCH from vkcuda_context_create.
                let d = pairing::mismatch_diagnosis(&name, &uuid, list);
                r.add("engine.pairing", Status::Fail, d.seen, &d.fix);
            }
        },
        None => r.add(
            "engine.pairing",
            Status::Fail,
            "not checked: the CUDA driver is unavailable",
            "fix cuda.driver first",
        ),
    }
}
