//! What is about the C door in the tests' floor: results (`ok`, `fails`,
//! `last_error`), the C context of a GPU-only test (`cuda_context_or_skip`), and
//! the C constructors of the shared floor's types (`Cuda::of`, `Vk::new`,
//! `EngineDevice::create_info`, `OneDevice`, `TwoDevices`). The rest of the floor
//! is the Rust library's tests' (tests/support/), included by mod.rs.

use std::ffi::CStr;
use std::mem::ManuallyDrop;
use std::ptr;

use ash::vk;
use vkcuda_c::vkcuda_result::*;
use vkcuda_c::*;

use super::checks::gpu_required;
use super::cuda::Cuda;
use super::vulkan::{EngineDevice, Vk};

pub fn last_error() -> String {
    unsafe { CStr::from_ptr(vkcuda_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Panics with the library's message unless `r` is success.
#[track_caller]
pub fn ok(r: vkcuda_result) {
    assert_eq!(r, VKCUDA_SUCCESS, "{}", last_error());
}

/// Asserts `r` is `want` and that a message was set; returns the message.
#[track_caller]
pub fn fails(r: vkcuda_result, want: vkcuda_result) -> String {
    let msg = last_error();
    assert_eq!(r, want, "message: {msg}");
    assert!(!msg.is_empty(), "no message for {want:?}");
    msg
}

/// A standalone context paired with CUDA, or None (after printing why) when this
/// machine has no CUDA GPU. With VKCUDA_REQUIRE_GPU=1 a missing GPU fails the test.
pub fn cuda_context_or_skip(test: &str) -> Option<*mut vkcuda_context> {
    super::watchdog::arm();
    let mut ctx = ptr::null_mut();
    let r = unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) };
    if r == VKCUDA_SUCCESS {
        return Some(ctx);
    }
    let why = last_error();
    if gpu_required() {
        panic!("{test}: VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device: {r:?}: {why}");
    }
    eprintln!("SKIPPED: {test}: no CUDA GPU here ({r:?}: {why}); set VKCUDA_REQUIRE_GPU=1 to make this a failure");
    None
}

impl Cuda {
    /// The CUcontext of a C context (`vkcuda_context_get_cuda_info`).
    pub fn of(ctx: *const vkcuda_context) -> Cuda {
        let mut info: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut info) });
        Cuda(info.cuda_context.cast())
    }
}

impl Vk {
    /// Loads from a standalone context's handles (which include a queue).
    pub fn new(ctx: *const vkcuda_context) -> Vk {
        let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
        assert_ne!(
            h.queue,
            vk::Queue::null(),
            "a standalone context has a queue"
        );
        let gipa = h.get_instance_proc_addr.expect("gipa");
        let (family, queue) = (h.queue_family_index, h.queue);
        Vk::load(gipa, h.instance, h.physical_device, h.device, family, queue)
    }
}

impl EngineDevice {
    /// The C create info of this device, for `vkcuda_context_create`.
    pub fn create_info(&self, flags: u32) -> vkcuda_context_create_info {
        vkcuda_context_create_info {
            flags,
            instance: self.instance.handle(),
            physical_device: self.physical,
            device: self.device.handle(),
            get_instance_proc_addr: Some(self.entry.static_fn().get_instance_proc_addr),
            get_device_proc_addr: None,
            cuda_context: ptr::null_mut(),
        }
    }
}

/// A Vulkan-only context and the test's Vulkan on it (`OneDevice` derefs to its
/// `Vk`): both destroyed when dropped.
pub struct OneDevice {
    pub ctx: *mut vkcuda_context,
    v: ManuallyDrop<Vk>,
}

impl OneDevice {
    pub fn open() -> OneDevice {
        let ctx = super::vulkan_only_context();
        let v = ManuallyDrop::new(Vk::new(ctx));
        OneDevice { ctx, v }
    }
}

impl std::ops::Deref for OneDevice {
    type Target = Vk;
    fn deref(&self) -> &Vk {
        &self.v
    }
}

impl Drop for OneDevice {
    fn drop(&mut self) {
        unsafe {
            ManuallyDrop::drop(&mut self.v);
            vkcuda_context_destroy(self.ctx);
        }
    }
}

/// Two Vulkan-only contexts, two VkDevices as two processes have them, and the
/// test's Vulkan on each (`va` on `a`, `vb` on `b`): all destroyed when dropped.
pub struct TwoDevices {
    pub a: *mut vkcuda_context,
    pub b: *mut vkcuda_context,
    pub va: ManuallyDrop<Vk>,
    pub vb: ManuallyDrop<Vk>,
}

impl TwoDevices {
    pub fn open() -> TwoDevices {
        let (a, b) = (super::vulkan_only_context(), super::vulkan_only_context());
        let (va, vb) = (Vk::new(a), Vk::new(b));
        TwoDevices {
            a,
            b,
            va: ManuallyDrop::new(va),
            vb: ManuallyDrop::new(vb),
        }
    }
}

impl Drop for TwoDevices {
    fn drop(&mut self) {
        unsafe {
            ManuallyDrop::drop(&mut self.va);
            ManuallyDrop::drop(&mut self.vb);
            vkcuda_context_destroy(self.a);
            vkcuda_context_destroy(self.b);
        }
    }
}
