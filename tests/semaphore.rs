//! Shared semaphores on the CPU. Lavapipe has no VK_KHR_external_semaphore_fd, so
//! creation must fail clearly; the value contract and the frame-pacing helper are
//! unit tested in src/semaphore.rs, and for real on the GPU (tests/gpu.rs).

mod support;
use support::*;

use std::ptr;

#[test]
fn creation_without_the_extension_says_so() {
    let ctx = vulkan_only_context();
    let mut support_count = 0;
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut support_count, ptr::null_mut()) });
    let info = semaphore_create_info(0, 0);
    let mut s = 1usize as *mut vkcuda_semaphore;
    let r = unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) };
    if r == VKCUDA_SUCCESS {
        // A Vulkan driver with external semaphores (not lavapipe): must work fully.
        let mut v = 9;
        ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
        assert_eq!(v, 0);
        unsafe { vkcuda_semaphore_destroy(s) };
    } else {
        let msg = fails(r, VKCUDA_ERROR_EXTENSION_NOT_PRESENT);
        assert!(msg.contains("VK_KHR_external_semaphore_fd"), "{msg}");
        assert!(s.is_null(), "the handle is set to NULL on failure");
    }
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn arguments_are_checked_before_the_device_is_asked() {
    let ctx = vulkan_only_context();
    let mut s = ptr::null_mut();
    let good = semaphore_create_info(0, 0);
    fails(
        unsafe { vkcuda_semaphore_create(ptr::null(), &good, &mut s) },
        VKCUDA_ERROR_NULL_POINTER,
    );
    fails(
        unsafe { vkcuda_semaphore_create(ctx, ptr::null(), &mut s) },
        VKCUDA_ERROR_NULL_POINTER,
    );
    fails(
        unsafe { vkcuda_semaphore_create(ctx, &good, ptr::null_mut()) },
        VKCUDA_ERROR_NULL_POINTER,
    );
    let bad_type = vkcuda_semaphore_create_info {
        semaphore_type: vkcuda_semaphore_type_raw(42),
        ..good
    };
    let msg = fails(
        unsafe { vkcuda_semaphore_create(ctx, &bad_type, &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("vkcuda_semaphore_type"), "{msg}");
    let bad_flags = vkcuda_semaphore_create_info {
        flags: 0x10,
        ..good
    };
    fails(
        unsafe { vkcuda_semaphore_create(ctx, &bad_flags, &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn every_semaphore_function_refuses_null() {
    let null = ptr::null();
    let mut v = 0u64;
    let mut fd = 0;
    let mut st = vkcuda_timeline_stage {
        wait_value: 0,
        signal_value: 0,
    };
    let mut vs = ash::vk::Semaphore::null();
    let stream = ptr::null_mut();
    for r in [
        unsafe { vkcuda_semaphore_cuda_signal(null, 1, stream) },
        unsafe { vkcuda_semaphore_cuda_wait(null, 1, stream) },
        unsafe { vkcuda_semaphore_host_signal(null, 1) },
        unsafe { vkcuda_semaphore_host_wait(null, 1, 0) },
        unsafe { vkcuda_semaphore_get_value(null, &mut v) },
        unsafe { vkcuda_semaphore_next_stage(null, &mut st) },
        unsafe { vkcuda_semaphore_export_fd(null, &mut fd) },
        unsafe { vkcuda_semaphore_get_vk_semaphore(null, &mut vs) },
        unsafe { vkcuda_semaphore_note_vulkan_signal(null) },
        unsafe { vkcuda_semaphore_note_vulkan_wait(null) },
    ] {
        let msg = fails(r, VKCUDA_ERROR_NULL_POINTER);
        assert!(msg.contains("semaphore"), "{msg}");
    }
    unsafe { vkcuda_semaphore_destroy(ptr::null_mut()) };
}
