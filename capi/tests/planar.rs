//! Multi-planar (YCbCr) images through the C ABI: NV12 and the other formats of
//! `vkcuda::format::PLANAR`, one allocation, CUDA array, surface and texture per
//! plane; the pitched-copy helper; multi-fd cross-process descriptions.
//!
//! CPU (lavapipe): what the device offers for multi-planar formats (Mesa 22.3's
//! lavapipe offers none: every creation is refused with the reason; Mesa 25's
//! offers NV12 and others with DISJOINT, and then the planes cross two devices
//! here, texel by texel); the format query's planes; every argument check of the
//! new calls; multi-fd descriptions over a socket.
//!
//! GPU (`gpu_*`, ignored without `--include-ignored`; with VKCUDA_REQUIRE_GPU=1 a
//! missing GPU fails them): every planar format with optimal tiling refused in a
//! CUDA context (on NVIDIA's driver the planes of a disjoint image read wrong once
//! the data compresses, see `vkcuda::format::PLANAR`; linear frames are
//! capi/tests/video.rs); the single-plane formats a frame can be shared with instead
//! (R8, R8G8, R16, R16G16, RGBA8) at several sizes, Vulkan -> CUDA and CUDA -> Vulkan
//! through the arrays and through the pitched-copy helper, every texel compared,
//! with compressible data (even seeds: a ramp) and with pseudo-random data (odd
//! seeds); the pitched helper's refusals; 1000 frames of pitched copies handed
//! over on a timeline.

#[path = "../../tests/doc_claims/mod.rs"]
mod doc_claims;
mod support;
use support::images::{
    create, d2, handoff, sample_bits, try_create, EngineImage, Packing, Side, Texels,
};
use support::*;

use std::ptr;

use ash::vk;
use vkcuda::format::{PlanarFormat, PLANAR};

/// The bytes written and compared: for even seeds a ramp that compresses (as video
/// does: the planes of a disjoint image read wrong with it on NVIDIA's driver, see
/// `vkcuda::format::PLANAR`), for odd seeds pseudo-random bytes (which do not
/// compress, and show any texel out of place).
fn pattern(i: usize, seed: u32) -> u8 {
    if seed % 2 == 0 {
        ((i / 8) as u32).wrapping_mul(3).wrapping_add(seed) as u8
    } else {
        support::pattern(i, seed)
    }
}

fn name(f: vk::Format) -> String {
    vkcuda::format::display(f)
}

/// Why the device cannot make shared images of `p` with one allocation per plane
/// and transfers, or None when it can (what the library's creation must agree with).
fn unsupported_why(v: &Vk, p: &PlanarFormat) -> Option<String> {
    let feats = unsafe {
        v.instance
            .get_physical_device_format_properties(v.physical, p.format)
    }
    .optimal_tiling_features;
    let need = vk::FormatFeatureFlags::TRANSFER_SRC
        | vk::FormatFeatureFlags::TRANSFER_DST
        | vk::FormatFeatureFlags::DISJOINT;
    (!feats.contains(need)).then(|| {
        if feats.is_empty() {
            "no optimal-tiling features".to_string()
        } else {
            format!("optimal-tiling features {feats:?}")
        }
    })
}

// ---------------------------------------------------------------------------------
// Plane geometry: each plane packed in a staging buffer, 256-byte aligned.

#[derive(Clone, Copy, Debug)]
struct Plane {
    aspect: vk::ImageAspectFlags,
    extent: vk::Extent3D,
    texel: u64,
    offset: u64,
    bytes: u64,
}

fn planes(i: &vkcuda_image_info) -> (Vec<Plane>, u64) {
    let mut out = Vec::new();
    let mut offset = 0;
    for p in 0..i.plane_count as usize {
        let pl = &i.planes[p];
        let texel = i.format_info.planes[p].bytes_per_texel as u64;
        let bytes = pl.extent.width as u64 * pl.extent.height as u64 * texel;
        out.push(Plane {
            aspect: vk::ImageAspectFlags::from_raw(pl.aspect),
            extent: pl.extent,
            texel,
            offset,
            bytes,
        });
        offset = (offset + bytes).next_multiple_of(256);
    }
    (out, offset)
}

fn all_aspects(i: &vkcuda_image_info) -> vk::ImageAspectFlags {
    planes(i)
        .0
        .iter()
        .fold(vk::ImageAspectFlags::empty(), |a, p| a | p.aspect)
}

fn regions(i: &vkcuda_image_info) -> Vec<vk::BufferImageCopy> {
    planes(i)
        .0
        .iter()
        .map(|p| {
            vk::BufferImageCopy::default()
                .buffer_offset(p.offset)
                .image_subresource(vk::ImageSubresourceLayers {
                    aspect_mask: p.aspect,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                })
                .image_extent(p.extent)
        })
        .collect()
}

/// Whether the texel `got` differs from `want(byte index in the texel)` in any
/// sample bit.
fn texel_differs(bits: u32, got: &[u8], want: impl Fn(usize) -> u8) -> bool {
    got.iter()
        .enumerate()
        .any(|(b, &x)| (x ^ want(b)) & sample_bits(bits, b) != 0)
}

/// Texels (of every plane) that differ from the pattern, and texels compared.
fn texel_mismatches(i: &vkcuda_image_info, data: &[u8], seed: u32) -> (u64, u64) {
    let (ps, _) = planes(i);
    let (mut bad, mut all) = (0, 0);
    for p in ps {
        for t in 0..p.bytes / p.texel {
            let at = (p.offset + t * p.texel) as usize;
            all += 1;
            let got = &data[at..at + p.texel as usize];
            if texel_differs(i.format_info.bits, got, |b| pattern(at + b, seed)) {
                bad += 1;
            }
        }
    }
    (bad, all)
}

/// Every plane, as the staging buffer holds them (see [`planes`]).
fn packing(i: &vkcuda_image_info) -> Packing {
    Packing {
        total: planes(i).1,
        regions: regions(i),
        range: vk::ImageSubresourceRange {
            aspect_mask: all_aspects(i),
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: 1,
        },
    }
}

/// Every plane with `pattern`'s bytes, packed as [`planes`] says.
const TEXELS: Texels = Texels {
    packing,
    byte: pattern,
    mismatches: texel_mismatches,
};

fn plane_fds(im: *const vkcuda_image) -> Vec<i32> {
    let i = image_info(im);
    (0..i.plane_count)
        .map(|p| {
            let mut fd = -1;
            ok(unsafe { vkcuda_image_export_plane_fd(im, p, &mut fd) });
            assert!(fd >= 0 && fd_is_open(fd));
            fd
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// CPU: lavapipe (and any device).

#[test]
fn the_device_offers_what_it_offers_and_creation_follows() {
    let _g = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let before = image_counts();
    let mut made = 0;
    println!("multi-planar formats on this device (Vulkan-only context):");
    for p in PLANAR {
        let info = d2(p.format, 64, 64);
        let why = unsupported_why(&v, p);
        match (try_create(ctx, &info), &why) {
            (Ok(im), None) => {
                let i = image_info(im);
                assert_eq!(i.plane_count as usize, p.planes.len());
                assert!(
                    i.cuda_mipmapped_array.is_null(),
                    "Vulkan-only: no CUDA view"
                );
                for (k, pl) in p.planes.iter().enumerate() {
                    let e = i.planes[k].extent;
                    assert_eq!((e.width, e.height), pl.extent(64, 64));
                    assert_ne!(i.planes[k].memory, vk::DeviceMemory::null());
                    assert!(i.planes[k].allocation_size >= e.width as u64 * e.height as u64);
                }
                assert_eq!(i.memory, i.planes[0].memory);
                let mut fd = -1;
                let m = fails(
                    unsafe { vkcuda_image_export_fd(im, &mut fd) },
                    VKCUDA_ERROR_INVALID_ARGUMENT,
                );
                assert!(m.contains("vkcuda_image_export_plane_fd"), "{m}");
                for fd in plane_fds(im) {
                    unsafe { libc::close(fd) };
                }
                println!("  MADE    {:<8} {}", p.name, name(p.format));
                unsafe { vkcuda_image_destroy(im) };
                made += 1;
            }
            (Err((r, m)), Some(why)) => {
                assert_eq!(r, VKCUDA_ERROR_UNSUPPORTED, "{m}");
                assert!(m.contains(&name(p.format)), "{m}");
                println!("  REFUSED {:<8} ({why}): {m}", p.name);
            }
            (Ok(im), Some(why)) => {
                unsafe { vkcuda_image_destroy(im) };
                panic!("{} was made although the device says {why}", p.name);
            }
            (Err((r, m)), None) => {
                // Supported by the format features, refused by the external image
                // properties (not exportable): say so.
                assert_eq!(r, VKCUDA_ERROR_UNSUPPORTED, "{m}");
                println!("  REFUSED {:<8} (not exportable): {m}", p.name);
            }
        }
    }
    println!("{made} of {} multi-planar formats made here", PLANAR.len());
    assert_eq!(image_counts(), before);
}

#[test]
fn format_query_describes_every_plane() {
    for p in PLANAR {
        let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
        let r = unsafe { vkcuda_format_query(p.format.as_raw(), &mut q) };
        if !p.verified {
            let m = fails(r, VKCUDA_ERROR_UNSUPPORTED);
            assert!(m.contains("as a linear video frame"), "{m}");
            continue;
        }
        ok(r);
        assert_eq!(q.plane_count as usize, p.planes.len(), "{}", p.name);
        assert_eq!(
            (q.chroma_width_divisor, q.chroma_height_divisor),
            p.chroma_divisors()
        );
        assert_eq!(q.bits, p.bits);
        // The format's own fields are luma's (plane 0): one channel of 8 or 16 bits.
        let (cuda, bytes) = if p.bits == 8 { (0x01, 1) } else { (0x02, 2) };
        assert_eq!(
            (q.cuda_format, q.channels, q.bytes_per_texel),
            (cuda, 1, bytes)
        );
        for (k, pl) in p.planes.iter().enumerate() {
            let c = &q.planes[k];
            assert_eq!(c.format, pl.info.format.as_raw());
            assert_eq!(c.cuda_format, pl.info.cuda as u32);
            assert_eq!(c.channels, pl.info.channels);
            assert_eq!(c.bytes_per_texel, pl.info.bytes_per_texel());
            assert_eq!(
                (c.width_divisor, c.height_divisor),
                (pl.width_divisor, pl.height_divisor)
            );
            assert_eq!(c.aspect, vk::ImageAspectFlags::PLANE_0.as_raw() << k);
        }
        for k in p.planes.len()..3 {
            assert_eq!(q.planes[k].channels, 0, "unused planes are zero");
        }
    }
    let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
    // Single-plane formats are the one-plane case.
    ok(unsafe { vkcuda_format_query(vk::Format::R16G16_SFLOAT.as_raw(), &mut q) });
    assert_eq!(q.plane_count, 1);
    assert_eq!((q.chroma_width_divisor, q.chroma_height_divisor), (1, 1));
    assert_eq!(q.bits, 16);
    assert_eq!(q.planes[0].format, vk::Format::R16G16_SFLOAT.as_raw());
    assert_eq!(
        (
            q.planes[0].cuda_format,
            q.planes[0].channels,
            q.planes[0].bytes_per_texel
        ),
        (q.cuda_format, q.channels, q.bytes_per_texel)
    );
    assert_eq!(q.planes[0].aspect, vk::ImageAspectFlags::COLOR.as_raw());
    // Packed 4:2:2 is no planar format: refused with the planar one to use.
    let m = fails(
        unsafe { vkcuda_format_query(vk::Format::G8B8G8R8_422_UNORM.as_raw(), &mut q) },
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert!(m.contains("use VK_FORMAT_G8_B8R8_2PLANE_422_UNORM"), "{m}");
}

#[test]
fn planar_shapes_are_checked_before_the_device() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let nv12 = vk::Format::G8_B8R8_2PLANE_420_UNORM;
    for (w, h) in [(1919, 1080), (1920, 1079), (1, 2), (3, 3)] {
        let m = try_create(ctx, &d2(nv12, w, h)).unwrap_err();
        assert_eq!(m.0, VKCUDA_ERROR_INVALID_ARGUMENT, "{}", m.1);
        assert!(
            m.1.contains("(NV12) subsamples chroma 2x2 (4:2:0): the width and height must be even")
                && m.1.ends_with(&format!("not {w}x{h}")),
            "{}",
            m.1
        );
    }
    let m = try_create(ctx, &d2(vk::Format::G8_B8R8_2PLANE_422_UNORM, 33, 33)).unwrap_err();
    assert!(m.1.contains("the width must be even, not 33x33"), "{}", m.1);
    let mut levels = d2(nv12, 64, 64);
    levels.mip_levels = 2;
    let m = try_create(ctx, &levels).unwrap_err();
    assert_eq!(m.0, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(m.1.contains("1 mip level, not 2"), "{}", m.1);
    let mut layers = d2(nv12, 64, 64);
    layers.array_layers = 2;
    assert!(try_create(ctx, &layers)
        .unwrap_err()
        .1
        .contains("1 array layer"));
    let mut cube = d2(nv12, 64, 64);
    cube.flags = VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
    cube.array_layers = 6;
    assert_eq!(
        try_create(ctx, &cube).unwrap_err().0,
        VKCUDA_ERROR_INVALID_ARGUMENT
    );
    let mut one = d2(nv12, 64, 1);
    one.image_type = vkcuda_image_type_raw(1);
    assert!(try_create(ctx, &one).unwrap_err().1.contains("2D, not 1D"));
    let mut three = d2(nv12, 64, 64);
    three.image_type = vkcuda_image_type_raw(3);
    three.extent.depth = 2;
    assert!(try_create(ctx, &three)
        .unwrap_err()
        .1
        .contains("2D, not 3D"));
    // 4:4:4 takes any extent.
    let r = try_create(ctx, &d2(vk::Format::G8_B8_R8_3PLANE_444_UNORM, 33, 17));
    match r {
        Ok(im) => unsafe { vkcuda_image_destroy(im) },
        Err((r, m)) => {
            assert_eq!(r, VKCUDA_ERROR_UNSUPPORTED, "{m}");
            assert!(!m.contains("even"), "{m}");
        }
    }
    unsafe { vkcuda_context_destroy(ctx) };
}

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
fn pitched_copies_check_their_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let r8 = create(ctx, &d2(vk::Format::R8_UNORM, 100, 30));
    let rgba = create(ctx, &d2(vk::Format::R8G8B8A8_UNORM, 100, 30));
    type Copy = unsafe extern "C" fn(
        *const vkcuda_image,
        *const vkcuda_pitched_planes,
        *mut CUstream_st,
    ) -> vkcuda_result;
    let calls: [Copy; 2] = [
        vkcuda_image_cuda_copy_from_pitched,
        vkcuda_image_cuda_copy_to_pitched,
    ];
    for call in calls {
        let copy = |im, p: &vkcuda_pitched_planes| unsafe { call(im, p, ptr::null_mut()) };
        // Everything right: the arguments pass, CUDA is missing.
        fails(
            copy(r8, &pitched(&[(0x1000, 100)])),
            VKCUDA_ERROR_CUDA_UNAVAILABLE,
        );
        fails(
            copy(rgba, &pitched(&[(0x1000, 512)])),
            VKCUDA_ERROR_CUDA_UNAVAILABLE,
        );
        let m = fails(
            copy(rgba, &pitched(&[(0x1000, 399)])),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            m.contains("pitch of pitched plane 0 (399) is less than the plane's row of 400 bytes (100 texels of 4 bytes)"),
            "{m}"
        );
        let m = fails(
            copy(r8, &pitched(&[(0x1000, 100), (0x2000, 100)])),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            m.contains("2 pitched planes were given, but VK_FORMAT_R8_UNORM has 1 plane"),
            "{m}"
        );
        fails(
            copy(r8, &pitched(&[(u64::MAX - 10, 100)])),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        fails(
            copy(r8, &pitched(&[(0x1000, u64::MAX / 8)])),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        let mut extra = pitched(&[(0x1000, 100)]);
        extra.planes[2].pitch = 1;
        let m = fails(copy(r8, &extra), VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(m.contains("planes->planes[2] is set"), "{m}");
    }
    // 3D and layered images: refused (cuMemcpy3D on the level arrays instead).
    let mut three = d2(vk::Format::R8_UNORM, 16, 16);
    three.image_type = vkcuda_image_type_raw(3);
    three.extent.depth = 4;
    let three = create(ctx, &three);
    let mut layered = d2(vk::Format::R8_UNORM, 16, 16);
    layered.array_layers = 2;
    let layered = create(ctx, &layered);
    for im in [three, layered] {
        let m = fails(
            unsafe {
                vkcuda_image_cuda_copy_from_pitched(im, &pitched(&[(0x1000, 16)]), ptr::null_mut())
            },
            VKCUDA_ERROR_UNSUPPORTED,
        );
        assert!(m.contains("cuMemcpy3D"), "{m}");
        unsafe { vkcuda_image_destroy(im) };
    }
    unsafe {
        vkcuda_image_destroy(rgba);
        vkcuda_image_destroy(r8);
        vkcuda_context_destroy(ctx);
    }
}

/// The header lists the pitched copies' checks, each with its code
/// (`vkcuda_image_cuda_copy_from_pitched`: "Checked before anything is enqueued,
/// each with its code:"): every listed check is one of the cases below and gives
/// the code the header names (run here on lavapipe; the two that need CUDA run in
/// `gpu_pitched_copy_refusals`), and every case below is listed.
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

#[test]
fn single_plane_images_are_the_one_plane_case() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let im = create(ctx, &d2(vk::Format::R8G8B8A8_UNORM, 67, 35));
    let i = image_info(im);
    assert_eq!(i.plane_count, 1);
    assert_eq!(i.planes[0].memory, i.memory);
    assert_eq!(i.planes[0].allocation_size, i.allocation_size);
    assert_eq!(
        (i.planes[0].extent.width, i.planes[0].extent.height),
        (67, 35)
    );
    assert_eq!(i.planes[0].aspect, vk::ImageAspectFlags::COLOR.as_raw());
    assert_eq!(i.planes[0].cuda_array_flags, i.cuda_array_flags);
    assert_eq!(i.format_info.plane_count, 1);
    for k in 1..3 {
        assert_eq!(i.planes[k].memory, vk::DeviceMemory::null());
        assert_eq!(i.planes[k].allocation_size, 0);
    }
    let mut fd = -1;
    ok(unsafe { vkcuda_image_export_plane_fd(im, 0, &mut fd) });
    assert!(fd_is_open(fd));
    unsafe { libc::close(fd) };
    let m = fails(
        unsafe { vkcuda_image_export_plane_fd(im, 1, &mut fd) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(
        m.contains("plane 1 is out of range: VK_FORMAT_R8G8B8A8_UNORM has 1 plane"),
        "{m}"
    );
    let mut a = ptr::null_mut();
    fails(
        unsafe { vkcuda_image_get_plane_cuda_array(im, 1, 0, &mut a) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    fails(
        unsafe { vkcuda_image_get_plane_cuda_array(im, 0, 0, &mut a) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    // The description carries one size and one fd.
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut d) });
    assert_eq!(d.image.plane_allocation_sizes, [i.allocation_size, 0, 0]);
    unsafe {
        vkcuda_image_destroy(im);
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

#[test]
fn multi_fd_descriptions_travel_over_a_socket() {
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
    // One fd is not enough for NV12; vkcuda_share_send takes one fd only.
    let m = fails(
        unsafe { vkcuda_share_send_fds(a, &d, fds.as_ptr(), 1, &opts) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("comes with 2 fds"), "{m}");
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
    // Too little room: refused, both closed.
    ok(unsafe { vkcuda_share_send_fds(a, &d, fds.as_ptr(), 2, &opts) });
    fails(
        unsafe { vkcuda_share_receive_fds(b, &opts, &mut got, out.as_mut_ptr(), 1, &mut n) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert_eq!(fd_count(), base + 2);
    unsafe {
        libc::close(a);
        libc::close(b);
        libc::close(fds[0]);
        libc::close(fds[1]);
        vkcuda_buffer_destroy(buf);
        vkcuda_context_destroy(ctx);
    }
}

/// Device A makes the image and writes every plane, device B reads them through
/// its own image on the plane fds and writes them back (`Texels::cross_devices`).
/// A second import goes through the library (describe, serialize, parse, import
/// with the fds).
fn cross_device(format: vk::Format, w: u32, h: u32) -> u64 {
    let two = TwoDevices::open();
    let (a, b, va, vb) = (two.a, two.b, &*two.va, &*two.vb);
    let im = create(a, &d2(format, w, h));
    let i = image_info(im);
    let what = format!("{format:?} {w}x{h}");
    let (e, all) = TEXELS.cross_devices(va, vb, im, &plane_fds(im), &what);

    // The library's import in B, from a record that went through bytes.
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut d) });
    let bytes = record(&d);
    let mut parsed: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_share_description_parse(bytes.as_ptr(), 128, &mut parsed) });
    let fds = plane_fds(im);
    let mut one = ptr::null_mut();
    let m = fails(
        unsafe { vkcuda_image_import_description(b, &parsed, fds[0], &mut one) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("vkcuda_image_import_description_fds"), "{m}");
    let mut imported = ptr::null_mut();
    ok(unsafe {
        vkcuda_image_import_description_fds(
            b,
            &parsed,
            fds.as_ptr(),
            fds.len() as u32,
            &mut imported,
        )
    });
    for f in fds {
        assert!(!fd_is_open(f), "the import took the fds");
    }
    let ii = image_info(imported);
    assert_eq!(ii.plane_count, i.plane_count);
    let seen = TEXELS.read(vb, Side::Shared(imported));
    assert_eq!(
        texel_mismatches(&i, &seen, 8).0,
        0,
        "the library's import sees A's texels"
    );

    // An engine image of B with exportable plane memory, wrapped (Vulkan-only: the
    // checks run).
    let own = EngineImage::new(vb, &ii, None);
    let mut w_info = own.wrap_info(&ii);
    let mut wrapped = ptr::null_mut();
    ok(unsafe { vkcuda_image_wrap(b, &w_info, &mut wrapped) });
    let wi = image_info(wrapped);
    assert_eq!(wi.wrapped, 1);
    for (p, &(m, s)) in own.memory.iter().enumerate() {
        assert_eq!((wi.planes[p].memory, wi.planes[p].allocation_size), (m, s));
    }
    unsafe { vkcuda_image_destroy(wrapped) };
    w_info.planes[1].allocation_size = 1;
    let m = fails(
        unsafe { vkcuda_image_wrap(b, &w_info, &mut wrapped) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("plane 1: allocation_size 1"), "{m}");
    w_info.planes[1] = w_info.planes[0];
    w_info.planes[0].memory = vk::DeviceMemory::null();
    w_info.planes[0].allocation_size = 0;
    let m = fails(
        unsafe { vkcuda_image_wrap(b, &w_info, &mut wrapped) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("memory of an earlier plane"), "{m}");

    unsafe { vkcuda_image_destroy(imported) };
    own.destroy(vb);
    e.destroy(vb);
    unsafe { vkcuda_image_destroy(im) };
    all
}

#[test]
fn planar_texels_cross_devices_where_the_device_has_them() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::new(ctx);
    let supported: Vec<&PlanarFormat> = PLANAR
        .iter()
        .filter(|p| unsupported_why(&v, p).is_none())
        .collect();
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
    if supported.is_empty() {
        println!(
            "SKIPPED: planar_texels_cross_devices: this device offers no multi-planar format \
             with DISJOINT and transfers (Mesa 22.3's lavapipe offers none; \
             the_device_offers_what_it_offers_and_creation_follows checks the refusals)"
        );
        return;
    }
    let before = image_counts();
    for p in supported {
        let (x, y) = p.chroma_divisors();
        for (w, h) in [(x, y), (64, 64), (130 * x / 2 * 2, 34)] {
            let all = cross_device(p.format, w, h);
            println!("PASS {:<6} {w}x{h}: {all} texels each way, 0 wrong", p.name);
        }
    }
    assert_eq!(image_counts(), before, "no image, memory or fd leaked");
}

#[test]
fn planar_cycles_do_not_grow() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let info = d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 32);
    let odd = d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 63, 32);
    let warm = try_create(ctx, &info);
    if let Ok(im) = warm {
        unsafe { vkcuda_image_destroy(im) };
    }
    let before = image_counts();
    for _ in 0..300 {
        match try_create(ctx, &info) {
            Ok(im) => {
                for fd in plane_fds(im) {
                    unsafe { libc::close(fd) };
                }
                unsafe { vkcuda_image_destroy(im) };
            }
            Err((r, _)) => assert_eq!(r, VKCUDA_ERROR_UNSUPPORTED),
        }
        assert!(try_create(ctx, &odd).is_err());
    }
    assert_eq!(image_counts(), before);
    unsafe { vkcuda_context_destroy(ctx) };
}

// ---------------------------------------------------------------------------------
// GPU: CUDA reads and writes the plane arrays (cuMemcpy2D) and pitched memory.

mod gpu {
    use super::*;
    use cudarc::driver::sys as cu;
    use support::cuda::{check, copy2d, Cuda, Mem};

    fn plane_array(im: *const vkcuda_image, p: usize) -> *mut CUarray_st {
        let mut a = ptr::null_mut();
        ok(unsafe { vkcuda_image_get_plane_cuda_array(im, p as u32, 0, &mut a) });
        assert!(!a.is_null());
        a
    }

    /// Pitched device memory for every plane, with `pad` bytes of pitch beyond the row.
    struct Pitched {
        ptrs: Vec<(u64, usize)>,
    }

    impl Pitched {
        fn new(i: &vkcuda_image_info, pad: usize) -> Pitched {
            let (ps, _) = planes(i);
            let ptrs = ps
                .iter()
                .map(|p| {
                    let row = (p.extent.width as u64 * p.texel) as usize;
                    let pitch = row + pad;
                    let mut d = 0;
                    check(unsafe { cu::cuMemAlloc_v2(&mut d, pitch * p.extent.height as usize) });
                    (d, pitch)
                })
                .collect();
            Pitched { ptrs }
        }
        fn c(&self) -> vkcuda_pitched_planes {
            let list: Vec<(u64, u64)> = self.ptrs.iter().map(|&(d, p)| (d, p as u64)).collect();
            super::pitched(&list)
        }
        fn free(self) {
            for (d, _) in self.ptrs {
                unsafe { cu::cuMemFree_v2(d) };
            }
        }
    }

    /// Vulkan writes / CUDA reads, CUDA writes / Vulkan reads, through the plane
    /// arrays and through the pitched helper; surfaces and textures per plane.
    /// Returns the texels compared in one direction.
    fn both_ways(
        ctx: *mut vkcuda_context,
        v: &Vk,
        c: &Cuda,
        info: &vkcuda_image_create_info,
    ) -> u64 {
        let im = create(ctx, info);
        let i = image_info(im);
        let (ps, _) = planes(&i);
        let what = format!(
            "{} {}x{}",
            name(vk::Format::from_raw(i.format)),
            i.extent.width,
            i.extent.height
        );
        for p in 0..i.plane_count as usize {
            assert!(
                !i.planes[p].cuda_mipmapped_array.is_null(),
                "{what}: plane {p}"
            );
        }

        // Vulkan -> CUDA and CUDA -> Vulkan, through the arrays.
        let (bad, bad_back, all) = TEXELS.through_cuda(v, c, im, |host, to_array| {
            for (k, p) in ps.iter().enumerate() {
                let row = (p.extent.width as u64 * p.texel) as usize;
                let (h, a) = (host[p.offset as usize..].as_mut_ptr(), plane_array(im, k));
                let (src, dst) = (Mem::Array(a.cast()), Mem::Host(h, row));
                let (src, dst) = if to_array { (dst, src) } else { (src, dst) };
                copy2d(src, dst, row, p.extent.height as usize);
            }
        });
        assert_eq!(bad, 0, "{what}: CUDA read {bad} of {all} texels wrong");
        assert_eq!(
            bad_back, 0,
            "{what}: Vulkan read {bad_back} of {all} texels wrong after CUDA wrote"
        );

        // The pitched helper, both ways, with padded pitches whose padding must
        // stay untouched.
        c.enter();
        let pitched = Pitched::new(&i, 192);
        let pad = 0xEEu8;
        for (k, p) in ps.iter().enumerate() {
            let (d, pitch) = pitched.ptrs[k];
            let mut src = vec![pad; pitch * p.extent.height as usize];
            let row = (p.extent.width as u64 * p.texel) as usize;
            for y in 0..p.extent.height as usize {
                for x in 0..row {
                    src[y * pitch + x] = pattern(p.offset as usize + y * row + x, 13);
                }
            }
            check(unsafe { cu::cuMemcpyHtoD_v2(d, src.as_ptr().cast(), src.len()) });
        }
        c.leave();
        // TEXELS.read left the image Vulkan's, in TRANSFER_SRC_OPTIMAL: hand it to CUDA.
        v.run(|cmd| {
            ok(unsafe {
                vkcuda_image_cmd_release_to_cuda(
                    im,
                    cmd,
                    &handoff(v),
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL.as_raw(),
                )
            })
        });
        ok(unsafe { vkcuda_image_cuda_copy_from_pitched(im, &pitched.c(), ptr::null_mut()) });
        c.enter();
        check(unsafe { cu::cuCtxSynchronize() });
        c.leave();
        let seen = TEXELS.read(v, Side::Shared(im));
        let (bad, _) = texel_mismatches(&i, &seen, 13);
        assert_eq!(
            bad, 0,
            "{what}: copy_from_pitched: Vulkan read {bad} of {all} texels wrong"
        );
        TEXELS.write(
            v,
            Side::Shared(im),
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            14,
        );
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        // Padding bytes everywhere, then the copy out: only the rows change.
        c.enter();
        for (k, p) in ps.iter().enumerate() {
            let (d, pitch) = pitched.ptrs[k];
            check(unsafe { cu::cuMemsetD8_v2(d, pad, pitch * p.extent.height as usize) });
        }
        c.leave();
        ok(unsafe { vkcuda_image_cuda_copy_to_pitched(im, &pitched.c(), ptr::null_mut()) });
        c.enter();
        check(unsafe { cu::cuCtxSynchronize() });
        let mut bad_texels = 0u64;
        let mut bad_padding = 0u64;
        for (k, p) in ps.iter().enumerate() {
            let (d, pitch) = pitched.ptrs[k];
            let mut got = vec![0u8; pitch * p.extent.height as usize];
            check(unsafe { cu::cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), d, got.len()) });
            let row = (p.extent.width as u64 * p.texel) as usize;
            for y in 0..p.extent.height as usize {
                for t in 0..p.extent.width as usize {
                    let at = y * pitch + t * p.texel as usize;
                    let want = p.offset as usize + y * row + t * p.texel as usize;
                    let texel = &got[at..at + p.texel as usize];
                    if texel_differs(i.format_info.bits, texel, |b| pattern(want + b, 14)) {
                        bad_texels += 1;
                    }
                }
                bad_padding += got[y * pitch + row..(y + 1) * pitch]
                    .iter()
                    .filter(|&&x| x != pad)
                    .count() as u64;
            }
        }
        pitched.free();
        c.leave();
        assert_eq!(
            bad_texels, 0,
            "{what}: copy_to_pitched: {bad_texels} of {all} texels wrong"
        );
        assert_eq!(
            bad_padding, 0,
            "{what}: copy_to_pitched wrote {bad_padding} padding bytes"
        );

        // Surfaces (kept, one per plane; every plane of a multi-planar image has
        // them, a single-plane image with STORAGE usage) and textures on every plane.
        for p in 0..i.plane_count {
            let surfaces = i.planes[p as usize].cuda_array_flags & 0x2 != 0;
            assert!(
                surfaces || i.plane_count == 1,
                "{what}: plane {p} has no SURFACE_LDST"
            );
            if surfaces {
                let (mut s1, mut s2) = (0u64, 0u64);
                ok(unsafe { vkcuda_image_get_plane_surface_object(im, p, 0, &mut s1) });
                ok(unsafe { vkcuda_image_get_plane_surface_object(im, p, 0, &mut s2) });
                assert!(s1 != 0 && s1 == s2);
            }
            let t = vkcuda_texture_info {
                flags: VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT,
                level: 0,
                filter: vkcuda_filter_raw(1),
                address_mode: vkcuda_address_mode_raw(0),
                read_mode: vkcuda_read_mode_raw(1),
                border_color: [0.0; 4],
            };
            let mut tex = 0u64;
            ok(unsafe { vkcuda_image_create_plane_texture_object(im, p, &t, &mut tex) });
            assert_ne!(tex, 0);
        }
        unsafe { vkcuda_image_destroy(im) };
        all
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_planar_formats_are_refused_and_single_plane_images_carry_frames() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip(
            "gpu_planar_formats_are_refused_and_single_plane_images_carry_frames",
        ) else {
            return;
        };
        let v = Vk::new(ctx);
        let c = Cuda::of(ctx);
        // With optimal tiling every planar format is refused in a CUDA context,
        // saying why and naming the shared video frame (capi/tests/video.rs) as the fix.
        for p in PLANAR {
            let (r, m) = try_create(ctx, &d2(p.format, 64, 64)).unwrap_err();
            assert_eq!(r, VKCUDA_ERROR_UNSUPPORTED, "{m}");
            assert!(m.contains("with optimal tiling cannot be shared"), "{m}");
            assert!(m.contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"), "{m}");
            println!("REFUSED {:<6} {} (optimal)", p.name, name(p.format));
        }
        // What a frame is shared with instead: one single-plane image per plane
        // (R8 + R8G8 for 8-bit 4:2:0, R16 + R16G16 for P010/P016), and RGBA8.
        let mut formats = 0;
        for (f, w, h) in [
            (vk::Format::R8_UNORM, 1920, 1080),
            (vk::Format::R8G8_UNORM, 960, 540),
            (vk::Format::R16_UNORM, 3840, 2160),
            (vk::Format::R16G16_UNORM, 1920, 1080),
            (vk::Format::R8G8B8A8_UNORM, 1282, 722),
        ] {
            let all = both_ways(ctx, &v, &c, &d2(f, w, h));
            formats += 1;
            println!(
                "PASS {:<24} {w}x{h}: {all} texels each way (ramp and random bytes; arrays and \
                 pitched helper), 0 mismatches",
                name(f)
            );
        }
        assert_eq!(formats, 5);
        drop(v);
        unsafe { vkcuda_context_destroy(ctx) };
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_pitched_copy_refusals() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_pitched_copy_refusals") else {
            return;
        };
        let c = Cuda::of(ctx);
        let im = create(ctx, &d2(vk::Format::R8G8_UNORM, 64, 64));
        let i = image_info(im);
        c.enter();
        let p = Pitched::new(&i, 0);
        // A stream of another context: DEVICE_MISMATCH.
        let mut other = ptr::null_mut();
        check(unsafe { cu::cuCtxCreate_v2(&mut other, 0, 0) });
        let mut stream = ptr::null_mut();
        check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        let mut popped = ptr::null_mut();
        unsafe { cu::cuCtxPopCurrent_v2(&mut popped) };
        c.leave();
        let m = fails(
            unsafe { vkcuda_image_cuda_copy_from_pitched(im, &p.c(), stream.cast()) },
            VKCUDA_ERROR_DEVICE_MISMATCH,
        );
        println!("foreign stream: {m}");
        // Rows past the end of the allocation.
        let mut short = p.c();
        short.planes[0].device_pointer += 64;
        let m = fails(
            unsafe { vkcuda_image_cuda_copy_to_pitched(im, &short, ptr::null_mut()) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            m.contains("plane 0") && m.contains("past the end of its CUDA allocation"),
            "{m}"
        );
        println!("past the allocation: {m}");
        unsafe {
            cu::cuStreamDestroy_v2(stream);
            cu::cuCtxDestroy_v2(other);
        }
        c.enter();
        p.free();
        c.leave();
        unsafe {
            vkcuda_image_destroy(im);
            vkcuda_context_destroy(ctx);
        }
    }

    /// Issue 39, item 4: a pitched copy from or to an address CUDA knows nothing
    /// of (a made-up address, plain host memory) is refused with INVALID_ARGUMENT
    /// before anything is enqueued, and the context is not lost; every kind of
    /// memory the header names as accepted goes through both ways, every byte
    /// checked: cuMemAlloc'd device memory, managed memory, page-locked host
    /// memory (cuMemAllocHost) and registered host memory (cuMemHostRegister),
    /// and the CUDA pointers of shared buffers (Vulkan-allocated and
    /// CUDA-allocated). Each refusal and each kind is printed.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_pitched_copy_unknown_addresses_are_refused() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_pitched_copy_unknown_addresses_are_refused")
        else {
            return;
        };
        let c = Cuda::of(ctx);
        let (w, h) = (96u32, 40u32);
        let im = create(ctx, &d2(vk::Format::R8G8_UNORM, w, h));
        let row = w as usize * 2;
        let pitch = row + 64;
        let len = pitch * h as usize;
        // Refused: nothing enqueued (a fault would lose the context, and every
        // later call here would fail).
        let host = vec![0u8; len];
        for (what, bad) in [
            ("0x10000", 0x10000u64),
            ("plain host memory", host.as_ptr() as u64),
        ] {
            for (dir, r) in [
                ("from", unsafe {
                    vkcuda_image_cuda_copy_from_pitched(
                        im,
                        &pitched(&[(bad, pitch as u64)]),
                        ptr::null_mut(),
                    )
                }),
                ("to", unsafe {
                    vkcuda_image_cuda_copy_to_pitched(
                        im,
                        &pitched(&[(bad, pitch as u64)]),
                        ptr::null_mut(),
                    )
                }),
            ] {
                let m = fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
                assert!(
                    m.contains("in no allocation CUDA knows") && m.contains("cuMemGetAddressRange"),
                    "copy {dir} {what}: {m}"
                );
                println!("copy {dir} {what}: refused: {m}");
            }
        }
        c.synchronize();

        // Accepted: each kind of memory, both ways, every byte.
        let pattern: Vec<u8> = (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        let shared_vk = create_buffer(ctx, len as u64, 0);
        let shared_cuda = create_buffer(ctx, len as u64, 1);
        let buffer_pointer = |b| {
            let mut p = 0;
            ok(unsafe { vkcuda_buffer_get_cuda_pointer(b, &mut p) });
            p
        };
        // Whole pages of a Vec of our own, registered with CUDA.
        let page = 4096;
        let reg_len = len.div_ceil(page) * page;
        let mut registered = vec![0u8; reg_len + page];
        let reg_host = {
            let a = registered.as_mut_ptr() as usize;
            (a.div_ceil(page) * page) as *mut u8
        };
        let mut kinds: Vec<(&str, u64)> = Vec::new();
        c.enter();
        let mut dev = 0;
        check(unsafe { cu::cuMemAlloc_v2(&mut dev, len) });
        kinds.push(("cuMemAlloc", dev));
        let mut managed = 0;
        check(unsafe { cu::cuMemAllocManaged(&mut managed, len, 1) });
        kinds.push(("cuMemAllocManaged", managed));
        let mut pinned: *mut std::ffi::c_void = ptr::null_mut();
        check(unsafe { cu::cuMemAllocHost_v2(&mut pinned, len) });
        let mut pinned_dev = 0;
        check(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut pinned_dev, pinned, 0) });
        kinds.push(("cuMemAllocHost", pinned_dev));
        check(unsafe { cu::cuMemHostRegister_v2(reg_host.cast(), reg_len, 2) });
        let mut reg_dev = 0;
        check(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut reg_dev, reg_host.cast(), 0) });
        kinds.push(("cuMemHostRegister", reg_dev));
        let mut out = 0;
        check(unsafe { cu::cuMemAlloc_v2(&mut out, len) });
        c.leave();
        kinds.push((
            "a shared buffer's CUDA pointer (Vulkan-allocated)",
            buffer_pointer(shared_vk),
        ));
        kinds.push((
            "a shared buffer's CUDA pointer (CUDA-allocated)",
            buffer_pointer(shared_cuda),
        ));
        for (what, src) in &kinds {
            c.write(*src, &pattern);
            c.write(out, &vec![0xEE; len]);
            ok(unsafe {
                vkcuda_image_cuda_copy_from_pitched(
                    im,
                    &pitched(&[(*src, pitch as u64)]),
                    ptr::null_mut(),
                )
            });
            ok(unsafe {
                vkcuda_image_cuda_copy_to_pitched(
                    im,
                    &pitched(&[(out, pitch as u64)]),
                    ptr::null_mut(),
                )
            });
            c.synchronize();
            let back = c.read(out, len);
            let (mut wrong, mut padding) = (0, 0);
            for (i, (&got, &want)) in back.iter().zip(&pattern).enumerate() {
                if i % pitch < row {
                    wrong += usize::from(got != want);
                } else {
                    padding += usize::from(got != 0xEE);
                }
            }
            assert_eq!(
                (wrong, padding),
                (0, 0),
                "{what}: wrong bytes, padding bytes written"
            );
            println!(
                "copy from and to {what}: accepted, {} bytes right both ways",
                row * h as usize
            );
        }
        c.enter();
        unsafe {
            cu::cuMemFree_v2(out);
            cu::cuMemHostUnregister(reg_host.cast());
            cu::cuMemFreeHost(pinned);
            cu::cuMemFree_v2(managed);
            cu::cuMemFree_v2(dev);
        }
        c.leave();
        drop(registered);
        drop(host);
        unsafe {
            vkcuda_buffer_destroy(shared_cuda);
            vkcuda_buffer_destroy(shared_vk);
            vkcuda_image_destroy(im);
            vkcuda_context_destroy(ctx);
        }
    }

    /// 1000 frames of luma (R8, 1920x1080: the Y of an NV12 frame shared the way a
    /// planar format is shared instead): CUDA copies frame k (one of three pitched
    /// frames, two of them ramps that compress, so that consecutive frames differ)
    /// into the shared image with the pitched helper
    /// and signals; Vulkan waits, acquires, copies the planes out, releases and
    /// signals; the host compares every texel of every frame.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_thousand_frame_pitched_handoff() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_thousand_frame_pitched_handoff") else {
            return;
        };
        let frames: u32 = std::env::var("VKCUDA_PLANAR_FRAMES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        let v = Vk::new(ctx);
        let c = Cuda::of(ctx);
        let im = create(ctx, &d2(vk::Format::R8_UNORM, 1920, 1080));
        let i = image_info(im);
        let (ps, total) = planes(&i);
        // Three source frames, pitched like a decoder's output.
        c.enter();
        let sources: Vec<Pitched> = (0..3).map(|_| Pitched::new(&i, 128)).collect();
        let mut expect = Vec::new();
        for (f, src) in sources.iter().enumerate() {
            let mut packed = vec![0u8; total as usize];
            for (k, x) in packed.iter_mut().enumerate() {
                *x = pattern(k, 100 + f as u32);
            }
            for (k, p) in ps.iter().enumerate() {
                let (d, pitch) = src.ptrs[k];
                let row = (p.extent.width as u64 * p.texel) as usize;
                let h = packed[p.offset as usize..].as_mut_ptr();
                copy2d(
                    Mem::Host(h, row),
                    Mem::Device(d, pitch),
                    row,
                    p.extent.height as usize,
                );
            }
            expect.push(packed);
        }
        let mut stream = ptr::null_mut();
        check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        c.leave();
        let stream_c: *mut CUstream_st = stream.cast();
        let sem = {
            let info = vkcuda_semaphore_create_info {
                flags: 0,
                semaphore_type: vkcuda_semaphore_type_raw(0),
                initial_value: 0,
                host_wait_spin_ns: 0,
            };
            let mut s = ptr::null_mut();
            ok(unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) });
            s
        };
        let mut vs = vk::Semaphore::null();
        ok(unsafe { vkcuda_semaphore_get_vk_semaphore(sem, &mut vs) });
        let out = v.host_buffer(total);
        let h = handoff(&v);
        let src_layout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL.as_raw();
        // One command buffer for every frame: acquire, copy out, release.
        let alloc = |record: &dyn Fn(vk::CommandBuffer)| {
            let cmd = v.command_buffer();
            record(cmd);
            unsafe { v.device.end_command_buffer(cmd).unwrap() };
            cmd
        };
        let first = alloc(&|cmd| ok(unsafe { vkcuda_image_cmd_release_to_cuda(im, cmd, &h, 0) }));
        let frame_cmd = alloc(&|cmd| unsafe {
            ok(vkcuda_image_cmd_acquire_from_cuda(im, cmd, &h, src_layout));
            v.device.cmd_copy_image_to_buffer(
                cmd,
                i.image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                out.buffer,
                &regions(&i),
            );
            ok(vkcuda_image_cmd_release_to_cuda(im, cmd, &h, src_layout));
        });
        let fence =
            unsafe { v.device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
        let submit = |cmd: vk::CommandBuffer, wait: Option<u64>, signal: u64| {
            let waits: Vec<_> = wait.map(|w| (vs, w)).into_iter().collect();
            v.submit_timeline(&waits, &[(vs, signal)], cmd, fence);
            unsafe {
                v.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
                v.device.reset_fences(&[fence]).unwrap();
            }
        };
        let stage = || {
            let mut s = vkcuda_timeline_stage {
                wait_value: 0,
                signal_value: 0,
            };
            ok(unsafe { vkcuda_semaphore_next_stage(sem, &mut s) });
            s
        };
        // The new image goes to CUDA (its contents do not matter yet).
        let s0 = stage();
        submit(first, None, s0.signal_value);
        let t0 = std::time::Instant::now();
        let (mut bad_frames, mut bad_texels, mut texels) = (0u32, 0u64, 0u64);
        for k in 0..frames {
            let f = (k % 3) as usize;
            let cuda_stage = stage();
            ok(unsafe { vkcuda_semaphore_cuda_wait(sem, cuda_stage.wait_value, stream_c) });
            ok(unsafe { vkcuda_image_cuda_copy_from_pitched(im, &sources[f].c(), stream_c) });
            ok(unsafe { vkcuda_semaphore_cuda_signal(sem, cuda_stage.signal_value, stream_c) });
            let vk_stage = stage();
            submit(frame_cmd, Some(vk_stage.wait_value), vk_stage.signal_value);
            let data = out.bytes();
            let (bad, all) = texel_mismatches_against(&i, data, &expect[f]);
            texels += all;
            if bad != 0 {
                bad_frames += 1;
                bad_texels += bad;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "R8 1920x1080 (luma) handoff loop: {frames} frames, {texels} texels compared, {bad_texels} wrong \
             in {bad_frames} frames, {:.1} us per frame (copy, semaphores, Vulkan copy-out, host compare)",
            secs * 1e6 / frames as f64
        );
        assert_eq!(bad_texels, 0);
        unsafe {
            v.device.destroy_fence(fence, None);
            v.device.free_command_buffers(v.pool, &[first, frame_cmd]);
        }
        v.destroy_host_buffer(out);
        c.enter();
        check(unsafe { cu::cuStreamSynchronize(stream) });
        unsafe { cu::cuStreamDestroy_v2(stream) };
        for s in sources {
            s.free();
        }
        c.leave();
        unsafe {
            vkcuda_semaphore_destroy(sem);
            vkcuda_image_destroy(im);
        }
        drop(v);
        unsafe { vkcuda_context_destroy(ctx) };
    }

    /// Texels of every plane that differ from `expect` (packed as [`planes`]).
    fn texel_mismatches_against(i: &vkcuda_image_info, data: &[u8], expect: &[u8]) -> (u64, u64) {
        let (ps, _) = planes(i);
        let (mut bad, mut all) = (0, 0);
        for p in ps {
            let (a, b) = (p.offset as usize, (p.offset + p.bytes) as usize);
            let (got, want) = (&data[a..b], &expect[a..b]);
            all += p.bytes / p.texel;
            if got != want {
                bad += got
                    .chunks(p.texel as usize)
                    .zip(want.chunks(p.texel as usize))
                    .filter(|(x, y)| x != y)
                    .count() as u64;
            }
        }
        (bad, all)
    }
}
