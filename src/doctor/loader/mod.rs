//! The Vulkan loader and its ICDs: whether `libvulkan.so.1` loads, which driver
//! manifests its search finds (read in `manifest`, found as `search` says),
//! and whether NVIDIA's is among those that work.

pub(crate) mod manifest;
pub(crate) mod search;

use ash::vk;

pub(crate) use manifest::find_manifests;
use manifest::Manifest;
pub(crate) use search::search;
use search::Search;

use super::types::{Report, Status};
use crate::dynlib;
use crate::vulkan::standalone;

pub(crate) fn check_loader(r: &mut Report, gap: Option<&str>) -> bool {
    let entry = match standalone::load_entry() {
        Ok(e) => e,
        Err(_) => {
            // The same words as VKCUDA_ERROR_VULKAN_UNAVAILABLE.
            let why = dynlib::probe("libvulkan.so.1", &[])
                .error
                .unwrap_or_else(|| "not found".into());
            let d = standalone::loader_missing(&why);
            // The toolkit mounts no loader: the image must have it. Without
            // graphics, NVIDIA's driver is missing as well.
            let fix = match gap {
                Some(shown) => format!(
                    "{}; and this container's {shown} lacks graphics: {GRAPHICS_FIX}",
                    d.fix
                ),
                None => d.fix,
            };
            r.add("vulkan.loader", Status::Fail, d.seen, &fix);
            return false;
        }
    };
    let gipa = entry.static_fn().get_instance_proc_addr as *const std::ffi::c_void;
    let path = dynlib::path_of(gipa).unwrap_or_else(|| "libvulkan.so.1".into());
    let version = unsafe { entry.try_enumerate_instance_version() }
        .ok()
        .flatten()
        .unwrap_or(vk::API_VERSION_1_0);
    let v = format!(
        "{}.{}.{}",
        vk::api_version_major(version),
        vk::api_version_minor(version),
        vk::api_version_patch(version)
    );
    if version < crate::vulkan::MIN_API_VERSION {
        r.add(
            "vulkan.loader",
            Status::Fail,
            format!("{path}: instance version {v}; the library needs 1.2"),
            "install a Vulkan loader of version 1.2 or newer (Debian/Ubuntu: apt install libvulkan1)",
        );
        return false;
    }
    r.pass("vulkan.loader", format!("{path}: instance version {v}"));
    true
}

/// What the Vulkan checks that fail for lack of NVIDIA's Vulkan driver add in a
/// container without `graphics`: to what was seen, and before the fix.
pub(crate) fn with_gap(seen: String, fix: &str, gap: Option<&str>) -> (String, String) {
    match gap {
        None => (seen, fix.to_string()),
        Some(shown) => (
            format!(
                "{seen}; this container lacks the graphics capability ({shown}), so the NVIDIA container \
                 toolkit mounts no Vulkan driver (nvidia_icd.json, libGLX_nvidia.so.0)"
            ),
            format!("{GRAPHICS_FIX}; then: {fix}"),
        ),
    }
}

/// The fix for a container without `graphics`.
const GRAPHICS_FIX: &str = "add graphics to NVIDIA_DRIVER_CAPABILITIES: set \
     NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (or all) in the image (ENV) or on docker run -e, and \
     restart the container";

pub(crate) fn check_icds(r: &mut Report, s: &Search, manifests: &[Manifest], gap: Option<&str>) {
    let searched: Vec<String> = s
        .paths
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    if !s.undecodable.is_empty() {
        let names: Vec<String> = s
            .undecodable
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        let vars: Vec<&str> = s.undecodable.iter().map(|(n, _)| *n).collect();
        // The variable that replaces the search decides everything when it is one of them.
        let decisive = s.replaced_by.is_some_and(|v| vars.contains(&v));
        let status = if decisive && !manifests.iter().any(|m| m.works()) {
            Status::Fail
        } else {
            Status::Warn
        };
        r.add(
            "vulkan.icd_variables",
            status,
            format!(
                "{} cannot be decoded as UTF-8 (\\x: bytes that are not UTF-8); the loader takes the bytes as \
                 they are and reads what they name: {}",
                names.join(", "),
                if searched.is_empty() {
                    "nothing".to_string()
                } else {
                    searched.join(", ")
                }
            ),
            &format!(
                "set {} to UTF-8 paths of the driver manifests (check the script or service file that sets it)",
                vars.join(" and ")
            ),
        );
    }
    let found = manifests.iter().filter(|m| m.found()).count();
    if found == 0 {
        let skipped = manifests.len() - found;
        let (seen, fix) = with_gap(
            format!(
                "no ICD manifest (*.json) in the places the loader searches: {}{}",
                searched.join(", "),
                if skipped > 0 {
                    format!(" ({skipped} entry(ies) skipped: see their vulkan.icd checks)")
                } else {
                    String::new()
                }
            ),
            "install a Vulkan driver (the NVIDIA driver puts nvidia_icd.json in /usr/share/vulkan/icd.d \
             or /etc/vulkan/icd.d), or point VK_DRIVER_FILES at its manifest",
            gap,
        );
        r.add("vulkan.icd_manifests", Status::Fail, seen, &fix);
    } else {
        r.pass(
            "vulkan.icd_manifests",
            format!(
                "{found} manifest(s) where the loader searches ({})",
                searched.join(", ")
            ),
        );
    }
    for m in manifests {
        let name = format!("vulkan.icd[{}]", m.path.display());
        // A broken NVIDIA ICD stops interop; another one is only skipped by the
        // loader, unless the loader never gets past it.
        let bad = if m.is_nvidia() || m.blocks_loader() {
            Status::Fail
        } else {
            Status::Warn
        };
        if let Some(p) = &m.problem {
            r.add(
                name,
                bad,
                format!("{} (from {}) {}", m.path.display(), m.source, p.describe()),
                &m.problem_fix(),
            );
            continue;
        }
        let lib = m.library.clone().unwrap_or_default();
        let resolved = m.resolved.clone().unwrap_or_default();
        let probe = m.probe.clone().unwrap_or(dynlib::Probe {
            path: None,
            error: Some("not tried".into()),
            missing: Vec::new(),
        });
        if let Some(e) = &probe.error {
            r.add(
                name,
                bad,
                format!(
                    "{} (from {}) names {lib}, which does not load: {e}",
                    m.path.display(),
                    m.source
                ),
                &format!(
                    "install the driver library {resolved} (for NVIDIA: the driver's Vulkan/GLX part; in a \
                     container: NVIDIA_DRIVER_CAPABILITIES must include graphics) or correct library_path in {}",
                    m.path.display()
                ),
            );
        } else if !probe.missing.is_empty() {
            r.add(
                name,
                bad,
                format!(
                    "{} names {lib}, which loads but has no vk_icdGetInstanceProcAddr: not a Vulkan driver",
                    m.path.display()
                ),
                &format!("correct library_path in {}", m.path.display()),
            );
        } else {
            r.pass(
                name,
                format!(
                    "{} (from {}) -> {lib}{} loads",
                    m.path.display(),
                    m.source,
                    probe
                        .path
                        .as_deref()
                        .filter(|p| *p != lib)
                        .map(|p| format!(" ({p})"))
                        .unwrap_or_default()
                ),
            );
        }
    }
}

pub(crate) fn check_nvidia_icd(r: &mut Report, manifests: &[Manifest], gap: Option<&str>) {
    let nvidia: Vec<&Manifest> = manifests.iter().filter(|m| m.is_nvidia()).collect();
    if let Some(m) = nvidia.iter().find(|m| m.works()) {
        r.pass(
            "vulkan.nvidia_icd",
            format!(
                "{} -> {}",
                m.path.display(),
                m.library.as_deref().unwrap_or("")
            ),
        );
        return;
    }
    let (seen, fix) = match nvidia.first() {
        None => (
            "no NVIDIA Vulkan driver manifest (nvidia_icd.json) among the ones the loader reads".to_string(),
            "install the NVIDIA driver with its Vulkan part (nvidia_icd.json and libGLX_nvidia.so.0); in a \
             container add graphics to NVIDIA_DRIVER_CAPABILITIES; if the file is elsewhere, point \
             VK_DRIVER_FILES at it"
                .to_string(),
        ),
        Some(m) => match &m.problem {
            Some(p) => (
                format!(
                    "NVIDIA's manifest {} (from {}) {}",
                    m.path.display(),
                    m.source,
                    p.describe()
                ),
                m.problem_fix(),
            ),
            None => (
                format!(
                    "NVIDIA's manifest {} is there but its library does not load ({})",
                    m.path.display(),
                    m.library.as_deref().unwrap_or("")
                ),
                format!("see the vulkan.icd[{}] check", m.path.display()),
            ),
        },
    };
    let (seen, fix) = with_gap(seen, &fix, gap);
    r.add("vulkan.nvidia_icd", Status::Fail, seen, &fix);
}
