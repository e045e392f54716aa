//! The deprecated 0.1 names (capi/src/deprecated.rs): each is its new function under
//! the old name, so each gets the new one's NULL rows, its message names the old
//! name (the NULL runner checks that the message starts with it), and a success
//! answers what the new name answers.
#![allow(deprecated)]

use std::ffi::c_char;
use std::ptr;

use ash::vk;

use crate::env::{Driver, Env};
use crate::matrix::*;
use crate::support::*;

/// The bytes of an output (for structs without padding).
fn bytes<T>(p: &mut Poison<T>) -> Vec<u8> {
    unsafe { std::slice::from_raw_parts(p.ptr().cast::<u8>(), size_of::<T>()).to_vec() }
}

fn gipa(e: &Env) -> PFN_vkGetInstanceProcAddr {
    Some(e.engine.entry.static_fn().get_instance_proc_addr)
}

pub fn cases(m: &mut Matrix) {
    const QUERY: &str = "vkcuda_query_physical_device";
    const ENUM: &str = "vkcuda_enumerate_physical_devices";
    const EXTS: &str = "vkcuda_enumerate_device_extensions";
    const VULKAN: &str = "vkcuda_context_get_vulkan";
    const CUDA: &str = "vkcuda_context_get_cuda";
    const DRIVER: &str = "vkcuda_cuda_driver_version";
    const LIVE: &str = "vkcuda_get_live_objects";
    m.nulls(nulls![
        QUERY, "instance" => |e, o| unsafe {
            vkcuda_query_physical_device(vk::Instance::null(), e.engine.physical, gipa(e), o.plain())
        };
        QUERY, "physical_device" => |e, o| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_query_physical_device(instance, vk::PhysicalDevice::null(), gipa(e), o.plain())
        };
        QUERY, "get_instance_proc_addr" => |e, o| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_query_physical_device(instance, e.engine.physical, None, o.plain())
        };
        QUERY, "support" => |e, _| unsafe {
            let instance = e.engine.instance.handle();
            vkcuda_query_physical_device(instance, e.engine.physical, gipa(e), ptr::null_mut())
        };
        ENUM, "count" => |_, o| unsafe {
            let supports = o.plain::<[vkcuda_physical_device_support; 1]>();
            vkcuda_enumerate_physical_devices(ptr::null_mut(), supports.cast())
        };
        EXTS, "count" => |_, o| unsafe {
            vkcuda_enumerate_device_extensions(
                ptr::null_mut(),
                o.plain::<[*const c_char; 8]>().cast(),
            )
        };
        DRIVER, "version" => |_, _| unsafe { vkcuda_cuda_driver_version(ptr::null_mut()) };
        LIVE, "counts" => |_, _| unsafe { vkcuda_get_live_objects(ptr::null_mut()) };
    ]);
    m.getter(VULKAN, ["context", "handles"], |e| e.ctx, vkcuda_context_get_vulkan);
    m.getter(CUDA, ["context", "cuda_info"], |e| e.ctx, vkcuda_context_get_cuda);

    m.ran(QUERY, "same-as-new:support", |c| {
        let e = &c.env.engine;
        let (i, p) = (e.instance.handle(), e.physical);
        let mut old = Poison::<vkcuda_physical_device_support>::new();
        let mut new = Poison::<vkcuda_physical_device_support>::new();
        c.succeeded(unsafe { vkcuda_query_physical_device(i, p, gipa(c.env), old.ptr()) });
        ok(unsafe { vkcuda_physical_device_query(i, p, gipa(c.env), new.ptr()) });
        assert_eq!(bytes(&mut old), bytes(&mut new));
    });
    m.ran(ENUM, "null-ok:supports", |c| {
        let (mut old, mut new) = (0, 0);
        c.succeeded(unsafe { vkcuda_enumerate_physical_devices(&mut old, ptr::null_mut()) });
        ok(unsafe { vkcuda_physical_devices_enumerate(&mut new, ptr::null_mut()) });
        assert!(old >= 1 && old == new);
    });
    m.ran(EXTS, "null-ok:names", |c| {
        let (mut old, mut new) = (0, 0);
        c.succeeded(unsafe { vkcuda_enumerate_device_extensions(&mut old, ptr::null_mut()) });
        ok(unsafe { vkcuda_device_extensions_enumerate(&mut new, ptr::null_mut()) });
        assert!(old >= 2 && old == new);
    });
    m.ran(EXTS, "too-small:count", |c| {
        // The new function's refusal, under the old name (the runner checks the
        // message starts with it).
        let mut names = [ptr::null(); 8];
        let mut n = 1;
        let r = unsafe { vkcuda_enumerate_device_extensions(&mut n, names.as_mut_ptr()) };
        c.refused(r, &[I]);
        assert!(last_error().contains("(deprecated: use vkcuda_device_extensions_enumerate)"));
        assert_eq!(n, 1);
    });
    m.ran(VULKAN, "same-as-new:handles", |c| {
        let mut old = Poison::<vkcuda_vulkan_handles>::new();
        let mut new = Poison::<vkcuda_vulkan_handles>::new();
        c.succeeded(unsafe { vkcuda_context_get_vulkan(c.env.ctx, old.ptr()) });
        ok(unsafe { vkcuda_context_get_vulkan_handles(c.env.ctx, new.ptr()) });
        // Field by field: the struct has padding after queue_family_index.
        let (o, n) = unsafe { (&*old.ptr(), &*new.ptr()) };
        assert_eq!(o.instance, n.instance);
        assert_eq!(o.physical_device, n.physical_device);
        assert_eq!(o.device, n.device);
        assert_eq!(o.queue_family_index, n.queue_family_index);
        assert_eq!(o.queue, n.queue);
    });
    m.vulkan_only(CUDA, "vulkan-only:cuda_info", |c| {
        let mut h = Poison::<vkcuda_cuda_info>::new();
        c.refused(unsafe { vkcuda_context_get_cuda(c.env.ctx, h.ptr()) }, &[U]);
        h.untouched();
        Ran
    });
    m.case(DRIVER, "no-driver:version", |c| {
        if c.env.driver != Driver::None {
            return Skipped("a CUDA driver is loaded");
        }
        let mut v = Poison::<i32>::new();
        c.refused(unsafe { vkcuda_cuda_driver_version(v.ptr()) }, &[U]);
        v.untouched();
        Ran
    });
    m.ran(LIVE, "same-as-new:counts", |c| {
        let mut old = Poison::<vkcuda_live_objects>::new();
        let mut new = Poison::<vkcuda_live_objects>::new();
        c.succeeded(unsafe { vkcuda_get_live_objects(old.ptr()) });
        ok(unsafe { vkcuda_live_objects_get(new.ptr()) });
        assert_eq!(bytes(&mut old), bytes(&mut new));
    });
}
