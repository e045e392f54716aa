//! The doctor: every check that decides whether Vulkan-CUDA interop will work on
//! this machine, as data (name, status, what was seen, the fix in one sentence),
//! plus the table pairing each Vulkan device with the CUDA device of the same
//! UUID. `vkcuda_doctor_run` hands it to C, `tools/vkcuda_doctor.c` prints it.
//!
//! The checks that match one of the library's errors take their text from the
//! function that makes that error (`cuda::driver_status`, `pairing::
//! mismatch_diagnosis`, `standalone::loader_missing`), so the doctor and a failing
//! call never disagree.
//!
//! What the doctor reads: the process's environment (`VK_DRIVER_FILES`,
//! `VK_ICD_FILENAMES`, `VK_ADD_DRIVER_FILES`, `XDG_*`, `NVIDIA_*`, `container`), the
//! Vulkan loader and the CUDA driver as this process loads them, the open-file
//! limit, and files under [`Options::root`] (`/` unless a test says otherwise) for
//! the container checks: `/.dockerenv`, `/run/.containerenv`, `/proc/1/cgroup`,
//! `/dev/nvidia*` and the driver's libraries.
//!
//! ```
//! use vkcuda::doctor::{self, Options, Status};
//!
//! let report = doctor::run(&Options::default());
//! for c in &report.checks {
//!     if c.status != Status::Pass {
//!         println!("{:<28} {}: {} ({})", c.name, c.status.name(), c.seen, c.fix);
//!     }
//! }
//! // Interop works when nothing failed (never on a machine without a CUDA GPU).
//! println!("ready: {}", report.ready());
//! assert!(report.to_json().contains("\"checks\""));
//! ```

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use ash::vk;
use serde_json::json;

use super::cuda::{self, DeviceInfo};
use super::vulkan::{image, memory, semaphore, standalone, EngineHandles, VulkanDevice};
use crate::dynlib;
use crate::pairing::{self, DeviceReport};

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Pass,
    /// Worth knowing; interop can still work.
    Warn,
    /// Interop will not work until this is fixed.
    Fail,
}

impl Status {
    /// "pass", "warn" or "fail".
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check: what it looked at, how it came out, what it saw, and the fix (empty
/// when it passed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// The check's name (`loader`, `cuda.driver`, `device.0.pairing`, `deep.*`, ...).
    pub name: String,
    /// How it came out.
    pub status: Status,
    /// What the doctor saw, in words.
    pub seen: String,
    /// The fix in one sentence (empty when the check passed).
    pub fix: String,
}

/// One row of the pairing table: a Vulkan device and its CUDA twin, or a CUDA
/// device no Vulkan device has the UUID of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Index in `vkEnumeratePhysicalDevices`, or None for a CUDA device alone.
    pub vulkan_index: Option<u32>,
    /// The Vulkan device's name (empty for a CUDA device alone).
    pub vulkan_name: String,
    /// The Vulkan device's `deviceUUID`.
    pub vulkan_uuid: Option<[u8; 16]>,
    /// The Vulkan device's type (CPU for lavapipe).
    pub vulkan_type: Option<vk::PhysicalDeviceType>,
    /// The CUDA ordinal with the same UUID, if any.
    pub cuda_ordinal: Option<i32>,
    /// The CUDA device's name (empty without one).
    pub cuda_name: String,
    /// The CUDA device's UUID.
    pub cuda_uuid: Option<[u8; 16]>,
    /// The Vulkan device has everything interop needs and a CUDA twin.
    pub ready: bool,
}

/// Everything the doctor found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every check, in the order they ran.
    pub checks: Vec<Check>,
    /// The pairing table: each Vulkan device and its CUDA twin.
    pub pairs: Vec<Pair>,
}

/// Where the doctor looks. The default: the machine's own root, no engine, not
/// deep.
#[derive(Clone, Debug)]
pub struct Options {
    /// The root the container checks read files under (`/.dockerenv`,
    /// `/proc/1/cgroup`, `/dev/nvidia*`, the driver's libraries); `/` normally, a
    /// prepared directory in tests. The files read there are read as the ICD
    /// manifests are: regular files of at most 1 MiB, opened without blocking (a
    /// FIFO or a device is not read).
    pub root: PathBuf,
    /// The engine's handles ([`Options::with_engine`]).
    engine: Option<EngineHandles>,
    /// Also run the deep self-test: every kind of shared
    /// resource made on this machine's GPU, data pushed through both ways and
    /// compared byte for byte (`deep.*` checks).
    pub deep: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            root: PathBuf::from("/"),
            engine: None,
            deep: false,
        }
    }
}

impl Options {
    /// Also checks the engine's `VkDevice` (the extensions it was created with,
    /// its CUDA twin), with the words of the errors a context on it would return.
    ///
    /// # Safety
    /// As for [`Context::from_engine`](crate::Context::from_engine): live handles
    /// of the engine, valid during [`run`].
    pub unsafe fn with_engine(mut self, engine: EngineHandles) -> Options {
        self.engine = Some(engine);
        self
    }
}

/// Below this soft open-file limit the doctor fails (`process.fd_limit`): the
/// NVIDIA driver holds tens
/// of descriptors per CUDA context and Vulkan device, each export makes one more
/// until it is imported or closed, and a process that runs out fails its next
/// export with an error that does not say why.
pub(crate) const FD_LIMIT_FAIL: u64 = 256;
/// Below this one it warns (1024 is the usual default soft limit).
pub(crate) const FD_LIMIT_WARN: u64 = 1024;

impl Report {
    /// Interop will work: no check failed.
    pub fn ready(&self) -> bool {
        !self.checks.iter().any(|c| c.status == Status::Fail)
    }

    /// How many checks came out `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// The check named `name`.
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    fn add(&mut self, name: impl Into<String>, status: Status, seen: impl Into<String>, fix: &str) {
        self.checks.push(Check {
            name: name.into(),
            status,
            seen: seen.into(),
            fix: if status == Status::Pass {
                String::new()
            } else {
                fix.to_string()
            },
        });
    }

    fn pass(&mut self, name: impl Into<String>, seen: impl Into<String>) {
        self.add(name, Status::Pass, seen, "");
    }

    /// The report as JSON: `{"vkcuda_version", "ready", "summary": {"pass", "warn",
    /// "fail"}, "checks": [{"name", "status", "seen", "fix"}], "devices": [...]}`.
    pub fn to_json(&self) -> String {
        let uuid = |u: &Option<[u8; 16]>| u.as_ref().map(cuda::format_uuid);
        let checks: Vec<_> = self
            .checks
            .iter()
            .map(|c| json!({"name": c.name, "status": c.status.name(), "seen": c.seen, "fix": c.fix}))
            .collect();
        let devices: Vec<_> = self
            .pairs
            .iter()
            .map(|p| {
                json!({
                    "vulkan_index": p.vulkan_index,
                    "vulkan_name": p.vulkan_index.map(|_| p.vulkan_name.clone()),
                    "vulkan_uuid": uuid(&p.vulkan_uuid),
                    "vulkan_type": p.vulkan_type.map(device_type_name),
                    "cuda_ordinal": p.cuda_ordinal,
                    "cuda_name": p.cuda_ordinal.map(|_| p.cuda_name.clone()),
                    "cuda_uuid": uuid(&p.cuda_uuid),
                    "ready": p.ready,
                })
            })
            .collect();
        let v = json!({
            "vkcuda_version": env!("CARGO_PKG_VERSION"),
            "ready": self.ready(),
            "summary": {
                "pass": self.count(Status::Pass),
                "warn": self.count(Status::Warn),
                "fail": self.count(Status::Fail),
            },
            "checks": checks,
            "devices": devices,
        });
        serde_json::to_string_pretty(&v).unwrap_or_default()
    }
}

/// "cpu", "integrated", "discrete", "virtual", "other".
pub(crate) fn device_type_name(t: vk::PhysicalDeviceType) -> &'static str {
    match t {
        vk::PhysicalDeviceType::CPU => "cpu",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated",
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual",
        _ => "other",
    }
}

/// Runs every check: the Vulkan loader and its ICDs, the CUDA driver, each
/// device's interop support and CUDA twin, the process's limits, the container
/// (and with [`Options::with_engine`], the engine's device; with
/// [`Options::deep`], the deep self-test). Never fails: what goes wrong is a check.
pub fn run(opts: &Options) -> Report {
    let mut r = Report::default();
    let gap = graphics_gap(&opts.root);
    let gap = gap.as_deref();
    let loader_ok = check_loader(&mut r, gap);
    let search = search();
    let manifests = find_manifests();
    check_icds(&mut r, &search, &manifests, gap);
    check_nvidia_icd(&mut r, &manifests, gap);
    let cuda_devices = check_cuda(&mut r);
    let working = Working {
        nvidia_icd: manifests
            .iter()
            .find(|m| m.is_nvidia() && m.works())
            .cloned(),
        cuda: cuda::driver_status().ok(),
    };
    let blocking: Vec<String> = manifests
        .iter()
        .filter(|m| m.blocks_loader())
        .map(|m| m.path.display().to_string())
        .collect();
    if !blocking.is_empty() {
        // vkCreateInstance would read them and never return.
        r.add(
            "vulkan.devices",
            Status::Fail,
            format!(
                "not checked: the Vulkan loader would never get past {} (see {}), so no instance can be \
                 made in this environment",
                blocking.join(", "),
                blocking
                    .iter()
                    .map(|b| format!("vulkan.icd[{b}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "remove those entries (fix their vulkan.icd checks) and run the doctor again",
        );
    } else if loader_ok {
        check_devices(&mut r, cuda_devices.as_deref(), &manifests, gap);
    } else {
        r.add(
            "vulkan.devices",
            Status::Fail,
            "not checked: the Vulkan loader did not load",
            "fix vulkan.loader first",
        );
    }
    if let Some(h) = &opts.engine {
        check_engine(&mut r, h, cuda_devices.as_deref());
    }
    check_container(&mut r, &opts.root, &working);
    check_open_files(&mut r);
    if opts.deep {
        let not_run = if !blocking.is_empty() {
            Some("the Vulkan loader would never get past an ICD entry (see vulkan.devices)")
        } else if !loader_ok {
            Some("the Vulkan loader did not load (see vulkan.loader)")
        } else {
            None
        };
        r.checks.extend(crate::selftest::run(not_run));
    }
    r
}

// --- Vulkan loader and ICDs ------------------------------------------------------

fn check_loader(r: &mut Report, gap: Option<&str>) -> bool {
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
    if version < super::vulkan::MIN_API_VERSION {
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

/// The most of one manifest the doctor reads. An ICD manifest is a few hundred
/// bytes; a larger file is not one, and a device such as `/dev/zero` never ends.
pub const MANIFEST_SIZE_LIMIT: u64 = 1 << 20;

/// Why an entry of the loader's search gave no usable manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The path does not exist.
    Missing,
    /// It exists but could not be opened or read (the system's words).
    Unreadable(String),
    /// Not read, and why: the loader skips it too (an entry of a variable that is
    /// neither a `*.json` name nor a directory, such as `/dev/zero`), a directory
    /// holds no manifest, or a `*.json` entry is a directory or a socket.
    Skipped(String),
    /// Not read because the Vulkan loader itself would never get past it: a
    /// FIFO or a device whose name ends in `.json`, which the loader opens as a
    /// manifest (it waits for a FIFO's writer, and reads a device such as
    /// `/dev/zero` without end). Every Vulkan program of this environment hangs.
    Blocks(String),
    /// A regular file larger than [`MANIFEST_SIZE_LIMIT`] (its size).
    TooLarge(u64),
    /// Not JSON: what the parser said, and where (from 1).
    NotJson {
        /// What the parser said.
        what: String,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
    },
    /// JSON without `ICD.library_path`.
    NoLibraryPath,
}

impl Problem {
    /// What was seen, to follow the path: "does not exist", "is not valid JSON: ...".
    pub fn describe(&self) -> String {
        match self {
            Problem::Missing => "does not exist".into(),
            Problem::Unreadable(e) => format!("cannot be read ({e})"),
            Problem::Skipped(why) => format!("was skipped: {why}"),
            Problem::Blocks(why) => format!("was not read: {why}"),
            Problem::TooLarge(n) => format!(
                "was skipped: it is {n} bytes, and an ICD manifest is a few hundred (the doctor reads at \
                 most {MANIFEST_SIZE_LIMIT})"
            ),
            Problem::NotJson { what, line, column } => {
                format!("is not valid JSON: {what} at line {line}, column {column}")
            }
            Problem::NoLibraryPath => "has no ICD.library_path".into(),
        }
    }
}

/// An entry of the loader's search: an ICD manifest and what its library did, or
/// an entry that gave none and why ([`Manifest::problem`]).
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Where the manifest is (or the entry that gave none).
    pub path: PathBuf,
    /// `ICD.library_path` as written.
    pub library: Option<String>,
    /// What the loader will dlopen (relative paths resolved against the manifest).
    pub resolved: Option<String>,
    pub(crate) probe: Option<dynlib::Probe>,
    /// Why it gave no manifest, or None when it is one.
    pub problem: Option<Problem>,
    /// Where it came from: "VK_DRIVER_FILES", a directory, ...
    pub source: String,
    /// The environment variable that names this path itself (not a directory
    /// holding it), if any.
    pub variable: Option<String>,
}

impl Manifest {
    /// NVIDIA's: its file or its library says so.
    pub fn is_nvidia(&self) -> bool {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        name.contains("nvidia")
            || self
                .library
                .as_deref()
                .is_some_and(|l| l.to_lowercase().contains("nvidia"))
    }

    /// A file the loader takes for a manifest (whether or not it is a good one):
    /// not a missing path or a skipped entry.
    pub fn found(&self) -> bool {
        !matches!(
            self.problem,
            Some(Problem::Missing | Problem::Skipped(_) | Problem::Blocks(_))
        )
    }

    /// Whether the manifest was read and its library loaded.
    pub fn works(&self) -> bool {
        self.problem.is_none()
            && self
                .probe
                .as_ref()
                .is_some_and(|p| p.loaded() && p.missing.is_empty())
    }

    /// The Vulkan loader would never get past this entry: it is a FIFO or a device
    /// named `*.json`, or the library it names is a path to something that is not
    /// a regular file (dlopen waits on a FIFO).
    pub fn blocks_loader(&self) -> bool {
        matches!(self.problem, Some(Problem::Blocks(_)))
            || self.resolved.as_deref().is_some_and(|r| {
                r.contains('/') && std::fs::metadata(r).is_ok_and(|md| !md.is_file())
            })
    }

    /// The fix for its problem (empty without one).
    fn problem_fix(&self) -> String {
        let path = self.path.display();
        let or_remove = match &self.variable {
            Some(v) => format!("remove it from {v}"),
            None => "remove the file".to_string(),
        };
        match &self.problem {
            None => String::new(),
            Some(Problem::Missing) => match &self.variable {
                Some(v) => format!("correct the path in {v} or remove it"),
                None => "reinstall the driver that owns this manifest".into(),
            },
            Some(Problem::Unreadable(_)) => format!(
                "make {path} readable by this user (chmod a+r), or {or_remove}"
            ),
            Some(Problem::Skipped(_)) => match &self.variable {
                Some(v) => format!(
                    "remove it from {v}, or name the driver's manifest there (a regular *.json file) or the \
                     directory that holds it"
                ),
                None => format!("replace {path} with the driver's manifest (a regular file), or remove it"),
            },
            Some(Problem::Blocks(_)) => match &self.variable {
                Some(v) => format!(
                    "remove it from {v}: the Vulkan loader opens every entry whose name ends in .json as a \
                     manifest file"
                ),
                None => format!(
                    "remove {path}: the Vulkan loader opens every *.json entry of the directory as a manifest file"
                ),
            },
            Some(Problem::TooLarge(_)) => format!("{path} is not an ICD manifest: {or_remove}"),
            Some(Problem::NotJson { line, column, .. }) => format!(
                "correct the JSON at line {line}, column {column} of {path} (or reinstall the driver that owns \
                 it), or {or_remove}: while a manifest it reads is not JSON, the Vulkan loader may fail every \
                 vkCreateInstance with VK_ERROR_OUT_OF_HOST_MEMORY"
            ),
            Some(Problem::NoLibraryPath) => format!(
                "add ICD.library_path (the driver's library) to {path} or reinstall the driver that owns it, \
                 or {or_remove}"
            ),
        }
    }
}

/// One of the loader's variables as the loader takes it: its bytes, None when
/// unset or empty.
fn env_bytes(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// A variable the doctor reads for its own checks (`NVIDIA_*`, `container`,
/// `CUDA_VISIBLE_DEVICES`): as text, None when unset or empty. Undecodable bytes
/// show as U+FFFD.
fn env(name: &str) -> Option<String> {
    env_bytes(name).map(|v| v.to_string_lossy().into_owned())
}

fn split_paths(v: &OsStr) -> Vec<PathBuf> {
    v.as_bytes()
        .split(|b| *b == b':')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}

/// The loader's driver search: where it looks, and the variables it takes that
/// are not UTF-8.
struct Search {
    paths: Vec<(PathBuf, String)>,
    /// (name, value with its undecodable bytes escaped), in the order read.
    undecodable: Vec<(&'static str, String)>,
    /// The variable that replaces the search (`VK_DRIVER_FILES` or
    /// `VK_ICD_FILENAMES`), if one is set.
    replaced_by: Option<&'static str>,
}

fn search() -> Search {
    let mut s = Search {
        paths: Vec::new(),
        undecodable: Vec::new(),
        replaced_by: None,
    };
    let read = |s: &mut Search, name: &'static str| -> Option<OsString> {
        let v = env_bytes(name)?;
        if v.to_str().is_none() {
            s.undecodable.push((name, format!("{v:?}")));
        }
        Some(v)
    };
    for name in ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"] {
        if let Some(v) = read(&mut s, name) {
            s.paths = split_paths(&v)
                .into_iter()
                .map(|p| (p, name.to_string()))
                .collect();
            s.replaced_by = Some(name);
            return s;
        }
    }
    if let Some(v) = read(&mut s, "VK_ADD_DRIVER_FILES") {
        let add = split_paths(&v)
            .into_iter()
            .map(|p| (p, "VK_ADD_DRIVER_FILES".to_string()));
        s.paths.extend(add);
    }
    let home = read(&mut s, "HOME").map(PathBuf::from);
    let icd = |base: &Path, src: &str| (base.join("vulkan/icd.d"), src.to_string());
    match read(&mut s, "XDG_CONFIG_HOME") {
        Some(h) => s.paths.push(icd(Path::new(&h), "$XDG_CONFIG_HOME")),
        None => {
            if let Some(h) = &home {
                s.paths.push(icd(&h.join(".config"), "$HOME/.config"))
            }
        }
    }
    let dirs = read(&mut s, "XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into());
    for d in split_paths(&dirs) {
        s.paths.push(icd(&d, "$XDG_CONFIG_DIRS"));
    }
    s.paths.push(icd(Path::new("/etc"), "/etc"));
    match read(&mut s, "XDG_DATA_HOME") {
        Some(h) => s.paths.push(icd(Path::new(&h), "$XDG_DATA_HOME")),
        None => {
            if let Some(h) = &home {
                s.paths
                    .push(icd(&h.join(".local/share"), "$HOME/.local/share"))
            }
        }
    }
    let dirs =
        read(&mut s, "XDG_DATA_DIRS").unwrap_or_else(|| "/usr/local/share:/usr/share".into());
    for d in split_paths(&dirs) {
        s.paths.push(icd(&d, "$XDG_DATA_DIRS"));
    }
    s
}

/// The directories and files the Vulkan loader searches for ICD manifests, in its
/// order, with where each came from (LoaderDriverInterface.md, "Driver Discovery
/// on Linux"): `VK_DRIVER_FILES` (or the older `VK_ICD_FILENAMES`) replaces the
/// search; otherwise `VK_ADD_DRIVER_FILES`, then `$XDG_CONFIG_HOME`,
/// `$XDG_CONFIG_DIRS`, `/etc`, `$XDG_DATA_HOME` and `$XDG_DATA_DIRS`, each with
/// `vulkan/icd.d` appended. The variables are taken as bytes, as the loader takes
/// them, so a value that is not UTF-8 still names the paths it names.
pub(crate) fn icd_search_paths() -> Vec<(PathBuf, String)> {
    search().paths
}

/// What a file is, for "skipped" messages.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Why a path whose name ends in `.json` but that is not a regular file is not
/// read as a manifest. The loader opens such a name as a manifest file: on a FIFO
/// it waits for a writer, on a device it reads without end.
fn not_regular(t: &std::fs::FileType) -> Problem {
    let kind = file_kind(t);
    if t.is_fifo() {
        Problem::Blocks(format!(
            "{kind} named *.json, not a regular file: the Vulkan loader opens it as a manifest and waits for a \
             writer for ever, so every Vulkan program started with this environment hangs"
        ))
    } else if t.is_char_device() || t.is_block_device() {
        Problem::Blocks(format!(
            "{kind} named *.json, not a regular file: the Vulkan loader reads it as a manifest and, for a \
             device such as /dev/zero, never reaches its end (every Vulkan program started with this \
             environment hangs or runs out of memory)"
        ))
    } else if t.is_dir() {
        Problem::Skipped(format!(
            "{kind} whose name ends in .json: the loader takes such a name for a manifest file, and a \
             directory cannot be read as one"
        ))
    } else {
        Problem::Skipped(format!("{kind}, not a regular file: not read"))
    }
}

/// The loader's test of a name: it reads an entry as a manifest file when its
/// name ends in `.json`, and lists it as a directory otherwise.
fn is_json_name(p: &Path) -> bool {
    p.as_os_str().as_bytes().ends_with(b".json")
}

/// The bytes of a manifest, or of any file the doctor reads under
/// [`Options::root`]: a regular file, at most [`MANIFEST_SIZE_LIMIT`] bytes,
/// opened without blocking (a FIFO put in its place after the check would
/// otherwise wait for a writer). `/proc` files report size 0 and are read up to
/// the limit.
fn read_capped(path: &Path) -> std::result::Result<Vec<u8>, Problem> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Problem::Missing,
        _ => Problem::Unreadable(e.to_string()),
    })?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    if meta.len() > MANIFEST_SIZE_LIMIT {
        return Err(Problem::TooLarge(meta.len()));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    let meta = f
        .metadata()
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(not_regular(&meta.file_type()));
    }
    let mut bytes = Vec::new();
    f.take(MANIFEST_SIZE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Problem::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > MANIFEST_SIZE_LIMIT {
        return Err(Problem::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads one manifest (a regular file of at most [`MANIFEST_SIZE_LIMIT`] bytes)
/// and tries its library.
pub(crate) fn read_manifest(path: &Path, source: &str) -> Manifest {
    let mut m = Manifest {
        path: path.to_path_buf(),
        library: None,
        resolved: None,
        probe: None,
        problem: None,
        source: source.to_string(),
        variable: None,
    };
    let bytes = match read_capped(path) {
        Ok(b) => b,
        Err(p) => {
            m.problem = Some(p);
            return m;
        }
    };
    let v: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = (e.line(), e.column());
            let text = e.to_string();
            let what = text
                .strip_suffix(&format!(" at line {line} column {column}"))
                .unwrap_or(&text)
                .to_string();
            m.problem = Some(Problem::NotJson { what, line, column });
            return m;
        }
    };
    let Some(lib) = v
        .get("ICD")
        .and_then(|i| i.get("library_path"))
        .and_then(|l| l.as_str())
    else {
        m.problem = Some(Problem::NoLibraryPath);
        return m;
    };
    m.library = Some(lib.to_string());
    let resolved = if lib.contains('/') && !lib.starts_with('/') {
        path.parent()
            .unwrap_or(Path::new("."))
            .join(lib)
            .to_string_lossy()
            .into_owned()
    } else {
        lib.to_string()
    };
    // dlopen would wait on a FIFO as read does: a path that is there but is not a
    // regular file is not loaded (a bare name is the dynamic loader's to find).
    let special =
        resolved.contains('/') && std::fs::metadata(&resolved).is_ok_and(|md| !md.is_file());
    m.probe = Some(if special {
        dynlib::Probe {
            path: None,
            error: Some(format!(
                "{resolved} is not a regular file (not loaded: dlopen would wait on a FIFO)"
            )),
            missing: Vec::new(),
        }
    } else {
        dynlib::probe(&resolved, &["vk_icdGetInstanceProcAddr"])
    });
    m.resolved = Some(resolved);
    m
}

fn skipped(path: &Path, source: &str, variable: Option<&str>, problem: Problem) -> Manifest {
    Manifest {
        path: path.to_path_buf(),
        library: None,
        resolved: None,
        probe: None,
        problem: Some(problem),
        source: source.to_string(),
        variable: variable.map(str::to_string),
    }
}

/// What the loader reads, entry by entry, as it reads it: an entry of a variable
/// whose name ends in `.json` is a manifest file; any other entry, and each
/// standard directory, is listed for `*.json` files. Only regular files are read,
/// at most [`MANIFEST_SIZE_LIMIT`] bytes each. Entries of a variable that give no
/// manifest (missing, not a `*.json` file or a directory, a directory without
/// manifests, not a regular file) are listed with their [`Problem`].
pub fn find_manifests() -> Vec<Manifest> {
    let mut out: Vec<Manifest> = Vec::new();
    let mut push = |m: Manifest| {
        if !out.iter().any(|o| o.path == m.path) {
            out.push(m);
        }
    };
    for (p, src) in icd_search_paths() {
        // An entry of a variable (not a standard directory).
        let named = src.starts_with("VK_");
        if named && is_json_name(&p) {
            let mut m = read_manifest(&p, &src);
            m.variable = Some(src.clone());
            push(m);
            continue;
        }
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                if named {
                    let problem = match e.kind() {
                        std::io::ErrorKind::NotFound => Problem::Missing,
                        _ => Problem::Unreadable(e.to_string()),
                    };
                    push(skipped(&p, &src, Some(&src), problem));
                }
                continue;
            }
        };
        if !meta.is_dir() {
            if named {
                push(skipped(
                    &p,
                    &src,
                    Some(&src),
                    Problem::Skipped(format!(
                        "{} whose name does not end in .json: the loader reads only *.json files and the \
                         *.json files of directories, and skips it",
                        file_kind(&meta.file_type())
                    )),
                ));
            }
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&p)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| is_json_name(f))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        if files.is_empty() && named {
            push(skipped(
                &p,
                &src,
                Some(&src),
                Problem::Skipped(
                    "a directory without *.json files: the loader finds no manifest in it".into(),
                ),
            ));
        }
        for f in files {
            push(read_manifest(&f, &format!("{src} ({})", p.display())));
        }
    }
    out
}

/// Inside a container whose `NVIDIA_DRIVER_CAPABILITIES` lacks `graphics` (unset
/// means the toolkit's default, `utility,compute`): how the variable reads. The
/// toolkit then mounts no Vulkan driver, which is the first thing the Vulkan checks
/// that fail should say.
fn graphics_gap(root: &Path) -> Option<String> {
    container_evidence(root)?;
    let caps = Capabilities::read();
    (!caps.has("graphics")).then_some(caps.shown)
}

/// What the Vulkan checks that fail for lack of NVIDIA's Vulkan driver add in a
/// container without `graphics`: to what was seen, and before the fix.
fn with_gap(seen: String, fix: &str, gap: Option<&str>) -> (String, String) {
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

fn check_icds(r: &mut Report, s: &Search, manifests: &[Manifest], gap: Option<&str>) {
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

fn check_nvidia_icd(r: &mut Report, manifests: &[Manifest], gap: Option<&str>) {
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

// --- CUDA ---------------------------------------------------------------------

fn check_cuda(r: &mut Report) -> Option<Vec<DeviceInfo>> {
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

// --- Devices and pairing ----------------------------------------------------------

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

fn check_devices(
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

// --- The engine's device --------------------------------------------------------

/// The engine's own `VkDevice`: what a context made on it would lack. Each failure
/// is the error that context's first call would return, word for word.
fn check_engine(r: &mut Report, h: &EngineHandles, cuda_devices: Option<&[DeviceInfo]>) {
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

// --- Containers -----------------------------------------------------------------

/// What works already: the container checks only explain what is missing, so a
/// driver that works (installed in the image, or mounted another way) passes them
/// whatever the toolkit's variables say.
struct Working {
    nvidia_icd: Option<Manifest>,
    cuda: Option<cuda::DriverInfo>,
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

fn check_container(r: &mut Report, root: &Path, working: &Working) {
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

// --- The process ---------------------------------------------------------------

fn check_open_files(r: &mut Report) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        r.add(
            "process.open_files",
            Status::Warn,
            "getrlimit(RLIMIT_NOFILE) failed",
            "check the open-file limit with ulimit -n",
        );
        return;
    }
    let open = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count().to_string())
        .unwrap_or_else(|_| "?".into());
    let show = |v: u64| {
        if v == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    let seen = format!(
        "open-file limit {} (hard {}), {open} open now",
        show(lim.rlim_cur),
        show(lim.rlim_max)
    );
    let fix = format!(
        "raise it to at least {FD_LIMIT_WARN}: ulimit -n {} in the shell that starts the program, LimitNOFILE= \
         in a systemd unit, or docker run --ulimit nofile={}:{}",
        FD_LIMIT_WARN.max(4096),
        FD_LIMIT_WARN.max(4096),
        FD_LIMIT_WARN.max(4096)
    );
    let status = if lim.rlim_cur < FD_LIMIT_FAIL {
        Status::Fail
    } else if lim.rlim_cur < FD_LIMIT_WARN {
        Status::Warn
    } else {
        Status::Pass
    };
    r.add("process.open_files", status, seen, &fix);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_json() {
        let mut r = Report::default();
        r.pass("a", "fine");
        r.add("b", Status::Warn, "meh", "do x");
        assert!(r.ready());
        r.add("c", Status::Fail, "bad \"quoted\"", "do y");
        assert!(!r.ready());
        assert_eq!(r.check("a").unwrap().fix, "");
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["ready"], false);
        assert_eq!(v["summary"]["fail"], 1);
        assert_eq!(v["checks"][2]["seen"], "bad \"quoted\"");
        assert_eq!(v["checks"][1]["status"], "warn");
    }

    #[test]
    fn loader_variables_are_bytes() {
        let v = OsStr::from_bytes(b"/a/\xffnvidia_icd.json::/b/icd.d");
        assert_eq!(
            split_paths(v),
            [
                PathBuf::from(OsStr::from_bytes(b"/a/\xffnvidia_icd.json")),
                PathBuf::from("/b/icd.d")
            ]
        );
        assert!(is_json_name(Path::new("/x/nvidia_icd.json")));
        assert!(!is_json_name(Path::new("/x/icd.d")));
        assert!(!is_json_name(Path::new("/dev/zero")));
    }

    #[test]
    fn manifests_are_read_with_a_limit() {
        let dir = std::env::temp_dir().join(format!("vkcuda-doctor-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; MANIFEST_SIZE_LIMIT as usize + 1]).unwrap();
        assert_eq!(
            read_capped(&big),
            Err(Problem::TooLarge(MANIFEST_SIZE_LIMIT + 1))
        );
        assert_eq!(read_capped(&dir.join("none.json")), Err(Problem::Missing));
        assert!(matches!(
            read_capped(Path::new("/dev/zero")),
            Err(Problem::Blocks(_))
        ));
        assert!(matches!(read_capped(&dir), Err(Problem::Skipped(_))));
        // A manifest whose library is a FIFO: not loaded (dlopen would block).
        let fifo = dir.join("lib.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let man = dir.join("fifo_lib.json");
        std::fs::write(
            &man,
            format!(r#"{{"ICD": {{"library_path": "{}"}}}}"#, fifo.display()),
        )
        .unwrap();
        let m = read_manifest(&man, "test");
        assert!(m.blocks_loader());
        assert!(
            m.probe
                .unwrap()
                .error
                .unwrap()
                .contains("is not a regular file"),
            "not loaded"
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\n  \"ICD\": [1,\n").unwrap();
        let m = read_manifest(&bad, "test");
        assert_eq!(
            m.problem.unwrap().describe(),
            "is not valid JSON: EOF while parsing a value at line 3, column 0"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
