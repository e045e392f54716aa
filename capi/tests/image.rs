//! Shared images through the C ABI.
//!
//! On the CPU (lavapipe, Vulkan-only contexts): images of every table format and
//! of several shapes are created and exported; the fd is imported into a second
//! VkDevice, wrapped there, and every texel written through one device is read
//! back through the other, both ways, with the handoff barriers recorded on both
//! sides. Every argument check is exercised.
//!
//! On a GPU (`gpu_*`, skipped without one unless VKCUDA_REQUIRE_GPU=1): for every
//! table format, Vulkan writes every level and layer and CUDA reads the level
//! arrays with cuMemcpy3D, then CUDA writes and Vulkan reads; 1D/2D/3D, layers,
//! cubes, 1x1 and 16384x16384; surface and texture objects are made and kept.

mod support;
use support::images::{acquire, create, d2, release, EngineImage, Packing, Side, Texels};
use support::*;

use std::ptr;

use ash::vk;

const TYPE_2D: i32 = 0;
const TYPE_1D: i32 = 1;
const TYPE_3D: i32 = 3;

/// Creation that must fail with `want`; checks the handle is set to NULL.
#[track_caller]
fn create_fails(
    ctx: *const vkcuda_context,
    info: &vkcuda_image_create_info,
    want: vkcuda_result,
) -> String {
    let mut im = 0x10 as *mut vkcuda_image;
    let r = unsafe { vkcuda_image_create(ctx, info, &mut im) };
    let msg = fails(r, want);
    assert!(im.is_null(), "the handle is set to NULL on failure");
    msg
}

/// The shape of every level, and where it sits in a tightly packed buffer.
#[derive(Clone, Copy, Debug)]
struct Level {
    extent: vk::Extent3D,
    layers: u32,
    offset: u64,
    bytes: u64,
}

fn levels(i: &vkcuda_image_info) -> (Vec<Level>, u64) {
    let bpt = i.format_info.bytes_per_texel as u64;
    let mut out = Vec::new();
    let mut offset = 0u64;
    for l in 0..i.mip_levels {
        let e = vk::Extent3D {
            width: (i.extent.width >> l).max(1),
            height: (i.extent.height >> l).max(1),
            depth: (i.extent.depth >> l).max(1),
        };
        let bytes = e.width as u64 * e.height as u64 * e.depth as u64 * i.array_layers as u64 * bpt;
        out.push(Level {
            extent: e,
            layers: i.array_layers,
            offset,
            bytes,
        });
        offset = (offset + bytes).next_multiple_of(16);
    }
    (out, offset)
}

fn regions(i: &vkcuda_image_info) -> Vec<vk::BufferImageCopy> {
    levels(i)
        .0
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
        .collect()
}

fn range(i: &vkcuda_image_info) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: i.mip_levels,
        base_array_layer: 0,
        layer_count: i.array_layers,
    }
}

/// Every level and layer, as the staging buffer holds them (see [`levels`]).
fn packing(i: &vkcuda_image_info) -> Packing {
    Packing {
        total: levels(i).1,
        regions: regions(i),
        range: range(i),
    }
}

/// The bytes of every level (not the alignment padding) that differ from the pattern.
fn texel_mismatches(i: &vkcuda_image_info, data: &[u8], seed: u32) -> (u64, u64) {
    let (lv, _) = levels(i);
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

fn wrap(ctx: *const vkcuda_context, w: &vkcuda_image_wrap_info) -> *mut vkcuda_image {
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_wrap(ctx, w, &mut im) });
    im
}

/// Device A creates the image and writes it, device B reads it through its own
/// image on the exported memory and writes it back (`Texels::cross_devices`).
fn cross_device(info: &vkcuda_image_create_info) {
    let two = TwoDevices::open();
    let im = create(two.a, info);
    let mut fd = -1;
    ok(unsafe { vkcuda_image_export_fd(im, &mut fd) });
    assert!(fd >= 0 && fd_is_open(fd));
    let (e, _) = TEXELS.cross_devices(&two.va, &two.vb, im, &[fd], &format!("{info:?}"));
    e.destroy(&two.vb);
    unsafe { vkcuda_image_destroy(im) };
}

#[test]
fn format_query_answers_both_ways() {
    let _g = serial();
    for row in vkcuda::format::TABLE {
        let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_format_query(row.format.as_raw(), &mut q) });
        assert_eq!(q.cuda_format, row.cuda as u32);
        assert_eq!(q.channels, row.channels);
        assert_eq!(q.bytes_per_texel, row.channels * row.bytes_per_channel);
        assert_eq!(q.bgra == 1, row.order == vkcuda::format::Order::Bgra);
    }
    let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_format_query(vk::Format::B8G8R8A8_SRGB.as_raw(), &mut q) });
    assert_eq!(
        (q.cuda_format, q.channels, q.bytes_per_texel, q.bgra),
        (0x01, 4, 4, 1)
    );
    assert_eq!(q.numeric, vkcuda_format_numeric::VKCUDA_FORMAT_NUMERIC_SRGB);
    ok(unsafe { vkcuda_format_query(vk::Format::R16G16_SFLOAT.as_raw(), &mut q) });
    assert_eq!((q.cuda_format, q.channels, q.bytes_per_texel), (0x10, 2, 4));
    ok(unsafe { vkcuda_format_query(vk::Format::R32G32B32A32_SINT.as_raw(), &mut q) });
    assert_eq!(
        (q.cuda_format, q.channels, q.bytes_per_texel),
        (0x0a, 4, 16)
    );

    let m = fails(
        unsafe { vkcuda_format_query(vk::Format::R8G8B8_UNORM.as_raw(), &mut q) },
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert_eq!(
        m,
        "vkcuda_format_query: VK_FORMAT_R8G8B8_UNORM has 3 channels, which CUDA arrays cannot \
         hold; use VK_FORMAT_R8G8B8A8_UNORM"
    );
    for f in [
        vk::Format::BC1_RGBA_UNORM_BLOCK,
        vk::Format::D24_UNORM_S8_UINT,
        vk::Format::G8B8G8R8_422_UNORM,
        vk::Format::A2B10G10R10_UNORM_PACK32,
        vk::Format::R64_SFLOAT,
    ] {
        let m = fails(
            unsafe { vkcuda_format_query(f.as_raw(), &mut q) },
            VKCUDA_ERROR_UNSUPPORTED,
        );
        assert!(m.contains("; use VK_FORMAT_"), "{m}");
    }
    fails(
        unsafe { vkcuda_format_query(123_456_789, &mut q) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
}

#[test]
fn every_table_format_is_created_where_the_device_can_copy_it() {
    let _g = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let before = image_counts();
    for row in vkcuda::format::TABLE {
        let feats = unsafe {
            v.instance
                .get_physical_device_format_properties(v.physical, row.format)
        }
        .optimal_tiling_features;
        let info = d2(row.format, 33, 17);
        let copyable = feats
            .contains(vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST);
        if !copyable {
            let m = create_fails(ctx, &info, VKCUDA_ERROR_UNSUPPORTED);
            assert!(m.contains(&vkcuda::format::display(row.format)), "{m}");
            eprintln!("not supported by this device: {m}");
            continue;
        }
        let im = create(ctx, &info);
        let i = image_info(im);
        assert_eq!(i.format, row.format.as_raw());
        assert_eq!(
            (i.extent.width, i.extent.height, i.extent.depth),
            (33, 17, 1)
        );
        assert_eq!((i.mip_levels, i.array_layers), (1, 1));
        assert_eq!(i.wrapped, 0);
        assert!(
            i.cuda_mipmapped_array.is_null(),
            "Vulkan-only: no CUDA view"
        );
        assert!(i.allocation_size >= 33 * 17 * i.format_info.bytes_per_texel as u64);
        // The default usage: transfers, plus sampled/storage where the format has them.
        let usage = vk::ImageUsageFlags::from_raw(i.usage);
        assert!(
            usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
        );
        assert_eq!(
            usage.contains(vk::ImageUsageFlags::STORAGE),
            feats.contains(vk::FormatFeatureFlags::STORAGE_IMAGE),
            "{:?}: default usage {usage:?}, features {feats:?}",
            row.format
        );
        // SURFACE_LDST follows STORAGE where there is a CUDA view; without one
        // (Vulkan-only) there are no flags (src/image.rs tests the shapes' flags).
        let want_ldst =
            !i.cuda_mipmapped_array.is_null() && usage.contains(vk::ImageUsageFlags::STORAGE);
        assert_eq!(i.cuda_array_flags & 0x2 != 0, want_ldst);
        let mut vk_image = vk::Image::null();
        ok(unsafe { vkcuda_image_get_vk_image(im, &mut vk_image) });
        assert_eq!(vk_image, i.image);
        let mut fd = -1;
        ok(unsafe { vkcuda_image_export_fd(im, &mut fd) });
        assert!(fd_is_open(fd));
        unsafe { libc::close(fd) };
        unsafe { vkcuda_image_destroy(im) };
    }
    assert_eq!(image_counts(), before, "no image, memory or fd leaked");
}

#[test]
fn shapes_are_described_back() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let mut one = image_desc(TYPE_1D, vk::Format::R16_SFLOAT, 100, 0, 0);
    one.mip_levels = 7;
    one.array_layers = 3;
    let mut three = image_desc(TYPE_3D, vk::Format::R32G32B32A32_UINT, 9, 7, 5);
    three.mip_levels = 4;
    let mut cube = d2(vk::Format::R32_SFLOAT, 8, 8);
    cube.flags = VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
    cube.array_layers = 12;
    cube.mip_levels = 4;
    let mut layered = d2(vk::Format::R8G8B8A8_UNORM, 37, 19);
    layered.mip_levels = 6;
    layered.array_layers = 3;
    let tiny = d2(vk::Format::R8_UNORM, 1, 1);
    // (description, type, extent, levels, layers, CUDA_ARRAY3D_* flags)
    type Case<'a> = (
        &'a vkcuda_image_create_info,
        vkcuda_image_type,
        (u32, u32, u32),
        u32,
        u32,
        u32,
    );
    let cases: [Case; 5] = [
        (
            &one,
            vkcuda_image_type::VKCUDA_IMAGE_TYPE_1D,
            (100, 1, 1),
            7,
            3,
            0x1 | 0x2,
        ),
        (
            &three,
            vkcuda_image_type::VKCUDA_IMAGE_TYPE_3D,
            (9, 7, 5),
            4,
            1,
            0x2,
        ),
        (
            &cube,
            vkcuda_image_type::VKCUDA_IMAGE_TYPE_2D,
            (8, 8, 1),
            4,
            12,
            0x1 | 0x2 | 0x4,
        ),
        (
            &layered,
            vkcuda_image_type::VKCUDA_IMAGE_TYPE_2D,
            (37, 19, 1),
            6,
            3,
            0x1 | 0x2,
        ),
        (
            &tiny,
            vkcuda_image_type::VKCUDA_IMAGE_TYPE_2D,
            (1, 1, 1),
            1,
            1,
            0x2,
        ),
    ];
    for (info, ty, (w, h, d), mips, layers, flags) in cases {
        let im = create(ctx, info);
        let i = image_info(im);
        assert_eq!(i.image_type, ty);
        assert_eq!((i.extent.width, i.extent.height, i.extent.depth), (w, h, d));
        assert_eq!((i.mip_levels, i.array_layers), (mips, layers));
        let want = if i.cuda_mipmapped_array.is_null() {
            0
        } else {
            flags
        };
        assert_eq!(i.cuda_array_flags, want, "{info:?}");
        assert_eq!(i.flags, info.flags);
        unsafe { vkcuda_image_destroy(im) };
    }
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn texels_cross_devices_2d_levels_and_layers() {
    let _g = serial();
    let mut info = d2(vk::Format::R8G8B8A8_UNORM, 37, 19);
    info.mip_levels = 6;
    info.array_layers = 3;
    cross_device(&info);
}

#[test]
fn texels_cross_devices_1d_layered() {
    let _g = serial();
    let mut info = image_desc(TYPE_1D, vk::Format::R16_SFLOAT, 100, 0, 0);
    info.mip_levels = 7;
    info.array_layers = 3;
    cross_device(&info);
}

#[test]
fn texels_cross_devices_3d() {
    let _g = serial();
    let mut info = image_desc(TYPE_3D, vk::Format::R32G32B32A32_UINT, 9, 7, 5);
    info.mip_levels = 4;
    cross_device(&info);
}

#[test]
fn texels_cross_devices_cube_srgb_bgra_and_tiny() {
    let _g = serial();
    let mut cube = d2(vk::Format::R32_SFLOAT, 8, 8);
    cube.flags = VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
    cube.array_layers = 6;
    cube.mip_levels = 4;
    cross_device(&cube);
    cross_device(&d2(vk::Format::B8G8R8A8_SRGB, 64, 3));
    cross_device(&d2(vk::Format::R16G16_SINT, 300, 200));
    cross_device(&d2(vk::Format::R8_UNORM, 1, 1));
}

#[test]
fn create_checks_its_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let before = image_counts();
    let base = d2(vk::Format::R8G8B8A8_UNORM, 64, 32);

    // Zero extent.
    let m = create_fails(
        ctx,
        &d2(vk::Format::R8G8B8A8_UNORM, 0, 32),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("zero extent"), "{m}");
    let m = create_fails(
        ctx,
        &d2(vk::Format::R8G8B8A8_UNORM, 64, 0),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("zero extent"), "{m}");
    let m = create_fails(
        ctx,
        &image_desc(TYPE_3D, vk::Format::R8G8B8A8_UNORM, 4, 4, 0),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("zero extent"), "{m}");
    // 1D with a height, 2D with a depth.
    create_fails(
        ctx,
        &image_desc(TYPE_1D, vk::Format::R8_UNORM, 4, 2, 0),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    create_fails(
        ctx,
        &image_desc(TYPE_2D, vk::Format::R8_UNORM, 4, 2, 2),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );

    // Mip levels past floor(log2(64)) + 1 = 7.
    let mut i = base;
    i.mip_levels = 8;
    let m = create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("at most floor(log2(64)) + 1 = 7"), "{m}");
    i.mip_levels = 7;
    let im = create(ctx, &i);
    assert_eq!(image_info(im).mip_levels, 7);
    unsafe { vkcuda_image_destroy(im) };
    let mut i = image_desc(TYPE_3D, vk::Format::R8_UNORM, 2, 2, 17);
    i.mip_levels = 6;
    create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);
    i.mip_levels = 5;
    let im = create(ctx, &i);
    unsafe { vkcuda_image_destroy(im) };

    // Formats with no CUDA mapping, and values that are no format.
    let m = create_fails(
        ctx,
        &d2(vk::Format::R8G8B8_UNORM, 4, 4),
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert_eq!(
        m,
        "vkcuda_image_create: VK_FORMAT_R8G8B8_UNORM has 3 channels, which CUDA arrays cannot \
         hold; use VK_FORMAT_R8G8B8A8_UNORM"
    );
    let m = create_fails(
        ctx,
        &d2(vk::Format::D32_SFLOAT, 4, 4),
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert!(
        m.contains("depth/stencil") && m.contains("VK_FORMAT_R32_SFLOAT"),
        "{m}"
    );
    let m = create_fails(
        ctx,
        &d2(vk::Format::BC7_UNORM_BLOCK, 4, 4),
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert!(m.contains("block-compressed"), "{m}");
    create_fails(
        ctx,
        &d2(vk::Format::UNDEFINED, 4, 4),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let m = create_fails(
        ctx,
        &d2(vk::Format::from_raw(77_777), 4, 4),
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("VkFormat(77777) is not a VkFormat"), "{m}");

    // Usages the format cannot do: lavapipe has no storage for sRGB formats, and
    // no colour format is a depth/stencil attachment.
    let mut i = d2(vk::Format::R8G8B8A8_SRGB, 16, 16);
    i.usage = (vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_DST).as_raw();
    let v = Vk::new(ctx);
    let srgb = unsafe {
        v.instance
            .get_physical_device_format_properties(v.physical, vk::Format::R8G8B8A8_SRGB)
    }
    .optimal_tiling_features;
    if !srgb.contains(vk::FormatFeatureFlags::STORAGE_IMAGE) {
        let m = create_fails(ctx, &i, VKCUDA_ERROR_UNSUPPORTED);
        assert!(
            m.contains("VK_FORMAT_R8G8B8A8_SRGB does not support VK_IMAGE_USAGE_STORAGE_BIT"),
            "{m}"
        );
    } else {
        eprintln!("this device has storage images of R8G8B8A8_SRGB; that refusal is not tested");
    }
    let mut i = d2(vk::Format::R8_UNORM, 16, 16);
    i.usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT.as_raw();
    let m = create_fails(ctx, &i, VKCUDA_ERROR_UNSUPPORTED);
    assert!(
        m.contains("VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT"),
        "{m}"
    );
    i.usage = vk::ImageUsageFlags::TRANSIENT_ATTACHMENT.as_raw();
    create_fails(ctx, &i, VKCUDA_ERROR_UNSUPPORTED);
    i.usage = 0x4000_0000;
    create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);
    // An explicit usage is kept as given.
    i.usage = (vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::SAMPLED).as_raw();
    let im = create(ctx, &i);
    let ii = image_info(im);
    assert_eq!(ii.usage, i.usage);
    assert_eq!(ii.cuda_array_flags, 0, "no SURFACE_LDST without STORAGE");
    unsafe { vkcuda_image_destroy(im) };
    // Larger than the device allows.
    create_fails(
        ctx,
        &d2(vk::Format::R8_UNORM, 1 << 20, 1),
        VKCUDA_ERROR_UNSUPPORTED,
    );

    // Unknown enum values and flags.
    let mut i = base;
    i.image_type = vkcuda_image_type_raw(2); // VK_IMAGE_TYPE_3D by mistake
    let m = create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(
        m.contains("info->image_type is 2, not a vkcuda_image_type"),
        "{m}"
    );
    i.image_type = vkcuda_image_type_raw(-1);
    create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut i = base;
    i.flags = 0x8;
    create_fails(ctx, &i, VKCUDA_ERROR_INVALID_ARGUMENT);

    // Cubes: square, 2D, a multiple of 6 layers.
    let mut c = d2(vk::Format::R8_UNORM, 16, 8);
    c.flags = VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
    c.array_layers = 6;
    create_fails(ctx, &c, VKCUDA_ERROR_INVALID_ARGUMENT);
    c.extent.height = 16;
    c.array_layers = 5;
    create_fails(ctx, &c, VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut c3 = image_desc(TYPE_3D, vk::Format::R8_UNORM, 4, 4, 4);
    c3.array_layers = 2;
    create_fails(ctx, &c3, VKCUDA_ERROR_INVALID_ARGUMENT);
    unsafe { vkcuda_image_destroy(ptr::null_mut()) };

    assert_eq!(
        image_counts(),
        before,
        "no image, memory or fd leaked by the failures"
    );
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn getters_check_their_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let mut info = d2(vk::Format::R8G8B8A8_UNORM, 16, 16);
    info.mip_levels = 2;
    let im = create(ctx, &info);

    // The CUDA views need CUDA.
    let mut mm = ptr::null_mut();
    fails(
        unsafe { vkcuda_image_get_cuda_mipmapped_array(im, &mut mm) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    let mut arr = ptr::null_mut();
    fails(
        unsafe { vkcuda_image_get_cuda_array(im, 1, &mut arr) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    let m = fails(
        unsafe { vkcuda_image_get_cuda_array(im, 2, &mut arr) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(m.contains("level 2 is out of range"), "{m}");
    let mut s = 0u64;
    fails(
        unsafe { vkcuda_image_get_surface_object(im, 0, &mut s) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    fails(
        unsafe { vkcuda_image_get_surface_object(im, 5, &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );

    // Texture descriptions are checked before CUDA is needed.
    let tex = |t: vkcuda_texture_info, im: *const vkcuda_image| {
        let mut o = 0u64;
        unsafe { vkcuda_image_create_texture_object(im, &t, &mut o) }
    };
    let t0 = texture_info();
    fails(tex(t0, im), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    let mut t = t0;
    t.address_mode = vkcuda_address_mode_raw(9);
    fails(tex(t, im), VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut t = t0;
    t.flags = 0x10;
    fails(tex(t, im), VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut t = t0;
    t.level = 2;
    fails(tex(t, im), VKCUDA_ERROR_INVALID_ARGUMENT);
    t.flags = VKCUDA_TEXTURE_ALL_LEVELS_BIT; // the level is ignored then
    fails(tex(t, im), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    // Linear filtering of integers read as integers: refused (the misuse matrix);
    // read as normalized floats it passes.
    let mut t = t0;
    t.filter = vkcuda_filter_raw(1);
    t.read_mode = vkcuda_read_mode_raw(1);
    fails(tex(t, im), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    let mut t = t0;
    t.address_mode = vkcuda_address_mode_raw(1); // wrap, unnormalized
    fails(tex(t, im), VKCUDA_ERROR_INVALID_ARGUMENT);
    t.flags = VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT;
    fails(tex(t, im), VKCUDA_ERROR_CUDA_UNAVAILABLE);
    // 32-bit integers cannot be read as normalized floats.
    let im32 = create(ctx, &d2(vk::Format::R32_UINT, 4, 4));
    let mut t = t0;
    t.read_mode = vkcuda_read_mode_raw(1);
    let m = fails(tex(t, im32), VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("32-bit integers"), "{m}");
    // Surfaces need STORAGE.
    let mut ns = d2(vk::Format::R8_UNORM, 4, 4);
    ns.usage = vk::ImageUsageFlags::TRANSFER_DST.as_raw();
    let nostorage = create(ctx, &ns);
    let m = fails(
        unsafe { vkcuda_image_get_surface_object(nostorage, 0, &mut s) },
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert!(m.contains("VK_IMAGE_USAGE_STORAGE_BIT"), "{m}");
    unsafe {
        vkcuda_image_destroy(nostorage);
        vkcuda_image_destroy(im32);
        vkcuda_image_destroy(im);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
fn handoff_barriers_check_their_arguments() {
    let _g = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let im = create(ctx, &d2(vk::Format::R8G8B8A8_UNORM, 8, 8));
    let h = handoff_info(v.family);
    v.run(|cmd| unsafe {
        use vk::ImageLayout as L;
        release(&v, cmd, im, L::UNDEFINED);
        acquire(&v, cmd, im, L::SHADER_READ_ONLY_OPTIMAL);
        release(&v, cmd, im, L::SHADER_READ_ONLY_OPTIMAL);
        acquire(&v, cmd, im, L::GENERAL);
        // A transition to UNDEFINED, depth layouts, non-layouts.
        let m = fails(
            vkcuda_image_cmd_acquire_from_cuda(im, cmd, &h, L::UNDEFINED.as_raw()),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            m.contains("new_layout must not be VK_IMAGE_LAYOUT_UNDEFINED"),
            "{m}"
        );
        fails(
            vkcuda_image_cmd_release_to_cuda(
                im,
                cmd,
                &h,
                L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL.as_raw(),
            ),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        fails(
            vkcuda_image_cmd_release_to_cuda(im, cmd, &h, 99_999),
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
    });
    unsafe { vkcuda_image_destroy(im) };
}

#[test]
fn wrap_checks_the_engine_image() {
    let _g = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    // A description as the engine created it (usage given).
    let mut info = d2(vk::Format::R16G16B16A16_SFLOAT, 40, 30);
    info.mip_levels = 3;
    info.usage = (vk::ImageUsageFlags::TRANSFER_SRC
        | vk::ImageUsageFlags::TRANSFER_DST
        | vk::ImageUsageFlags::STORAGE)
        .as_raw();
    // Make the engine's image from a library one's resolved description.
    let model = create(ctx, &info);
    let mi = image_info(model);
    unsafe { vkcuda_image_destroy(model) };
    let e = EngineImage::new(&v, &mi, None);
    let (memory, size) = e.memory[0];
    let good = e.wrap_info(&mi);
    let fds = fd_count();

    let im = wrap(ctx, &good);
    let i = image_info(im);
    assert_eq!(i.wrapped, 1);
    assert_eq!(
        (i.image, i.memory, i.allocation_size),
        (e.image, memory, size)
    );
    assert_eq!(i.usage, info.usage);
    let mut fd = -1;
    ok(unsafe { vkcuda_image_export_fd(im, &mut fd) });
    // Whether the kernel knows the memory's size (lavapipe's memfds: yes; NVIDIA's
    // opaque fds: no): only then can an oversized claim be caught.
    let known_size = {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::fstat(fd, &mut st) };
        r == 0 && st.st_size > 0
    };
    unsafe { libc::close(fd) };
    unsafe { vkcuda_image_destroy(im) };

    let try_wrap = |w: &vkcuda_image_wrap_info, want| {
        let mut im = 0x10 as *mut vkcuda_image;
        let m = fails(unsafe { vkcuda_image_wrap(ctx, w, &mut im) }, want);
        assert!(im.is_null());
        m
    };
    // Memory smaller than the image's requirements.
    let mut w = good;
    w.allocation_size = size - 1;
    let m = try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("memory smaller than its requirements"), "{m}");
    w.allocation_size = 0;
    try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    // Larger than the memory really is: caught where the fd's size is known, to
    // the byte (a memfd driver's header is not counted as the allocation's).
    w.allocation_size = size + (64 << 20);
    if known_size {
        let m = try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(m.contains("real size"), "{m}");
        for more in [4096, 1] {
            w.allocation_size = size + more;
            let m = try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
            assert!(
                m.contains(&format!(
                    "allocation_size {} is larger than the memory object's real size {size}",
                    size + more
                )),
                "{m}"
            );
        }
    } else {
        eprintln!("the memory fd does not say its size here: an oversized claim cannot be caught");
    }
    // The usage must be the image's own.
    let mut w = good;
    w.description.usage = 0;
    let m = try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(m.contains("usage is 0"), "{m}");
    // The description is checked like create's.
    let mut w = good;
    w.description.format = vk::Format::R16G16B16_SFLOAT.as_raw();
    try_wrap(&w, VKCUDA_ERROR_UNSUPPORTED);
    let mut w = good;
    w.description.mip_levels = 7;
    try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut w = good;
    w.description.image_type = vkcuda_image_type_raw(5);
    try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    let mut w = good;
    w.flags = 2;
    try_wrap(&w, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert_eq!(fd_count(), fds, "no fd leaked");
    e.destroy(&v);
}

#[test]
fn thousand_cycles_do_not_grow() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let mut info = d2(vk::Format::R8G8B8A8_UNORM, 64, 64);
    info.mip_levels = 3;
    let bad = d2(vk::Format::R8G8B8_UNORM, 64, 64);
    // Warm up, then count.
    unsafe { vkcuda_image_destroy(create(ctx, &info)) };
    let before = image_counts();
    for _ in 0..1000 {
        let im = create(ctx, &info);
        let mut fd = -1;
        ok(unsafe { vkcuda_image_export_fd(im, &mut fd) });
        unsafe { libc::close(fd) };
        unsafe { vkcuda_image_destroy(im) };
        create_fails(ctx, &bad, VKCUDA_ERROR_UNSUPPORTED);
    }
    assert_eq!(image_counts(), before);
    unsafe { vkcuda_context_destroy(ctx) };
}

// ---------------------------------------------------------------------------------
// GPU: CUDA reads and writes the level arrays with cuMemcpy3D.

mod gpu {
    use super::*;
    use cudarc::driver::sys as cu;
    use support::cuda::{check, Cuda};

    /// Copies one level (every layer/slice) between host bytes packed like
    /// Vulkan's buffer copies and the level's CUDA array.
    fn memcpy_level(
        array: *mut CUarray_st,
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
            srcArray: if to_array {
                ptr::null_mut()
            } else {
                array.cast()
            },
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
            dstArray: if to_array {
                array.cast()
            } else {
                ptr::null_mut()
            },
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
    fn copy_levels(
        im: *const vkcuda_image,
        lvs: &[Level],
        bpt: u32,
        host: &mut [u8],
        to_array: bool,
        layered_1d: bool,
    ) {
        for (l, lv) in lvs.iter().enumerate() {
            let mut arr = ptr::null_mut();
            ok(unsafe { vkcuda_image_get_cuda_array(im, l as u32, &mut arr) });
            let at = host[lv.offset as usize..].as_mut_ptr();
            memcpy_level(arr, lv, bpt, at, to_array, layered_1d);
        }
    }

    /// Vulkan writes, CUDA reads every level; CUDA writes, Vulkan reads.
    fn both_ways(
        ctx: *mut vkcuda_context,
        v: &Vk,
        c: &Cuda,
        info: &vkcuda_image_create_info,
    ) -> (u64, u64) {
        let im = create(ctx, info);
        let i = image_info(im);
        assert!(!i.cuda_mipmapped_array.is_null());
        let mut mm = ptr::null_mut();
        ok(unsafe { vkcuda_image_get_cuda_mipmapped_array(im, &mut mm) });
        assert_eq!(mm, i.cuda_mipmapped_array);
        let (lvs, _) = levels(&i);
        let bpt = i.format_info.bytes_per_texel;
        let layered_1d =
            i.image_type == vkcuda_image_type::VKCUDA_IMAGE_TYPE_1D && i.array_layers > 1;
        let (bad_a, bad_b, all) = TEXELS.through_cuda(v, c, im, |host, to_array| {
            copy_levels(im, &lvs, bpt, host, to_array, layered_1d)
        });

        // Surface objects (one per level, kept) and a texture object.
        if i.usage & vk::ImageUsageFlags::STORAGE.as_raw() != 0 {
            for l in 0..i.mip_levels {
                let (mut s1, mut s2) = (0u64, 0u64);
                ok(unsafe { vkcuda_image_get_surface_object(im, l, &mut s1) });
                ok(unsafe { vkcuda_image_get_surface_object(im, l, &mut s2) });
                assert!(s1 != 0 && s1 == s2);
            }
        }
        let small_int = i.format_info.numeric
            != vkcuda_format_numeric::VKCUDA_FORMAT_NUMERIC_SFLOAT
            && i.format_info.bytes_per_texel / i.format_info.channels <= 2;
        let t = vkcuda_texture_info {
            flags: VKCUDA_TEXTURE_ALL_LEVELS_BIT | VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT,
            level: 0,
            filter: vkcuda_filter_raw(0),
            address_mode: vkcuda_address_mode_raw(1),
            read_mode: vkcuda_read_mode_raw(small_int as i32),
            border_color: [0.0; 4],
        };
        let mut tex = 0u64;
        ok(unsafe { vkcuda_image_create_texture_object(im, &t, &mut tex) });
        assert_ne!(tex, 0);
        unsafe { vkcuda_image_destroy(im) };
        assert_eq!(
            bad_a, 0,
            "CUDA read {bad_a} of {all} bytes wrong ({info:?})"
        );
        assert_eq!(
            bad_b, 0,
            "Vulkan read {bad_b} of {all} bytes wrong after CUDA wrote ({info:?})"
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
        let v = Vk::new(ctx);
        let c = Cuda::of(ctx);
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
            let mut info = d2(row.format, 67, 35);
            info.mip_levels = 7; // the full chain: see layers_agree
            info.array_layers = 2;
            let (_, all) = both_ways(ctx, &v, &c, &info);
            println!(
                "PASS {:<36} 67x35, 7 levels, 2 layers: {all} bytes each way",
                vkcuda::format::display(row.format)
            );
        }
        drop(v);
        unsafe { vkcuda_context_destroy(ctx) };
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_shapes_both_ways() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_shapes_both_ways") else {
            return;
        };
        let v = Vk::new(ctx);
        let c = Cuda::of(ctx);
        let mut one = image_desc(TYPE_1D, vk::Format::R16_SFLOAT, 1000, 0, 0);
        one.mip_levels = 10;
        let mut one_layered = one;
        one_layered.array_layers = 4;
        let mut layered_one_level = d2(vk::Format::R32G32_SFLOAT, 67, 35);
        layered_one_level.array_layers = 3;
        let mut three = image_desc(TYPE_3D, vk::Format::R32G32B32A32_UINT, 33, 17, 9);
        three.mip_levels = 6;
        let mut cube = d2(vk::Format::R8G8B8A8_UNORM, 64, 64);
        cube.flags = VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
        cube.array_layers = 6;
        cube.mip_levels = 7;
        let mut cubes = cube;
        cubes.array_layers = 12;
        let mut full = d2(vk::Format::R32_SFLOAT, 1920, 1080);
        full.mip_levels = 11;
        let tiny = d2(vk::Format::R8_UNORM, 1, 1);
        let big = d2(vk::Format::R8_UNORM, 16384, 16384);
        for (name, info) in [
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
            let (_, all) = both_ways(ctx, &v, &c, &info);
            println!("PASS {name}: {all} bytes each way");
        }
        drop(v);
        unsafe { vkcuda_context_destroy(ctx) };
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
        let mut info = d2(vk::Format::R8G8B8A8_UNORM, 67, 35);
        info.array_layers = 2;
        info.mip_levels = 3;
        let m = create_fails(ctx, &info, VKCUDA_ERROR_UNSUPPORTED);
        assert!(m.contains("Use 1 mip level or all 7"), "{m}");
        let mut one = image_desc(TYPE_1D, vk::Format::R32_UINT, 1000, 0, 0);
        one.array_layers = 4;
        one.mip_levels = 5;
        create_fails(ctx, &one, VKCUDA_ERROR_UNSUPPORTED);
        // One level, and a single layer, are fine.
        info.mip_levels = 1;
        unsafe { vkcuda_image_destroy(create(ctx, &info)) };
        info.mip_levels = 3;
        info.array_layers = 1;
        unsafe { vkcuda_image_destroy(create(ctx, &info)) };
        unsafe { vkcuda_context_destroy(ctx) };
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_wrap_engine_image() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_wrap_engine_image") else {
            return;
        };
        let v = Vk::new(ctx);
        let c = Cuda::of(ctx);
        let mut info = d2(vk::Format::R8G8B8A8_UNORM, 128, 64);
        info.mip_levels = 4;
        let model = create(ctx, &info);
        let mi = image_info(model);
        unsafe { vkcuda_image_destroy(model) };
        let e = EngineImage::new(&v, &mi, None);
        let mut w = e.wrap_info(&mi);
        let im = wrap(ctx, &w);
        let i = image_info(im);
        assert!(!i.cuda_mipmapped_array.is_null());
        TEXELS.write(&v, Side::Shared(im), vk::ImageLayout::UNDEFINED, 21);
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        let (lvs, total) = levels(&i);
        let mut host = vec![0u8; total as usize];
        c.enter();
        copy_levels(im, &lvs, 4, &mut host, false, false);
        c.leave();
        assert_eq!(texel_mismatches(&i, &host, 21).0, 0);
        unsafe { vkcuda_image_destroy(im) };
        w.allocation_size = e.memory[0].1 - 1;
        let mut bad = ptr::null_mut();
        fails(
            unsafe { vkcuda_image_wrap(ctx, &w, &mut bad) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        e.destroy(&v);
        drop(v);
        unsafe { vkcuda_context_destroy(ctx) };
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_cycles_do_not_grow() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_cycles_do_not_grow") else {
            return;
        };
        let mut info = d2(vk::Format::R8G8B8A8_UNORM, 256, 256);
        info.mip_levels = 4;
        let t = vkcuda_texture_info {
            level: 1,
            filter: vkcuda_filter_raw(1),
            read_mode: vkcuda_read_mode_raw(1),
            ..texture_info()
        };
        let cycle = || {
            let im = create(ctx, &info);
            let (mut s, mut tex) = (0u64, 0u64);
            ok(unsafe { vkcuda_image_get_surface_object(im, 0, &mut s) });
            ok(unsafe { vkcuda_image_create_texture_object(im, &t, &mut tex) });
            unsafe { vkcuda_image_destroy(im) };
        };
        cycle();
        let before = image_counts();
        for _ in 0..1000 {
            cycle();
        }
        assert_eq!(image_counts(), before);
        unsafe { vkcuda_context_destroy(ctx) };
    }
}
