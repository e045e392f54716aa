//! What the doctor reports, and how it is asked: the statuses, checks, pairing
//! rows, the report and the options every other module of the doctor shares. It
//! imports none of them.

use std::ffi::OsString;
use std::path::PathBuf;

use ash::vk;

use crate::vulkan::EngineHandles;

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
    pub(crate) engine: Option<EngineHandles>,
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
    /// of the engine, valid during [`run`](super::run).
    pub unsafe fn with_engine(mut self, engine: EngineHandles) -> Options {
        self.engine = Some(engine);
        self
    }
}

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

    pub(crate) fn add(
        &mut self,
        name: impl Into<String>,
        status: Status,
        seen: impl Into<String>,
        fix: &str,
    ) {
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

    pub(crate) fn pass(&mut self, name: impl Into<String>, seen: impl Into<String>) {
        self.add(name, Status::Pass, seen, "");
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

/// One of the loader's variables as the loader takes it: its bytes, None when
/// unset or empty.
pub(crate) fn env_bytes(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// A variable the doctor reads for its own checks (`NVIDIA_*`, `container`,
/// `CUDA_VISIBLE_DEVICES`): as text, None when unset or empty. Undecodable bytes
/// show as U+FFFD.
pub(crate) fn env(name: &str) -> Option<String> {
    env_bytes(name).map(|v| v.to_string_lossy().into_owned())
}
