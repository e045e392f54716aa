//! Shared images (`vkcuda::Image`).
//!
//! On the CPU (lavapipe, Vulkan-only contexts): images of every table format and
//! of several shapes are created and exported; the fd is imported into a second
//! VkDevice, wrapped there, and every texel written through one device is read
//! back through the other, both ways, with the handoff barriers recorded on both
//! sides. Every check of a description, a sampler, a layout and a wrap is
//! exercised. (The C door's part, `vkcuda_format_query`, enum values and flags
//! of the C structs, NULL handles, is capi/tests/formats.rs's and the misuse
//! matrix's.)
//!
//! On a GPU (`gpu_*`, skipped without one unless VKCUDA_REQUIRE_GPU=1): for every
//! table format, Vulkan writes every level and layer and CUDA reads the level
//! arrays with cuMemcpy3D, then CUDA writes and Vulkan reads; 1D/2D/3D, layers,
//! cubes, 1x1 and 16384x16384; surface and texture objects are made and kept.

mod support;
use support::images::{acquire, create, d2, desc, release, EngineImage, Packing, Side, Texels};
use support::*;

use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;

use ash::vk;
use vkcuda::cuda_sys::CUaddress_mode;
use vkcuda::image::{Description, Dimension, Sampler, VideoColor};
use vkcuda::{Context, ErrorKind, Image};

/// Creation that must fail with `want`; returns the message.
#[track_caller]
fn create_fails(ctx: &Arc<Context>, d: &Description, want: ErrorKind) -> String {
    fails_with(Image::create(ctx, d), want)
}

/// The bytes per texel of a single-plane format.
fn bpt(format: vk::Format) -> u32 {
    vkcuda::format::layout(format)
        .unwrap()
        .plane(0)
        .info
        .bytes_per_texel()
}

/// The shape of every level, and where it sits in a tightly packed buffer.
#[derive(Clone, Copy, Debug)]
struct Level {
    extent: vk::Extent3D,
    layers: u32,
    offset: u64,
    bytes: u64,
}

fn levels(im: &Image) -> (Vec<Level>, u64) {
    let d = im.description();
    let bpt = bpt(d.format) as u64;
    let mut out = Vec::new();
    let mut offset = 0u64;
    for l in 0..d.mip_levels {
        let e = vk::Extent3D {
            width: (d.width >> l).max(1),
            height: (d.height.max(1) >> l).max(1),
            depth: (d.depth.max(1) >> l).max(1),
        };
        let bytes = e.width as u64 * e.height as u64 * e.depth as u64 * d.array_layers as u64 * bpt;
        out.push(Level {
            extent: e,
            layers: d.array_layers,
            offset,
            bytes,
        });
        offset = (offset + bytes).next_multiple_of(16);
    }
    (out, offset)
}

/// Every level and layer, as the staging buffer holds them (see [`levels`]).
fn packing(im: &Image) -> Packing {
    let (lvs, total) = levels(im);
    let d = im.description();
    let regions = lvs
        .iter()
        .enumerate()
        .map(|(l, lv)| {
            vk::BufferImageCopy::default()
                .buffer_offset(lv.offset)
                .image_subresource(vk::ImageSubresourceLayers {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    mip_level: l as u32,
                    base_array_layer: 0,
                    layer_count: lv.layers,
                })
                .image_extent(lv.extent)
        })
        .collect();
    let range = vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: d.mip_levels,
        base_array_layer: 0,
        layer_count: d.array_layers,
    };
    Packing {
        total,
        regions,
        range,
    }
}

/// The bytes of every level (not the alignment padding) that differ from the pattern.
fn texel_mismatches(im: &Image, data: &[u8], seed: u32) -> (u64, u64) {
    let (lv, _) = levels(im);
    let mut bad = 0;
    let mut all = 0;
    for l in lv {
        for k in l.offset..l.offset + l.bytes {
            all += 1;
            if data[k as usize] != pattern(k as usize, seed) {
                bad += 1;
            }
        }
    }
    (bad, all)
}

/// Every level and layer with `pattern`'s bytes, packed as [`levels`] says.
const TEXELS: Texels = Texels {
    packing,
    byte: pattern,
    mismatches: texel_mismatches,
};

/// Two Vulkan-only contexts (two VkDevices, as two processes have them) and the
/// test's Vulkan on each; the `Vk`s drop first.
struct TwoDevices {
    va: Vk,
    vb: Vk,
    a: Arc<Context>,
    b: Arc<Context>,
}

impl TwoDevices {
    fn open() -> TwoDevices {
        let (a, b) = (vulkan_only_context(), vulkan_only_context());
        TwoDevices {
            va: Vk::of(&a),
            vb: Vk::of(&b),
            a,
            b,
        }
    }
}

/// Device A creates the image and writes it, device B reads it through its own
/// image on the exported memory and writes it back (`Texels::cross_devices`).
fn cross_device(d: &Description) {
    let two = TwoDevices::open();
    let im = create(&two.a, d);
    let fd = im.export_fd().unwrap();
    assert!(fd_is_open(std::os::fd::AsRawFd::as_raw_fd(&fd)));
    let (e, _) = TEXELS.cross_devices(&two.va, &two.vb, &im, vec![fd], &format!("{d:?}"));
    e.destroy(&two.vb);
}

fn sampler() -> Sampler {
    Sampler {
        level: Some(0),
        linear: false,
        address: CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        normalized_coordinates: false,
        normalized_float: false,
        border_color: [0.0; 4],
    }
}

#[test]
fn every_table_format_is_created_where_the_device_can_copy_it() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = image_counts();
    for row in vkcuda::format::TABLE {
        let feats = unsafe {
            v.instance
                .get_physical_device_format_properties(v.physical, row.format)
        }
        .optimal_tiling_features;
        let d = d2(row.format, 33, 17);
        let copyable = feats
            .contains(vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST);
        if !copyable {
            let m = create_fails(&ctx, &d, ErrorKind::Unsupported);
            has(&m, &[&vkcuda::format::display(row.format)]);
            eprintln!("not supported by this device: {m}");
            continue;
        }
        let im = create(&ctx, &d);
        let got = im.description();
        assert_eq!(got.format, row.format);
        assert_eq!((got.width, got.height, got.depth), (33, 17, 1));
        assert_eq!((got.mip_levels, got.array_layers), (1, 1));
        assert!(!im.is_wrapped());
        let e = im.mipmapped_array(0).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::CudaUnavailable,
            "Vulkan-only: no CUDA view"
        );
        assert!(im.allocation_size() >= 33 * 17 * row.bytes_per_texel() as u64);
        // The default usage: transfers, plus sampled/storage where the format has them.
        let usage = got.usage;
        assert!(
            usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
        );
        assert_eq!(
            usage.contains(vk::ImageUsageFlags::STORAGE),
            feats.contains(vk::FormatFeatureFlags::STORAGE_IMAGE),
            "{:?}: default usage {usage:?}, features {feats:?}",
            row.format
        );
        // SURFACE_LDST follows STORAGE (the flags the CUDA array would be made
        // with: there is no CUDA view here).
        assert_eq!(
            im.cuda_array_flags(0) & 0x2 != 0,
            usage.contains(vk::ImageUsageFlags::STORAGE)
        );
        assert_ne!(im.vk_image(), vk::Image::null());
        let fd = im.export_fd().unwrap();
        assert!(fd_is_open(std::os::fd::AsRawFd::as_raw_fd(&fd)));
    }
    assert_eq!(image_counts(), before, "no image, memory or fd leaked");
}

#[test]
fn shapes_are_described_back() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let one = Description {
        mip_levels: 7,
        array_layers: 3,
        ..desc(Dimension::D1, vk::Format::R16_SFLOAT, 100, 0, 0)
    };
    let three = Description {
        mip_levels: 4,
        ..desc(Dimension::D3, vk::Format::R32G32B32A32_UINT, 9, 7, 5)
    };
    let cube = Description {
        cube: true,
        array_layers: 12,
        mip_levels: 4,
        ..d2(vk::Format::R32_SFLOAT, 8, 8)
    };
    let layered = Description {
        mip_levels: 6,
        array_layers: 3,
        ..d2(vk::Format::R8G8B8A8_UNORM, 37, 19)
    };
    let tiny = d2(vk::Format::R8_UNORM, 1, 1);
    // (description, dimension, extent, levels, layers, CUDA_ARRAY3D_* flags)
    let cases = [
        (one, Dimension::D1, (100, 1, 1), 7, 3, 0x1 | 0x2),
        (three, Dimension::D3, (9, 7, 5), 4, 1, 0x2),
        (cube, Dimension::D2, (8, 8, 1), 4, 12, 0x1 | 0x2 | 0x4),
        (layered, Dimension::D2, (37, 19, 1), 6, 3, 0x1 | 0x2),
        (tiny, Dimension::D2, (1, 1, 1), 1, 1, 0x2),
    ];
    for (d, dim, (w, h, depth), mips, layers, flags) in cases {
        let im = create(&ctx, &d);
        let got = im.description();
        assert_eq!(got.dimension, dim);
        assert_eq!(
            (got.width, got.height.max(1), got.depth.max(1)),
            (w, h, depth)
        );
        assert_eq!((got.mip_levels, got.array_layers), (mips, layers));
        assert_eq!(got.cube, d.cube);
        // The flags the CUDA array would be made with (no CUDA view here).
        assert_eq!(im.cuda_array_flags(0), flags, "{d:?}");
    }
}

/// 2D with levels and layers, 1D layered, 3D, a cube, sRGB BGRA, and 1x1.
#[test]
fn texels_cross_devices() {
    let _g = serial();
    let cases = [
        Description {
            mip_levels: 6,
            array_layers: 3,
            ..d2(vk::Format::R8G8B8A8_UNORM, 37, 19)
        },
        Description {
            mip_levels: 7,
            array_layers: 3,
            ..desc(Dimension::D1, vk::Format::R16_SFLOAT, 100, 0, 0)
        },
        Description {
            mip_levels: 4,
            ..desc(Dimension::D3, vk::Format::R32G32B32A32_UINT, 9, 7, 5)
        },
        Description {
            cube: true,
            array_layers: 6,
            mip_levels: 4,
            ..d2(vk::Format::R32_SFLOAT, 8, 8)
        },
        d2(vk::Format::B8G8R8A8_SRGB, 64, 3),
        d2(vk::Format::R16G16_SINT, 300, 200),
        d2(vk::Format::R8_UNORM, 1, 1),
    ];
    for d in &cases {
        cross_device(d);
    }
}

/// (Moved from the Rust API suite.) An image's memory imported into another
/// context with `Image::import_fd`: every texel read back there; the counts of
/// fds and sizes must be the image's.
#[test]
fn image_data_crosses_contexts_through_an_fd() {
    let _g = serial();
    let two = TwoDevices::open();
    let d = Description {
        usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        ..d2(vk::Format::R8G8B8A8_UNORM, 67, 35)
    };
    let im = create(&two.a, &d);
    assert_eq!(im.description(), &d);
    assert_eq!((im.plane_count(), im.allocation_count()), (1, 1));
    assert!(im.dedicated() && !im.is_frame() && !im.is_wrapped());
    // A writes and hands the image out in GENERAL (VK_QUEUE_FAMILY_EXTERNAL), B
    // takes it in.
    TEXELS.write(&two.va, Side::Shared(&im), vk::ImageLayout::UNDEFINED, 21);
    let fd = im.export_fd().unwrap();
    let at = file_offset(fd.as_raw_fd(), Some(100));
    let twin = Image::import_fd(&two.b, &[fd.as_fd()], &d, &[im.allocation_size()]).unwrap();
    assert_eq!(
        file_offset(fd.as_raw_fd(), None),
        at,
        "the fd's file offset moved"
    );
    drop(fd);
    assert_eq!(twin.description(), &d);
    let (bad, all) = texel_mismatches(&twin, &TEXELS.read(&two.vb, Side::Shared(&twin)), 21);
    assert_eq!(
        bad, 0,
        "{bad} of {all} bytes wrong through context B's import"
    );
    let again = im.export_fd().unwrap();
    let m = fails_with(
        Image::import_fd(&two.b, &[again.as_fd(), again.as_fd()], &d, &[1, 1]),
        ErrorKind::InvalidArgument,
    );
    has(&m, &["has 1 plane, so it takes 1 fds, not 2"]);
    let m = fails_with(
        Image::import_fd(&two.b, &[again.as_fd()], &d, &[0]),
        ErrorKind::InvalidArgument,
    );
    has(&m, &["allocation_size must not be 0"]);
}

/// (Holds what was `image_refusals_and_queries` of the Rust API suite too.)
#[test]
fn create_checks_its_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let before = image_counts();
    let base = d2(vk::Format::R8G8B8A8_UNORM, 64, 32);
    let invalid = ErrorKind::InvalidArgument;
    let unsupported = ErrorKind::Unsupported;

    // Zero extent.
    for d in [
        d2(vk::Format::R8G8B8A8_UNORM, 0, 32),
        d2(vk::Format::R8G8B8A8_UNORM, 64, 0),
        desc(Dimension::D3, vk::Format::R8G8B8A8_UNORM, 4, 4, 0),
    ] {
        let m = create_fails(&ctx, &d, invalid);
        has(&m, &["zero extent"]);
    }
    // 1D with a height, 2D with a depth.
    create_fails(
        &ctx,
        &desc(Dimension::D1, vk::Format::R8_UNORM, 4, 2, 0),
        invalid,
    );
    create_fails(
        &ctx,
        &desc(Dimension::D2, vk::Format::R8_UNORM, 4, 2, 2),
        invalid,
    );

    // Mip levels past floor(log2(64)) + 1 = 7.
    let m = create_fails(
        &ctx,
        &Description {
            mip_levels: 8,
            ..base
        },
        invalid,
    );
    has(&m, &["at most floor(log2(64)) + 1 = 7"]);
    let im = create(
        &ctx,
        &Description {
            mip_levels: 7,
            ..base
        },
    );
    assert_eq!(im.description().mip_levels, 7);
    drop(im);
    let deep = desc(Dimension::D3, vk::Format::R8_UNORM, 2, 2, 17);
    create_fails(
        &ctx,
        &Description {
            mip_levels: 6,
            ..deep
        },
        invalid,
    );
    drop(create(
        &ctx,
        &Description {
            mip_levels: 5,
            ..deep
        },
    ));

    // Formats with no CUDA mapping, and values that are no format.
    let m = create_fails(&ctx, &d2(vk::Format::R8G8B8_UNORM, 4, 4), unsupported);
    assert_eq!(
        m,
        "VK_FORMAT_R8G8B8_UNORM has 3 channels, which CUDA arrays cannot hold; use \
         VK_FORMAT_R8G8B8A8_UNORM"
    );
    let m = create_fails(&ctx, &d2(vk::Format::D32_SFLOAT, 4, 4), unsupported);
    assert!(
        m.contains("depth/stencil") && m.contains("VK_FORMAT_R32_SFLOAT"),
        "{m}"
    );
    let m = create_fails(&ctx, &d2(vk::Format::BC7_UNORM_BLOCK, 4, 4), unsupported);
    has(&m, &["block-compressed"]);
    create_fails(&ctx, &d2(vk::Format::UNDEFINED, 4, 4), invalid);
    let m = create_fails(&ctx, &d2(vk::Format::from_raw(77_777), 4, 4), invalid);
    has(&m, &["VkFormat(77777) is not a VkFormat"]);
    let unknown = Image::create(&ctx, &d2(vk::Format::from_raw(0x7fff_0000), 8, 8)).unwrap_err();
    assert!(
        matches!(
            unknown.kind(),
            ErrorKind::InvalidArgument | ErrorKind::Unsupported
        ),
        "{unknown}"
    );

    // Usages the format cannot do: lavapipe has no storage for sRGB formats, and
    // no colour format is a depth/stencil attachment.
    let v = Vk::of(&ctx);
    let srgb = unsafe {
        v.instance
            .get_physical_device_format_properties(v.physical, vk::Format::R8G8B8A8_SRGB)
    }
    .optimal_tiling_features;
    if !srgb.contains(vk::FormatFeatureFlags::STORAGE_IMAGE) {
        let d = Description {
            usage: vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_DST,
            ..d2(vk::Format::R8G8B8A8_SRGB, 16, 16)
        };
        let m = create_fails(&ctx, &d, unsupported);
        has(
            &m,
            &["VK_FORMAT_R8G8B8A8_SRGB does not support VK_IMAGE_USAGE_STORAGE_BIT"],
        );
    } else {
        eprintln!("this device has storage images of R8G8B8A8_SRGB; that refusal is not tested");
    }
    let r8 = |usage| Description {
        usage,
        ..d2(vk::Format::R8_UNORM, 16, 16)
    };
    let m = create_fails(
        &ctx,
        &r8(vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT),
        unsupported,
    );
    has(&m, &["VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT"]);
    create_fails(
        &ctx,
        &r8(vk::ImageUsageFlags::TRANSIENT_ATTACHMENT),
        unsupported,
    );
    create_fails(
        &ctx,
        &r8(vk::ImageUsageFlags::from_raw(0x4000_0000)),
        invalid,
    );
    // An explicit usage is kept as given.
    let usage = vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::SAMPLED;
    let im = create(&ctx, &r8(usage));
    assert_eq!(im.description().usage, usage);
    assert_eq!(
        im.cuda_array_flags(0) & 0x2,
        0,
        "no SURFACE_LDST without STORAGE"
    );
    drop(im);
    // Larger than the device allows.
    create_fails(&ctx, &d2(vk::Format::R8_UNORM, 1 << 20, 1), unsupported);

    // Cubes: square, 2D, a multiple of 6 layers.
    let c = Description {
        cube: true,
        array_layers: 6,
        ..d2(vk::Format::R8_UNORM, 16, 8)
    };
    create_fails(&ctx, &c, invalid);
    let c = Description {
        height: 16,
        array_layers: 5,
        ..c
    };
    create_fails(&ctx, &c, invalid);
    let m = create_fails(
        &ctx,
        &Description {
            array_layers: 2,
            ..desc(Dimension::D3, vk::Format::R8_UNORM, 4, 4, 4)
        },
        invalid,
    );
    has(&m, &["a 3D image has one array layer"]);
    drop(v);
    assert_eq!(
        image_counts(),
        before,
        "no image, memory or fd leaked by the failures"
    );

    // The queries of an image that is not a video frame.
    let im = create(
        &ctx,
        &Description {
            mip_levels: 3,
            ..d2(vk::Format::R8G8B8A8_UNORM, 16, 16)
        },
    );
    assert_eq!(im.plane_vk_format(0).unwrap(), vk::Format::R8G8B8A8_UNORM);
    assert_eq!(im.plane_aspect(0), vk::ImageAspectFlags::COLOR);
    assert_eq!(im.plane_extent(0).width, 16);
    let m = fails_with(im.plane_vk_format(1), invalid);
    has(&m, &["plane 1 is out of range"]);
    let m = fails_with(im.plane_pointer(0), invalid);
    has(&m, &["not a shared frame"]);
    let m = fails_with(im.video_color(), invalid);
    has(&m, &["multi-planar"]);
    let m = fails_with(im.export_plane_dlpack(0, false, false), invalid);
    has(&m, &["not a shared frame"]);
    // A shared video frame where the device can make one (not Debian 12's lavapipe).
    let nv12 = Description {
        linear: true,
        usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        ..d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 32)
    };
    match Image::create(&ctx, &nv12) {
        Ok(frame) => {
            assert!(frame.is_frame());
            let (y, c) = (
                frame.plane_pointer(0).unwrap(),
                frame.plane_pointer(1).unwrap(),
            );
            assert_eq!((y.width, y.height, y.bytes_per_texel), (64, 32, 1));
            assert_eq!((c.width, c.height, c.bytes_per_texel), (32, 16, 2));
            assert_eq!((y.pointer, c.pointer), (0, 0), "no CUDA: no pointers");
            assert!(c.layout.offset >= y.layout.offset + 32 * y.layout.row_pitch);
            assert_eq!(frame.video_color().unwrap(), VideoColor::DEFAULT);
            let bt2020 = VideoColor {
                matrix: 9,
                full_range: true,
                ..VideoColor::DEFAULT
            };
            frame.set_video_color(&bt2020).unwrap();
            assert_eq!(frame.video_color().unwrap(), bt2020);
            let m = fails_with(
                frame.set_video_color(&VideoColor {
                    matrix: 4,
                    ..VideoColor::DEFAULT
                }),
                unsupported,
            );
            has(&m, &["FCC"]);
        }
        Err(e) => {
            assert_eq!(e.kind(), unsupported, "{e}");
            assert!(e.message().contains("G8_B8R8_2PLANE_420_UNORM"), "{e}");
            eprintln!("no LINEAR NV12 frames on this device ({e})");
        }
    }
}

#[test]
fn getters_check_their_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let im = create(
        &ctx,
        &Description {
            mip_levels: 2,
            ..d2(vk::Format::R8G8B8A8_UNORM, 16, 16)
        },
    );
    let (invalid, no_cuda) = (ErrorKind::InvalidArgument, ErrorKind::CudaUnavailable);

    // The CUDA views need CUDA.
    let m = fails_with(im.mipmapped_array(0), no_cuda);
    has(&m, &["no CUDA side"]);
    fails_with(im.level_array(0, 1), no_cuda);
    let m = fails_with(im.level_array(0, 2), invalid);
    has(&m, &["level 2 is out of range"]);
    fails_with(im.surface(0, 0), no_cuda);
    fails_with(im.surface(0, 5), invalid);

    // Samplers are checked before CUDA is needed.
    let s0 = sampler();
    fails_with(im.texture(0, &s0), no_cuda);
    let s = Sampler {
        level: Some(2),
        ..s0
    };
    fails_with(im.texture(0, &s), invalid);
    let s = Sampler { level: None, ..s0 }; // all levels
    fails_with(im.texture(0, &s), no_cuda);
    // Linear filtering of integers read as integers: refused (the misuse matrix);
    // read as normalized floats it passes.
    let s = Sampler {
        linear: true,
        normalized_float: true,
        ..s0
    };
    fails_with(im.texture(0, &s), no_cuda);
    let s = Sampler {
        address: CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP, // unnormalized
        ..s0
    };
    fails_with(im.texture(0, &s), invalid);
    let s = Sampler {
        normalized_coordinates: true,
        ..s
    };
    fails_with(im.texture(0, &s), no_cuda);
    // 32-bit integers cannot be read as normalized floats.
    let im32 = create(&ctx, &d2(vk::Format::R32_UINT, 4, 4));
    let s = Sampler {
        normalized_float: true,
        ..s0
    };
    let m = fails_with(im32.texture(0, &s), invalid);
    has(&m, &["32-bit integers"]);
    // Surfaces need STORAGE.
    let nostorage = create(
        &ctx,
        &Description {
            usage: vk::ImageUsageFlags::TRANSFER_DST,
            ..d2(vk::Format::R8_UNORM, 4, 4)
        },
    );
    let m = fails_with(nostorage.surface(0, 0), ErrorKind::Unsupported);
    has(&m, &["VK_IMAGE_USAGE_STORAGE_BIT"]);
}

#[test]
fn handoff_barriers_check_their_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let im = create(&ctx, &d2(vk::Format::R8G8B8A8_UNORM, 8, 8));
    let scope = vkcuda::handoff::Scope::new(v.family);
    v.run(|cmd| unsafe {
        use vk::ImageLayout as L;
        release(&v, cmd, &im, L::UNDEFINED);
        acquire(&v, cmd, &im, L::SHADER_READ_ONLY_OPTIMAL);
        release(&v, cmd, &im, L::SHADER_READ_ONLY_OPTIMAL);
        acquire(&v, cmd, &im, L::GENERAL);
        // A transition to UNDEFINED, depth layouts, non-layouts.
        let m = fails_with(
            im.cmd_acquire_from_cuda(cmd, &scope, L::UNDEFINED),
            ErrorKind::InvalidArgument,
        );
        has(&m, &["new_layout must not be VK_IMAGE_LAYOUT_UNDEFINED"]);
        fails_with(
            im.cmd_release_to_cuda(cmd, &scope, L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
            ErrorKind::InvalidArgument,
        );
        fails_with(
            im.cmd_release_to_cuda(cmd, &scope, L::from_raw(99_999)),
            ErrorKind::InvalidArgument,
        );
    });
}

#[test]
fn wrap_checks_the_engine_image() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    // A description as the engine created it (usage given).
    let d = Description {
        mip_levels: 3,
        usage: vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::STORAGE,
        ..d2(vk::Format::R16G16B16A16_SFLOAT, 40, 30)
    };
    // Make the engine's image from a library one's resolved description.
    let model = create(&ctx, &d);
    let e = EngineImage::new(&v, &model, None);
    let desc = *model.description();
    drop(model);
    let (memory, size) = e.memory[0];
    let good = e.planes();
    let fds = fd_count();

    let im = e.wrap(&ctx, &good, &desc).unwrap();
    assert!(im.is_wrapped());
    assert_eq!(
        (im.vk_image(), im.vk_memory(), im.allocation_size()),
        (e.image, memory, size)
    );
    assert_eq!(im.description().usage, d.usage);
    let fd = im.export_fd().unwrap();
    // Whether the kernel knows the memory's size (lavapipe's memfds: yes; NVIDIA's
    // opaque fds: no): only then can an oversized claim be caught.
    let known_size = fd_knows_size(std::os::fd::AsRawFd::as_raw_fd(&fd));
    drop((fd, im));

    let invalid = ErrorKind::InvalidArgument;
    let with_size = |allocation_size| {
        let mut p = good.clone();
        p[0].allocation_size = allocation_size;
        p
    };
    // Memory smaller than the image's requirements.
    let m = fails_with(e.wrap(&ctx, &with_size(size - 1), &desc), invalid);
    has(&m, &["memory smaller than its requirements"]);
    fails_with(e.wrap(&ctx, &with_size(0), &desc), invalid);
    // Larger than the memory really is: caught where the fd's size is known, to
    // the byte (a memfd driver's header is not counted as the allocation's).
    if known_size {
        let m = fails_with(e.wrap(&ctx, &with_size(size + (64 << 20)), &desc), invalid);
        has(&m, &["real size"]);
        for more in [4096, 1] {
            let m = fails_with(e.wrap(&ctx, &with_size(size + more), &desc), invalid);
            has(
                &m,
                &[&format!(
                    "allocation_size {} is larger than the memory object's real size {size}",
                    size + more
                )],
            );
        }
    } else {
        eprintln!("the memory fd does not say its size here: an oversized claim cannot be caught");
    }
    // The usage must be the image's own.
    let m = fails_with(
        e.wrap(
            &ctx,
            &good,
            &Description {
                usage: vk::ImageUsageFlags::empty(),
                ..desc
            },
        ),
        invalid,
    );
    has(&m, &["usage is 0"]);
    // The description is checked like create's.
    fails_with(
        e.wrap(
            &ctx,
            &good,
            &Description {
                format: vk::Format::R16G16B16_SFLOAT,
                ..desc
            },
        ),
        ErrorKind::Unsupported,
    );
    fails_with(
        e.wrap(
            &ctx,
            &good,
            &Description {
                mip_levels: 7,
                ..desc
            },
        ),
        invalid,
    );
    assert_eq!(fd_count(), fds, "no fd leaked");
    e.destroy(&v);
}

// ---------------------------------------------------------------------------------
// GPU: CUDA reads and writes the level arrays with cuMemcpy3D.

mod gpu {
    use super::*;
    use cudarc::driver::sys as cu;
    use std::ptr;
    use support::cuda::{check, Cuda};

    /// Copies one level (every layer/slice) between host bytes packed like
    /// Vulkan's buffer copies and the level's CUDA array.
    fn memcpy_level(
        array: cu::CUarray,
        lv: &Level,
        bpt: u32,
        host: *mut u8,
        to_array: bool,
        layered_1d: bool,
    ) {
        let row = lv.extent.width as usize * bpt as usize;
        let (height, depth) = if layered_1d {
            (1, lv.layers as usize)
        } else {
            (
                lv.extent.height as usize,
                (lv.extent.depth * lv.layers) as usize,
            )
        };
        // Field by field: CUmemorytype has no zero value, so no mem::zeroed().
        let host_side = (cu::CUmemorytype::CU_MEMORYTYPE_HOST, row, height);
        let array_side = (cu::CUmemorytype::CU_MEMORYTYPE_ARRAY, 0, 0);
        let (src, dst) = if to_array {
            (host_side, array_side)
        } else {
            (array_side, host_side)
        };
        let p = cu::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: src.0,
            srcHost: if to_array {
                host.cast_const().cast()
            } else {
                ptr::null()
            },
            srcDevice: 0,
            srcArray: if to_array { ptr::null_mut() } else { array },
            reserved0: ptr::null_mut(),
            srcPitch: src.1,
            srcHeight: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: dst.0,
            dstHost: if to_array {
                ptr::null_mut()
            } else {
                host.cast()
            },
            dstDevice: 0,
            dstArray: if to_array { array } else { ptr::null_mut() },
            reserved1: ptr::null_mut(),
            dstPitch: dst.1,
            dstHeight: dst.2,
            WidthInBytes: row,
            Height: height,
            Depth: depth,
        };
        check(unsafe { cu::cuMemcpy3D_v2(&p) });
    }

    /// Copies every level between `host` (packed as [`levels`] says) and the image's
    /// CUDA arrays, in the current context.
    fn copy_levels(im: &Image, lvs: &[Level], host: &mut [u8], to_array: bool) {
        let d = im.description();
        let bpt = bpt(d.format);
        let layered_1d = d.dimension == Dimension::D1 && d.array_layers > 1;
        for (l, lv) in lvs.iter().enumerate() {
            let arr = im.level_array(0, l as u32).unwrap();
            let at = host[lv.offset as usize..].as_mut_ptr();
            memcpy_level(arr, lv, bpt, at, to_array, layered_1d);
        }
    }

    /// Vulkan writes, CUDA reads every level; CUDA writes, Vulkan reads.
    fn both_ways(ctx: &Arc<Context>, v: &Vk, c: &Cuda, d: &Description) -> (u64, u64) {
        let im = create(ctx, d);
        assert!(!im.mipmapped_array(0).unwrap().is_null());
        let (lvs, _) = levels(&im);
        let (bad_a, bad_b, all) = TEXELS.through_cuda(v, c, &im, |host, to_array| {
            copy_levels(&im, &lvs, host, to_array)
        });
        let got = *im.description();

        // Surface objects (one per level, kept) and a texture object.
        if got.usage.contains(vk::ImageUsageFlags::STORAGE) {
            for l in 0..got.mip_levels {
                let (s1, s2) = (im.surface(0, l).unwrap(), im.surface(0, l).unwrap());
                assert!(s1 != 0 && s1 == s2);
            }
        }
        let row = vkcuda::format::layout(got.format).unwrap().plane(0).info;
        let small_int = !row.is_float() && row.bytes_per_channel <= 2;
        let t = Sampler {
            level: None,
            normalized_coordinates: true,
            address: CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            normalized_float: small_int,
            ..sampler()
        };
        assert_ne!(im.texture(0, &t).unwrap(), 0);
        drop(im);
        assert_eq!(bad_a, 0, "CUDA read {bad_a} of {all} bytes wrong ({d:?})");
        assert_eq!(
            bad_b, 0,
            "Vulkan read {bad_b} of {all} bytes wrong after CUDA wrote ({d:?})"
        );
        (bad_a + bad_b, all)
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_every_format_levels_and_layers_both_ways() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_every_format_levels_and_layers_both_ways") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        for row in vkcuda::format::TABLE {
            let feats = unsafe {
                v.instance
                    .get_physical_device_format_properties(v.physical, row.format)
            }
            .optimal_tiling_features;
            let copies =
                vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST;
            if !feats.contains(copies) {
                println!(
                    "SKIP {:<36} the device cannot copy it (features {feats:?})",
                    vkcuda::format::display(row.format)
                );
                continue;
            }
            let d = Description {
                mip_levels: 7, // the full chain: see layers_agree
                array_layers: 2,
                ..d2(row.format, 67, 35)
            };
            let (_, all) = both_ways(&ctx, &v, &c, &d);
            println!(
                "PASS {:<36} 67x35, 7 levels, 2 layers: {all} bytes each way",
                vkcuda::format::display(row.format)
            );
        }
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_shapes_both_ways() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_shapes_both_ways") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let one = Description {
            mip_levels: 10,
            ..desc(Dimension::D1, vk::Format::R16_SFLOAT, 1000, 0, 0)
        };
        let one_layered = Description {
            array_layers: 4,
            ..one
        };
        let layered_one_level = Description {
            array_layers: 3,
            ..d2(vk::Format::R32G32_SFLOAT, 67, 35)
        };
        let three = Description {
            mip_levels: 6,
            ..desc(Dimension::D3, vk::Format::R32G32B32A32_UINT, 33, 17, 9)
        };
        let cube = Description {
            cube: true,
            array_layers: 6,
            mip_levels: 7,
            ..d2(vk::Format::R8G8B8A8_UNORM, 64, 64)
        };
        let cubes = Description {
            array_layers: 12,
            ..cube
        };
        let full = Description {
            mip_levels: 11,
            ..d2(vk::Format::R32_SFLOAT, 1920, 1080)
        };
        let tiny = d2(vk::Format::R8_UNORM, 1, 1);
        let big = d2(vk::Format::R8_UNORM, 16384, 16384);
        for (name, d) in [
            ("1D, 10 levels", one),
            ("1D, 10 levels, 4 layers", one_layered),
            ("67x35, 1 level, 3 layers", layered_one_level),
            ("3D 33x17x9, 6 levels", three),
            ("cube 64, 7 levels", cube),
            ("cube array 12 layers", cubes),
            ("1920x1080 R32F, 11 levels", full),
            ("1x1", tiny),
            ("16384x16384 R8", big),
        ] {
            let (_, all) = both_ways(&ctx, &v, &c, &d);
            println!("PASS {name}: {all} bytes each way");
        }
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_partial_mip_chains_of_layered_images_are_refused() {
        let _g = serial();
        let Some(ctx) =
            cuda_context_or_skip("gpu_partial_mip_chains_of_layered_images_are_refused")
        else {
            return;
        };
        let d = Description {
            array_layers: 2,
            mip_levels: 3,
            ..d2(vk::Format::R8G8B8A8_UNORM, 67, 35)
        };
        let m = create_fails(&ctx, &d, ErrorKind::Unsupported);
        assert!(m.contains("Use 1 mip level or all 7"), "{m}");
        let one = Description {
            array_layers: 4,
            mip_levels: 5,
            ..desc(Dimension::D1, vk::Format::R32_UINT, 1000, 0, 0)
        };
        create_fails(&ctx, &one, ErrorKind::Unsupported);
        // One level, and a single layer, are fine.
        drop(create(&ctx, &Description { mip_levels: 1, ..d }));
        drop(create(
            &ctx,
            &Description {
                array_layers: 1,
                ..d
            },
        ));
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_wrap_engine_image() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_wrap_engine_image") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let d = Description {
            mip_levels: 4,
            ..d2(vk::Format::R8G8B8A8_UNORM, 128, 64)
        };
        let model = create(&ctx, &d);
        let e = EngineImage::new(&v, &model, None);
        let desc = *model.description();
        drop(model);
        let im = e.wrap(&ctx, &e.planes(), &desc).unwrap();
        assert!(!im.mipmapped_array(0).unwrap().is_null());
        TEXELS.write(&v, Side::Shared(&im), vk::ImageLayout::UNDEFINED, 21);
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        let (lvs, total) = levels(&im);
        let mut host = vec![0u8; total as usize];
        c.within(|| copy_levels(&im, &lvs, &mut host, false));
        assert_eq!(texel_mismatches(&im, &host, 21).0, 0);
        drop(im);
        let mut small = e.planes();
        small[0].allocation_size -= 1;
        fails_with(e.wrap(&ctx, &small, &desc), ErrorKind::InvalidArgument);
        e.destroy(&v);
    }
}
