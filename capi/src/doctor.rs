//! C API: the doctor, the checks that say whether interop will work here.

use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;

use super::context::vkcuda_context_create_info;
use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{boundary, check_flags, out, quiet, vkcuda_result, write_handle};
use vkcuda::context::EngineHandles;
use vkcuda::doctor::{self, Report, Status};
use vkcuda::error::{Error, Result};

/// How a doctor check came out.
///
/// @ingroup library
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_doctor_status {
    /// Fine.
    VKCUDA_DOCTOR_STATUS_PASS = 0,
    /// Worth knowing; interop can still work.
    VKCUDA_DOCTOR_STATUS_WARN = 1,
    /// Interop will not work until this is fixed.
    VKCUDA_DOCTOR_STATUS_FAIL = 2,
    /// Keeps the enum 32 bits wide.
    VKCUDA_DOCTOR_STATUS_MAX_ENUM = 0x7FFF_FFFF,
}

/// `vkcuda_doctor_options::flags`: also run the deep self-test. On this machine's
/// GPU it creates each kind of shared resource the library offers (buffers of both
/// allocators, images of every format class and shape, shared video frames of
/// every verified multi-planar format, timeline and binary semaphores), writes a
/// ramp, constant 4 KiB tiles, a 64 KiB zero region, 64 KiB and 2 MiB constant
/// tiles (what compression squeezes) and random bytes through each in both
/// directions (Vulkan
/// copies and the library's release/acquire barriers on one side, CUDA copies on
/// the other), compares every byte, and adds one check per resource
/// ("deep.buffer.vulkan", "deep.image.R8G8B8A8_UNORM.2D", "deep.frame.NV12",
/// "deep.semaphore.timeline", ...) that fails with the first wrong byte, then
/// "deep.total" with the run time. Each check's `seen` ends with its time. Without
/// CUDA (no driver, or no CUDA twin of the Vulkan device) the Vulkan-only part
/// runs and "deep.cuda" warns that the CUDA part was skipped, and why. It takes
/// seconds (a few MiB per resource) and makes its own standalone context.
///
/// @ingroup library
pub const VKCUDA_DOCTOR_RUN_DEEP_BIT: u32 = 0x1;

/// Options of `vkcuda_doctor_run`; all zero (or a NULL pointer) for the defaults.
///
/// @ingroup library
#[repr(C)]
pub struct vkcuda_doctor_options {
    /// `VKCUDA_DOCTOR_RUN_DEEP_BIT` or 0; other bits are refused.
    pub flags: u32,
    /// The directory the container checks read `/.dockerenv`, `/run/.containerenv`,
    /// `/proc/1/cgroup`, `/dev/nvidia*` and the driver's libraries under; NULL for
    /// "/". For tests of the checks with a prepared directory. The files read there
    /// (`proc/1/cgroup`) are read as the ICD manifests are: a regular file of at
    /// most 1 MiB, opened without blocking; anything else (a FIFO, a device) is not
    /// read, so the run always returns.
    pub root: *const c_char,
    /// Optional: the handles the engine passes (or would pass) to
    /// `vkcuda_context_create`. The doctor then also checks that `VkDevice`: the
    /// fd extensions it was created with and its CUDA twin ("engine.*" checks, in
    /// the words of the errors a context on it returns). Its `flags` say what the
    /// device was created with (`VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT`);
    /// `cuda_context` is not used. Borrowed for the call only.
    pub engine: *const vkcuda_context_create_info,
}

/// One check of a doctor report. The strings belong to the report and stay valid
/// until `vkcuda_doctor_report_destroy`.
///
/// @ingroup library
#[repr(C)]
pub struct vkcuda_doctor_check {
    /// What was checked: "cuda.driver", "vulkan.nvidia_icd",
    /// "vulkan_device[0].timeline_export", "container.driver_capabilities", ...
    pub name: *const c_char,
    /// How it came out.
    pub status: vkcuda_doctor_status,
    /// What the doctor saw (paths, versions, UUIDs).
    pub seen: *const c_char,
    /// The fix in one sentence; "" when the check passed.
    pub fix: *const c_char,
}

/// One row of the doctor's pairing table: a Vulkan device with the CUDA device of
/// the same UUID, or a CUDA device that no Vulkan device has the UUID of. The
/// strings belong to the report.
///
/// @ingroup library
#[repr(C)]
pub struct vkcuda_doctor_device_pair {
    /// The Vulkan device's index in `vkEnumeratePhysicalDevices`, or -1 for a CUDA
    /// device without a Vulkan twin.
    pub vulkan_index: i32,
    /// Its `VkPhysicalDeviceType` (CPU for software rasterizers such as lavapipe);
    /// 0 without a Vulkan device.
    pub vulkan_device_type: VkPhysicalDeviceType,
    /// Its `deviceUUID`; zeros without a Vulkan device.
    pub vulkan_uuid: [u8; 16],
    /// Its name; "" without a Vulkan device.
    pub vulkan_name: *const c_char,
    /// The CUDA ordinal with the same UUID, or -1.
    pub cuda_ordinal: i32,
    /// That device's UUID; zeros without one.
    pub cuda_uuid: [u8; 16],
    /// Its name; "" without one.
    pub cuda_name: *const c_char,
    /// VK_TRUE when this Vulkan device has a CUDA twin and everything interop needs.
    pub ready: VkBool32,
}

/// The counts of a doctor report.
///
/// @ingroup library
#[repr(C)]
pub struct vkcuda_doctor_summary {
    /// How many checks (`vkcuda_doctor_report_get_check` takes 0 to this minus 1).
    pub check_count: u32,
    /// How many passed.
    pub pass_count: u32,
    /// How many warn.
    pub warn_count: u32,
    /// How many failed.
    pub fail_count: u32,
    /// How many rows the pairing table has (`vkcuda_doctor_report_get_device_pair`).
    pub device_pair_count: u32,
    /// VK_TRUE when no check failed: interop will work here.
    pub ready: VkBool32,
}

struct CheckStrings {
    name: CString,
    seen: CString,
    fix: CString,
}

/// A report and the C strings handed out from it.
pub struct DoctorReport {
    report: Report,
    checks: Vec<CheckStrings>,
    pair_names: Vec<(CString, CString)>,
    json: CString,
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// The report's JSON as C callers get it: the Rust library writes its own
/// version as `vkcuda_version`, and C (and Python) callers are told the version of
/// the C library (this crate's, `vkcuda_version_string`'s).
fn c_json(report: &Report) -> String {
    let json = report.to_json();
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(mut v) if v.get("vkcuda_version").is_some() => {
            v["vkcuda_version"] = env!("CARGO_PKG_VERSION").into();
            serde_json::to_string_pretty(&v).unwrap_or(json)
        }
        _ => json,
    }
}

impl DoctorReport {
    fn new(report: Report) -> DoctorReport {
        let checks = report
            .checks
            .iter()
            .map(|c| CheckStrings {
                name: c_string(&c.name),
                seen: c_string(&c.seen),
                fix: c_string(&c.fix),
            })
            .collect();
        let pair_names = report
            .pairs
            .iter()
            .map(|p| (c_string(&p.vulkan_name), c_string(&p.cuda_name)))
            .collect();
        let json = c_string(&c_json(&report));
        DoctorReport {
            report,
            checks,
            pair_names,
            json,
        }
    }
}

/// The checks of one `vkcuda_doctor_run`. Released by `vkcuda_doctor_report_destroy`.
///
/// Thread-safety: the getters may be called from any thread at once; destroy must
/// not overlap any other use.
///
/// @ingroup library
pub struct vkcuda_doctor_report {
    h: Tagged<DoctorReport>,
}
handle_kind!(vkcuda_doctor_report, DoctorReport, handle::DOCTOR_REPORT);

unsafe fn report_arg<'a>(report: *const vkcuda_doctor_report) -> Result<&'a DoctorReport> {
    handle::get(report, "report")
}

/// Runs every check of the doctor and returns them in `*report`: the Vulkan loader
/// and its version; the ICD manifests the loader will read (`VK_DRIVER_FILES`,
/// `VK_ICD_FILENAMES`, `VK_ADD_DRIVER_FILES`, the standard directories) and whether
/// each one's library loads; NVIDIA's ICD; `libcuda.so.1` and its version against
/// what timeline-semaphore import needs; every Vulkan device against every CUDA
/// device by UUID; per device the memory and semaphore fd extensions, timeline
/// semaphores, timeline export, exportable buffers and images; inside a container
/// the NVIDIA container toolkit's capabilities, libraries, ICD manifest and device
/// nodes; the open-file limit. Checks that match an error of the library use that
/// error's words (`VKCUDA_ERROR_CUDA_UNAVAILABLE`, `VKCUDA_ERROR_DEVICE_MISMATCH`,
/// `VKCUDA_ERROR_VULKAN_UNAVAILABLE`).
///
/// Returns `VKCUDA_SUCCESS` when the checks ran, whatever they found
/// (`vkcuda_doctor_report_get_summary` says whether interop will work). The doctor
/// loads the Vulkan loader, every ICD's library and the CUDA driver into this
/// process, and they stay loaded until it exits (the ICD libraries are opened with
/// `RTLD_NODELETE`: a driver unloaded while threads it started still run could
/// crash the process); it makes a short-lived Vulkan instance. It always returns:
/// it reads only regular `*.json` files of at most 1 MiB as manifests, never a FIFO
/// or a device, loads no library that is not a regular file, and where the loader
/// itself would never get past an entry (a FIFO or a device named `*.json`, a
/// manifest whose library is a FIFO) it makes no instance and says so in
/// `vulkan.devices`. `*report` is written on success, set to NULL on failure; the
/// caller destroys it.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_doctor_run(
    options: *const vkcuda_doctor_options,
    report: *mut *mut vkcuda_doctor_report,
) -> vkcuda_result {
    boundary("vkcuda_doctor_run", || {
        let made = (|| {
            out(report, "report")?;
            let mut opts = doctor::Options::default();
            if let Some(o) = options.as_ref() {
                check_flags(o.flags, VKCUDA_DOCTOR_RUN_DEEP_BIT, "options->flags")?;
                opts.deep = o.flags & VKCUDA_DOCTOR_RUN_DEEP_BIT != 0;
                if !o.root.is_null() {
                    let root = CStr::from_ptr(o.root)
                        .to_str()
                        .map_err(|_| Error::invalid("options->root is not valid UTF-8"))?;
                    if root.is_empty() {
                        return Err(Error::invalid("options->root is empty; pass NULL for /"));
                    }
                    opts.root = PathBuf::from(root);
                }
                if let Some(e) = o.engine.as_ref() {
                    if e.instance == ash::vk::Instance::null() {
                        return Err(Error::null("options->engine->instance"));
                    }
                    opts = opts.with_engine(EngineHandles {
                        instance: e.instance,
                        physical: e.physical_device,
                        device: e.device,
                        get_instance_proc_addr: e.get_instance_proc_addr.ok_or_else(|| {
                            Error::null("options->engine->get_instance_proc_addr")
                        })?,
                        get_device_proc_addr: e.get_device_proc_addr,
                        synchronization2: e.flags
                            & super::context::VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT
                            != 0,
                    });
                }
            }
            let inner = DoctorReport::new(doctor::run(&opts));
            Ok(handle::boxed::<vkcuda_doctor_report>(inner))
        })();
        write_handle(report, made)
    })
}

/// Fills `*summary` with the report's counts and verdict.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_doctor_report_get_summary(
    report: *const vkcuda_doctor_report,
    summary: *mut vkcuda_doctor_summary,
) -> vkcuda_result {
    boundary("vkcuda_doctor_report_get_summary", || {
        let r = report_arg(report)?;
        let summary = out(summary, "summary")?;
        let rep = &r.report;
        *summary = vkcuda_doctor_summary {
            check_count: rep.checks.len() as u32,
            pass_count: rep.count(Status::Pass) as u32,
            warn_count: rep.count(Status::Warn) as u32,
            fail_count: rep.count(Status::Fail) as u32,
            device_pair_count: rep.pairs.len() as u32,
            ready: rep.ready() as u32,
        };
        Ok(())
    })
}

fn index_of(index: u32, len: usize, what: &str) -> Result<usize> {
    let i = index as usize;
    if i >= len {
        return Err(Error::invalid(format!(
            "index {index} is out of range: the report has {len} {what}"
        )));
    }
    Ok(i)
}

/// Fills `*check` with check `index` (from 0 to `check_count` minus 1, in the
/// order the doctor ran them). The strings belong to the report.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_doctor_report_get_check(
    report: *const vkcuda_doctor_report,
    index: u32,
    check: *mut vkcuda_doctor_check,
) -> vkcuda_result {
    boundary("vkcuda_doctor_report_get_check", || {
        let r = report_arg(report)?;
        let check = out(check, "check")?;
        let i = index_of(index, r.checks.len(), "checks")?;
        let c = &r.report.checks[i];
        let s = &r.checks[i];
        *check = vkcuda_doctor_check {
            name: s.name.as_ptr(),
            status: match c.status {
                Status::Pass => vkcuda_doctor_status::VKCUDA_DOCTOR_STATUS_PASS,
                Status::Warn => vkcuda_doctor_status::VKCUDA_DOCTOR_STATUS_WARN,
                Status::Fail => vkcuda_doctor_status::VKCUDA_DOCTOR_STATUS_FAIL,
            },
            seen: s.seen.as_ptr(),
            fix: s.fix.as_ptr(),
        };
        Ok(())
    })
}

/// Fills `*pair` with row `index` of the pairing table (from 0 to
/// `device_pair_count` minus 1): first every Vulkan device in
/// `vkEnumeratePhysicalDevices` order, then each CUDA device that no Vulkan device
/// has the UUID of. The strings belong to the report.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_doctor_report_get_device_pair(
    report: *const vkcuda_doctor_report,
    index: u32,
    pair: *mut vkcuda_doctor_device_pair,
) -> vkcuda_result {
    boundary("vkcuda_doctor_report_get_device_pair", || {
        let r = report_arg(report)?;
        let pair = out(pair, "pair")?;
        let i = index_of(index, r.report.pairs.len(), "device pairs")?;
        let p = &r.report.pairs[i];
        let (vk_name, cuda_name) = &r.pair_names[i];
        *pair = vkcuda_doctor_device_pair {
            vulkan_index: p.vulkan_index.map_or(-1, |v| v as i32),
            vulkan_device_type: p.vulkan_type.unwrap_or_default(),
            vulkan_uuid: p.vulkan_uuid.unwrap_or([0; 16]),
            vulkan_name: vk_name.as_ptr(),
            cuda_ordinal: p.cuda_ordinal.unwrap_or(-1),
            cuda_uuid: p.cuda_uuid.unwrap_or([0; 16]),
            cuda_name: cuda_name.as_ptr(),
            ready: p.ready as u32,
        };
        Ok(())
    })
}

/// The report as JSON, for CI systems and support tickets. An object with the
/// members `vkcuda_version`, `ready` (true when no check failed), `summary` (the
/// counts `pass`, `warn`, `fail`), `checks` (an array of objects with `name`,
/// `status` ("pass", "warn" or "fail"), `seen` and `fix`) and `devices` (the
/// pairing table: objects with `vulkan_index`, `vulkan_name`, `vulkan_uuid`,
/// `vulkan_type`, `cuda_ordinal`, `cuda_name`, `cuda_uuid`, `ready`; a side that
/// is absent is null). `*json` belongs to the report and stays valid until
/// `vkcuda_doctor_report_destroy`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup library
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_doctor_report_get_json(
    report: *const vkcuda_doctor_report,
    json: *mut *const c_char,
) -> vkcuda_result {
    boundary("vkcuda_doctor_report_get_json", || {
        let r = report_arg(report)?;
        let json = out(json, "json")?;
        *json = r.json.as_ptr();
        Ok(())
    })
}

/// Releases a report and its strings. NULL does nothing.
///
/// Thread-safety: the report must not be in use by another thread.
///
/// @ingroup library
#[no_mangle]
pub unsafe extern "C" fn vkcuda_doctor_report_destroy(report: *mut vkcuda_doctor_report) {
    quiet((), || {
        handle::destroy(report, "vkcuda_doctor_report_destroy")
    })
}
