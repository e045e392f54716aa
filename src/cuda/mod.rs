//! The CUDA driver side, through `cudarc::driver::sys` loaded at run time.
//!
//! Nothing here links `libcuda`: [`driver`] finds and initialises it once and turns
//! "no driver" into [`ErrorKind::CudaUnavailable`], before any other call can panic
//! in the loader.

pub mod array;
pub mod context;
pub mod external;
pub mod vmm;

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use cudarc::driver::sys;

use crate::error::{Diagnosis, Error, ErrorKind, Result};

pub use context::CudaContext;

/// Every driver symbol the library calls; all must resolve before the first call.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetUuid_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuCtxGetDevice",
    "cuCtxGetCurrent",
    "cuMemAlloc_v2",
    "cuPointerGetAttribute",
    "cuStreamGetCtx",
    "cuMemGetAllocationGranularity",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle",
    "cuImportExternalMemory",
    "cuExternalMemoryGetMappedBuffer",
    "cuDestroyExternalMemory",
    "cuMemFree_v2",
    "cuImportExternalSemaphore",
    "cuSignalExternalSemaphoresAsync",
    "cuWaitExternalSemaphoresAsync",
    "cuDestroyExternalSemaphore",
    "cuExternalMemoryGetMappedMipmappedArray",
    "cuMipmappedArrayGetLevel",
    "cuMipmappedArrayDestroy",
    "cuSurfObjectCreate",
    "cuSurfObjectDestroy",
    "cuTexObjectCreate",
    "cuTexObjectDestroy",
    "cuCtxGetCurrent",
    "cuStreamIsCapturing",
    "cuGraphAddExternalSemaphoresWaitNode",
    "cuGraphAddExternalSemaphoresSignalNode",
    "cuGraphExecExternalSemaphoresWaitNodeSetParams",
    "cuGraphExecExternalSemaphoresSignalNodeSetParams",
    "cuGraphExternalSemaphoresWaitNodeGetParams",
    "cuGraphExternalSemaphoresSignalNodeGetParams",
    "cuGraphNodeGetType",
    "cuMemcpy2DAsync_v2",
    "cuMemGetAddressRange_v2",
];

/// Set to any value to behave as if no CUDA driver were installed (tests the
/// CUDA-less paths on a machine that has one).
pub const DISABLE_ENV: &str = "VKCUDA_DISABLE_CUDA";

/// The lowest driver the library accepts, as `cuDriverGetVersion` reports it
/// (`major * 1000 + minor * 10`): CUDA 11.2, the release that added
/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD` (CUDA 11.2 release
/// notes, "CUDA Driver API: added support for importing Vulkan timeline
/// semaphores"; the driver API reference lists the handle type from 11.2 on).
/// The Linux driver of CUDA 11.2 GA is 460.27.03 (CUDA Toolkit release notes,
/// table "CUDA Toolkit and Corresponding Driver Versions").
pub const MIN_DRIVER_VERSION: i32 = 11020;

/// The driver the library loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// `cuDriverGetVersion`: `major * 1000 + minor * 10`.
    pub version: i32,
    /// The file the dynamic loader took for it (from `dladdr`), when it says.
    pub path: Option<String>,
}

/// `13000` as "13.0".
pub fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Loads and initialises the CUDA driver once; later calls return the same answer.
/// The doctor reports this very answer (`crate::doctor`).
pub fn driver_status() -> std::result::Result<DriverInfo, Diagnosis> {
    static STATE: OnceLock<std::result::Result<DriverInfo, Diagnosis>> = OnceLock::new();
    STATE.get_or_init(load_driver).clone()
}

/// [`driver_status`] as the library's error ("what was seen: the fix").
pub fn driver() -> Result<()> {
    driver_status().map(|_| ()).map_err(|d| d.error())
}

fn unavailable(seen: impl Into<String>, fix: impl Into<String>) -> Diagnosis {
    Diagnosis::new(ErrorKind::CudaUnavailable, seen, fix)
}

fn load_driver() -> std::result::Result<DriverInfo, Diagnosis> {
    if std::env::var_os(DISABLE_ENV).is_some() {
        return Err(unavailable(
            format!("the CUDA driver is disabled by the {DISABLE_ENV} environment variable"),
            format!("unset {DISABLE_ENV} to use the driver"),
        ));
    }
    // SAFETY: only tries dlopen on the candidate names; nothing is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(
            "the CUDA driver library libcuda.so.1 was not found",
            "install the NVIDIA driver, or create the context with VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT \
             for Vulkan-only use",
        ));
    }
    // SAFETY: the library is present, so culib() does not panic; get() only looks up names.
    let lib = unsafe { sys::culib() };
    for name in REQUIRED_SYMBOLS {
        let found = unsafe { lib.get::<*const std::ffi::c_void>(name.as_bytes()) }.is_ok();
        if !found {
            return Err(unavailable(
                format!("the CUDA driver is too old: it has no {name}"),
                "install NVIDIA driver 525 or newer",
            ));
        }
    }
    let path = unsafe { lib.get::<*const std::ffi::c_void>(b"cuInit") }
        .ok()
        .and_then(|sym| crate::dynlib::path_of((*sym).cast()));
    // SAFETY: every symbol used below was checked above.
    let r = unsafe { sys::cuInit(0) };
    if r != sys::CUresult::CUDA_SUCCESS {
        if r == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            if let Some(d) = hidden_by_visible_devices() {
                return Err(d);
            }
        }
        return Err(unavailable(
            format!("cuInit failed with {r:?}"),
            "check that the NVIDIA kernel module is loaded and this process can open /dev/nvidiactl \
             and /dev/nvidia0 (nvidia-smi shows the GPU; in a container: run it with the NVIDIA \
             container toolkit)",
        ));
    }
    let mut version = 0;
    let r = unsafe { sys::cuDriverGetVersion(&mut version) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(unavailable(
            format!("cuDriverGetVersion failed with {r:?}"),
            "reinstall the NVIDIA driver",
        ));
    }
    if version < MIN_DRIVER_VERSION {
        return Err(unavailable(
            format!(
                "the CUDA driver is too old: it supports CUDA {} ({version}), and importing Vulkan \
                 timeline semaphores (CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD) \
                 needs CUDA {}",
                version_text(version),
                version_text(MIN_DRIVER_VERSION)
            ),
            "install NVIDIA driver 525 or newer (CUDA 11.2 came with 460.27.03; the library's other \
             calls need 525)",
        ));
    }
    Ok(DriverInfo { version, path })
}

/// `cuInit` found no device while `CUDA_VISIBLE_DEVICES` is set: the variable is
/// the first suspect (empty, it hides every GPU; an index or UUID the machine does
/// not have hides them too), and `nvidia-smi`, which ignores it, would show the
/// GPUs and lead nowhere.
fn hidden_by_visible_devices() -> Option<Diagnosis> {
    let v = std::env::var_os("CUDA_VISIBLE_DEVICES")?;
    let v = v.to_string_lossy();
    let what = if v.trim().is_empty() {
        "empty, which hides every GPU from CUDA".to_string()
    } else {
        "it names no GPU this driver has (indices count from 0 in nvidia-smi -L order; UUIDs as GPU-...)"
            .to_string()
    };
    Some(unavailable(
        format!("cuInit failed with CUDA_ERROR_NO_DEVICE and CUDA_VISIBLE_DEVICES=\"{v}\": {what}"),
        "unset CUDA_VISIBLE_DEVICES or set it to GPUs this machine has (nvidia-smi -L lists them with their \
         indices and UUIDs; nvidia-smi itself ignores CUDA_VISIBLE_DEVICES, so it lists every GPU either way)",
    ))
}

/// The driver's CUDA version as `major * 1000 + minor * 10` (13000 for 13.0).
pub fn driver_version() -> Result<i32> {
    driver_status().map(|d| d.version).map_err(|d| d.error())
}

/// One CUDA device as seen by the driver.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub ordinal: i32,
    pub device: sys::CUdevice,
    pub uuid: [u8; 16],
    pub name: String,
}

/// Lists the CUDA devices with their UUIDs.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    driver()?;
    let mut count = 0;
    cu_check("cuDeviceGetCount", unsafe {
        sys::cuDeviceGetCount(&mut count)
    })?;
    let mut out = Vec::new();
    for ordinal in 0..count {
        let mut device = 0;
        cu_check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut device, ordinal)
        })?;
        out.push(device_info(ordinal, device)?);
    }
    Ok(out)
}

fn device_info(ordinal: i32, device: sys::CUdevice) -> Result<DeviceInfo> {
    let mut uuid = sys::CUuuid { bytes: [0; 16] };
    cu_check("cuDeviceGetUuid_v2", unsafe {
        sys::cuDeviceGetUuid_v2(&mut uuid, device)
    })?;
    let mut name = [0 as c_char; 256];
    cu_check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
    })?;
    // SAFETY: the driver writes a NUL-terminated string into the buffer.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Ok(DeviceInfo {
        ordinal,
        device,
        uuid: uuid.bytes.map(|b| b as u8),
        name,
    })
}

/// A device's info from its handle (for a caller-supplied context).
pub fn device_from_handle(device: sys::CUdevice) -> Result<DeviceInfo> {
    let all = devices()?;
    all.into_iter()
        .find(|d| d.device == device)
        .ok_or_else(|| Error::invalid(format!("CUDA device handle {device} is not a device")))
}

/// Formats a UUID the way `nvidia-smi` and `vulkaninfo` print it.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// The error for a failed CUDA driver call: a sticky result (a lost context) is
/// recorded by `crate::lost` first, so every later call on that context says so.
pub(crate) fn error(call: &str, r: sys::CUresult) -> Error {
    if crate::lost::is_sticky(r) {
        crate::lost::cuda(call, r)
    } else {
        Error::cuda(call, r)
    }
}

/// Turns a `CUresult` into `Ok` or an [`Error`] naming the call ([`error`]).
pub(crate) fn cu_check(call: &str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(error(call, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_format() {
        let u = [
            0x6d, 0x65, 0x73, 0x61, 0x32, 0x32, 0x2e, 0x33, 0x2e, 0x36, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(format_uuid(&u), "6d657361-3232-2e33-2e36-000000000000");
    }
}
