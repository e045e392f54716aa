//! The container checks: whether the doctor runs in one, and whether the NVIDIA
//! container toolkit was asked for (and mounted) what vkcuda needs. Files are
//! read under [`Options::root`](super::Options::root).

use std::path::{Path, PathBuf};

use super::loader::manifest::{read_capped, Manifest};
use super::types::{env, Report, Status};
use crate::cuda;

/// What works already: the container checks only explain what is missing, so a
/// driver that works (installed in the image, or mounted another way) passes them
/// whatever the toolkit's variables say.
pub(crate) struct Working {
    pub(crate) nvidia_icd: Option<Manifest>,
    pub(crate) cuda: Option<cuda::DriverInfo>,
}

/// Inside a container whose `NVIDIA_DRIVER_CAPABILITIES` lacks `graphics` (unset
/// means the toolkit's default, `utility,compute`): how the variable reads. The
/// toolkit then mounts no Vulkan driver, which is the first thing the Vulkan checks
/// that fail should say.
pub(crate) fn graphics_gap(root: &Path) -> Option<String> {
    container_evidence(root)?;
    let caps = Capabilities::read();
    (!caps.has("graphics")).then_some(caps.shown)
}

/// Why the doctor thinks it runs in a container, or None.
pub(crate) fn container_evidence(root: &Path) -> Option<String> {
    if root.join(".dockerenv").exists() {
        return Some("/.dockerenv exists (Docker)".into());
    }
    if root.join("run/.containerenv").exists() {
        return Some("/run/.containerenv exists (Podman)".into());
    }
    if let Some(v) = env("container") {
        return Some(format!("the environment variable container={v}"));
    }
    // Read as the manifests are (a regular file of at most MANIFEST_SIZE_LIMIT
    // bytes, opened without blocking): a FIFO or a device in its place under a
    // test's root would otherwise wait for a writer, or never end.
    if let Ok(cg) = read_capped(&root.join("proc/1/cgroup")) {
        let cg = String::from_utf8_lossy(&cg);
        for word in ["docker", "kubepods", "containerd", "libpod", "lxc"] {
            if cg.contains(word) {
                return Some(format!("/proc/1/cgroup mentions {word}"));
            }
        }
    }
    None
}

/// The library directories a container image may have the driver's files in.
fn library_dirs(root: &Path) -> Vec<PathBuf> {
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    [
        format!("usr/lib/{multiarch}"),
        format!("lib/{multiarch}"),
        "usr/lib64".into(),
        "usr/lib".into(),
        "lib64".into(),
        "usr/local/nvidia/lib64".into(),
        "usr/local/nvidia/lib".into(),
    ]
    .into_iter()
    .map(|d| root.join(d))
    .collect()
}

/// The first file under the library directories (and `extra`) whose name starts
/// with `prefix`.
fn find_library(root: &Path, extra: &[PathBuf], prefix: &str) -> Option<PathBuf> {
    for d in library_dirs(root).into_iter().chain(extra.iter().cloned()) {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut hits: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| e.path())
            .collect();
        hits.sort();
        if let Some(h) = hits.into_iter().next() {
            return Some(h);
        }
    }
    None
}

/// A library of this process (loaded as a dependency of a driver) whose file name
/// starts with `prefix`, from `/proc/self/maps`.
fn mapped_library(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(prefix))
        })
        .map(PathBuf::from)
}

/// What the NVIDIA container toolkit mounts for each capability, and why vkcuda
/// needs it.
const CONTAINER_LIBRARIES: [(&str, &str, &str); 4] = [
    ("libcuda.so.1", "compute", "the CUDA driver"),
    (
        "libGLX_nvidia.so.0",
        "graphics",
        "NVIDIA's Vulkan driver (the library nvidia_icd.json names)",
    ),
    (
        "libnvidia-glcore.so.",
        "graphics",
        "the core of NVIDIA's Vulkan/GL driver",
    ),
    (
        "libnvidia-glvkspirv.so.",
        "graphics",
        "NVIDIA's SPIR-V compiler, which its Vulkan driver loads",
    ),
];

/// `NVIDIA_DRIVER_CAPABILITIES` as the toolkit reads it.
struct Capabilities {
    /// The list (the toolkit's default when unset).
    list: String,
    /// How the report shows it.
    shown: String,
}

impl Capabilities {
    fn read() -> Capabilities {
        match env("NVIDIA_DRIVER_CAPABILITIES") {
            Some(v) => Capabilities {
                shown: format!("NVIDIA_DRIVER_CAPABILITIES={v}"),
                list: v,
            },
            None => Capabilities {
                list: "utility,compute".into(),
                shown:
                    "NVIDIA_DRIVER_CAPABILITIES is not set (the toolkit's default: utility,compute)"
                        .into(),
            },
        }
    }

    fn has(&self, c: &str) -> bool {
        self.list
            .split(',')
            .any(|x| x.trim() == c || x.trim() == "all")
    }
}

pub(crate) fn check_container(r: &mut Report, root: &Path, working: &Working) {
    let Some(why) = container_evidence(root) else {
        r.pass(
            "container",
            "not in a container (no /.dockerenv, /run/.containerenv, container variable or container \
             cgroup)",
        );
        return;
    };
    r.pass("container", format!("in a container: {why}"));
    let run_fix = "run the container with the NVIDIA container toolkit and all the capabilities vkcuda needs: \
                   docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics ... (docs/CONTAINERS.md)";
    let vulkan_ok = working.nvidia_icd.is_some();
    let cuda_ok = working.cuda.is_some();
    // What the toolkit was asked for.
    match env("NVIDIA_VISIBLE_DEVICES") {
        None if cuda_ok => r.pass(
            "container.visible_devices",
            "NVIDIA_VISIBLE_DEVICES is not set, but the CUDA driver works (GPUs injected another way, e.g. CDI)",
        ),
        None => r.add(
            "container.visible_devices",
            Status::Warn,
            "NVIDIA_VISIBLE_DEVICES is not set: the NVIDIA container toolkit may not have been asked for a GPU \
             (CDI injection does not set it)",
            run_fix,
        ),
        Some(v) if v == "void" || v == "none" => r.add(
            "container.visible_devices",
            Status::Fail,
            format!("NVIDIA_VISIBLE_DEVICES={v}: the toolkit exposes no GPU"),
            run_fix,
        ),
        Some(v) => r.pass(
            "container.visible_devices",
            format!("NVIDIA_VISIBLE_DEVICES={v}"),
        ),
    }
    let caps = Capabilities::read();
    let has = |c: &str| caps.has(c);
    let shown = caps.shown.clone();
    // A capability that is missing matters only when what it mounts is missing too.
    let mut missing = Vec::new();
    if !has("compute") && !cuda_ok {
        missing.push(("compute", "the CUDA driver (libcuda.so.1)"));
    }
    if !has("graphics") && !vulkan_ok {
        missing.push((
            "graphics",
            "NVIDIA's Vulkan driver (nvidia_icd.json, libGLX_nvidia.so.0, libnvidia-glvkspirv.so)",
        ));
    }
    if missing.is_empty() {
        let note = if has("compute") && has("graphics") {
            String::new()
        } else {
            "; the drivers it lacks are there anyway (installed in the image or mounted another way)".into()
        };
        r.pass("container.driver_capabilities", format!("{shown}{note}"));
    } else {
        let names: Vec<&str> = missing.iter().map(|m| m.0).collect();
        let what: Vec<&str> = missing.iter().map(|m| m.1).collect();
        r.add(
            "container.driver_capabilities",
            Status::Fail,
            format!(
                "{shown}: {} missing, so the toolkit does not mount {}",
                names.join(" and "),
                what.join(" or ")
            ),
            "set NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (or all) in the image (ENV) or on \
             docker run -e, and restart the container",
        );
    }
    // What the toolkit mounted: looked for in the usual directories and beside the
    // drivers that loaded.
    let mut beside: Vec<PathBuf> = Vec::new();
    let icd_lib = working
        .nvidia_icd
        .as_ref()
        .and_then(|m| m.probe.as_ref())
        .and_then(|p| p.path.clone());
    let cuda_lib = working.cuda.as_ref().and_then(|c| c.path.clone());
    for p in [&icd_lib, &cuda_lib].into_iter().flatten() {
        if let Some(d) = Path::new(p).parent() {
            beside.push(d.to_path_buf());
        }
    }
    for (prefix, cap, what) in CONTAINER_LIBRARIES {
        let name = format!("container.library[{}]", prefix.trim_end_matches('.'));
        let loaded = match prefix {
            "libcuda.so.1" => cuda_lib.clone(),
            "libGLX_nvidia.so.0" => icd_lib.clone(),
            _ => None,
        };
        // The drivers' own libraries count where they loaded; their dependencies
        // where the process has them mapped (NVIDIA's ICD pulls in glcore).
        let is_driver = matches!(prefix, "libcuda.so.1" | "libGLX_nvidia.so.0");
        let found = loaded
            .map(PathBuf::from)
            .or_else(|| find_library(root, &beside, prefix))
            .or_else(|| {
                (!is_driver && vulkan_ok)
                    .then(|| mapped_library(prefix))
                    .flatten()
            });
        // With NVIDIA's ICD loading, only shaders miss the SPIR-V compiler (the
        // driver loads it then): an engine's, and vkcuda's one, the sampling pass
        // of a present ring of video frames (src/present/ycbcr.comp).
        let status = if prefix == "libnvidia-glvkspirv.so." && vulkan_ok {
            Status::Warn
        } else {
            Status::Fail
        };
        match found {
            Some(p) => r.pass(name, format!("{} ({what})", p.display())),
            None => r.add(
                name,
                status,
                format!(
                    "no {prefix}{} in the container's library directories ({what})",
                    if prefix.ends_with('.') { "*" } else { "" }
                ),
                &format!(
                    "add {cap} to NVIDIA_DRIVER_CAPABILITIES so the toolkit mounts it (and check that the host \
                     driver has it: ldconfig -p | grep {} on the host)",
                    prefix.trim_end_matches('.')
                ),
            ),
        }
    }
    let icd_places = [
        "etc/vulkan/icd.d/nvidia_icd.json",
        "usr/share/vulkan/icd.d/nvidia_icd.json",
        "usr/local/share/vulkan/icd.d/nvidia_icd.json",
    ];
    let found = working
        .nvidia_icd
        .as_ref()
        .map(|m| m.path.clone())
        .or_else(|| icd_places.iter().map(|p| root.join(p)).find(|p| p.exists()));
    match found {
        Some(p) => r.pass("container.nvidia_icd_json", p.display().to_string()),
        None => r.add(
            "container.nvidia_icd_json",
            Status::Fail,
            "no nvidia_icd.json in /etc/vulkan/icd.d, /usr/share/vulkan/icd.d or /usr/local/share/vulkan/icd.d",
            "add graphics to NVIDIA_DRIVER_CAPABILITIES (the toolkit then mounts the host's nvidia_icd.json), or \
             copy the host's nvidia_icd.json into the image's /usr/share/vulkan/icd.d",
        ),
    }
    let dev = root.join("dev");
    let ctl = dev.join("nvidiactl").exists();
    let mut gpus: Vec<String> = std::fs::read_dir(&dev)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| {
                    n.strip_prefix("nvidia")
                        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                })
                .collect()
        })
        .unwrap_or_default();
    gpus.sort();
    if ctl && !gpus.is_empty() {
        r.pass(
            "container.device_nodes",
            format!("/dev/nvidiactl and /dev/{}", gpus.join(", /dev/")),
        );
    } else if cuda_ok {
        r.pass(
            "container.device_nodes",
            "the CUDA driver initialised, so it reaches the GPU's device nodes",
        );
    } else {
        r.add(
            "container.device_nodes",
            Status::Fail,
            format!(
                "{}{}",
                if ctl { "" } else { "no /dev/nvidiactl; " },
                if gpus.is_empty() {
                    "no /dev/nvidia0 (or other /dev/nvidiaN)"
                } else {
                    "GPU nodes present"
                }
            ),
            run_fix,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_evidence_from_files() {
        let dir = std::env::temp_dir().join(format!("vkcuda-doctor-unit-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/1")).unwrap();
        std::fs::write(dir.join("proc/1/cgroup"), "0::/\n").unwrap();
        if std::env::var_os("container").is_none() {
            assert_eq!(container_evidence(&dir), None);
        }
        std::fs::write(dir.join("proc/1/cgroup"), "0::/kubepods/burstable/pod1\n").unwrap();
        assert!(container_evidence(&dir).unwrap().contains("kubepods"));
        // What is not a regular file is not read (it would block or never end),
        // and the check returns at once.
        let cgroup = dir.join("proc/1/cgroup");
        std::fs::remove_file(&cgroup).unwrap();
        let c = std::ffi::CString::new(cgroup.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let within = |root: PathBuf| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(container_evidence(&root)).unwrap());
            rx.recv_timeout(std::time::Duration::from_secs(10))
                .expect("container_evidence returns with a FIFO at proc/1/cgroup")
        };
        if std::env::var_os("container").is_none() {
            assert_eq!(within(dir.clone()), None);
            std::fs::remove_file(&cgroup).unwrap();
            std::os::unix::fs::symlink("/dev/zero", &cgroup).unwrap();
            assert_eq!(within(dir.clone()), None);
        }
        std::fs::write(dir.join(".dockerenv"), "").unwrap();
        assert!(container_evidence(&dir).unwrap().contains("Docker"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
