//! Lost contexts: sticky CUDA errors and `VK_ERROR_DEVICE_LOST`.
//!
//! A kernel or copy that faults (`CUDA_ERROR_ILLEGAL_ADDRESS`,
//! `CUDA_ERROR_LAUNCH_FAILED`, ...) poisons its CUDA context for the rest of the
//! process: every later call in it returns the same error, and the CUDA driver
//! API reference says the process must be terminated and relaunched to use CUDA
//! again. A `VkDevice` that returned `VK_ERROR_DEVICE_LOST` is lost for good too.
//!
//! The first call that sees such a result records it here, keyed by the
//! `CUcontext` (the one current when the CUDA call failed: the library always
//! makes its context current first) or the `VkDevice`. Keyed by the native
//! handle, not by the library's context object, because several library contexts
//! may share one CUDA context (the device's primary context, the default) and
//! all of them are lost together. Every call on a context checks first (the
//! C door's handle lookup in the vkcuda-c crate, through `context::any_lost` and
//! `Context::check_lost`): one relaxed atomic load
//! while nothing is lost, the list only after a loss.
//!
//! A `VkDevice`'s loss lasts while any library context on that handle lives
//! (each object holds its context): a new context on it is refused then
//! ([`open_device`]); with none left, the handle value names a new device (an
//! engine's recreated one) and the record is dropped. Destroy paths report the
//! sticky results of their release calls too (`CudaContext::releasing`), so
//! the call named is the first that saw the error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ash::vk::{self, Handle};
use cudarc::driver::sys::{self, CUresult};

use crate::error::{Error, ErrorKind, Result};

/// What was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A `CUcontext`, as an address.
    Cuda(usize),
    /// A `VkDevice`, as its raw handle.
    Vulkan(u64),
}

/// Set once anything is lost; never cleared (a loss is for the process's life).
static ANY: AtomicBool = AtomicBool::new(false);
/// Each loss with the message of the call that first saw it.
static LOST: Mutex<Vec<(Key, String)>> = Mutex::new(Vec::new());

/// The `CUresult`s after which a context is unusable (the CUDA driver API
/// reference, `CUresult`: "This leaves the process in an inconsistent state and
/// any further CUDA work will return the same error. To continue using CUDA, the
/// process must be terminated and relaunched."). Compared by value, so the list
/// does not depend on the names a binding knows.
pub const STICKY: &[(i32, &str)] = &[
    (214, "CUDA_ERROR_ECC_UNCORRECTABLE"),
    (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    (702, "CUDA_ERROR_LAUNCH_TIMEOUT"),
    (710, "CUDA_ERROR_ASSERT"),
    (714, "CUDA_ERROR_HARDWARE_STACK_ERROR"),
    (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    (716, "CUDA_ERROR_MISALIGNED_ADDRESS"),
    (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
    (718, "CUDA_ERROR_INVALID_PC"),
    (719, "CUDA_ERROR_LAUNCH_FAILED"),
    (911, "CUDA_ERROR_EXTERNAL_DEVICE"),
];

/// Whether `r` is one of the [`STICKY`] results.
pub fn is_sticky(r: CUresult) -> bool {
    let v = r as i32;
    STICKY.iter().any(|(code, _)| *code == v)
}

/// Whether anything in the process is lost (the fast path: one load).
#[inline]
pub fn any() -> bool {
    ANY.load(Ordering::Relaxed)
}

fn record(key: Key, message: &str) {
    let mut list = LOST.lock().unwrap_or_else(|p| p.into_inner());
    if !list.iter().any(|(k, _)| *k == key) {
        list.push((key, message.to_string()));
    }
    ANY.store(true, Ordering::Release);
}

/// The error for a CUDA call that returned a sticky result; records the current
/// context (the library makes its context current before its calls) as lost.
pub fn cuda(call: &str, r: CUresult) -> Error {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: the driver is loaded (it returned `r`); asks for the thread's context only.
    if unsafe { sys::cuCtxGetCurrent(&mut ctx) } != CUresult::CUDA_SUCCESS {
        ctx = std::ptr::null_mut();
    }
    cuda_on(ctx, call, r)
}

/// [`cuda`] for a call about `ctx` made while it is not current.
pub fn cuda_on(ctx: sys::CUcontext, call: &str, r: CUresult) -> Error {
    let message = format!(
        "the CUDA context {ctx:p} is lost: {call} failed with {r:?}, a sticky error (a kernel, \
         copy or other work in this context faulted, maybe long before this call); every CUDA \
         call in that context fails from now on, for the rest of the process (for the device's \
         primary context, the library's default, that includes PyTorch's and CuPy's work in this \
         process): destroy the library's objects (destroy still releases what it can) and \
         restart the process"
    );
    if !ctx.is_null() {
        record(Key::Cuda(ctx as usize), &message);
    }
    Error::new(ErrorKind::DeviceLost, message)
}

/// The error for a Vulkan call that returned `VK_ERROR_DEVICE_LOST` on `device`;
/// records the device as lost.
pub fn vulkan(device: vk::Device, call: &str) -> Error {
    let message = format!(
        "the VkDevice {:#x} is lost: {call} failed with VK_ERROR_DEVICE_LOST (the driver gave \
         the device up: a fault, a hang or a reset); nothing on that device works again: destroy \
         the library's objects (destroy still releases what it can), then the engine's device, \
         and create them anew (or restart the process)",
        device.as_raw()
    );
    record(Key::Vulkan(device.as_raw()), &message);
    Error::new(ErrorKind::DeviceLost, message)
}

/// How many library contexts live on each `VkDevice` handle (every object holds
/// its context, so a count above 0 means something of that device is alive).
static OPEN: Mutex<Vec<(u64, usize)>> = Mutex::new(Vec::new());

/// A library context is being made on the `VkDevice` `device`. When no context
/// of that handle is alive, the handle names a new device (an engine that
/// recreated its `VkDevice` after `VK_ERROR_DEVICE_LOST` may get the same handle
/// value back), so its loss record is dropped. While one is alive, it is the
/// same device: a loss stays, and the new context is refused with it
/// (`DeviceLost`, naming the first error) instead of erasing it. Balanced by
/// [`close_device`] when the context is dropped.
pub fn open_device(device: u64) -> Result<()> {
    let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
    match open.iter_mut().find(|(d, _)| *d == device) {
        Some((_, n)) => {
            if any() {
                check(&[Key::Vulkan(device)]).map_err(|e| {
                    e.context(
                        "the VkDevice is lost and objects of it are still alive: a new context on it \
                         would be lost too",
                    )
                })?;
            }
            *n += 1;
        }
        None => {
            if any() {
                let mut list = LOST.lock().unwrap_or_else(|p| p.into_inner());
                list.retain(|(k, _)| *k != Key::Vulkan(device));
            }
            open.push((device, 1));
        }
    }
    Ok(())
}

/// A library context made on `device` (after [`open_device`]) is gone.
pub fn close_device(device: u64) {
    let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = open.iter().position(|(d, _)| *d == device) {
        open[i].1 -= 1;
        if open[i].1 == 0 {
            open.swap_remove(i);
        }
    }
}

/// `Err(DeviceLost)` naming the first error when any of `keys` is lost.
/// Call it behind [`any`] (the slow path).
#[cold]
pub fn check(keys: &[Key]) -> Result<()> {
    let list = LOST.lock().unwrap_or_else(|p| p.into_inner());
    for key in keys {
        if let Some((_, first)) = list.iter().find(|(k, _)| k == key) {
            return Err(Error::new(
                ErrorKind::DeviceLost,
                format!("refused, since an earlier call found: {first}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sticky_list_matches_the_bindings_names() {
        for (code, name) in STICKY {
            let known = [
                CUresult::CUDA_ERROR_ECC_UNCORRECTABLE,
                CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
                CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
                CUresult::CUDA_ERROR_ASSERT,
                CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
                CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
                CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
                CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE,
                CUresult::CUDA_ERROR_INVALID_PC,
                CUresult::CUDA_ERROR_LAUNCH_FAILED,
                CUresult::CUDA_ERROR_EXTERNAL_DEVICE,
            ];
            let r = known.iter().find(|r| **r as i32 == *code).unwrap();
            assert_eq!(format!("{r:?}"), *name);
            assert!(is_sticky(*r));
        }
        assert!(!is_sticky(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(!is_sticky(CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
    }

    #[test]
    fn a_lost_device_is_refused_with_its_first_message() {
        let dev = vk::Device::from_raw(0x5eed_0001);
        assert!(check(&[Key::Vulkan(dev.as_raw())]).is_ok());
        let e = vulkan(dev, "vkAllocateMemory");
        assert_eq!(e.kind, ErrorKind::DeviceLost);
        let _ = vulkan(dev, "vkSignalSemaphore");
        assert!(any());
        let later = check(&[Key::Cuda(1), Key::Vulkan(dev.as_raw())]).unwrap_err();
        assert_eq!(later.kind, ErrorKind::DeviceLost);
        assert!(later
            .message
            .contains("vkAllocateMemory failed with VK_ERROR_DEVICE_LOST"));
        assert!(check(&[Key::Vulkan(0x5eed_0002)]).is_ok());
        // Nothing of the device is alive: a context on that handle is a new device.
        open_device(dev.as_raw()).unwrap();
        assert!(check(&[Key::Vulkan(dev.as_raw())]).is_ok());
        // Lost again while that context lives: a second context is refused, and
        // the record stays until the first is gone.
        let _ = vulkan(dev, "vkQueueSubmit");
        let e = open_device(dev.as_raw()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::DeviceLost);
        assert!(e.message.contains("vkQueueSubmit failed"), "{}", e.message);
        assert!(check(&[Key::Vulkan(dev.as_raw())]).is_err());
        close_device(dev.as_raw());
        open_device(dev.as_raw()).unwrap();
        assert!(check(&[Key::Vulkan(dev.as_raw())]).is_ok());
        close_device(dev.as_raw());
    }
}
