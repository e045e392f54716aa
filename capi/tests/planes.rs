//! Multi-planar images at the C door: the pitched-plane struct and the header's
//! list of the pitched copies' checks with their codes (every listed check is a
//! case below and gives the code the header names), the multi-fd C calls
//! (`vkcuda_share_send_fds`, `vkcuda_share_receive_fds`; the one-fd calls refuse a
//! multi-planar description, naming the call to use), a present ring of video
//! frames plane by plane (`vkcuda_present_ring_get_plane_pointer`), and a linear
//! single-plane frame (issue 37): made, its one plane (COLOR aspect), and wrapped.
//! The images, frames and rings themselves, through the Rust
//! API: tests/planar.rs, tests/video.rs, tests/present.rs; the format query's
//! planes: capi/tests/formats.rs.

#[path = "../../tests/doc_claims/mod.rs"]
mod doc_claims;
mod support;
use support::images::{create, d2};
use support::*;

use std::ptr;

use ash::vk;

fn pitched(planes: &[(u64, u64)]) -> vkcuda_pitched_planes {
    let mut p = vkcuda_pitched_planes {
        flags: 0,
        plane_count: planes.len() as u32,
        planes: [vkcuda_pitched_plane {
            device_pointer: 0,
            pitch: 0,
        }; 3],
    };
    for (k, &(device_pointer, pitch)) in planes.iter().enumerate() {
        p.planes[k] = vkcuda_pitched_plane {
            device_pointer,
            pitch,
        };
    }
    p
}

#[test]
fn pitched_copy_checks_give_the_documented_codes() {
    let _g = serial();
    let doc = doc_claims::function_doc(
        &doc_claims::header_text(),
        "vkcuda_image_cuda_copy_from_pitched",
    )
    .expect("the doc of vkcuda_image_cuda_copy_from_pitched");
    let listed = doc_claims::listed_checks(&doc, "Checked before anything is enqueued");
    assert!(listed.len() >= 5, "the header lists {listed:?}");
    let ctx = vulkan_only_context();
    let r8 = create(ctx, &d2(vk::Format::R8_UNORM, 100, 30));
    let mut three = d2(vk::Format::R8_UNORM, 16, 16);
    three.image_type = vkcuda_image_type_raw(3);
    three.extent.depth = 4;
    let three = create(ctx, &three);
    let good = pitched(&[(0x1000, 100)]);
    let with = |f: &dyn Fn(&mut vkcuda_pitched_planes)| {
        let mut p = good;
        f(&mut p);
        p
    };
    // (words of the listed check, its code, the calls that break only that rule:
    // image and planes, or None where it needs CUDA).
    type Case = (*const vkcuda_image, Option<vkcuda_pitched_planes>);
    let cases: Vec<(&str, vkcuda_result, Option<Vec<Case>>)> = vec![
        (
            "`planes` or `image` NULL",
            VKCUDA_ERROR_NULL_POINTER,
            Some(vec![(ptr::null(), Some(good)), (r8, None)]),
        ),
        (
            "`device_pointer` 0",
            VKCUDA_ERROR_NULL_POINTER,
            Some(vec![(r8, Some(pitched(&[(0, 100)])))]),
        ),
        (
            "`planes->flags` not 0",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            Some(vec![(r8, Some(with(&|p| p.flags = 1)))]),
        ),
        (
            "`planes->plane_count` not the image's plane count",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            Some(vec![
                (r8, Some(pitched(&[(0x1000, 100), (0x2000, 100)]))),
                (r8, Some(with(&|p| p.plane_count = 0))),
                (r8, Some(with(&|p| p.plane_count = 4))),
            ]),
        ),
        (
            "a plane past `plane_count` not all zero",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            Some(vec![(
                r8,
                Some(with(&|p| p.planes[1].device_pointer = 0x2000)),
            )]),
        ),
        (
            "a pitch less than the plane's row",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            Some(vec![(r8, Some(pitched(&[(0x1000, 99)])))]),
        ),
        (
            "overflows the address",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            Some(vec![
                (r8, Some(pitched(&[(u64::MAX - 10, 100)]))),
                (r8, Some(pitched(&[(0x1000, u64::MAX / 8)]))),
            ]),
        ),
        (
            "a 3D image or one with several layers",
            VKCUDA_ERROR_UNSUPPORTED,
            Some(vec![(three, Some(pitched(&[(0x1000, 16)])))]),
        ),
        (
            "a Vulkan-only context",
            VKCUDA_ERROR_CUDA_UNAVAILABLE,
            Some(vec![(r8, Some(good))]),
        ),
        (
            "`stream` not of the image's CUDA context",
            VKCUDA_ERROR_DEVICE_MISMATCH,
            None,
        ),
        (
            // The stand-in driver's case: fake_driver_pitched_copy_refuses_unknown_addresses.
            "in no allocation CUDA knows",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            None,
        ),
        (
            "rows that end past the end of the CUDA allocation",
            VKCUDA_ERROR_INVALID_ARGUMENT,
            None,
        ),
    ];
    let code_name = |r: vkcuda_result| format!("{r:?}");
    for (bullet, code) in &listed {
        assert!(
            cases.iter().any(|(words, _, _)| bullet.contains(words)),
            "the header lists a check this test does not know: \"{bullet}\" ({code}): add its case"
        );
    }
    let mut ran = 0;
    for (words, want, calls) in &cases {
        let (bullet, code) = listed
            .iter()
            .find(|(b, _)| b.contains(words))
            .unwrap_or_else(|| panic!("the header no longer lists \"{words}\": {listed:?}"));
        assert_eq!(
            *code,
            code_name(*want),
            "the header gives {code} for \"{bullet}\""
        );
        for (im, planes) in calls.iter().flatten() {
            let p = planes.as_ref().map_or(ptr::null(), |p| p as *const _);
            for (name, call) in [
                (
                    "copy_from_pitched",
                    vkcuda_image_cuda_copy_from_pitched
                        as unsafe extern "C" fn(_, _, _) -> vkcuda_result,
                ),
                ("copy_to_pitched", vkcuda_image_cuda_copy_to_pitched),
            ] {
                let m = fails(unsafe { call(*im, p, ptr::null_mut()) }, *want);
                println!("{name}, {words}: {m}");
                ran += 1;
            }
        }
    }
    assert_eq!(ran, 2 * 13, "every case ran, each through both copies");
    unsafe {
        vkcuda_image_destroy(three);
        vkcuda_image_destroy(r8);
        vkcuda_context_destroy(ctx);
    }
}

/// An NV12 description (64x64) for the context's device.
fn nv12_description(ctx: *const vkcuda_context) -> vkcuda_share_description {
    let mut c: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut c) });
    let v = Vk::new(ctx);
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
    unsafe {
        v.instance
            .get_physical_device_properties2(v.physical, &mut p2)
    };
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    d.kind = vkcuda_share_kind_raw(3);
    d.device_uuid = id.device_uuid;
    d.image.description = d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 64);
    d.image.description.extent.depth = 1;
    d.image.description.mip_levels = 1;
    d.image.description.array_layers = 1;
    d.image.description.usage =
        (vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED).as_raw();
    d.image.allocation_size = 65536;
    d.image.plane_allocation_sizes = [65536, 65536, 0];
    d
}

fn socketpair() -> (i32, i32) {
    let mut p = [0; 2];
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            p.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0);
    (p[0], p[1])
}

/// The multi-fd C calls: a 2-fd description sent and received (only the received
/// fds written), and the one-fd calls refusing it with the name of the call to
/// use. (Too few fds for the description: tests/planar.rs
/// `multi_fd_descriptions_travel_over_a_socket`; too little room and the other
/// counts, with the fds closed: misuse/planar.rs and its runner's fd check.)
#[test]
fn multi_fd_descriptions_travel_over_a_socket_in_c() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let d = nv12_description(ctx);
    // Two memory fds stand in for the planes' (the socket path does not import).
    let buf = create_buffer(ctx, 65536, 0);
    let export = || {
        let mut fd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(buf, &mut fd) });
        fd
    };
    let fds = [export(), export()];
    let base = fd_count();
    let opts = vkcuda_share_options {
        flags: 0,
        timeout_ns: 1_000_000_000,
        peer_check: None,
        peer_check_user: ptr::null_mut(),
        buffer_usage: 0,
    };
    let (a, b) = socketpair();
    // vkcuda_share_send takes one fd only: refused, naming the call to use.
    let m = fails(
        unsafe { vkcuda_share_send(a, &d, fds[0], &opts) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("vkcuda_share_send_fds"), "{m}");
    ok(unsafe { vkcuda_share_send_fds(a, &d, fds.as_ptr(), 2, &opts) });
    let mut got: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let mut out = [-1i32; 3];
    let mut n = 0u32;
    ok(unsafe { vkcuda_share_receive_fds(b, &opts, &mut got, out.as_mut_ptr(), 3, &mut n) });
    assert_eq!(n, 2);
    assert_eq!(out[2], -1, "only the received fds are written");
    assert_eq!(
        record(&got),
        record(&d),
        "the description arrives as it was sent"
    );
    assert_eq!(got.image.plane_allocation_sizes, [65536, 65536, 0]);
    for f in &out[..2] {
        assert!(fd_is_open(*f));
        unsafe { libc::close(*f) };
    }
    assert_eq!(fd_count(), base + 2, "the socket pair only");
    // vkcuda_share_receive cannot return two fds: refused, both closed.
    ok(unsafe { vkcuda_share_send_fds(a, &d, fds.as_ptr(), 2, &opts) });
    let mut one = -1;
    let m = fails(
        unsafe { vkcuda_share_receive(b, &opts, &mut got, &mut one) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("vkcuda_share_receive_fds"), "{m}");
    assert_eq!(fd_count(), base + 2, "the two received fds were closed");
    // The one-fd import of a multi-planar description names the call to use; the
    // fd stays the caller's.
    let mut im = 1usize as *mut vkcuda_image;
    let m = fails(
        unsafe { vkcuda_image_import_description(ctx, &d, fds[0], &mut im) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("vkcuda_image_import_description_fds"), "{m}");
    assert!(im.is_null() && fd_is_open(fds[0]));
    unsafe {
        libc::close(a);
        libc::close(b);
        libc::close(fds[0]);
        libc::close(fds[1]);
        vkcuda_buffer_destroy(buf);
        vkcuda_context_destroy(ctx);
    }
}

/// The C door of a ring of video frames: `vkcuda_present_ring_create` with NV12,
/// each slot's planes (`vkcuda_present_ring_get_plane_pointer`: offset, pitch,
/// extent and texel size as the frame's own `vkcuda_image_get_plane_pointer`
/// would say, pointer 0 without CUDA), no CUDA surface for a video slot, the
/// colour set before the prepare; a plane past the format's refused. Where the
/// device makes no NV12 frame (Debian 12's lavapipe) the create is refused with
/// `VKCUDA_ERROR_UNSUPPORTED` and the rest is left out, saying so.
#[test]
fn the_c_door_hands_out_a_video_ring_plane_by_plane() {
    let _serial = serial();
    let before = live_counts();
    let ctx = vulkan_only_context();
    let info = vkcuda_present_ring_create_info {
        flags: 0,
        format: vk::Format::G8_B8R8_2PLANE_420_UNORM.as_raw(),
        width: 64,
        height: 32,
        image_count: 2,
    };
    let mut ring = std::ptr::null_mut();
    let r = unsafe { vkcuda_present_ring_create(ctx, &info, &mut ring) };
    // VKCUDA_EXPECT_VIDEO_FRAMES=1 (CTest rust_planes_video_frames, on a lavapipe
    // with linear NV12): no leaving out.
    let expect = std::env::var_os("VKCUDA_EXPECT_VIDEO_FRAMES").is_some_and(|v| v == "1");
    if r == VKCUDA_ERROR_UNSUPPORTED && !expect {
        assert!(ring.is_null());
        eprintln!(
            "the_c_door_hands_out_a_video_ring_plane_by_plane: no NV12 video frames on this \
             device ({}); left out",
            last_error()
        );
        unsafe { vkcuda_context_destroy(ctx) };
        return;
    }
    ok(r);
    for index in 0..2 {
        for (plane, (w, h, texel)) in [(64u32, 32u32, 1u32), (32, 16, 2)].into_iter().enumerate() {
            let mut p: vkcuda_image_plane_pointer = unsafe { std::mem::zeroed() };
            ok(unsafe { vkcuda_present_ring_get_plane_pointer(ring, index, plane as u32, &mut p) });
            assert_eq!((p.width, p.height, p.bytes_per_texel), (w, h, texel));
            assert_eq!(p.cuda_pointer, 0, "no CUDA in a Vulkan-only context");
            assert!(p.row_pitch >= u64::from(w * texel));
            assert!(p.size >= p.row_pitch * u64::from(h - 1) + u64::from(w * texel));
            if plane == 1 {
                assert!(p.offset > 0, "plane 1 lies after plane 0");
            }
        }
        let mut p: vkcuda_image_plane_pointer = unsafe { std::mem::zeroed() };
        let r = unsafe { vkcuda_present_ring_get_plane_pointer(ring, index, 2, &mut p) };
        assert_eq!(r, VKCUDA_ERROR_INVALID_ARGUMENT, "{}", last_error());
        let mut s = 0u64;
        let r = unsafe { vkcuda_present_ring_get_surface_object(ring, index, &mut s) };
        assert_ne!(r, VKCUDA_SUCCESS, "a video slot has no CUDA surface");
    }
    let color = vkcuda_video_color {
        flags: 0,
        matrix_coefficients: 1,
        transfer_characteristics: 1,
        colour_primaries: 1,
        full_range: 1,
        x_chroma_offset: 0,
        y_chroma_offset: 0,
    };
    ok(unsafe { vkcuda_present_ring_set_video_color(ring, &color) });
    unsafe { vkcuda_present_ring_destroy(ring) };
    unsafe { vkcuda_context_destroy(ctx) };
    assert_eq!(live_counts(), before, "live objects after the C video ring");
}

/// `VKCUDA_IMAGE_CREATE_LINEAR_BIT` on a single-plane format (issue 37) at the C
/// door: an RGBA8 frame's info flags, its one plane through the C struct (COLOR
/// aspect), and its own image and memory wrapped as one dedicated allocation
/// (and refused as anything else: on the CPU the only run of that refusal;
/// tests/video.rs `gpu_engine_frames_are_wrapped` makes it on a GPU). The
/// formats, the calls a frame refuses, its shape (one level) and the packed
/// formats' need of the bit: tests/video.rs
/// `single_plane_frames_follow_the_linear_features`, misuse/image.rs
/// (`linear-with-levels`).
#[test]
fn linear_single_plane_frames_at_the_c_door() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let f = vk::Format::R8G8B8A8_UNORM;
    let im = create(
        ctx,
        &vkcuda_image_create_info {
            flags: VKCUDA_IMAGE_CREATE_LINEAR_BIT,
            ..d2(f, 67, 35)
        },
    );
    let info = image_info(im);
    assert_eq!(info.flags, VKCUDA_IMAGE_CREATE_LINEAR_BIT);
    assert_eq!((info.plane_count, info.mip_levels), (1, 1));
    assert!(info.cuda_mipmapped_array.is_null());
    let mut pp: vkcuda_image_plane_pointer = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_get_plane_pointer(im, 0, &mut pp) });
    assert_eq!(pp.aspect, vk::ImageAspectFlags::COLOR.as_raw());
    assert_eq!((pp.format, pp.width, pp.height), (f.as_raw(), 67, 35));
    assert_eq!(pp.bytes_per_texel, 4);
    assert_eq!(pp.cuda_pointer, 0, "no CUDA in a Vulkan-only context");
    assert!(pp.row_pitch >= 67 * 4);
    assert!(pp.offset + pp.row_pitch * 34 + 67 * 4 <= info.allocation_size);

    // The frame's own image and memory, wrapped: one dedicated allocation.
    let mut w = image_wrap_info(
        info.image,
        info.memory,
        info.allocation_size,
        image_desc_of(&info),
    );
    let mut wrapped = ptr::null_mut();
    ok(unsafe { vkcuda_image_wrap(ctx, &w, &mut wrapped) });
    let mut wp: vkcuda_image_plane_pointer = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_get_plane_pointer(wrapped, 0, &mut wp) });
    assert_eq!(
        (wp.offset, wp.row_pitch, wp.size),
        (pp.offset, pp.row_pitch, pp.size)
    );
    unsafe { vkcuda_image_destroy(wrapped) };
    w.dedicated = 0;
    let m = fails(
        unsafe { vkcuda_image_wrap(ctx, &w, &mut wrapped) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("one dedicated allocation"), "{m}");
    assert!(wrapped.is_null());
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_context_destroy(ctx);
    }
}
