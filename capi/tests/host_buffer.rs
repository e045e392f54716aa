//! Staging buffers at the C door (`vkcuda_host_buffer_*`): made, mapped, copied
//! through by real Vulkan transfers into and out of a shared buffer, counted, freed.
//! Runs on any Vulkan device (lavapipe here). The refusals are in the misuse matrix
//! (capi/tests/misuse/host_buffer.rs).

mod support;
use support::*;

use std::ptr;

fn host_buffer(
    ctx: *const vkcuda_context,
    size: u64,
) -> (*mut vkcuda_host_buffer, vkcuda_host_buffer_info) {
    let mut hb = ptr::null_mut();
    ok(unsafe { vkcuda_host_buffer_create(ctx, size, &mut hb) });
    let mut info: vkcuda_host_buffer_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_host_buffer_get_info(hb, &mut info) });
    (hb, info)
}

/// The mapped bytes: the GPU's memory, not Rust's, so a shared view is handed out
/// mutably (as the test floor's own staging buffers do).
#[allow(clippy::mut_from_ref)]
fn bytes(info: &vkcuda_host_buffer_info) -> &mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(info.data.cast::<u8>(), info.size as usize) }
}

#[test]
fn host_buffers_upload_and_download_through_vulkan_copies() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::new(ctx);
    // An odd size: nothing rounds it up where the caller sees it.
    let n: u64 = (1 << 20) + 12;
    let shared = create_buffer(ctx, n, 0);
    let shared_vk = buffer_info(shared).buffer;
    let before = live_objects();
    let before_counts = live_counts();

    let (up, up_info) = host_buffer(ctx, n);
    let (down, down_info) = host_buffer(ctx, n);
    let during = live_objects();
    assert_eq!(during.vk_buffers, before.vk_buffers + 2);
    assert_eq!(during.vk_memories, before.vk_memories + 2);
    for i in [&up_info, &down_info] {
        assert_eq!(i.size, n);
        assert_ne!(i.buffer, ash::vk::Buffer::null());
        assert!(!i.data.is_null());
    }
    assert_ne!(up_info.buffer, down_info.buffer);
    assert_ne!(up_info.data, down_info.data);

    // Upload: host bytes -> the library's staging buffer -> the shared buffer,
    // read back by the test's own staging buffer.
    for (i, b) in bytes(&up_info).iter_mut().enumerate() {
        *b = pattern(i, 7);
    }
    v.copy(up_info.buffer, shared_vk, n);
    assert_eq!(v.pattern_mismatches(shared_vk, n, 7), 0);

    // Download: the shared buffer (written by the test) -> the library's staging
    // buffer, every byte checked on the host.
    bytes(&down_info).fill(0);
    v.fill_pattern(shared_vk, n, 99);
    v.copy(shared_vk, down_info.buffer, n);
    let bad = bytes(&down_info)
        .iter()
        .enumerate()
        .filter(|(i, &b)| b != pattern(*i, 99))
        .count();
    assert_eq!(bad, 0, "{bad} of {n} bytes differ after the download");
    // And the upload buffer still holds what the host wrote (the copy read it).
    assert!(bytes(&up_info)
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern(i, 7)));

    unsafe {
        vkcuda_host_buffer_destroy(up);
        vkcuda_host_buffer_destroy(down);
    }
    assert_eq!(live_counts(), before_counts);
    // A destroyed handle is refused, not used.
    let mut info: vkcuda_host_buffer_info = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_host_buffer_get_info(up, &mut info) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("already destroyed"), "{msg}");
    drop(v);
    unsafe {
        vkcuda_buffer_destroy(shared);
        vkcuda_context_destroy(ctx);
    }
}
