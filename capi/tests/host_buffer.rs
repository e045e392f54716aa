//! Staging buffers at the C door (`vkcuda_host_buffer_*`): made, described by the
//! C struct, copied by a real Vulkan transfer, counted, freed. Runs on any Vulkan
//! device (lavapipe here). The data path through a shared buffer is tests/staging.rs's
//! (the Rust API); the refusals are in the misuse matrix
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

/// The C door's part: the info struct's fields, the live counts, destroy, and a
/// destroyed handle refused. One Vulkan copy from one staging buffer to the other
/// shows that each struct's `buffer` and `data` are the same buffer's. (The bytes
/// up and down through a shared buffer, every byte of two patterns:
/// tests/staging.rs `host_buffers_carry_bytes_through_vulkan_copies`.)
#[test]
fn host_buffers_upload_and_download_through_vulkan_copies() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::new(ctx);
    // An odd size: nothing rounds it up where the caller sees it.
    let n: u64 = (1 << 20) + 12;
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

    for (i, b) in bytes(&up_info).iter_mut().enumerate() {
        *b = pattern(i, 7);
    }
    bytes(&down_info).fill(0);
    v.copy(up_info.buffer, down_info.buffer, n);
    let bad = bytes(&down_info)
        .iter()
        .enumerate()
        .filter(|(i, &b)| b != pattern(*i, 7))
        .count();
    assert_eq!(bad, 0, "{bad} of {n} bytes differ after the copy");

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
    unsafe { vkcuda_context_destroy(ctx) };
}
